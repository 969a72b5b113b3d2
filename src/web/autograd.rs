//! Autodiff from JS: requiresGrad_, backward, .grad, grad(), tensor hooks and
//! custom functions whose forward and backward are JS functions (the seed's
//! PyLayer, PyTorch's autograd.Function).

use super::args::{self, js_call, Opts};
use super::{js_error, JsResult, JsTensor, Kind, Named, SingleThreaded};
use crate::autograd::{BackwardOptions, Function, FunctionCtx, GradOptions};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use js_sys::Array;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

thread_local! {
    /// The first error a JS gradient hook threw during the running backward.
    /// Hooks cannot fail inside the engine (they return the gradient or
    /// nothing), so the backward call reports it when it returns.
    static HOOK_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// The error a gradient hook threw during `op` (backward or grad), if any.
fn take_hook_error(op: &str) -> JsResult<()> {
    match HOOK_ERROR.with(|e| e.borrow_mut().take()) {
        Some(e) => Err(e).within(op),
        None => Ok(()),
    }
}

/// Removes a hook registered with `registerHook` or a module hook.
#[wasm_bindgen]
pub struct HookHandle {
    inner: RefCell<Option<crate::autograd::hooks::HookHandle>>,
}

#[wasm_bindgen]
impl HookHandle {
    /// Removes the hook (a second call does nothing).
    pub fn remove(&self) {
        if let Some(h) = self.inner.borrow_mut().take() {
            h.remove();
        }
    }
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// Whether autodiff records ops on this tensor.
    #[wasm_bindgen(getter = requiresGrad)]
    pub fn requires_grad(&self) -> JsResult<bool> {
        Ok(self.get("requiresGrad")?.requires_grad())
    }

    /// Marks a leaf as requiring grad (the JS wrapper returns `this`).
    #[wasm_bindgen(js_name = requiresGrad_, unchecked_return_type = "Tensor<D>")]
    pub fn set_requires_grad(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean | null")] on: Option<JsValue>,
    ) -> JsResult<()> {
        const OP: &str = "requiresGrad_";
        let t = self.get(OP)?;
        let on = args::opt_bool(OP, "on", &on.unwrap_or_default(), true)?;
        t.requires_grad_(on).named(OP)?;
        Ok(())
    }

    /// True for tensors created by the user (not by a recorded op).
    #[wasm_bindgen(getter = isLeaf)]
    pub fn is_leaf(&self) -> JsResult<bool> {
        Ok(self.get("isLeaf")?.is_leaf())
    }

    /// The name of the op that produced this tensor, if recorded.
    #[wasm_bindgen(getter = gradFn)]
    pub fn grad_fn(&self) -> JsResult<Option<String>> {
        Ok(self.get("gradFn")?.grad_fn_name())
    }

    /// The accumulated gradient (a new handle each read), or undefined.
    #[wasm_bindgen(getter, unchecked_return_type = "Tensor<D> | undefined")]
    pub fn grad(&self) -> JsResult<Option<JsTensor>> {
        Ok(self.get("grad")?.grad().map(JsTensor::wrap))
    }

    /// Replaces the gradient (`undefined`/`null` clears it).
    #[wasm_bindgen(setter)]
    pub fn set_grad(&self, #[wasm_bindgen(unchecked_param_type = "Tensor<D> | undefined")] g: JsValue) -> JsResult<()> {
        let t = self.get("grad")?;
        let g = if g.is_undefined() || g.is_null() { None } else { Some(args::tensor("grad", "grad", &g)?) };
        if let Some(g) = &g {
            // Named for the JS setter: `t.grad = g`.
            t.check_grad_fits("grad", g).named("grad")?;
        }
        t.set_grad(g).named("grad")
    }

    /// Keeps `.grad` on this non-leaf after backward.
    #[wasm_bindgen(js_name = retainGrad)]
    pub fn retain_grad(&self) -> JsResult<()> {
        const OP: &str = "retainGrad";
        let t = self.get(OP)?;
        // PyTorch: "can't retain_grad on Tensor that has requires_grad=False".
        if !t.requires_grad() {
            return Err(js_error(
                OP,
                Kind::Autograd,
                format!("the tensor (shape {:?}) does not require grad", t.shape()),
            ));
        }
        t.retain_grad().named(OP)
    }

    /// Backpropagates from this tensor (a scalar, or pass `grad` of its
    /// shape), accumulating into the leaves' `.grad`.
    pub fn backward(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Tensor<D>")] grad: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "{ retainGraph?: boolean; createGraph?: boolean }")]
        options: Option<JsValue>,
    ) -> JsResult<()> {
        const OP: &str = "backward";
        let t = self.get(OP)?;
        let grad = match grad {
            Some(g) if !g.is_undefined() && !g.is_null() => Some(args::tensor(OP, "grad", &g)?),
            _ => None,
        };
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = Opts::known(OP, &options, &["retainGraph", "createGraph"])?;
        let create_graph = o.bool("createGraph", false)?;
        let opts = BackwardOptions { retain_graph: o.bool("retainGraph", create_graph)?, create_graph };
        HOOK_ERROR.with(|e| e.borrow_mut().take());
        let r = t.backward_with(grad.as_ref(), opts);
        take_hook_error(OP)?;
        r.within(OP)
    }

    /// Runs `hook(grad)` on the gradient flowing into this tensor; a returned
    /// Tensor replaces it. Returns a handle whose `remove()` unregisters it.
    #[wasm_bindgen(js_name = registerHook)]
    pub fn register_hook(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(grad: Tensor<D>) => Tensor | undefined | void")] hook: JsValue,
    ) -> JsResult<HookHandle> {
        const OP: &str = "registerHook";
        let t = self.get(OP)?;
        let hook = SingleThreaded(args::function_arg(OP, "hook", &hook)?);
        let handle = t.register_hook(move |g| run_hook(&hook.0, g)).named(OP)?;
        Ok(HookHandle { inner: RefCell::new(Some(handle)) })
    }
}

/// Calls a JS gradient hook; a throw or a bad return value is remembered for
/// the backward call to report, and the gradient passes unchanged.
fn run_hook(hook: &js_sys::Function, g: &Tensor) -> Option<Tensor> {
    if crate::dispatch::record::active() {
        // A replay would not call it: whatever it does in JS would happen once.
        let e = crate::dispatch::record::refuse("registerHook", "a JS gradient hook (a callback)");
        HOOK_ERROR.with(|slot| {
            slot.borrow_mut().get_or_insert(e);
        });
        return None;
    }
    let r = js_call("registerHook", "the hook", hook.call1(&JsValue::NULL, &JsTensor::wrap(g.clone()).into()));
    let out = r.and_then(|v| {
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        args::tensor("registerHook", "the hook's return value", &v)
            .map(Some)
            .map_err(|_| Error::value("registerHook", "a hook must return a Tensor or undefined"))
    });
    match out {
        Ok(t) => t,
        Err(e) => {
            HOOK_ERROR.with(|slot| {
                slot.borrow_mut().get_or_insert(e);
            });
            None
        }
    }
}

/// Gradients of `outputs` with respect to `inputs` (PyTorch's
/// `torch.autograd.grad`): one entry per input, undefined where unused (with
/// `allowUnused`).
#[wasm_bindgen(js_name = grad, unchecked_return_type = "(Tensor | undefined)[]")]
pub fn grad_fn(
    #[wasm_bindgen(unchecked_param_type = "Tensor | Tensor[]")] outputs: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Tensor | Tensor[]")] inputs: JsValue,
    #[wasm_bindgen(
        unchecked_optional_param_type = "{ gradOutputs?: Tensor | Tensor[]; createGraph?: boolean; retainGraph?: boolean; allowUnused?: boolean }"
    )]
    options: Option<JsValue>,
) -> JsResult<Array> {
    const OP: &str = "grad";
    let list = |name: &str, v: &JsValue| -> JsResult<Vec<Tensor>> {
        if Array::is_array(v) {
            args::tensors(OP, name, v)
        } else {
            Ok(vec![args::tensor(OP, name, v)?])
        }
    };
    let outputs = list("outputs", &outputs)?;
    let inputs = list("inputs", &inputs)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o = Opts::known(OP, &options, &["gradOutputs", "createGraph", "retainGraph", "allowUnused"])?;
    let grad_outputs = match o.get("gradOutputs") {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(list("gradOutputs", &v)?),
    };
    let create_graph = o.bool("createGraph", false)?;
    let opts = GradOptions {
        create_graph,
        retain_graph: Some(o.bool("retainGraph", create_graph)?),
        allow_unused: o.bool("allowUnused", false)?,
    };
    HOOK_ERROR.with(|e| e.borrow_mut().take());
    let r = crate::autograd::grad(&outputs, &inputs, grad_outputs.as_deref(), opts);
    take_hook_error(OP)?;
    Ok(r.within(OP)?.into_iter().map(|g| g.map_or(JsValue::UNDEFINED, |t| JsTensor::wrap(t).into())).collect())
}

/// The `ctx` a custom function's forward and backward share: tensors saved
/// in forward come back in backward (version-checked, like built-in ops), and
/// any other property set on it in JS (`ctx.alpha = 2`) stays on it.
#[wasm_bindgen(js_name = FunctionCtx)]
pub struct JsFunctionCtx {
    saved: Rc<RefCell<Vec<Tensor>>>,
    needs: Rc<RefCell<Vec<bool>>>,
}

impl Default for JsFunctionCtx {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = FunctionCtx)]
impl JsFunctionCtx {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsFunctionCtx {
        JsFunctionCtx { saved: Rc::default(), needs: Rc::default() }
    }

    /// Saves tensors for backward (call it in forward; replaces earlier saves).
    #[wasm_bindgen(js_name = saveForBackward)]
    pub fn save_for_backward(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor[]")] tensors: JsValue,
    ) -> JsResult<()> {
        *self.saved.borrow_mut() = args::tensors("saveForBackward", "tensors", &tensors)?;
        Ok(())
    }

    /// The tensors saved in forward, as new handles.
    #[wasm_bindgen(getter = savedTensors, unchecked_return_type = "Tensor[]")]
    pub fn saved_tensors(&self) -> Array {
        args::handles(self.saved.borrow().clone())
    }

    /// Whether input `i` requires a gradient (false past the last input).
    #[wasm_bindgen(js_name = needsInputGrad)]
    pub fn needs_input_grad(&self, #[wasm_bindgen(unchecked_param_type = "number")] i: JsValue) -> JsResult<bool> {
        let i = args::usize_arg("needsInputGrad", "i", &i)?;
        Ok(self.needs.borrow().get(i).copied().unwrap_or(false))
    }
}

/// A custom function built from two JS functions and the shared ctx.
struct JsFunction {
    name: String,
    forward: SingleThreaded<js_sys::Function>,
    backward: SingleThreaded<js_sys::Function>,
    saved: SingleThreaded<Rc<RefCell<Vec<Tensor>>>>,
    needs: SingleThreaded<Rc<RefCell<Vec<bool>>>>,
}

/// Reads a Tensor or an array of Tensors (or undefined where `optional`).
fn returned(op: &'static str, v: &JsValue, optional: bool) -> Result<Vec<Option<Tensor>>> {
    let one = |x: &JsValue, what: &str| -> Result<Option<Tensor>> {
        if optional && (x.is_undefined() || x.is_null()) {
            return Ok(None);
        }
        args::tensor(op, what, x).map(Some).map_err(|_| {
            Error::value(
                op,
                format!(
                    "{what} must be a Tensor{}, got {}",
                    if optional { " or undefined" } else { "" },
                    args::describe(x)
                ),
            )
        })
    };
    if let Some(list) = args::as_array(v) {
        list.iter().enumerate().map(|(i, x)| one(&x, &format!("returned value [{i}]"))).collect()
    } else {
        Ok(vec![one(v, "the returned value")?])
    }
}

impl Function for JsFunction {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        *self.needs.0.borrow_mut() = (0..inputs.len()).map(|i| ctx.needs_input_grad(i)).collect();
        self.saved.0.borrow_mut().clear();
        let xs = args::handles(inputs.to_vec());
        let out = js_call("Function.forward", "forward", self.forward.0.apply(&JsValue::NULL, &xs))?;
        let outs = returned("Function.forward", &out, false)?.into_iter().flatten().collect();
        let saved = self.saved.0.borrow().clone();
        ctx.save_for_backward(&saved.iter().collect::<Vec<_>>());
        Ok(outs)
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        // The engine's version-checked copies of what forward saved.
        *self.saved.0.borrow_mut() = ctx.saved_tensors().to_vec();
        let gs = args::handles(grads.to_vec());
        let out = js_call("Function.backward", "backward", self.backward.0.apply(&JsValue::NULL, &gs))?;
        returned("Function.backward", &out, true)
    }
}

/// Runs a custom function: `forward(...inputs)` and later `backward(...grads)`
/// are JS closures over `ctx` (the wrapper's `new Function({...}).apply`).
/// Returns the outputs as an array.
#[wasm_bindgen(js_name = applyFunction, skip_typescript)]
pub fn apply_function(
    name: JsValue,
    ctx: &JsFunctionCtx,
    forward: JsValue,
    backward: JsValue,
    inputs: JsValue,
) -> JsResult<Array> {
    const OP: &str = "Function.apply";
    let name = args::string_arg(OP, "name", &name)?;
    let (forward, backward) =
        (args::function_arg(OP, "forward", &forward)?, args::function_arg(OP, "backward", &backward)?);
    let inputs = args::tensors(OP, "inputs", &inputs)?;
    let f = JsFunction {
        name,
        forward: SingleThreaded(forward),
        backward: SingleThreaded(backward),
        saved: SingleThreaded(ctx.saved.clone()),
        needs: SingleThreaded(ctx.needs.clone()),
    };
    let outs = crate::autograd::function::apply_function(Arc::new(f), &inputs).within(OP)?;
    Ok(args::handles(outs))
}
