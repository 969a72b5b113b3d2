//! The `Tensor` methods the registry generates (`ops::surface`): web/api.js
//! installs one JS function per entry of `opMethods()`, which calls
//! `callMethodN(id, this, ...)` with its N arguments. Here the arguments
//! are read by their signature types into `ops::args::Value`s, through the
//! same checked conversions as every hand-written binding (so `undefined`,
//! strings or fractions are errors naming the argument), then the first
//! overload they fit runs its `forward`.

use super::shape_arg;
use crate::ops::args::{Args, Value};
use crate::ops::signature::Type;
use crate::ops::surface::{self, Method, MethodParam};
use crate::web::args::{self, describe, Operand, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

thread_local! {
    /// Built once: the registry does not change while the module runs. An
    /// inconsistent registry (ops::surface's tests keep it consistent) makes
    /// `opMethods()`, and so `init()`, fail with the reason.
    static METHODS: Result<Vec<Method>, String> = surface::methods();
}

fn methods_error(e: &str) -> crate::web::JsOpError {
    js_error("init", Kind::Value, format!("the op registry cannot make its JS methods: {e}"))
}

/// `[{ name, id, arity }]`: the generated `Tensor` methods, for web/api.js.
#[doc(hidden)]
#[wasm_bindgen(js_name = opMethods)]
pub fn op_methods() -> JsResult<Array> {
    METHODS.with(|ms| {
        let ms = ms.as_ref().map_err(|e| methods_error(e))?;
        Ok(ms
            .iter()
            .enumerate()
            .map(|(id, m)| {
                let o = Object::new();
                let _ = Reflect::set(&o, &"name".into(), &JsValue::from_str(&m.js));
                let _ = Reflect::set(&o, &"id".into(), &JsValue::from(id as u32));
                let _ = Reflect::set(&o, &"arity".into(), &JsValue::from(m.arity() as u32));
                JsValue::from(o)
            })
            .collect())
    })
}

macro_rules! callers {
    ($($name:ident, $js:literal, [$($arg:ident),*];)*) => {
        $(
            #[doc(hidden)]
            #[wasm_bindgen(js_name = $js, unchecked_return_type = "Tensor")]
            pub fn $name(id: u32, this: &JsTensor, $($arg: JsValue),*) -> JsResult<JsTensor> {
                call(id, this, &[$($arg),*])
            }
        )*
    };
}

callers! {
    call_method0, "callMethod0", [];
    call_method1, "callMethod1", [a];
    call_method2, "callMethod2", [a, b];
    call_method3, "callMethod3", [a, b, c];
    call_method4, "callMethod4", [a, b, c, d];
}

fn call(id: u32, this: &JsTensor, given: &[JsValue]) -> JsResult<JsTensor> {
    METHODS.with(|ms| {
        let ms = ms.as_ref().map_err(|e| methods_error(e))?;
        let Some(m) = ms.get(id as usize) else {
            return Err(js_error("callMethod", Kind::Argument, format!("no generated method has id {id}")));
        };
        let op = m.js.as_str();
        let x = this.get(op)?;
        let values = read_arguments(op, m, given)?;
        for (def, sig) in &m.overloads {
            let picked: Option<Vec<Option<Value>>> = sig
                .params
                .iter()
                .map(|p| {
                    let i = m.params.iter().position(|q| q.name == p.name)?;
                    match &values[i] {
                        Some(v) if p.types.iter().any(|t| v.fits(t)) => Some(Some(v.clone())),
                        Some(_) => None,
                        None if p.default.is_some() => Some(None),
                        None => None,
                    }
                })
                .collect();
            // An argument this overload does not take rules it out too.
            let extra =
                m.params.iter().zip(&values).any(|(q, v)| v.is_some() && !sig.params.iter().any(|p| p.name == q.name));
            if let (Some(picked), false) = (picked, extra) {
                let forward = def.forward.ok_or_else(|| js_error(op, Kind::Argument, "has no forward"))?;
                let a = Args::bind(def, sig, Some(x), picked).named(op)?;
                return Ok(JsTensor::wrap(forward(&a).named(op)?));
            }
        }
        Err(js_error(op, Kind::Argument, format!("no form of {op} takes these arguments: {}", shown(m, &values))))
    })
}

/// What the caller passed, for the error when no overload takes it.
fn shown(m: &Method, values: &[Option<Value>]) -> String {
    let parts: Vec<String> =
        m.params.iter().zip(values).filter_map(|(p, v)| v.as_ref().map(|v| format!("{} = {v:?}", p.js))).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// Every parameter's value (`None`: not given), positional arguments from
/// `given` in order, keyword ones from the options object after them.
fn read_arguments(op: &str, m: &Method, given: &[JsValue]) -> JsResult<Vec<Option<Value>>> {
    let npos = m.positional();
    let bag = given.get(npos).cloned().unwrap_or(JsValue::UNDEFINED);
    let keys: Vec<&str> = m.params.iter().filter(|p| p.keyword).map(|p| p.js.as_str()).collect();
    let opts = if keys.is_empty() { None } else { Some(Opts::known(op, &bag, &keys)?) };
    let mut out = Vec::with_capacity(m.params.len());
    let mut pos = 0;
    for p in &m.params {
        let (v, name) = if p.keyword {
            (opts.as_ref().map_or(JsValue::UNDEFINED, |o| o.get(&p.js)), format!("option {}", p.js))
        } else {
            pos += 1;
            (given.get(pos - 1).cloned().unwrap_or(JsValue::UNDEFINED), p.js.clone())
        };
        out.push(read(op, &name, p, &v)?);
    }
    Ok(out)
}

/// One argument by its types. `undefined` is "not given" where some form of
/// the method can do without it; `null` is `None` where a type allows it,
/// else "not given" as well (so is `undefined` otherwise: its error says so).
fn read(op: &str, name: &str, p: &MethodParam, v: &JsValue) -> JsResult<Option<Value>> {
    let has = |t: &Type| p.types.contains(t);
    if v.is_null() && has(&Type::None) {
        return Ok(Some(Value::None));
    }
    if (v.is_undefined() || v.is_null()) && p.optional {
        return Ok(None);
    }
    let tensor = p.types.iter().any(|t| matches!(t, Type::Tensor | Type::TensorAny | Type::TensorOf(_)));
    let number = has(&Type::Scalar) || has(&Type::Float);
    let literals: Vec<&str> =
        p.types.iter().filter_map(|t| if let Type::Literal(s) = t { Some(*s) } else { None }).collect();
    let value = if tensor && number {
        match Operand::parse(op, name, v)? {
            Operand::Tensor(t) => Value::Tensor(t),
            Operand::Scalar(x) if has(&Type::Scalar) => Value::Float(x),
            Operand::Scalar(_) => Value::Float(args::finite_arg(op, name, v)?),
        }
    } else if tensor {
        Value::Tensor(args::tensor(op, name, v)?)
    } else if has(&Type::Tensors) {
        Value::Tensors(args::tensors(op, name, v)?)
    } else if has(&Type::IntPair) {
        Value::Pair(args::pair(op, name, v)?)
    } else if has(&Type::Shape) {
        Value::Ints(shape_arg(op, name, v)?.into_iter().map(|d| d as isize).collect())
    } else if has(&Type::Ints) {
        Value::Ints(args::axes(op, name, v)?)
    } else if has(&Type::Int) {
        Value::Int(args::int_arg(op, name, v)?)
    } else if has(&Type::Scalar) {
        Value::Float(args::number(op, name, v)?)
    } else if has(&Type::Float) {
        Value::Float(args::finite_arg(op, name, v)?)
    } else if has(&Type::Bool) {
        Value::Bool(args::bool_arg(op, name, v)?)
    } else if !literals.is_empty() {
        match v.as_string() {
            Some(s) if literals.contains(&s.as_str()) => Value::Str(s),
            _ => {
                let quoted: Vec<String> = literals.iter().map(|l| format!("'{l}'")).collect();
                let choices = match quoted.split_last() {
                    Some((last, [])) => last.clone(),
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                };
                return Err(js_error(op, Kind::Argument, format!("{name} must be {choices}, got {}", describe(v))));
            }
        }
    } else if has(&Type::DType) {
        Value::DType(args::dtype(op, v)?)
    } else if has(&Type::Device) {
        Value::Device(args::device(op, v)?)
    } else {
        return Err(js_error(op, Kind::Argument, format!("{name}: no reader for the types {:?}", p.types)));
    };
    Ok(Some(value))
}
