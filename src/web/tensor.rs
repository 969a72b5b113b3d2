//! The JS `Tensor` class: creation, properties, async readback, disposal.
//! Op methods live in `ops.rs`, autodiff in `autograd.rs`.

use super::args::{self, describe, device_name, dtype_name, Opts};
use super::{js_error, rejection, JsResult, Kind, Named, Slot};
use crate::backend::CpuBuffer;
use crate::dtype::DType;
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

/// A creation function's `{ dtype, device }` options (`dtype` defaults to `default`).
fn placement(op: &str, options: &Option<JsValue>, default: DType) -> JsResult<(DType, crate::device::Device)> {
    let bag = options.clone().unwrap_or(JsValue::UNDEFINED);
    let o = Opts::known(op, &bag, &["dtype", "device"])?;
    let dtype = match o.get("dtype") {
        v if v.is_undefined() || v.is_null() => default,
        v => args::dtype(op, &v)?,
    };
    Ok((dtype, args::device(op, &o.get("device"))?))
}

fn place(op: &str, t: Tensor, device: &crate::device::Device) -> JsResult<JsTensor> {
    Ok(JsTensor::wrap(if device.is_gpu() { t.to(device).named(op)? } else { t }))
}

/// Refuses a dtype that sampling cannot produce (PyTorch: "normal_kernel_cpu"
/// not implemented for 'Int'): samples are floating point.
fn float_only(op: &str, dtype: DType) -> JsResult<()> {
    if !dtype.is_float() {
        return Err(js_error(
            op,
            Kind::DType,
            format!("dtype {} is not supported: samples are floating point (float32 or float64)", dtype_name(dtype)),
        ));
    }
    Ok(())
}

/// Refuses float values that an int32 conversion would round or saturate.
fn check_int32(op: &str, values: impl Iterator<Item = f64>) -> JsResult<()> {
    for (i, v) in values.enumerate() {
        args::value_for(op, &format!("data[{i}]"), v, DType::I32)?;
    }
    Ok(())
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// The registry id of this handle (used to find the tensor behind a JS value).
    #[wasm_bindgen(getter = _skiffId, skip_typescript)]
    pub fn skiff_id(&self) -> u32 {
        self.id()
    }

    /// A tensor from a typed array (Float32Array, Float64Array, Int32Array or
    /// Uint8Array for bool) and a shape; `options.dtype` converts (float
    /// values to int32 only when they are integers in range), and
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
        let dtype = match o.get("dtype") {
            v if v.is_undefined() || v.is_null() => None,
            v => Some(args::dtype(OP, &v)?),
        };
        let device = args::device(OP, &o.get("device"))?;
        let to_int = dtype == Some(DType::I32);
        let t = if let Some(a) = data.dyn_ref::<Float32Array>() {
            let v = a.to_vec();
            if to_int {
                check_int32(OP, v.iter().map(|&x| x as f64))?;
            }
            Tensor::from_vec(v, &shape)
        } else if let Some(a) = data.dyn_ref::<Float64Array>() {
            let v = a.to_vec();
            if to_int {
                check_int32(OP, v.iter().copied())?;
            }
            Tensor::from_vec(v, &shape)
        } else if let Some(a) = data.dyn_ref::<Int32Array>() {
            Tensor::from_vec(a.to_vec(), &shape)
        } else if let Some(a) = data.dyn_ref::<Uint8Array>() {
            Tensor::from_vec(a.to_vec().into_iter().map(|b| (b != 0) as u8).collect::<Vec<u8>>(), &shape)
        } else {
            return Err(js_error(
                OP,
                Kind::Argument,
                format!("data must be a Float32Array, Float64Array, Int32Array or Uint8Array, got {}", describe(&data)),
            ));
        };
        let t = t.named(OP)?;
        let t = match dtype {
            Some(d) => t.to_dtype(d).named(OP)?,
            None => t,
        };
        place(OP, t, &device)
    }

    /// Zeros of `shape`.
    pub fn zeros(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "zeros";
        let shape = args::dims(OP, "shape", &shape)?;
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, 0.0, dtype, &device).named(OP)?))
    }

    /// Ones of `shape`.
    pub fn ones(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "ones";
        let shape = args::dims(OP, "shape", &shape)?;
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, 1.0, dtype, &device).named(OP)?))
    }

    /// `value` everywhere in `shape`: a number (NaN and infinities too; an
    /// int32 tensor takes integers in its range only), or a boolean (a bool
    /// tensor unless `options.dtype` says otherwise, as in PyTorch).
    pub fn full(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | boolean")] value: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "full";
        let shape = args::dims(OP, "shape", &shape)?;
        let (number, default) = match value.as_bool() {
            Some(b) => (b as u8 as f64, DType::Bool),
            None => (args::number(OP, "value", &value)?, DType::F32),
        };
        let (dtype, device) = placement(OP, &options, default)?;
        let number = args::value_for(OP, "value", number, dtype)?;
        Ok(JsTensor::wrap(Tensor::full_on(&shape, number, dtype, &device).named(OP)?))
    }

    /// Standard normal samples (seeded by `manualSeed`); float dtypes only.
    pub fn randn(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "randn";
        let shape = args::dims(OP, "shape", &shape)?;
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        float_only(OP, dtype)?;
        Ok(JsTensor::wrap(Tensor::randn_on(&shape, dtype, &device).named(OP)?))
    }

    /// Uniform samples in [0, 1); float dtypes only.
    pub fn rand(
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ dtype?: DType, device?: DeviceName }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "rand";
        let shape = args::dims(OP, "shape", &shape)?;
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        float_only(OP, dtype)?;
        Ok(JsTensor::wrap(Tensor::rand_on(&shape, dtype, &device).named(OP)?))
    }

    /// Integers uniform in [low, high) (int32).
    pub fn randint(
        #[wasm_bindgen(unchecked_param_type = "number")] low: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] high: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ device?: DeviceName }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "randint";
        let (low, high) = (args::int32_arg(OP, "low", &low)?, args::int32_arg(OP, "high", &high)?);
        let shape = args::dims(OP, "shape", &shape)?;
        let bag = options.unwrap_or(JsValue::UNDEFINED);
        let device = args::device(OP, &Opts::known(OP, &bag, &["device"])?.get("device"))?;
        if high <= low {
            return Err(js_error(OP, Kind::Value, format!("low must be below high, got low={low} >= high={high}")));
        }
        Ok(JsTensor::wrap(Tensor::randint_on(low, high, &shape, &device).named(OP)?))
    }

    /// start, start + step, ... below end (above it for a negative step).
    /// float32 by default; int32 needs integer start and step with every
    /// value in its range; bool is refused (as in PyTorch).
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
        if step == 0.0 {
            return Err(js_error(OP, Kind::Value, "step must be nonzero"));
        }
        // The count is checked (in f64, before anything is allocated) by Tensor::arange.
        let n = ((end - start) / step).ceil().max(0.0);
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        match dtype {
            DType::Bool => {
                return Err(js_error(OP, Kind::DType, "dtype bool is not supported (use int32 or a float dtype)"))
            }
            DType::I32 => {
                args::value_for(OP, "start", start, DType::I32)?;
                args::value_for(OP, "step", step, DType::I32)?;
                if n > 0.0 {
                    args::value_for(OP, "the last value", start + (n - 1.0) * step, DType::I32)?;
                }
            }
            _ => {}
        }
        Ok(JsTensor::wrap(Tensor::arange_on(start, end, step, dtype, &device).named(OP)?))
    }

    /// `steps` evenly spaced values from start to end (float dtypes).
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
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        Ok(JsTensor::wrap(Tensor::linspace_on(start, end, steps, dtype, &device).named(OP)?))
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
        let (dtype, device) = placement(OP, &options, DType::F32)?;
        Ok(JsTensor::wrap(Tensor::eye_on(n, dtype, &device).named(OP)?))
    }

    /// The shape, as an array of numbers.
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn shape(&self) -> JsResult<js_sys::Array> {
        Ok(self.get("shape")?.shape().iter().map(|&d| JsValue::from(d as u32)).collect())
    }

    /// 'float32' | 'float64' | 'int32' | 'bool'.
    #[wasm_bindgen(getter, unchecked_return_type = "D")]
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
    /// Float32Array (float16 values too, exactly: not every engine has
    /// Float16Array), Float64Array, Int32Array, or Uint8Array for bool.
    #[wasm_bindgen(unchecked_return_type = "Promise<DataOf<D>>")]
    pub fn data(&self) -> JsResult<js_sys::Promise> {
        let t = self.get("data")?;
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let host = crate::dispatch::host_copy_async(&t).await.map_err(|e| rejection("data", e))?;
            Ok(match host {
                CpuBuffer::F32(v) => Float32Array::from(&v[..]).into(),
                CpuBuffer::F64(v) => Float64Array::from(&v[..]).into(),
                CpuBuffer::F16(v) => Float32Array::from(&v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>()[..]).into(),
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
            return Err(js_error(
                "item",
                Kind::Shape,
                format!("needs a one-element tensor, got shape {:?}", t.shape()),
            ));
        }
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let host = crate::dispatch::host_copy_async(&t).await.map_err(|e| rejection("item", e))?;
            let first = crate::with_cpu_buffer!(&host, v, T => v.first().map(|&x| crate::backend::Elem::to_f64(x)));
            Ok(JsValue::from_f64(first.unwrap_or(f64::NAN)))
        }))
    }

    /// A copy on `device` without blocking (moving off the GPU awaits a
    /// readback); resolves to this tensor's own copy. Recorded by autodiff.
    #[wasm_bindgen(js_name = toAsync, unchecked_return_type = "Promise<Tensor<D>>")]
    pub fn to_async(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DeviceName")] device: JsValue,
    ) -> JsResult<js_sys::Promise> {
        let t = self.get("toAsync")?;
        let device = args::device("toAsync", &device)?;
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let moved = t.to_async(&device).await.map_err(|e| rejection("toAsync", e))?;
            Ok(JsTensor::wrap(moved).into())
        }))
    }

    /// A new handle to the same tensor (disposing one leaves the other usable).
    #[wasm_bindgen(js_name = handle, unchecked_return_type = "Tensor<D>")]
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
