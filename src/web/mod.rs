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
//! `Error` whose message starts with the op as the JS caller named it; a
//! `skiff::Error` becomes one through `Named::named` / `Named::within`
//! (never implicitly, so no internal op name reaches JS). Arguments
//! that JS could get wrong (shapes, axes, tensors, option bags) arrive as
//! `JsValue` and are checked by the helpers here, so `undefined`, strings or
//! fractional sizes are errors, not silently coerced numbers.

mod args;
mod autograd;
mod bench;
mod handles;
mod nn;
mod ops;
mod optim;
mod opts;
mod runtime;
mod tensor;
mod testing;
mod testing_cases;

pub use args::{Operand, Opts};
pub use tensor::JsTensor;

use crate::error::Error;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use wasm_bindgen::JsError;

// Names the generated .d.ts uses in `unchecked_param_type`s.
#[wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Element types: 32/64-bit floats, 32-bit integers (indices, labels), bool masks. */
export type DType = 'float32' | 'float64' | 'int32' | 'bool';
/** Where a tensor lives: the WebAssembly cpu backend or the WebGPU device. */
export type DeviceName = 'cpu' | 'webgpu';
"#;

/// What every export throws: a JS `Error` whose message starts with the op as
/// the JS caller named it (`broadcastTo: cannot expand shape [2] to [3]`).
///
/// It deliberately has no `From<skiff::Error>`: a skiff result reaches JS
/// only through [`Named::named`] or [`Named::within`], which put the JS name
/// first, so an internal op name (`expand`, `from_vec`,
/// `OptimState::from_flat`) cannot leak through a bare `?`.
pub struct JsOpError(JsError);

impl From<JsOpError> for wasm_bindgen::JsValue {
    fn from(e: JsOpError) -> Self {
        e.0.into()
    }
}

/// The result type of every export.
pub type JsResult<T> = std::result::Result<T, JsOpError>;

/// An error of the JS op `op`: "`op`: `msg`".
pub fn js_error(op: &str, msg: impl std::fmt::Display) -> JsOpError {
    JsOpError(JsError::new(&format!("{op}: {msg}")))
}

/// The part of a skiff error after its own op's name, in JS words.
pub(crate) fn without_op(e: &Error) -> String {
    let s = js_words(&e.to_string());
    // Every variant displays as "{op}: ..." (ops hold no ": ").
    match s.split_once(": ") {
        Some((_, rest)) => rest.to_string(),
        None => s,
    }
}

/// Rust names in skiff's messages and what JS calls them (dtypes, methods,
/// options): "dtypes differ: f32 [2] vs i32 [2] (cast one with to_dtype)"
/// reads "float32 [2] vs int32 [2] (cast one with toDtype)" in JS.
const JS_WORDS: &[(&str, &str)] = &[
    ("f32", "float32"),
    ("F32", "'float32'"),
    ("F64", "'float64'"),
    ("I32", "'int32'"),
    ("f64", "float64"),
    ("i32", "int32"),
    ("to_dtype", "toDtype"),
    ("no_grad", "noGrad"),
    ("grad_fn", "gradFn"),
    ("requires_grad", "requiresGrad"),
    ("retain_graph", "retainGraph"),
    ("create_graph", "createGraph"),
    ("allow_unused", "allowUnused"),
    ("retain_grad", "retainGrad"),
    ("normalized_shape", "normalizedShape"),
    ("weight_decay", "weightDecay"),
    ("lr_decay", "lrDecay"),
    ("initial_accumulator_value", "initialAccumulatorValue"),
    ("label_smoothing", "labelSmoothing"),
    ("MultiHeadAttention", "MultiheadAttention"),
];

/// `msg` with every whole word of `JS_WORDS` (letters, digits and '_')
/// replaced by its JS name.
fn js_words(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while !rest.is_empty() {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let in_word = rest.starts_with(word);
        let split = rest.find(|c: char| word(c) != in_word).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(split);
        out.push_str(JS_WORDS.iter().find(|(rust, _)| *rust == run).map_or(run, |(_, js)| js));
        rest = tail;
    }
    out
}

/// Ops a readback reports under its own name (the readback machinery's).
const READBACK_OPS: &[&str] = &["to_vec", "to", "gpu", "synchronize"];

/// A skiff error as the value a promise of the JS op `op` rejects with. A
/// readback also reports what failed on the device since the last one (an
/// index out of range, an allocation the driver refused): those keep the
/// name of the op that failed after the called one ("data: gather: ...").
pub(crate) fn rejection(op: &str, e: Error) -> wasm_bindgen::JsValue {
    let inner = e.op();
    if inner == op || READBACK_OPS.contains(&inner) {
        return js_error(op, without_op(&e)).into();
    }
    js_error(op, js_words(&e.to_string())).into()
}

/// Labels skiff results with the JS op that was called.
pub trait Named<T> {
    /// The error reported as the JS op `op`, the skiff op's name dropped:
    /// for calls that are one skiff op under another name (`broadcastTo` runs
    /// `expand`, `tensor` runs `from_vec`).
    fn named(self, op: &str) -> JsResult<T>;
    /// The error reported under `op`, keeping the name of the skiff op that
    /// failed when it is another one (`forward: matmul: ...`): for calls that
    /// run many ops (a module's forward, backward, an optimizer step).
    fn within(self, op: &str) -> JsResult<T>;
}

impl<T> Named<T> for crate::error::Result<T> {
    fn named(self, op: &str) -> JsResult<T> {
        self.map_err(|e| js_error(op, without_op(&e)))
    }
    fn within(self, op: &str) -> JsResult<T> {
        self.map_err(|e| {
            let s = js_words(&e.to_string());
            let inner = s.split_once(": ").map_or("", |(inner, _)| inner);
            // "Linear.forward: Linear: ..." and "step: step: ..." say it twice.
            if inner == op || op.strip_prefix(inner).is_some_and(|rest| rest.starts_with('.')) {
                js_error(op, without_op(&e))
            } else {
                js_error(op, s)
            }
        })
    }
}

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
    live: HashMap<u32, Weak<Slot>>,
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
    js_error(op, "the tensor was disposed (by dispose() or at the end of a tidy scope) and cannot be used")
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
    let Some(scope) = scope else { return Err(js_error("tidy", "endScope without a matching beginScope")) };
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

#[cfg(test)]
mod tests {
    use super::{js_words, without_op};
    use crate::error::Error;

    #[test]
    fn rust_names_in_messages_read_as_js_names() {
        assert_eq!(
            js_words("dtypes differ: f32 [2] vs i32 [2] (cast one with to_dtype)"),
            "dtypes differ: float32 [2] vs int32 [2] (cast one with toDtype)"
        );
        // Whole words only: a kernel or key that contains one is left alone.
        assert_eq!(js_words("reduce_f32 running_mean f64x"), "reduce_f32 running_mean f64x");
        assert_eq!(js_words("pass allow_unused=true, f64."), "pass allowUnused=true, float64.");
        assert_eq!(js_words("convert with to_dtype(F32) first"), "convert with toDtype('float32') first");
        assert_eq!(js_words(""), "");
    }

    #[test]
    fn the_skiff_op_name_is_dropped() {
        let e = Error::shape("expand", "cannot expand shape [2] to [3]");
        assert_eq!(without_op(&e), "cannot expand shape [2] to [3]");
        let e = Error::Axis { op: "sum", axis: 5, ndim: 2, shape: vec![2, 2] };
        assert_eq!(without_op(&e), "axis 5 is out of range for a tensor of rank 2 (shape [2, 2])");
        let e = Error::dtype("pow", "dtypes differ: f32 [2] vs i32 [2]");
        assert_eq!(without_op(&e), "dtypes differ: float32 [2] vs int32 [2]");
    }
}
