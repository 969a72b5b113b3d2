//! Options bags (`{ keepdim: true, lr: 0.1 }`) and the small JS helpers
//! the bindings share: plain objects, arrays of handles, calls into JS.

use super::args::{bool_arg, describe, finite_arg, js_key, string_arg, tensor, usize_arg};
use super::{js_error, JsResult, Kind};
use crate::tensor::Tensor;
use js_sys::{Array, Reflect};
use wasm_bindgen::{JsCast, JsValue};

/// Reads fields of an options bag (`{ keepdim: true, lr: 0.1 }`); a missing
/// bag or field takes the default, a field of the wrong type is an error.
pub struct Opts<'a> {
    op: &'a str,
    bag: &'a JsValue,
}

impl<'a> Opts<'a> {
    pub fn new(op: &'a str, bag: &'a JsValue) -> JsResult<Opts<'a>> {
        // Arrays, typed arrays and tensors are objects too, but never options.
        let not_a_bag = Array::is_array(bag)
            || js_sys::ArrayBuffer::is_view(bag)
            || !matches!(super::args::find_tensor(bag), super::handles::Found::Other);
        if !(bag.is_undefined() || bag.is_null() || bag.is_object()) || not_a_bag {
            return Err(js_error(op, Kind::Argument, format!("options must be an object, got {}", describe(bag))));
        }
        Ok(Opts { op, bag })
    }
    /// `new`, and an error naming any key of the bag not in `allowed` (a
    /// misspelt option such as `keepDim` is an error, not a silently
    /// ignored default).
    pub fn known(op: &'a str, bag: &'a JsValue, allowed: &[&str]) -> JsResult<Opts<'a>> {
        let o = Opts::new(op, bag)?;
        if bag.is_object() {
            for key in js_sys::Object::keys(bag.unchecked_ref::<js_sys::Object>()).iter() {
                let key = key.as_string().unwrap_or_default();
                if !allowed.contains(&key.as_str()) {
                    return Err(js_error(
                        op,
                        Kind::Argument,
                        format!("unknown option {key:?} (known: {})", allowed.join(", ")),
                    ));
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
        self.given(key).map_or(Ok(default), |v| bool_arg(self.op, &format!("option {key}"), &v))
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
        self.given(key).map_or(Ok(default.to_string()), |v| string_arg(self.op, &format!("option {key}"), &v))
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

/// The text of a thrown JS value: an Error's message, a string, or a description.
pub fn thrown_text(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| describe(e))
}

/// Calls `f`, mapping a thrown JS exception into an error for `op` that keeps its message.
pub fn js_call(op: &'static str, what: &str, r: Result<JsValue, JsValue>) -> crate::error::Result<JsValue> {
    r.map_err(|e| crate::error::Error::value(op, format!("{what} threw: {}", thrown_text(&e))))
}
