//! `skiff.jit(fn)` from JS: a compiled function (`crate::jit::compile`)
//! around a synchronous JS function of tensors. The first call (and a call
//! whose guard no cached program matches) runs `fn` eagerly while
//! recording; later calls replay without entering JS. JS callbacks that
//! would not run on a replay (gradient and forward hooks) are capture
//! errors naming the hook.

use super::args::{self, js_call};
use super::{js_error, JsResult, JsTensor, Kind, Named};
use crate::error::{Error, Result};
use crate::jit::{compile, Compiled};
use crate::tensor::Tensor;
use js_sys::Array;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

const OP: &str = "jit";

type Body = Box<dyn FnMut(&[Tensor]) -> Result<Vec<Tensor>>>;

/// The wasm side of a compiled function; `web/api.js` wraps it in a callable.
#[wasm_bindgen(js_name = Jit, skip_typescript)]
pub struct JsJit {
    compiled: RefCell<Compiled<Body>>,
    /// Whether `fn` returned one Tensor (not an array) when it was captured.
    single: Rc<Cell<bool>>,
}

/// `fn`'s results: one Tensor or an array of Tensors (never a promise).
fn results(v: &JsValue, single: &Cell<bool>) -> Result<Vec<Tensor>> {
    let then = js_sys::Reflect::get(v, &JsValue::from_str("then")).ok();
    if v.is_object() && then.is_some_and(|t| t.is_function()) {
        return Err(Error::value(
            OP,
            "the function returned a Promise: jit captures synchronous code (await readbacks such as data() outside it)",
        ));
    }
    let one = |x: &JsValue, what: String| {
        args::tensor(OP, &what, x)
            .map_err(|_| Error::value(OP, format!("{what} must be a Tensor, got {}", args::describe(x))))
    };
    match args::as_array(v) {
        Some(list) => {
            single.set(false);
            list.iter().enumerate().map(|(i, x)| one(&x, format!("returned value [{i}]"))).collect()
        }
        None => {
            single.set(true);
            Ok(vec![one(v, "the returned value".into())?])
        }
    }
}

#[wasm_bindgen(js_class = Jit)]
impl JsJit {
    /// Compiles `f`, a function of tensors returning a Tensor or an array of them.
    #[wasm_bindgen(constructor)]
    pub fn new(f: JsValue, capacity: JsValue) -> JsResult<JsJit> {
        let f = args::function_arg(OP, "fn", &f)?;
        let single = Rc::new(Cell::new(true));
        let seen = single.clone();
        let body: Body = Box::new(move |inputs: &[Tensor]| {
            let xs = args::handles(inputs.to_vec());
            let out = js_call(OP, "the function", f.apply(&JsValue::NULL, &xs))?;
            results(&out, &seen)
        });
        let mut compiled = compile(body);
        if !capacity.is_undefined() {
            let n = args::usize_arg(OP, "cacheSize", &capacity)?;
            if n == 0 {
                return Err(js_error(OP, Kind::Argument, "cacheSize must be at least 1"));
            }
            compiled = compiled.with_capacity(n);
        }
        Ok(JsJit { compiled: RefCell::new(compiled), single })
    }

    /// Calls the compiled function on `inputs` (an array of tensors).
    #[wasm_bindgen(unchecked_return_type = "Tensor | Tensor[]")]
    pub fn call(&self, #[wasm_bindgen(unchecked_param_type = "Tensor[]")] inputs: JsValue) -> JsResult<JsValue> {
        let inputs = args::tensors(OP, "inputs", &inputs)?;
        let mut compiled = self.compiled.try_borrow_mut().map_err(|_| {
            js_error(OP, Kind::Value, "a compiled function was called from inside itself (captures do not nest)")
        })?;
        let outs = compiled.call(&inputs).within(OP)?;
        if self.single.get() && outs.len() == 1 {
            return Ok(JsTensor::wrap(outs.into_iter().next().expect("one output")).into());
        }
        Ok(args::handles(outs).into())
    }

    /// Why each capture happened (first call, which guard missed), latest last.
    #[wasm_bindgen(getter, unchecked_return_type = "string[]")]
    pub fn log(&self) -> Array {
        self.compiled.borrow().log().iter().map(|l| JsValue::from_str(l)).collect()
    }

    /// How many calls ran the function (captured).
    #[wasm_bindgen(getter)]
    pub fn captures(&self) -> f64 {
        self.compiled.borrow().captures() as f64
    }

    /// How many calls replayed a program.
    #[wasm_bindgen(getter)]
    pub fn replays(&self) -> f64 {
        self.compiled.borrow().replays() as f64
    }

    /// The text of the most recently used program ("" before one is kept).
    #[wasm_bindgen(js_name = programText)]
    pub fn program_text(&self) -> String {
        self.compiled.borrow().programs().first().map(|t| t.program().to_string()).unwrap_or_default()
    }

    /// How many kernels the most recently used program runs (0 before one is kept).
    #[wasm_bindgen(getter)]
    pub fn kernels(&self) -> f64 {
        self.compiled.borrow().programs().first().map_or(0.0, |t| t.program().kernels() as f64)
    }

    /// Drops the cached programs: the next call captures.
    pub fn clear(&self) {
        self.compiled.borrow_mut().clear();
    }
}

/// A model saved by `jit::save_inference_model` (Rust) or `Traced::save`:
/// its forward program and weights, run with `run`.
#[wasm_bindgen(js_name = InferenceModel)]
pub struct JsInferenceModel {
    traced: crate::jit::Traced,
}

/// Loads a saved model (safetensors bytes with a skiff program) onto
/// `device` (default: the default device). A file that holds no program a
/// capture could have made is an error.
#[wasm_bindgen(js_name = loadInferenceModel)]
pub fn load_inference_model(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ device?: DeviceName }")] options: Option<JsValue>,
) -> JsResult<JsInferenceModel> {
    const OP: &str = "loadInferenceModel";
    let bytes = super::nn::io::as_bytes(&bytes).ok_or_else(|| {
        js_error(
            OP,
            Kind::Argument,
            format!("bytes must be a Uint8Array or ArrayBuffer, got {}", args::describe(&bytes)),
        )
    })?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o = super::Opts::known(OP, &options, &["device"])?;
    let device = args::device(OP, &o.get("device"))?;
    Ok(JsInferenceModel { traced: crate::jit::load(&bytes, &device).named(OP)? })
}

#[wasm_bindgen(js_class = InferenceModel)]
impl JsInferenceModel {
    /// Runs the model on `inputs` (one Tensor, or an array), which must have
    /// the dtypes and shapes it was saved with: a Tensor, or an array for several outputs.
    #[wasm_bindgen(unchecked_return_type = "Tensor | Tensor[]")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor | Tensor[]")] inputs: JsValue,
    ) -> JsResult<JsValue> {
        const OP: &str = "InferenceModel.run";
        let inputs = if args::as_array(&inputs).is_some() {
            args::tensors(OP, "inputs", &inputs)?
        } else {
            vec![args::tensor(OP, "input", &inputs)?]
        };
        let mut outs = self.traced.run(&inputs).named(OP)?;
        if outs.len() == 1 {
            return Ok(JsTensor::wrap(outs.remove(0)).into());
        }
        Ok(args::handles(outs).into())
    }

    /// What each input must be: `[{ dtype, shape }]`.
    #[wasm_bindgen(getter, unchecked_return_type = "{ dtype: DType; shape: number[] }[]")]
    pub fn inputs(&self) -> Array {
        self.traced
            .input_specs()
            .map(|(dtype, shape)| {
                let shape: Array = shape.iter().map(|&d| JsValue::from(d as f64)).collect();
                super::args::object(&[("dtype", args::dtype_name(dtype).into()), ("shape", shape.into())])
            })
            .collect()
    }

    /// The program's text.
    #[wasm_bindgen(getter)]
    pub fn program(&self) -> String {
        self.traced.program().to_string()
    }
}
