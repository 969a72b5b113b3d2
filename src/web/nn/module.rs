//! The `Module` class: the registry of module entries, the handles, hooks,
//! state dicts and `toString`. A module's class name and repr are its
//! layer's (`Layer::type_name`, `Layer::repr`); the entry adds only what JS
//! needs: the handles of a container's children.

use super::bag;
use crate::error::Error;
use crate::nn::{
    HookHandle, Layer, MultiHeadAttention, Recurrent, RecurrentCell, TransformerDecoderLayer, TransformerEncoderLayer,
};
use crate::tensor::Tensor;
use crate::web::args::{self, describe, object};
use crate::web::handles::{Class, Found};
use crate::web::nn::read_entries;
use crate::web::nn::serialize_promise;
use crate::web::{js_error, JsResult, JsTensor, Kind as ErrorKind, Named, SingleThreaded};
use js_sys::Array;
use std::cell::OnceCell;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use wasm_bindgen::prelude::*;

/// The property every JS `Module` handle exposes with its registry id.
pub const MODULE_ID_PROPERTY: &str = "_skiffModuleId";

/// What a module is, beyond its `Layer`.
pub(crate) enum Kind {
    Layer,
    Attention(Arc<MultiHeadAttention>),
    /// RNN, LSTM and GRU, and their cells (`forwardWithState`).
    Recurrent(Arc<Recurrent>),
    Cell(Arc<RecurrentCell>),
    /// The transformer layers (`encode`, `decode`).
    Encoder(Arc<TransformerEncoderLayer>),
    Decoder(Arc<TransformerDecoderLayer>),
    Sequential,
    List,
    Dict,
}

/// One module: its layer (which knows its name and repr) and what the
/// container accessors need.
pub(crate) struct Entry {
    id: u32,
    pub(super) layer: Arc<dyn Layer>,
    pub(super) kind: Kind,
    /// A container's children, in order: the entries of the JS handles it was
    /// built from, so `get`/`children` return handles to the same modules.
    children: Vec<(String, Rc<Entry>)>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let _ = MODULES.try_with(|m| {
            if let Ok(mut m) = m.try_borrow_mut() {
                m.live.remove(&self.id);
            }
        });
    }
}

#[derive(Default)]
struct Registry {
    next_id: u32,
    live: HashMap<u32, Weak<Entry>>,
}

thread_local! {
    static MODULES: RefCell<Registry> = RefCell::new(Registry::default());
}

/// The parts of a new entry (the id is assigned on registration).
pub(crate) struct Spec {
    pub layer: Arc<dyn Layer>,
    pub kind: Kind,
    pub children: Vec<(String, Rc<Entry>)>,
}

impl Spec {
    /// A plain layer without children.
    pub fn layer(layer: impl Layer + 'static) -> Spec {
        Spec { layer: Arc::new(layer), kind: Kind::Layer, children: Vec::new() }
    }
    /// Registers the entry and returns a handle to it.
    pub fn build(self) -> JsModule {
        MODULES.with(|m| {
            let mut m = m.borrow_mut();
            m.next_id = m.next_id.wrapping_add(1).max(1); // 0 is the blank handle's
            let entry = Rc::new(Entry { id: m.next_id, layer: self.layer, kind: self.kind, children: self.children });
            m.live.insert(entry.id, Rc::downgrade(&entry));
            JsModule { entry }
        })
    }
}

impl Entry {
    /// PyTorch's class name ("Linear", "Sequential", ...), from the layer.
    pub(super) fn name(&self) -> &'static str {
        self.layer.type_name()
    }
}

thread_local! {
    /// The JS `Module` class (see `handles.rs`).
    static MODULE_CLASS: OnceCell<Class> = const { OnceCell::new() };
}

/// A `Module` handle in no registry (id 0), made once to find the JS class.
fn blank_module() -> JsValue {
    let relu: Arc<dyn Layer> = Arc::new(crate::nn::ReLU::new());
    let entry = Entry { id: 0, layer: relu, kind: Kind::Layer, children: Vec::new() };
    JsModule { entry: Rc::new(entry) }.into()
}

/// The module behind a JS `Module` argument (a real handle: see `handles.rs`).
pub(crate) fn module_arg(op: &str, name: &str, v: &JsValue) -> JsResult<Rc<Entry>> {
    let found = MODULE_CLASS.with(|c| c.get_or_init(|| Class::of(&blank_module(), MODULE_ID_PROPERTY)).find(v));
    let id = match found {
        Found::Id(id) => id,
        Found::Freed => {
            return Err(js_error(
                op,
                ErrorKind::Argument,
                format!("{name} must be a Module, got a freed Module (free() was called on it)"),
            ))
        }
        Found::Other => {
            return Err(js_error(op, ErrorKind::Argument, format!("{name} must be a Module, got {}", describe(v))))
        }
    };
    MODULES
        .with(|m| m.borrow().live.get(&id).and_then(Weak::upgrade))
        .ok_or_else(|| js_error(op, ErrorKind::Argument, format!("{name} is a Module that was freed")))
}

/// A hook's return value: undefined/null keeps, a Tensor replaces.
fn hook_result(op: &'static str, what: &str, r: &JsValue) -> crate::error::Result<Option<Tensor>> {
    if r.is_undefined() || r.is_null() {
        return Ok(None);
    }
    let is_handle = args::tensor_id(r).is_some();
    args::tensor(op, "value", r).map(Some).map_err(|_| {
        let got = if is_handle { "a disposed Tensor".to_string() } else { describe(r) };
        Error::value(op, format!("the {what} must return a Tensor or undefined, got {got}"))
    })
}

/// A new JS handle for a still-registered entry (undefined once it is gone).
fn module_value(w: &Weak<Entry>) -> JsValue {
    w.upgrade().map_or(JsValue::UNDEFINED, |entry| JsModule { entry }.into())
}

/// `[name, Tensor]` pairs as a JS array.
fn named(pairs: Vec<(String, Tensor)>) -> Array {
    pairs.into_iter().map(|(n, t)| JsValue::from(Array::of2(&n.into(), &JsTensor::wrap(t).into()))).collect()
}

/// A layer (PyTorch's `nn.Module`). Create one with the static factories
/// (`Module.linear(4, 8)`, `Module.sequential([...])`, ...).
#[wasm_bindgen(js_name = Module)]
pub struct JsModule {
    pub(super) entry: Rc<Entry>,
}

/// Removes a forward hook (PyTorch's `RemovableHandle`); dropping it keeps the hook.
#[wasm_bindgen(js_name = ModuleHookHandle)]
pub struct JsHookHandle {
    handle: RefCell<Option<HookHandle>>,
}

#[wasm_bindgen(js_class = ModuleHookHandle)]
impl JsHookHandle {
    /// Removes the hook (a no-op when already removed).
    pub fn remove(&self) {
        if let Some(h) = self.handle.borrow_mut().take() {
            h.remove();
        }
    }
}

#[wasm_bindgen(js_class = Module)]
impl JsModule {
    /// The registry id of this module (used to find it behind a JS value).
    #[wasm_bindgen(getter = _skiffModuleId, skip_typescript)]
    pub fn skiff_module_id(&self) -> u32 {
        self.entry.id
    }

    /// PyTorch's class name: 'Linear', 'Conv2d', 'Sequential', ...
    #[wasm_bindgen(getter, js_name = typeName)]
    pub fn type_name(&self) -> String {
        self.entry.name().to_string()
    }

    /// Runs the module on `x` (forward pre-hooks, the layer, forward hooks).
    pub fn forward(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] x: JsValue) -> JsResult<JsTensor> {
        let op = format!("{}.forward", self.entry.name());
        let x = args::tensor(&op, "x", &x)?;
        Ok(JsTensor::wrap(self.entry.layer.forward(&x).within(&op)?))
    }

    /// The parameters (deduplicated, in registration order), as new handles.
    #[wasm_bindgen(unchecked_return_type = "Tensor[]")]
    pub fn parameters(&self) -> Array {
        args::handles(self.entry.layer.parameters())
    }

    /// `[name, Tensor]` pairs with PyTorch's dotted names ('0.weight', ...).
    #[wasm_bindgen(js_name = namedParameters, unchecked_return_type = "[string, Tensor][]")]
    pub fn named_parameters(&self) -> Array {
        named(self.entry.layer.named_parameters())
    }

    /// The buffers (batch norm's running statistics, ...), as new handles.
    #[wasm_bindgen(unchecked_return_type = "Tensor[]")]
    pub fn buffers(&self) -> Array {
        args::handles(self.entry.layer.named_buffers().into_iter().map(|(_, t)| t).collect())
    }

    /// `[name, Tensor]` pairs of the buffers ('running_mean', ...).
    #[wasm_bindgen(js_name = namedBuffers, unchecked_return_type = "[string, Tensor][]")]
    pub fn named_buffers(&self) -> Array {
        named(self.entry.layer.named_buffers())
    }

    /// The direct children of a container as `[name, Module]` pairs.
    #[wasm_bindgen(unchecked_return_type = "[string, Module][]")]
    pub fn children(&self) -> Array {
        self.entry
            .children
            .iter()
            .map(|(k, c)| JsValue::from(Array::of2(&k.into(), &JsModule { entry: c.clone() }.into())))
            .collect()
    }

    /// A container's child by index (sequential, moduleList; negative counts
    /// from the end) or by key (moduleDict).
    pub fn get(&self, #[wasm_bindgen(unchecked_param_type = "number | string")] key: JsValue) -> JsResult<JsModule> {
        const OP: &str = "Module.get";
        let kids = &self.entry.children;
        let found = match (&self.entry.kind, key.as_string()) {
            (Kind::Dict, Some(k)) => kids.iter().find(|(n, _)| *n == k),
            (Kind::Sequential | Kind::List, None) => {
                let i = args::int_arg(OP, "index", &key)?;
                let i = if i < 0 { i + kids.len() as isize } else { i };
                usize::try_from(i).ok().and_then(|i| kids.get(i))
            }
            (Kind::Dict, None) => {
                return Err(js_error(OP, ErrorKind::Argument, format!("key must be a string, got {}", describe(&key))))
            }
            (Kind::Sequential | Kind::List, Some(_)) => {
                return Err(js_error(
                    OP,
                    ErrorKind::Argument,
                    format!("index must be an integer, got {}", describe(&key)),
                ))
            }
            _ => return Err(js_error(OP, ErrorKind::Value, format!("a {} has no children to get", self.entry.name()))),
        };
        found.map(|(_, c)| JsModule { entry: c.clone() }).ok_or_else(|| {
            js_error(
                OP,
                ErrorKind::Value,
                format!("no child {} in this {} of {}", describe(&key), self.entry.name(), kids.len()),
            )
        })
    }

    /// Sets training mode (default true) on this module and its descendants.
    pub fn train(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean")] mode: Option<JsValue>,
    ) -> JsResult<()> {
        let mode = match mode {
            Some(v) if !v.is_undefined() => args::bool_arg("train", "mode", &v)?,
            _ => true,
        };
        self.entry.layer.train(mode);
        Ok(())
    }

    /// Evaluation mode (`train(false)`): dropout off, batch norm uses running statistics.
    pub fn eval(&self) {
        self.entry.layer.eval();
    }

    /// Whether the module is in training mode.
    #[wasm_bindgen(getter)]
    pub fn training(&self) -> bool {
        self.entry.layer.is_training()
    }

    /// Clears every parameter's gradient.
    #[wasm_bindgen(js_name = zeroGrad)]
    pub fn zero_grad(&self) {
        self.entry.layer.zero_grad();
    }

    /// Moves every parameter and buffer to `device` ('cpu' | 'webgpu') in
    /// place. The parameters become new tensors: create optimizers after `to`.
    pub fn to(&self, #[wasm_bindgen(unchecked_param_type = "DeviceName")] device: JsValue) -> JsResult<()> {
        const OP: &str = "Module.to";
        let d = args::device(OP, &device)?;
        self.entry.layer.to(&d).named(OP)
    }

    /// Converts every float parameter and buffer to `dtype` ('float32',
    /// 'float16', or 'float64' on the cpu) in place, as PyTorch's
    /// `module.to(dtype)`; integer buffers keep theirs. The parameters become
    /// new tensors: create optimizers after `toDtype`.
    #[wasm_bindgen(js_name = toDtype)]
    pub fn to_dtype(&self, #[wasm_bindgen(unchecked_param_type = "DType")] dtype: JsValue) -> JsResult<()> {
        const OP: &str = "Module.toDtype";
        let d = args::dtype(OP, &dtype)?;
        self.entry.layer.to_dtype(d).named(OP)
    }

    /// Number of parameter elements (shared parameters counted once).
    /// Summed as integers: an empty f64 sum is -0.0, which JS shows as -0.
    #[wasm_bindgen(getter, js_name = numParameters)]
    pub fn num_parameters(&self) -> f64 {
        self.entry.layer.parameters().iter().map(|t| t.numel()).sum::<usize>() as f64
    }

    /// Registers `hook(module, input, output)`, run after each forward; a
    /// returned Tensor replaces the output. A hook that throws makes forward throw.
    #[wasm_bindgen(js_name = registerForwardHook)]
    pub fn register_forward_hook(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "(module: Module, input: Tensor, output: Tensor) => Tensor | undefined | void"
        )]
        hook: JsValue,
    ) -> JsResult<JsHookHandle> {
        const OP: &str = "forward hook";
        let hook = args::function_arg("registerForwardHook", "hook", &hook)?;
        let captured = SingleThreaded((Rc::downgrade(&self.entry), hook));
        let h = self.entry.layer.register_forward_hook(Box::new(move |x, y| {
            let captured = &captured; // capture the whole Send + Sync wrapper
            let (w, f) = &captured.0;
            if crate::dispatch::record::active() {
                return Err(crate::dispatch::record::refuse(OP, "a JS forward hook (a callback)"));
            }
            let (x, y) = (JsValue::from(JsTensor::wrap(x.clone())), JsValue::from(JsTensor::wrap(y.clone())));
            let r = args::js_call(OP, "the forward hook", f.call3(&JsValue::UNDEFINED, &module_value(w), &x, &y))?;
            hook_result(OP, "forward hook", &r)
        }));
        Ok(JsHookHandle { handle: RefCell::new(Some(h)) })
    }

    /// Registers `hook(module, input)`, run before each forward; a returned
    /// Tensor replaces the input. A hook that throws makes forward throw.
    #[wasm_bindgen(js_name = registerForwardPreHook)]
    pub fn register_forward_pre_hook(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(module: Module, input: Tensor) => Tensor | undefined | void")]
        hook: JsValue,
    ) -> JsResult<JsHookHandle> {
        const OP: &str = "forward pre-hook";
        let hook = args::function_arg("registerForwardPreHook", "hook", &hook)?;
        let captured = SingleThreaded((Rc::downgrade(&self.entry), hook));
        let h = self.entry.layer.register_forward_pre_hook(Box::new(move |x| {
            let captured = &captured; // capture the whole Send + Sync wrapper
            let (w, f) = &captured.0;
            if crate::dispatch::record::active() {
                return Err(crate::dispatch::record::refuse(OP, "a JS forward pre-hook (a callback)"));
            }
            let x = JsValue::from(JsTensor::wrap(x.clone()));
            let r = args::js_call(OP, "the forward pre-hook", f.call2(&JsValue::UNDEFINED, &module_value(w), &x))?;
            hook_result(OP, "forward pre-hook", &r)
        }));
        Ok(JsHookHandle { handle: RefCell::new(Some(h)) })
    }

    /// The parameters and buffers as safetensors bytes, with PyTorch's names
    /// (a snapshot taken now; GPU tensors are read back without blocking).
    #[wasm_bindgen(js_name = stateDict, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn state_dict(&self) -> JsResult<js_sys::Promise> {
        serialize_promise("stateDict", self.entry.layer.state_dict())
    }

    /// Copies a state dict (safetensors bytes, or a `{ name: Tensor }` record)
    /// into the parameters and buffers in place, converting dtype and device.
    /// A wrong shape is always an error; with `strict` (default true) missing
    /// or unexpected names are too, else they are returned. Nothing is
    /// written when an error is thrown.
    #[wasm_bindgen(
        js_name = loadStateDict,
        unchecked_return_type = "{ missingKeys: string[]; unexpectedKeys: string[] }"
    )]
    pub fn load_state_dict(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer | Record<string, Tensor>")] state: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ strict?: boolean }")] options: Option<JsValue>,
    ) -> JsResult<JsValue> {
        const OP: &str = "loadStateDict";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let strict = bag(OP, &options, &["strict"])?.bool("strict", true)?;
        let mut entries = read_entries(OP, &state)?;
        // Convert dtypes on the cpu first (f64 cannot go to a GPU).
        let mine: HashMap<String, Tensor> = self.entry.layer.state_dict().into_iter().collect();
        for (name, t) in entries.iter_mut() {
            if let Some(dst) = mine.get(name.as_str()) {
                if dst.dtype() != t.dtype() && !t.device().is_gpu() && dst.shape() == t.shape() {
                    *t = t.to_dtype(dst.dtype()).named(OP)?;
                }
            }
        }
        let report = self.entry.layer.load_state_dict(&entries, strict).named(OP)?;
        let list = |v: Vec<String>| JsValue::from(v.into_iter().map(JsValue::from).collect::<Array>());
        Ok(object(&[("missingKeys", list(report.missing_keys)), ("unexpectedKeys", list(report.unexpected_keys))]))
    }

    /// Multi-head attention of `query` [B, L, E] over `key`/`value` [B, S, E]
    /// (batch first): `[output [B, L, E], weights [B, H, L, S]]`.
    /// `keyPaddingMask` is a bool [B, S] tensor (true = ignore); `causal`
    /// masks later keys (default: the module's own setting). Hooks do not run.
    #[wasm_bindgen(unchecked_return_type = "[Tensor, Tensor]")]
    pub fn attention(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] query: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] value: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ keyPaddingMask?: Tensor; causal?: boolean }")]
        options: Option<JsValue>,
    ) -> JsResult<Array> {
        const OP: &str = "attention";
        let Kind::Attention(mha) = &self.entry.kind else {
            return Err(js_error(
                OP,
                ErrorKind::Argument,
                format!("needs a MultiheadAttention module, this is a {}", self.entry.name()),
            ));
        };
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["keyPaddingMask", "causal"])?;
        let (q, k, v) =
            (args::tensor(OP, "query", &query)?, args::tensor(OP, "key", &key)?, args::tensor(OP, "value", &value)?);
        let mask = o.opt_tensor("keyPaddingMask")?;
        let causal = o.bool("causal", mha.causal)?;
        let (out, weights) = mha.attend(&q, &k, &v, mask.as_ref(), causal).within(OP)?;
        Ok(Array::of2(&JsTensor::wrap(out).into(), &JsTensor::wrap(weights).into()))
    }

    /// A PyTorch-style summary: `Sequential(\n  (0): Linear(in_features=4, ...)\n)`.
    #[wasm_bindgen(js_name = toString)]
    pub fn to_js_string(&self) -> String {
        self.entry.layer.repr()
    }
}
