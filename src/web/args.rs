//! Checked conversions of JS arguments. JS gives no types at run time, so each
//! helper names the op and the argument it rejects: `reshape: shape must be an
//! array of non-negative integers, got undefined`.

use super::{disposed, js_error, lookup, JsResult};
use crate::device::Device;
use crate::dtype::DType;
use crate::tensor::Tensor;
use js_sys::{Array, Reflect};
use wasm_bindgen::{JsCast, JsValue};

/// The property every JS tensor handle exposes with its registry id.
pub const ID_PROPERTY: &str = "_skiffId";

thread_local! {
    /// Property keys as JS strings, made once: building one from a Rust `&str`
    /// decodes it through TextDecoder, which cost more than a small op.
    static KEYS: std::cell::RefCell<std::collections::HashMap<String, JsValue>> = Default::default();
}

/// `key` as a JS string, cached (keys are property names: a small, fixed set).
pub fn js_key(key: &str) -> JsValue {
    KEYS.with(|k| {
        let mut k = k.borrow_mut();
        if let Some(v) = k.get(key) {
            return v.clone();
        }
        let v = JsValue::from_str(key);
        k.insert(key.to_string(), v.clone());
        v
    })
}

/// The id a registry handle exposes under `property`, if `v` is such a handle.
pub fn handle_id(v: &JsValue, property: &'static str) -> Option<u32> {
    if !v.is_object() {
        return None;
    }
    // A handle freed by wasm-bindgen's free() throws from its getter: None.
    Reflect::get(v, &js_key(property)).ok().and_then(|i| i.as_f64()).map(|i| i as u32)
}

/// A short description of a JS value for error messages.
pub fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        "undefined".into()
    } else if v.is_null() {
        "null".into()
    } else if let Some(n) = v.as_f64() {
        format!("the number {n}")
    } else if let Some(s) = v.as_string() {
        format!("the string {s:?}")
    } else if let Some(b) = v.as_bool() {
        format!("the boolean {b}")
    } else if Array::is_array(v) {
        "an array".into()
    } else if v.is_function() {
        "a function".into()
    } else {
        "an object".into()
    }
}

/// The tensor behind a JS `Tensor` handle (`name` is the argument's name).
pub fn tensor(op: &'static str, name: &str, v: &JsValue) -> JsResult<Tensor> {
    let Some(id) = handle_id(v, ID_PROPERTY) else {
        return Err(js_error(op, format!("{name} must be a Tensor, got {}", describe(v))));
    };
    let slot = lookup(id).ok_or_else(|| disposed(op))?;
    let t = slot.tensor.borrow().clone();
    t.ok_or_else(|| disposed(op))
}

/// A list of tensors (a JS array of `Tensor`s).
pub fn tensors(op: &'static str, name: &str, v: &JsValue) -> JsResult<Vec<Tensor>> {
    if !Array::is_array(v) {
        return Err(js_error(op, format!("{name} must be an array of Tensors, got {}", describe(v))));
    }
    Array::from(v).iter().enumerate().map(|(i, t)| tensor(op, &format!("{name}[{i}]"), &t)).collect()
}

/// A tensor or a plain number (the right-hand side of `add`, `mul`, ...).
pub enum Operand {
    Scalar(f64),
    Tensor(Tensor),
}

impl Operand {
    pub fn parse(op: &'static str, name: &str, v: &JsValue) -> JsResult<Operand> {
        match v.as_f64() {
            Some(n) => Ok(Operand::Scalar(n)),
            None if v.is_object() => tensor(op, name, v).map(Operand::Tensor),
            None => Err(js_error(op, format!("{name} must be a Tensor or a number, got {}", describe(v)))),
        }
    }
    /// As a tensor: a scalar becomes a 0-d tensor of `like`'s dtype on its device.
    pub fn into_tensor(self, like: &Tensor) -> JsResult<Tensor> {
        match self {
            Operand::Tensor(t) => Ok(t),
            Operand::Scalar(n) => Ok(Tensor::scalar(n, like.dtype()).to(&like.device())?),
        }
    }
}

/// A non-negative integer.
pub fn usize_arg(op: &'static str, name: &str, v: &JsValue) -> JsResult<usize> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(n as usize),
        _ => Err(js_error(op, format!("{name} must be a non-negative integer, got {}", describe(v)))),
    }
}

/// An integer (axes may be negative, counting from the end).
pub fn int_arg(op: &'static str, name: &str, v: &JsValue) -> JsResult<isize> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= i32::MAX as f64 => Ok(n as isize),
        _ => Err(js_error(op, format!("{name} must be an integer, got {}", describe(v)))),
    }
}

/// A finite number (a hyperparameter: learning rate, eps, ...).
pub fn finite_arg(op: &'static str, name: &str, v: &JsValue) -> JsResult<f64> {
    match v.as_f64() {
        Some(n) if n.is_finite() => Ok(n),
        _ => Err(js_error(op, format!("{name} must be a finite number, got {}", describe(v)))),
    }
}

/// An optional integer axis: `undefined`/`null` is None.
pub fn opt_axis(op: &'static str, name: &str, v: &JsValue) -> JsResult<Option<isize>> {
    if v.is_undefined() || v.is_null() {
        Ok(None)
    } else {
        int_arg(op, name, v).map(Some)
    }
}

/// A shape: an array of non-negative integers (a single integer is a 1-D
/// shape) whose elements fit in one tensor.
pub fn dims(op: &'static str, name: &str, v: &JsValue) -> JsResult<Vec<usize>> {
    let dims = sizes(op, name, v)?;
    fits(op, name, &dims)?;
    Ok(dims)
}

/// Non-negative integers: an array, or a single integer (sizes that are not
/// a shape, such as paddings or split sections, so their product means nothing).
pub fn sizes(op: &'static str, name: &str, v: &JsValue) -> JsResult<Vec<usize>> {
    Ok(if v.as_f64().is_some() {
        vec![usize_arg(op, name, v)?]
    } else if Array::is_array(v) || js_sys::ArrayBuffer::is_view(v) {
        // Plain arrays, and typed arrays such as a shape read back from a tensor.
        Array::from(v)
            .iter()
            .enumerate()
            .map(|(i, d)| usize_arg(op, &format!("{name}[{i}]"), &d))
            .collect::<JsResult<_>>()?
    } else {
        return Err(js_error(op, format!("{name} must be an array of non-negative integers, got {}", describe(v))));
    })
}

/// No tensor may exceed shape::MAX_ELEMENTS (allocating more would abort
/// the module); zero-sized dims count as 1, so no dim alone overflows either.
pub fn fits(op: &'static str, name: &str, dims: &[usize]) -> JsResult<()> {
    let total = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d.max(1) as u64));
    if total.is_none_or(|n| n > crate::shape::MAX_ELEMENTS as u64) {
        return Err(js_error(
            op,
            format!("{name} {dims:?} has more elements than one tensor may hold here ({})", crate::shape::MAX_ELEMENTS),
        ));
    }
    Ok(())
}

/// Axes: an integer, an array of integers, or `undefined`/`null` (empty: all axes).
pub fn axes(op: &'static str, name: &str, v: &JsValue) -> JsResult<Vec<isize>> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    if v.as_f64().is_some() {
        return Ok(vec![int_arg(op, name, v)?]);
    }
    if !Array::is_array(v) {
        return Err(js_error(op, format!("{name} must be an integer or an array of integers, got {}", describe(v))));
    }
    Array::from(v).iter().enumerate().map(|(i, a)| int_arg(op, &format!("{name}[{i}]"), &a)).collect()
}

/// A pair given as one integer or `[a, b]` (kernel sizes, strides, padding).
pub fn pair(op: &'static str, name: &str, v: &JsValue) -> JsResult<[usize; 2]> {
    if v.as_f64().is_some() {
        let n = usize_arg(op, name, v)?;
        return Ok([n, n]);
    }
    match dims(op, name, v)?.as_slice() {
        [a, b] => Ok([*a, *b]),
        other => Err(js_error(op, format!("{name} must be an integer or [a, b], got {other:?}"))),
    }
}

/// A dtype name: 'float32' | 'float64' | 'int32' | 'bool' (and skiff's short names).
pub fn dtype(op: &'static str, v: &JsValue) -> JsResult<DType> {
    match v.as_string().as_deref() {
        Some("float32" | "f32") => Ok(DType::F32),
        Some("float64" | "f64") => Ok(DType::F64),
        Some("int32" | "i32") => Ok(DType::I32),
        Some("bool") => Ok(DType::Bool),
        _ => Err(js_error(
            op,
            format!("dtype must be one of 'float32', 'float64', 'int32', 'bool', got {}", describe(v)),
        )),
    }
}

/// The JS name of a dtype (the inverse of `dtype`).
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
        DType::Bool => "bool",
    }
}

/// A device name: 'cpu' or 'webgpu' (alias 'gpu'); `undefined` is the default
/// device chosen by `init`.
pub fn device(op: &'static str, v: &JsValue) -> JsResult<Device> {
    if v.is_undefined() || v.is_null() {
        return Ok(super::runtime::default_device());
    }
    match v.as_string().as_deref() {
        Some("cpu") => Ok(Device::Cpu),
        Some("webgpu" | "gpu") => super::runtime::gpu_device(op),
        _ => Err(js_error(op, format!("device must be 'cpu' or 'webgpu', got {}", describe(v)))),
    }
}

/// The JS name of a device.
pub fn device_name(d: &Device) -> &'static str {
    if d.is_gpu() {
        "webgpu"
    } else {
        "cpu"
    }
}

/// Reads fields of an options bag (`{ keepdim: true, lr: 0.1 }`); a missing
/// bag or field takes the default, a field of the wrong type is an error.
pub struct Opts<'a> {
    op: &'static str,
    bag: &'a JsValue,
}

impl<'a> Opts<'a> {
    pub fn new(op: &'static str, bag: &'a JsValue) -> JsResult<Opts<'a>> {
        if !(bag.is_undefined() || bag.is_null() || bag.is_object()) || Array::is_array(bag) {
            return Err(js_error(op, format!("options must be an object, got {}", describe(bag))));
        }
        Ok(Opts { op, bag })
    }
    /// `new`, and an error naming any key of the bag not in `allowed` (a
    /// misspelt option such as `keepDim` is an error, not a silently
    /// ignored default).
    pub fn known(op: &'static str, bag: &'a JsValue, allowed: &[&str]) -> JsResult<Opts<'a>> {
        let o = Opts::new(op, bag)?;
        if bag.is_object() {
            for key in js_sys::Object::keys(bag.unchecked_ref::<js_sys::Object>()).iter() {
                let key = key.as_string().unwrap_or_default();
                if !allowed.contains(&key.as_str()) {
                    return Err(js_error(op, format!("unknown option {key:?} (known: {})", allowed.join(", "))));
                }
            }
        }
        Ok(o)
    }
    /// The raw field (`undefined` when absent).
    pub fn get(&self, key: &str) -> JsValue {
        if self.bag.is_object() {
            Reflect::get(self.bag, &js_key(key)).unwrap_or(JsValue::UNDEFINED)
        } else {
            JsValue::UNDEFINED
        }
    }
    fn given(&self, key: &str) -> Option<JsValue> {
        let v = self.get(key);
        (!v.is_undefined() && !v.is_null()).then_some(v)
    }
    pub fn bool(&self, key: &str, default: bool) -> JsResult<bool> {
        match self.given(key) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| js_error(self.op, format!("option {key} must be a boolean, got {}", describe(&v)))),
        }
    }
    pub fn f64(&self, key: &str, default: f64) -> JsResult<f64> {
        self.given(key).map_or(Ok(default), |v| finite_arg(self.op, key, &v))
    }
    pub fn usize(&self, key: &str, default: usize) -> JsResult<usize> {
        self.given(key).map_or(Ok(default), |v| usize_arg(self.op, key, &v))
    }
    pub fn opt_f64(&self, key: &str) -> JsResult<Option<f64>> {
        self.given(key).map(|v| finite_arg(self.op, key, &v)).transpose()
    }
    pub fn opt_tensor(&self, key: &str) -> JsResult<Option<Tensor>> {
        self.given(key).map(|v| tensor(self.op, key, &v)).transpose()
    }
    pub fn string(&self, key: &str, default: &str) -> JsResult<String> {
        match self.given(key) {
            None => Ok(default.to_string()),
            Some(v) => v
                .as_string()
                .ok_or_else(|| js_error(self.op, format!("option {key} must be a string, got {}", describe(&v)))),
        }
    }
}

/// Builds a plain JS object from (key, value) pairs.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = js_sys::Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

/// A JS array of tensor handles.
pub fn handles(ts: Vec<Tensor>) -> Array {
    ts.into_iter().map(|t| JsValue::from(super::JsTensor::wrap(t))).collect()
}

/// Calls `f`, mapping a thrown JS exception into an error for `op` that keeps its message.
pub fn js_call(op: &'static str, what: &str, r: Result<JsValue, JsValue>) -> crate::error::Result<JsValue> {
    r.map_err(|e| {
        let msg = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| e.as_string())
            .unwrap_or_else(|| describe(&e));
        crate::error::Error::value(op, format!("{what} threw: {msg}"))
    })
}
