//! Checked conversions of JS arguments. JS gives no types at run time, so each
//! helper names the op and the argument it rejects: `reshape: shape must be an
//! array of non-negative integers, got undefined`. Nothing is coerced: a
//! string, `undefined`, `NaN`, a BigInt or a fraction where an integer is
//! meant is an error, never a silently converted number.

use super::handles::{Class, Found};
use super::{disposed, js_error, lookup, JsResult, Kind, Named};
use crate::device::Device;
use crate::dtype::DType;
use crate::tensor::Tensor;
use js_sys::{Array, Reflect};
use std::cell::OnceCell;
use wasm_bindgen::{JsCast, JsValue};

pub use super::opts::{handles, js_call, object, thrown_text, Opts};

/// The property every JS tensor handle exposes with its registry id.
pub const ID_PROPERTY: &str = "_skiffId";

thread_local! {
    /// Property keys as JS strings, made once: building one from a Rust `&str`
    /// decodes it through TextDecoder, which cost more than a small op.
    static KEYS: std::cell::RefCell<std::collections::HashMap<String, JsValue>> = Default::default();
    /// The JS `Tensor` class (see `handles.rs`).
    static TENSOR_CLASS: OnceCell<Class> = const { OnceCell::new() };
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

/// What `v` is as a `Tensor` argument.
pub fn find_tensor(v: &JsValue) -> Found {
    TENSOR_CLASS.with(|c| c.get_or_init(|| Class::of(&super::JsTensor::blank().into(), ID_PROPERTY)).find(v))
}

/// The registry id of `v` when it is a real, live `Tensor` handle.
pub fn tensor_id(v: &JsValue) -> Option<u32> {
    match find_tensor(v) {
        Found::Id(id) => Some(id),
        _ => None,
    }
}

/// A number as JS prints it (`Infinity`, not Rust's `inf`).
pub fn js_number(n: f64) -> String {
    match n {
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        _ => format!("{n}"),
    }
}

/// The longest text of a JS string an error message quotes.
const QUOTE_MAX: usize = 40;

/// A short description of a JS value for error messages.
pub fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        "undefined".into()
    } else if v.is_null() {
        "null".into()
    } else if let Some(n) = v.as_f64() {
        format!("the number {}", js_number(n))
    } else if let Some(s) = v.as_string() {
        if s.chars().count() > QUOTE_MAX {
            let head: String = s.chars().take(QUOTE_MAX).collect();
            format!("the string {head:?}... ({} characters)", s.chars().count())
        } else {
            format!("the string {s:?}")
        }
    } else if let Some(b) = v.as_bool() {
        format!("the boolean {b}")
    } else if v.is_bigint() {
        let digits: String = v.unchecked_ref::<js_sys::BigInt>().to_string(10).map(String::from).unwrap_or_default();
        let shown = if digits.len() > QUOTE_MAX { format!("{}...", &digits[..QUOTE_MAX]) } else { digits };
        format!("the BigInt {shown}n (pass a Number)")
    } else if v.is_symbol() {
        "a symbol".into()
    } else if let Some(a) = as_array(v) {
        format!("an array of length {}", a.length())
    } else if v.is_function() {
        "a function".into()
    } else {
        match find_tensor(v) {
            Found::Id(_) => "a Tensor".into(),
            Found::Freed => "a freed Tensor (free() was called on it)".into(),
            // A typed array, a Module, a Map, ...: its class; a plain object is "an object".
            Found::Other => match class_name(v) {
                // Object.create(Tensor.prototype): the class's prototype, but no handle.
                Some(name) if name == "Tensor" => "an object that poses as a Tensor but was not made by skiff".into(),
                Some(name) if name != "Object" => {
                    let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
                    format!("{article} {name}")
                }
                _ => "an object".into(),
            },
        }
    }
}

/// `v` as an array, if it is one: a view, not `Array.from`'s copy (which
/// of a sparse `new Array(2 ** 32 - 1)` would take minutes and then throw).
pub fn as_array(v: &JsValue) -> Option<&Array> {
    Array::is_array(v).then(|| v.unchecked_ref::<Array>())
}

/// The name of `v`'s constructor (`Float32Array`, `Module`), if it has one.
fn class_name(v: &JsValue) -> Option<String> {
    let ctor = Reflect::get(v, &js_key("constructor")).ok()?;
    let name = Reflect::get(&ctor, &js_key("name")).ok()?.as_string()?;
    (!name.is_empty() && name.len() <= QUOTE_MAX).then_some(name)
}

/// The tensor behind a JS `Tensor` handle (`name` is the argument's name).
pub fn tensor(op: &str, name: &str, v: &JsValue) -> JsResult<Tensor> {
    let Some(id) = tensor_id(v) else {
        return Err(js_error(op, Kind::Argument, format!("{name} must be a Tensor, got {}", describe(v))));
    };
    live_tensor(op, id)
}

/// The tensor of the live handle `id`.
fn live_tensor(op: &str, id: u32) -> JsResult<Tensor> {
    let slot = lookup(id).ok_or_else(|| disposed(op))?;
    let t = slot.tensor.borrow().clone();
    t.ok_or_else(|| disposed(op))
}

/// A list of tensors (a JS array of `Tensor`s).
pub fn tensors(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<Tensor>> {
    let Some(list) = as_array(v) else {
        return Err(js_error(op, Kind::Argument, format!("{name} must be an array of Tensors, got {}", describe(v))));
    };
    list.iter().enumerate().map(|(i, t)| tensor(op, &format!("{name}[{i}]"), &t)).collect()
}

/// A string (names, keys): no other value is converted to one.
pub fn string_arg(op: &str, name: &str, v: &JsValue) -> JsResult<String> {
    v.as_string().ok_or_else(|| js_error(op, Kind::Argument, format!("{name} must be a string, got {}", describe(v))))
}

/// A boolean: `'true'`, `1` or `undefined` are not booleans.
pub fn bool_arg(op: &str, name: &str, v: &JsValue) -> JsResult<bool> {
    v.as_bool().ok_or_else(|| js_error(op, Kind::Argument, format!("{name} must be a boolean, got {}", describe(v))))
}

/// An optional boolean: `undefined`/`null` is `default`.
pub fn opt_bool(op: &str, name: &str, v: &JsValue, default: bool) -> JsResult<bool> {
    if v.is_undefined() || v.is_null() {
        Ok(default)
    } else {
        bool_arg(op, name, v)
    }
}

/// A JS function (a hook or callback), checked when it is given rather than
/// when it is first called.
pub fn function_arg(op: &str, name: &str, v: &JsValue) -> JsResult<js_sys::Function> {
    v.dyn_ref::<js_sys::Function>()
        .cloned()
        .ok_or_else(|| js_error(op, Kind::Argument, format!("{name} must be a function, got {}", describe(v))))
}

/// Any number, NaN and infinities included (fill values, comparison scalars).
pub fn number(op: &str, name: &str, v: &JsValue) -> JsResult<f64> {
    v.as_f64().ok_or_else(|| js_error(op, Kind::Argument, format!("{name} must be a number, got {}", describe(v))))
}

/// `value` checked for a tensor of `dtype` (PyTorch's "value cannot be
/// converted to type int32 without overflow"): int32 takes integers in its
/// range only, so 1e10 or NaN cannot wrap or saturate and 2.5 is not
/// truncated; floats and bool take any number (bool: nonzero is true).
pub fn value_for(op: &str, name: &str, value: f64, dtype: DType) -> JsResult<f64> {
    if dtype == DType::I32 && !(value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64) {
        return Err(js_error(op, Kind::Value,
            format!(
                "{name} {} cannot be converted to int32 without overflow or rounding (int32 holds integers in [-2147483648, 2147483647])",
                js_number(value)
            ),
        ));
    }
    Ok(value)
}

/// A 0-d tensor holding `value` with `like`'s dtype and device, the value
/// checked for that dtype (`value_for`).
pub fn scalar_like(op: &str, name: &str, like: &Tensor, value: f64) -> JsResult<Tensor> {
    like.scalar_like(value_for(op, name, value, like.dtype())?).named(op)
}

/// A tensor or a plain number (the right-hand side of `add`, `mul`, ...).
pub enum Operand {
    Scalar(f64),
    Tensor(Tensor),
}

impl Operand {
    pub fn parse(op: &str, name: &str, v: &JsValue) -> JsResult<Operand> {
        if let Some(n) = v.as_f64() {
            return Ok(Operand::Scalar(n));
        }
        match find_tensor(v) {
            // Found once: each look is several calls into JS.
            Found::Id(id) => live_tensor(op, id).map(Operand::Tensor),
            Found::Freed => tensor(op, name, v).map(Operand::Tensor),
            Found::Other => {
                Err(js_error(op, Kind::Argument, format!("{name} must be a Tensor or a number, got {}", describe(v))))
            }
        }
    }
    /// As a tensor: a scalar becomes a 0-d tensor of `like`'s dtype on its
    /// device (checked to fit that dtype: `value_for`).
    pub fn into_tensor(self, op: &str, name: &str, like: &Tensor) -> JsResult<Tensor> {
        match self {
            Operand::Tensor(t) => Ok(t),
            Operand::Scalar(n) => scalar_like(op, name, like, n),
        }
    }
}

/// A non-negative integer.
pub fn usize_arg(op: &str, name: &str, v: &JsValue) -> JsResult<usize> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(n as usize),
        _ => Err(js_error(op, Kind::Argument, format!("{name} must be a non-negative integer, got {}", describe(v)))),
    }
}

/// An integer (axes may be negative, counting from the end).
pub fn int_arg(op: &str, name: &str, v: &JsValue) -> JsResult<isize> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= i32::MAX as f64 => Ok(n as isize),
        _ => Err(js_error(op, Kind::Argument, format!("{name} must be an integer, got {}", describe(v)))),
    }
}

/// An integer in int32's range (int32 tensor values: randint's bounds, ...).
pub fn int32_arg(op: &str, name: &str, v: &JsValue) -> JsResult<i32> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n >= i32::MIN as f64 && n <= i32::MAX as f64 => Ok(n as i32),
        _ => Err(js_error(
            op,
            Kind::Argument,
            format!("{name} must be an integer in int32's range [-2147483648, 2147483647], got {}", describe(v)),
        )),
    }
}

/// A finite number (a hyperparameter: learning rate, eps, ...).
pub fn finite_arg(op: &str, name: &str, v: &JsValue) -> JsResult<f64> {
    match v.as_f64() {
        Some(n) if n.is_finite() => Ok(n),
        _ => Err(js_error(op, Kind::Argument, format!("{name} must be a finite number, got {}", describe(v)))),
    }
}

/// An optional integer axis: `undefined`/`null` is None.
pub fn opt_axis(op: &str, name: &str, v: &JsValue) -> JsResult<Option<isize>> {
    if v.is_undefined() || v.is_null() {
        Ok(None)
    } else {
        int_arg(op, name, v).map(Some)
    }
}

/// The most dims a shape (or axes) from JS may list: far beyond any real
/// tensor, and it keeps a runaway array from costing unbounded time.
pub const MAX_RANK: usize = 64;

/// The most entries another list of sizes (paddings, split sections) may have.
const MAX_LIST: usize = 1 << 16;

/// The entries of a JS array or typed array, at most `max` of them (read
/// lazily, so a sparse `new Array(2 ** 32 - 1)` costs nothing), or None when
/// `v` is neither.
fn list(op: &str, name: &str, v: &JsValue, max: usize) -> JsResult<Option<Vec<JsValue>>> {
    let len = if Array::is_array(v) {
        v.unchecked_ref::<Array>().length() as usize
    } else if js_sys::ArrayBuffer::is_view(v) && !v.is_instance_of::<js_sys::DataView>() {
        // Typed arrays, such as a shape read back from a tensor.
        Reflect::get(v, &js_key("length")).ok().and_then(|n| n.as_f64()).unwrap_or(0.0) as usize
    } else {
        return Ok(None);
    };
    if len > max {
        return Err(js_error(op, Kind::Argument, format!("{name} has {len} entries, more than the {max} allowed")));
    }
    Ok(Some((0..len as u32).map(|i| Reflect::get_u32(v, i).unwrap_or(JsValue::UNDEFINED)).collect()))
}

/// A shape: an array of non-negative integers (a single integer is a 1-D
/// shape) whose elements fit in one tensor.
pub fn dims(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<usize>> {
    let dims = if v.as_f64().is_some() {
        vec![usize_arg(op, name, v)?]
    } else {
        match list(op, name, v, MAX_RANK)? {
            Some(items) => nonneg(op, name, &items)?,
            None => {
                return Err(js_error(
                    op,
                    Kind::Argument,
                    format!("{name} must be an array of non-negative integers, got {}", describe(v)),
                ))
            }
        }
    };
    fits(op, name, &dims)?;
    Ok(dims)
}

fn nonneg(op: &str, name: &str, items: &[JsValue]) -> JsResult<Vec<usize>> {
    items.iter().enumerate().map(|(i, d)| usize_arg(op, &format!("{name}[{i}]"), d)).collect()
}

/// Non-negative integers: an array, or a single integer (sizes that are not
/// a shape, such as paddings or split sections, so their product means nothing).
pub fn sizes(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<usize>> {
    if v.as_f64().is_some() {
        return Ok(vec![usize_arg(op, name, v)?]);
    }
    match list(op, name, v, MAX_LIST)? {
        Some(items) => nonneg(op, name, &items),
        None => Err(js_error(
            op,
            Kind::Argument,
            format!("{name} must be an array of non-negative integers, got {}", describe(v)),
        )),
    }
}

/// No tensor may exceed shape::MAX_ELEMENTS (allocating more would abort
/// the module); zero-sized dims count as 1, so no dim alone overflows either.
pub fn fits(op: &str, name: &str, dims: &[usize]) -> JsResult<()> {
    fits_within(op, name, dims, crate::shape::MAX_ELEMENTS)
}

/// `fits` with another limit.
pub fn fits_within(op: &str, name: &str, dims: &[usize], max: usize) -> JsResult<()> {
    let total = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d.max(1) as u64));
    if total.is_none_or(|n| n > max as u64) {
        return Err(js_error(
            op,
            Kind::Memory,
            format!("{name} {dims:?} has more elements than one tensor may hold here ({max})"),
        ));
    }
    Ok(())
}

/// Axes: an integer, an array of integers, or `undefined`/`null` (empty: all axes).
pub fn axes(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<isize>> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    if v.as_f64().is_some() {
        return Ok(vec![int_arg(op, name, v)?]);
    }
    if !Array::is_array(v) {
        return Err(js_error(
            op,
            Kind::Argument,
            format!("{name} must be an integer or an array of integers, got {}", describe(v)),
        ));
    }
    let items = list(op, name, v, MAX_RANK)?.unwrap_or_default();
    items.iter().enumerate().map(|(i, a)| int_arg(op, &format!("{name}[{i}]"), a)).collect()
}

/// A list of integers >= -1 (a shape in which one entry may be -1: reshape,
/// view, expand), or a single such integer.
pub fn signed_dims(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<isize>> {
    let items = if v.as_f64().is_some() {
        vec![v.clone()]
    } else {
        match list(op, name, v, MAX_RANK)? {
            Some(items) => items,
            None => {
                return Err(js_error(
                    op,
                    Kind::Argument,
                    format!("{name} must be an array of integers (one may be -1), got {}", describe(v)),
                ))
            }
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, d) in items.iter().enumerate() {
        let n = int_arg(op, &format!("{name}[{i}]"), d)?;
        if n < -1 {
            return Err(js_error(op, Kind::Argument, format!("{name}[{i}] must be a size or -1, got {n}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// A pair given as one integer or `[a, b]` (kernel sizes, strides, padding).
pub fn pair(op: &str, name: &str, v: &JsValue) -> JsResult<[usize; 2]> {
    if v.as_f64().is_some() {
        let n = usize_arg(op, name, v)?;
        return Ok([n, n]);
    }
    if !Array::is_array(v) {
        return Err(js_error(op, Kind::Argument, format!("{name} must be an integer or [a, b], got {}", describe(v))));
    }
    match dims(op, name, v)?.as_slice() {
        [a, b] => Ok([*a, *b]),
        other => Err(js_error(op, Kind::Argument, format!("{name} must be an integer or [a, b], got {other:?}"))),
    }
}

/// A dtype name: 'float32' | 'float64' | 'float16' | 'int32' | 'bool' (and skiff's short names).
pub fn dtype(op: &str, v: &JsValue) -> JsResult<DType> {
    match v.as_string().as_deref() {
        Some("float32" | "f32") => Ok(DType::F32),
        Some("float64" | "f64") => Ok(DType::F64),
        Some("float16" | "f16") => Ok(DType::F16),
        Some("int32" | "i32") => Ok(DType::I32),
        Some("bool") => Ok(DType::Bool),
        _ => Err(js_error(
            op,
            Kind::Argument,
            format!("dtype must be one of 'float32', 'float64', 'float16', 'int32', 'bool', got {}", describe(v)),
        )),
    }
}

/// The JS name of a dtype (the inverse of `dtype`).
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F16 => "float16",
        DType::I32 => "int32",
        DType::Bool => "bool",
    }
}

/// A device name: 'cpu' or 'webgpu' (alias 'gpu'); `undefined` is the default
/// device chosen by `init`.
pub fn device(op: &str, v: &JsValue) -> JsResult<Device> {
    if v.is_undefined() || v.is_null() {
        return Ok(super::runtime::default_device());
    }
    match v.as_string().as_deref() {
        Some("cpu") => Ok(Device::Cpu),
        Some("webgpu" | "gpu") => super::runtime::gpu_device(op),
        _ => Err(js_error(op, Kind::Argument, format!("device must be 'cpu' or 'webgpu', got {}", describe(v)))),
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
