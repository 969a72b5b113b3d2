//! The JS `Tensor` class: creation, properties, async readback, disposal.
//! Op methods live in `ops.rs`, autodiff in `autograd.rs`.

use super::args::{self, describe, device_name, dtype_name, Opts};
use super::{js_error, JsResult, Slot};
use crate::backend::cpu::CpuBuffer;
use crate::dtype::DType;
use crate::shape::MAX_ELEMENTS;
use crate::tensor::Tensor;
use js_sys::{Float32Array, Float64Array, Int32Array, Uint8Array};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// A tensor handle. Create tensors with `fromData`, `zeros`, `randn`, ...
/// (or the wrapper's `tensor()`); free them with `dispose()` or `tidy()`.
#[wasm_bindgen(js_name = Tensor)]
pub struct JsTensor {
    pub(super) slot: Rc<Slot>,
}

/// A creation function's `{ dtype, device }` options.
fn placement(op: &'static str, options: &Option<JsValue>) -> JsResult<(DType, crate::device::Device)> {
    let bag = options.clone().unwrap_or(JsValue::UNDEFINED);
    let o = Opts::known(op, &bag, &["dtype", "device"])?;
    let dtype = match o.get("dtype") {
        v if v.is_undefined() || v.is_null() => DType::F32,
        v => args::dtype(op, &v)?,
    };
    Ok((dtype, args::device(op, &o.get("device"))?))
}

fn place(t: Tensor, device: &crate::device::Device) -> JsResult<JsTensor> {
    Ok(JsTensor::wrap(if device.is_gpu() { t.to(device)? } else { t }))
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// The registry id of this handle (used to find the tensor behind a JS value).
    #[wasm_bindgen(getter = _skiffId, skip_typescript)]
    pub fn skiff_id(&self) -> u32 {
        self.id()
    }

    /// A tensor from a typed array (Float32Array, Float64Array, Int32Array or
    /// Uint8Array for bool) and a shape; `options.dtype` converts, and
    /// `options.device` places it ('cpu' | 'webgpu'; default: init's choice).
    #[wasm_bindgen(js_name = fromData)]
    pub fn from_data(
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Float64Array | Int32Array | Uint8Array")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "tensor";
        let shape = args::dims(OP, "shape", &shape)?;
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = Opts::known(OP, &options, &["dtype", "device"])?;
        let t = if let Some(a) = data.dyn_ref::<Float32Array>() {
            Tensor::from_vec(a.to_vec(), &shape)?
        } else if let Some(a) = data.dyn_ref::<Float64Array>() {
            Tensor::from_vec(a.to_vec(), &shape)?
        } else if let Some(a) = data.dyn_ref::<Int32Array>() {
            Tensor::from_vec(a.to_vec(), &shape)?
        } else if let Some(a) = data.dyn_ref::<Uint8Array>() {
            Tensor::from_vec(a.to_vec().into_iter().map(|b| (b != 0) as u8).collect::<Vec<u8>>(), &shape)?
        } else {
            return Err(js_error(
                OP,
                format!("data must be a Float32Array, Float64Array, Int32Array or Uint8Array, got {}", describe(&data)),
            ));
        };
        let t = match o.get("dtype") {
            v if v.is_undefined() || v.is_null() => t,
            v => t.to_dtype(args::dtype(OP, &v)?)?,
        };
        place(t, &args::device(OP, &o.get("device"))?)
    }

    /// Zeros of `shape`.
    pub fn zeros(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        let shape = args::dims("zeros", "shape", &shape)?;
        let (dtype, device) = placement("zeros", &options)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, 0.0, dtype, &device).map_err(|e| e.renamed("zeros"))?))
    }

    /// Ones of `shape`.
    pub fn ones(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        let shape = args::dims("ones", "shape", &shape)?;
        let (dtype, device) = placement("ones", &options)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, 1.0, dtype, &device).map_err(|e| e.renamed("ones"))?))
    }

    /// `value` everywhere in `shape`.
    pub fn full(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] value: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        let shape = args::dims("full", "shape", &shape)?;
        // Any number (NaN and infinities too), but not a string or undefined.
        let value = value
            .as_f64()
            .ok_or_else(|| js_error("full", format!("value must be a number, got {}", describe(&value))))?;
        let (dtype, device) = placement("full", &options)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, value, dtype, &device)?))
    }

    /// Standard normal samples (seeded by `manualSeed`).
    pub fn randn(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        let shape = args::dims("randn", "shape", &shape)?;
        let (dtype, device) = placement("randn", &options)?;
        place(Tensor::randn(&shape, dtype)?, &device)
    }

    /// Uniform samples in [0, 1).
    pub fn rand(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        let shape = args::dims("rand", "shape", &shape)?;
        let (dtype, device) = placement("rand", &options)?;
        place(Tensor::rand(&shape, dtype)?, &device)
    }

    /// Integers uniform in [low, high) (int32).
    pub fn randint(
        #[wasm_bindgen(unchecked_param_type = "number")] low: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] high: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ device?: DeviceName }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "randint";
        let bound = |name: &str, v: &JsValue| -> JsResult<i32> {
            match v.as_f64() {
                Some(n) if n.fract() == 0.0 && n >= i32::MIN as f64 && n <= i32::MAX as f64 => Ok(n as i32),
                _ => Err(js_error(OP, format!("{name} must be an int32 integer, got {}", describe(v)))),
            }
        };
        let (low, high) = (bound("low", &low)?, bound("high", &high)?);
        let shape = args::dims(OP, "shape", &shape)?;
        let bag = options.unwrap_or(JsValue::UNDEFINED);
        let device = args::device(OP, &Opts::known(OP, &bag, &["device"])?.get("device"))?;
        place(Tensor::randint(low, high, &shape)?, &device)
    }

    /// start, start + step, ... below end.
    pub fn arange(
        #[wasm_bindgen(unchecked_param_type = "number")] start: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] end: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] step: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "arange";
        let (start, end) = (args::finite_arg(OP, "start", &start)?, args::finite_arg(OP, "end", &end)?);
        let step = args::finite_arg(OP, "step", &step)?;
        // The length skiff would allocate, checked first: a failed allocation aborts the module.
        let n = ((end - start) / step).ceil();
        if step != 0.0 && n > MAX_ELEMENTS as f64 {
            return Err(js_error(
                OP,
                format!("[{start}, {end}) in steps of {step} has {n} elements, more than one tensor may hold here ({MAX_ELEMENTS})"),
            ));
        }
        let (dtype, device) = placement(OP, &options)?;
        place(Tensor::arange(start, end, step, dtype)?, &device)
    }

    /// `steps` evenly spaced values from start to end.
    pub fn linspace(
        #[wasm_bindgen(unchecked_param_type = "number")] start: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] end: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] steps: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "linspace";
        let (start, end) = (args::finite_arg(OP, "start", &start)?, args::finite_arg(OP, "end", &end)?);
        let steps = args::usize_arg(OP, "steps", &steps)?;
        args::fits(OP, "steps", &[steps])?;
        let (dtype, device) = placement(OP, &options)?;
        place(Tensor::linspace(start, end, steps, dtype)?, &device)
    }

    /// The n x n identity.
    pub fn eye(
        #[wasm_bindgen(unchecked_param_type = "number")] n: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "eye";
        let n = args::usize_arg(OP, "n", &n)?;
        args::fits(OP, "the shape", &[n, n])?;
        let (dtype, device) = placement(OP, &options)?;
        place(Tensor::eye(n, dtype)?, &device)
    }

    /// The shape, as an array of numbers.
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn shape(&self) -> JsResult<js_sys::Array> {
        Ok(self.get("shape")?.shape().iter().map(|&d| JsValue::from(d as u32)).collect())
    }

    /// 'float32' | 'float64' | 'int32' | 'bool'.
    #[wasm_bindgen(getter, unchecked_return_type = "DType")]
    pub fn dtype(&self) -> JsResult<String> {
        Ok(dtype_name(self.get("dtype")?.dtype()).to_string())
    }

    /// 'cpu' | 'webgpu'.
    #[wasm_bindgen(getter, unchecked_return_type = "DeviceName")]
    pub fn device(&self) -> JsResult<String> {
        Ok(device_name(&self.get("device")?.device()).to_string())
    }

    /// Number of dimensions.
    #[wasm_bindgen(getter)]
    pub fn ndim(&self) -> JsResult<usize> {
        Ok(self.get("ndim")?.ndim())
    }

    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> JsResult<usize> {
        Ok(self.get("size")?.numel())
    }

    /// True once `dispose()` (or a tidy scope) freed this handle.
    #[wasm_bindgen(getter, js_name = isDisposed)]
    pub fn is_disposed(&self) -> bool {
        self.slot.tensor.borrow().is_none()
    }

    /// Frees this handle's tensor now (views and autograd records that share
    /// its memory keep it alive). Disposing twice is allowed.
    pub fn dispose(&self) {
        let t = self.slot.tensor.borrow_mut().take();
        drop(t);
    }

    /// The elements in row-major order, read without blocking: a
    /// Float32Array, Float64Array, Int32Array, or Uint8Array for bool.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array | Float64Array | Int32Array | Uint8Array>")]
    pub fn data(&self) -> JsResult<js_sys::Promise> {
        let t = self.get("data")?;
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let host = crate::backend::host_copy_async(&t).await.map_err(|e| JsValue::from(JsError::from(e)))?;
            Ok(match host {
                CpuBuffer::F32(v) => Float32Array::from(&v[..]).into(),
                CpuBuffer::F64(v) => Float64Array::from(&v[..]).into(),
                CpuBuffer::I32(v) => Int32Array::from(&v[..]).into(),
                CpuBuffer::Bool(v) => Uint8Array::from(&v[..]).into(),
            })
        }))
    }

    /// The single element of a one-element tensor, as a number.
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn item(&self) -> JsResult<js_sys::Promise> {
        let t = self.get("item")?;
        if t.numel() != 1 {
            return Err(js_error("item", format!("needs a one-element tensor, got shape {:?}", t.shape())));
        }
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let host = crate::backend::host_copy_async(&t).await.map_err(|e| JsValue::from(JsError::from(e)))?;
            let first =
                crate::with_cpu_buffer!(&host, v, T => v.first().map(|&x| crate::backend::cpu::Elem::to_f64(x)));
            Ok(JsValue::from_f64(first.unwrap_or(f64::NAN)))
        }))
    }

    /// A copy on `device` ('cpu' | 'webgpu'); the same tensor when already there.
    /// Recorded by autodiff, like any op.
    pub fn to(&self, #[wasm_bindgen(unchecked_param_type = "DeviceName")] device: JsValue) -> JsResult<JsTensor> {
        let t = self.get("to")?;
        let device = args::device("to", &device)?;
        if t.device().is_gpu() && t.device() != device && cfg!(target_arch = "wasm32") {
            return Err(js_error(
                "to",
                format!(
                    "moving a tensor of shape {:?} off the GPU reads it back, which cannot block in the browser: use await t.toAsync('{}')",
                    t.shape(),
                    args::device_name(&device)
                ),
            ));
        }
        Ok(JsTensor::wrap(t.to(&device)?))
    }

    /// A copy on `device` without blocking (moving off the GPU awaits a
    /// readback); resolves to this tensor's own copy. Recorded by autodiff.
    #[wasm_bindgen(js_name = toAsync, unchecked_return_type = "Promise<Tensor>")]
    pub fn to_async(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DeviceName")] device: JsValue,
    ) -> JsResult<js_sys::Promise> {
        let t = self.get("toAsync")?;
        let device = args::device("toAsync", &device)?;
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let moved = t.to_async(&device).await.map_err(|e| JsValue::from(JsError::from(e)))?;
            Ok(JsTensor::wrap(moved).into())
        }))
    }

    /// A new handle to the same tensor (disposing one leaves the other usable).
    #[wasm_bindgen(js_name = handle)]
    pub fn new_handle(&self) -> JsResult<JsTensor> {
        Ok(JsTensor::wrap(self.get("handle")?))
    }

    /// "Tensor(shape=[2, 3], dtype=float32, device=cpu)", with the values for
    /// cpu tensors (GPU values need `await data()`).
    #[wasm_bindgen(js_name = toString)]
    pub fn to_js_string(&self) -> String {
        let Ok(t) = self.get("toString") else { return "Tensor(disposed)".into() };
        let head = format!(
            "Tensor(shape={:?}, dtype={}, device={}",
            t.shape(),
            dtype_name(t.dtype()),
            device_name(&t.device())
        );
        if t.device().is_gpu() {
            return head + ")";
        }
        match t.to_f64_vec() {
            Ok(v) if v.len() <= 64 => format!("{head}, data={v:?})"),
            Ok(v) => format!("{head}, data=[{}, {}, ... {} values])", v[0], v[1], v.len()),
            Err(_) => head + ")",
        }
    }
}
