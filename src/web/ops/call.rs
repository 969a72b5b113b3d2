//! The `Tensor` methods and module functions the registry generates
//! (`ops::surface`): web/api.js installs one JS function per entry of
//! `opMethods()`, which calls `callMethodN(id, this, ...)` (a function:
//! `callFunctionN(id, ...)`) with its N arguments. Here the arguments
//! are read by their signature types into `ops::args::Value`s, through the
//! same checked conversions as every hand-written binding (so `undefined`,
//! strings or fractions are errors naming the argument), then the first
//! overload they fit runs its `forward`.

use super::shape_arg;
use crate::ops::args::{Args, Value};
use crate::ops::signature::Signature;
use crate::ops::signature::Type;
use crate::ops::surface::{self, Method, MethodParam};
use crate::web::args::{self, describe, Operand, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

/// A generated method with what each call needs ready: the names its
/// errors use (`other`, `option keepdim`) and its options' keys.
struct Bound {
    method: Method,
    labels: Vec<&'static str>,
    keys: Vec<&'static str>,
}

thread_local! {
    /// Built once: the registry does not change while the module runs. An
    /// inconsistent registry (ops::surface's tests keep it consistent) makes
    /// `opMethods()`, and so `init()`, fail with the reason.
    static METHODS: Result<Vec<Bound>, String> = surface::methods().map(|ms| ms.into_iter().map(bound).collect());
}

/// The table lives as long as the module, so its few dozen names are
/// leaked once rather than formatted on every call.
fn bound(method: Method) -> Bound {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let labels =
        method.params.iter().map(|p| leak(if p.keyword { format!("option {}", p.js) } else { p.js.clone() })).collect();
    let keys = method.params.iter().filter(|p| p.keyword).map(|p| leak(p.js.clone())).collect();
    Bound { method, labels, keys }
}

fn methods_error(e: &str) -> crate::web::JsOpError {
    js_error("init", Kind::Value, format!("the op registry cannot make its JS methods: {e}"))
}

/// `[{ name, id, arity, method }]`: the generated `Tensor` methods
/// (`method: true`) and module functions, for web/api.js.
#[doc(hidden)]
#[wasm_bindgen(js_name = opMethods)]
pub fn op_methods() -> JsResult<Array> {
    METHODS.with(|ms| {
        let ms = ms.as_ref().map_err(|e| methods_error(e))?;
        Ok(ms
            .iter()
            .enumerate()
            .map(|(id, b)| {
                let m = &b.method;
                let o = Object::new();
                let _ = Reflect::set(&o, &"name".into(), &JsValue::from_str(&m.js));
                let _ = Reflect::set(&o, &"id".into(), &JsValue::from(id as u32));
                let _ = Reflect::set(&o, &"arity".into(), &JsValue::from(m.arity() as u32));
                let _ = Reflect::set(&o, &"method".into(), &JsValue::from(m.method));
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
                call(id, Some(this), &[$($arg),*])
            }
        )*
    };
}

macro_rules! function_callers {
    ($($name:ident, $js:literal, [$($arg:ident),*];)*) => {
        $(
            #[doc(hidden)]
            #[wasm_bindgen(js_name = $js, unchecked_return_type = "Tensor")]
            pub fn $name(id: u32, $($arg: JsValue),*) -> JsResult<JsTensor> {
                call(id, None, &[$($arg),*])
            }
        )*
    };
}

function_callers! {
    call_function1, "callFunction1", [a];
    call_function2, "callFunction2", [a, b];
    call_function3, "callFunction3", [a, b, c];
    call_function4, "callFunction4", [a, b, c, d];
}

callers! {
    call_method0, "callMethod0", [];
    call_method1, "callMethod1", [a];
    call_method2, "callMethod2", [a, b];
    call_method3, "callMethod3", [a, b, c];
    call_method4, "callMethod4", [a, b, c, d];
}

fn call(id: u32, this: Option<&JsTensor>, given: &[JsValue]) -> JsResult<JsTensor> {
    METHODS.with(|ms| {
        let ms = ms.as_ref().map_err(|e| methods_error(e))?;
        let Some(b) = ms.get(id as usize) else {
            return Err(js_error("callMethod", Kind::Argument, format!("no generated method has id {id}")));
        };
        let m = &b.method;
        let op = m.js.as_str();
        if m.method != this.is_some() {
            let what = if m.method { "a method: call it on a tensor" } else { "a function: call it without a tensor" };
            return Err(js_error(op, Kind::Argument, format!("is {what}")));
        }
        let x = this.map(|t| t.get(op)).transpose()?;
        let values = read_arguments(op, b, given)?;
        if let [(def, sig)] = m.overloads.as_slice() {
            // One form: the values are already in its parameters' order.
            return run(op, def, sig, x, values);
        }
        // The first form that takes every given argument, and has a default
        // for every parameter not given (checked without allocating).
        let takes = |sig: &Signature| {
            m.params.iter().zip(&values).all(|(q, v)| match (v, sig.params.iter().find(|p| p.name == q.name)) {
                (Some(v), Some(p)) => p.types.iter().any(|t| v.fits(t)),
                (Some(_), None) => false,
                (None, Some(p)) => p.default.is_some(),
                (None, None) => true,
            })
        };
        if let Some((def, sig)) = m.overloads.iter().find(|(_, sig)| takes(sig)) {
            let same_order =
                sig.params.len() == m.params.len() && sig.params.iter().zip(&m.params).all(|(p, q)| p.name == q.name);
            if same_order {
                return run(op, def, sig, x, values);
            }
            let mut values = values;
            let ordered = sig
                .params
                .iter()
                .map(|p| m.params.iter().position(|q| q.name == p.name).and_then(|i| values[i].take()))
                .collect();
            return run(op, def, sig, x, ordered);
        }
        Err(js_error(op, Kind::Argument, format!("no form of {op} takes these arguments: {}", shown(m, &values))))
    })
}

fn run(
    op: &str,
    def: &'static crate::ops::OpDef,
    sig: &Signature,
    x: Option<crate::tensor::Tensor>,
    values: Vec<Option<Value>>,
) -> JsResult<JsTensor> {
    let forward = def.forward.ok_or_else(|| js_error(op, Kind::Argument, "has no forward"))?;
    let a = Args::bind(def, sig, x, values).named(op)?;
    Ok(JsTensor::wrap(forward(&a).named(op)?))
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
fn read_arguments(op: &str, b: &Bound, given: &[JsValue]) -> JsResult<Vec<Option<Value>>> {
    let m = &b.method;
    // Borrowed, not cloned: each clone of a JsValue is a call into JS.
    let undefined = JsValue::UNDEFINED;
    let bag = given.get(m.positional()).unwrap_or(&undefined);
    // No options object: nothing to check (the common call).
    let opts = if b.keys.is_empty() || bag.is_undefined() { None } else { Some(Opts::known(op, bag, &b.keys)?) };
    let mut out = Vec::with_capacity(m.params.len());
    let mut pos = 0;
    for (p, name) in m.params.iter().zip(&b.labels) {
        let value = if p.keyword {
            let v = opts.as_ref().map_or(JsValue::UNDEFINED, |o| o.get(&p.js));
            read(op, name, p, &v)?
        } else {
            pos += 1;
            read(op, name, p, given.get(pos - 1).unwrap_or(&undefined))?
        };
        out.push(value);
    }
    Ok(out)
}

/// One argument by its types. `undefined` is "not given" where some form of
/// the method can do without it; `null` is `None` where a type allows it,
/// else "not given" as well (so is `undefined` otherwise: its error says so).
fn read(op: &str, name: &str, p: &MethodParam, v: &JsValue) -> JsResult<Option<Value>> {
    let has = |t: &Type| p.types.contains(t);
    // Rust's facts before JS's: each `is_null()` is a call into JS.
    if has(&Type::None) && v.is_null() {
        return Ok(Some(Value::None));
    }
    if p.optional && (v.is_undefined() || v.is_null()) {
        return Ok(None);
    }
    // The list readers take a missing value as "all axes": a required list must be given.
    let list = has(&Type::Ints) || has(&Type::Shape) || has(&Type::Sizes);
    if list && (v.is_undefined() || v.is_null()) {
        return Err(js_error(op, Kind::Argument, format!("{name} is required, got {}", describe(v))));
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
    } else if has(&Type::Sizes) {
        let sizes = args::sizes(op, name, v)?;
        // Read as u32, held as isize: on wasm32 a size past i32::MAX would wrap.
        let held = sizes.iter().enumerate().map(|(i, &d)| {
            isize::try_from(d)
                .map_err(|_| js_error(op, Kind::Memory, format!("{name}[{i}] = {d} is too large for one tensor here")))
        });
        Value::Ints(held.collect::<JsResult<_>>()?)
    } else if has(&Type::Int) {
        Value::Int(args::int_arg(op, name, v)?)
    } else if has(&Type::Scalar) {
        Value::Float(args::number(op, name, v)?)
    } else if has(&Type::Float) {
        Value::Float(args::finite_arg(op, name, v)?)
    } else if has(&Type::Bool) {
        Value::Bool(args::bool_arg(op, name, v)?)
    } else if let Some(Type::BoolLiteral(want)) = p.types.iter().find(|t| matches!(t, Type::BoolLiteral(_))) {
        let b = args::bool_arg(op, name, v)?;
        if b != *want {
            return Err(js_error(op, Kind::Value, format!("{name}: {b} is not supported (only {want})")));
        }
        Value::Bool(b)
    } else if let Some(Type::IntLiteral(want)) = p.types.iter().find(|t| matches!(t, Type::IntLiteral(_))) {
        let n = args::int_arg(op, name, v)?;
        if n != *want {
            return Err(js_error(op, Kind::Value, format!("{name}: {n} is not supported (only {want})")));
        }
        Value::Int(n)
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
