//! The WebAssembly surface (feature `web`): what `wasm-bindgen` exports to the
//! npm package. The JS wrapper in `web/` builds the user-facing API on it
//! (nested arrays, `tidy`, `noGrad`, custom functions, ...).
//!
//! Tensors cross into JS as [`JsTensor`] handles. A handle owns a slot that
//! holds the tensor until `dispose()` (or the end of a `tidy` scope, or the
//! garbage collector through wasm-bindgen's FinalizationRegistry) empties it;
//! using it afterwards is an error naming the op, never a trap. Every live
//! slot is listed in a registry (for `memory()` and for finding a tensor
//! behind a `JsValue` argument).
//!
//! Errors: every exported function returns `Result<_, JsOpError>`, a JS
//! `SkiffError` whose message starts with the op as the JS caller named it
//! and which carries that `op` and a `kind` (`error.rs`); a `skiff::Error`
//! becomes one through `Named::named` / `Named::within` (never implicitly,
//! so no internal op name reaches JS). Arguments
//! that JS could get wrong (shapes, axes, tensors, option bags) arrive as
//! `JsValue` and are checked by the helpers here, so `undefined`, strings or
//! fractional sizes are errors, not silently coerced numbers.

mod amp;
mod args;
mod autograd;
#[cfg(feature = "web-testing")]
mod bench;
mod custom;
mod error;
mod handles;
mod jit;
mod nn;
mod ops;
mod optim;
mod opts;
mod profile;
mod runtime;
mod tensor;
#[cfg(feature = "web-testing")]
mod testing;
#[cfg(feature = "web-testing")]
mod testing_cases;

pub use args::{Operand, Opts};
pub use error::{js_error, JsOpError, JsResult, Kind, Named};
pub(crate) use error::{rejection, without_op};
pub use tensor::JsTensor;

use crate::tensor::Tensor;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

// Names the generated .d.ts uses in `unchecked_param_type`s. The Tensor
// class is generic over its dtype (`Tensor<D extends DType = DType>`, so
// `data()` of a float32 tensor is a Float32Array): the methods name `D` in
// their `unchecked_*_type`s, and scripts/lib/patch-dts.mjs adds the type
// parameter to the class declaration, which wasm-bindgen cannot write.
#[wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Element types: 32/64/16-bit floats (float64 on the cpu only; float16 on the cpu and on GPUs with shader-f16), 32-bit integers (indices, labels), bool masks. */
export type DType = 'float32' | 'float64' | 'float16' | 'int32' | 'bool';
/** Where a tensor lives: the WebAssembly cpu backend or the WebGPU device. */
export type DeviceName = 'cpu' | 'webgpu';
/** What `data()` resolves to for a tensor of dtype D (a bool tensor's values are 0 or 1; float16 values widen exactly to a Float32Array). */
export type DataOf<D extends DType> = D extends 'float32' | 'float16'
  ? Float32Array
  : D extends 'float64'
    ? Float64Array
    : D extends 'int32'
      ? Int32Array
      : D extends 'bool'
        ? Uint8Array
        : never;
"#;

/// The tensor behind one JS handle.
pub(crate) struct Slot {
    id: u32,
    tensor: RefCell<Option<Tensor>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // try_with/try_borrow: a slot may drop while the registry is busy (never
        // by design) or during teardown; the entry is then removed lazily.
        let _ = STATE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                s.live.remove(&self.id);
            }
        });
    }
}

/// Live slots and the open `tidy` scopes (wasm32 without threads: one of each).
#[derive(Default)]
struct State {
    next_id: u32,
    live: FxHashMap<u32, Weak<Slot>>,
    scopes: Vec<Vec<Weak<Slot>>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

impl JsTensor {
    /// A new handle for `t`, registered in the innermost open scope.
    pub fn wrap(t: Tensor) -> JsTensor {
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            // Never 0: that id is the blank handle's (below).
            s.next_id = s.next_id.wrapping_add(1).max(1);
            let slot = Rc::new(Slot { id: s.next_id, tensor: RefCell::new(Some(t)) });
            s.live.insert(slot.id, Rc::downgrade(&slot));
            if let Some(scope) = s.scopes.last_mut() {
                scope.push(Rc::downgrade(&slot));
            }
            JsTensor { slot }
        })
    }

    /// A handle to no tensor, in no registry (id 0): made once, to find the
    /// JS class's prototype (`handles.rs`).
    pub(crate) fn blank() -> JsTensor {
        JsTensor { slot: Rc::new(Slot { id: 0, tensor: RefCell::new(None) }) }
    }

    /// The tensor, or an error naming `op` when the handle was disposed.
    pub fn get(&self, op: &str) -> JsResult<Tensor> {
        self.slot.tensor.borrow().clone().ok_or_else(|| disposed(op))
    }

    pub(crate) fn id(&self) -> u32 {
        self.slot.id
    }
}

pub(crate) fn disposed(op: &str) -> JsOpError {
    js_error(
        op,
        Kind::Argument,
        "the tensor was disposed (by dispose() or at the end of a tidy scope) and cannot be used",
    )
}

/// The live tensor with handle id `id`, if any.
pub(crate) fn lookup(id: u32) -> Option<Rc<Slot>> {
    STATE.with(|s| s.borrow().live.get(&id).and_then(Weak::upgrade))
}

/// The tensors of every live, undisposed handle.
pub(crate) fn live_tensors() -> Vec<Tensor> {
    let slots: Vec<Rc<Slot>> = STATE.with(|s| s.borrow().live.values().filter_map(Weak::upgrade).collect());
    slots.iter().filter_map(|s| s.tensor.borrow().clone()).collect()
}

/// Opens a `tidy` scope: handles created until `end_scope` belong to it.
pub(crate) fn begin_scope() {
    STATE.with(|s| s.borrow_mut().scopes.push(Vec::new()));
}

/// Closes the innermost scope: disposes its handles except `keep` (ids),
/// which move to the enclosing scope (if any) like any handle created there.
pub(crate) fn end_scope(keep: &[u32]) -> JsResult<()> {
    let scope = STATE.with(|s| s.borrow_mut().scopes.pop());
    let Some(scope) = scope else {
        return Err(js_error("tidy", Kind::Value, "endScope without a matching beginScope"));
    };
    let mut survivors = Vec::new();
    for weak in scope {
        let Some(slot) = weak.upgrade() else { continue };
        if keep.contains(&slot.id) {
            survivors.push(weak);
        } else {
            // Drop the tensor outside any registry borrow.
            let t = slot.tensor.borrow_mut().take();
            drop(t);
        }
    }
    STATE.with(|s| {
        if let Some(parent) = s.borrow_mut().scopes.last_mut() {
            parent.extend(survivors);
        }
    });
    Ok(())
}

/// Takes a handle out of every open scope (TF.js's `keep`): it lives until disposed.
pub(crate) fn keep_handle(id: u32) {
    STATE.with(|s| {
        for scope in s.borrow_mut().scopes.iter_mut() {
            scope.retain(|w| w.upgrade().is_some_and(|slot| slot.id != id));
        }
    });
}

/// Number of open scopes (for the memory report and tests).
pub(crate) fn scope_depth() -> usize {
    STATE.with(|s| s.borrow().scopes.len())
}

/// Lets a JS value (a callback) live inside a `Send + Sync` container, as
/// skiff's hooks and custom functions require.
///
/// Safety: wasm32 without the `atomics` target feature has exactly one thread,
/// so no value can ever be shared across threads; natively (where this module
/// only compiles, for checks) nothing calls into JS.
pub(crate) struct SingleThreaded<T>(pub T);
unsafe impl<T> Send for SingleThreaded<T> {}
unsafe impl<T> Sync for SingleThreaded<T> {}
