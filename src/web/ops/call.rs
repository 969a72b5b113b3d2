//! The `Tensor` methods and module functions the registry generates
//! (`ops::surface`): web/api.js installs one JS function per entry of
//! `opMethods()`, which calls `callMethodN(id, this, ...)` (a function:
//! `callFunctionN(id, ...)`) with its N arguments. Here the arguments
//! are read by their signature types into `ops::args::Value`s, through the
//! same checked conversions as every hand-written binding (so `undefined`,
//! strings or fractions are errors naming the argument), then the first
//! overload they fit runs its `forward`.

use super::read::Reader;
use crate::ops::args::{Args, Value, Values};
use crate::ops::signature::Signature;
use crate::ops::surface::{self, Method};
use crate::ops::Outputs;
use crate::web::args::Opts;
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

/// A generated method with what each call needs ready: the names its
/// errors use (`other`, `option keepdim`), its options' keys, each
/// parameter's reader and, per overload, where its parameters sit.
struct Bound {
    method: Method,
    labels: Vec<&'static str>,
    keys: Vec<&'static str>,
    readers: Vec<Reader>,
    positional: usize,
    forms: Vec<Form>,
}

/// One overload's parameters against the method's.
struct Form {
    /// Per method parameter: its index in this overload's signature.
    slot: Vec<Option<usize>>,
    /// Per signature parameter: its index among the method's (`None`: the
    /// same order, nothing to move).
    order: Option<Vec<usize>>,
}

impl Form {
    fn of(m: &Method, sig: &Signature) -> Form {
        let slot = m.params.iter().map(|q| sig.params.iter().position(|p| p.name == q.name)).collect();
        let order: Vec<usize> = sig
            .params
            .iter()
            .map(|p| m.params.iter().position(|q| q.name == p.name).expect("a method has its overloads' parameters"))
            .collect();
        let same = order.len() == m.params.len() && order.iter().enumerate().all(|(i, &j)| i == j);
        Form { slot, order: (!same).then_some(order) }
    }
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
    let readers = method.params.iter().map(Reader::of).collect();
    let forms = method.overloads.iter().map(|(_, sig)| Form::of(&method, sig)).collect();
    Bound { positional: method.positional(), method, labels, keys, readers, forms }
}

fn methods_error(e: &str) -> crate::web::JsOpError {
    js_error("init", Kind::Value, format!("the op registry cannot make its JS methods: {e}"))
}

/// `[{ name, id, arity, method, pair }]`: the generated `Tensor` methods
/// (`method: true`) and module functions, for web/api.js; `pair`: the
/// method returns `[values, indices]` (its callers are `callPairMethodN`).
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
                let _ = Reflect::set(&o, &"pair".into(), &JsValue::from(m.pair()));
                JsValue::from(o)
            })
            .collect())
    })
}

/// The one tensor of an op whose signature returns one.
fn one(outs: Outputs) -> JsTensor {
    JsTensor::wrap(outs.into_iter().next().expect("a forward gives at least one tensor"))
}

/// `[values, indices]` of an op whose signature returns PyTorch's pair.
fn pair(outs: Outputs) -> Array {
    outs.into_iter().map(|t| JsValue::from(JsTensor::wrap(t))).collect()
}

macro_rules! callers {
    ($($name:ident, $pair:ident, $js:literal, $js_pair:literal, [$($arg:ident),*];)*) => {
        $(
            #[doc(hidden)]
            #[wasm_bindgen(js_name = $js, unchecked_return_type = "Tensor")]
            pub fn $name(id: u32, this: &JsTensor, $($arg: JsValue),*) -> JsResult<JsTensor> {
                call(id, Some(this), &[$($arg),*]).map(one)
            }
            #[doc(hidden)]
            #[wasm_bindgen(js_name = $js_pair, unchecked_return_type = "[Tensor, Tensor]")]
            pub fn $pair(id: u32, this: &JsTensor, $($arg: JsValue),*) -> JsResult<Array> {
                call(id, Some(this), &[$($arg),*]).map(pair)
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
                call(id, None, &[$($arg),*]).map(one)
            }
        )*
    };
}

function_callers! {
    call_function1, "callFunction1", [a];
    call_function2, "callFunction2", [a, b];
    call_function3, "callFunction3", [a, b, c];
    call_function4, "callFunction4", [a, b, c, d];
    call_function5, "callFunction5", [a, b, c, d, e];
}

callers! {
    call_method0, call_pair_method0, "callMethod0", "callPairMethod0", [];
    call_method1, call_pair_method1, "callMethod1", "callPairMethod1", [a];
    call_method2, call_pair_method2, "callMethod2", "callPairMethod2", [a, b];
    call_method3, call_pair_method3, "callMethod3", "callPairMethod3", [a, b, c];
    call_method4, call_pair_method4, "callMethod4", "callPairMethod4", [a, b, c, d];
    call_method5, call_pair_method5, "callMethod5", "callPairMethod5", [a, b, c, d, e];
}

fn call(id: u32, this: Option<&JsTensor>, given: &[JsValue]) -> JsResult<Outputs> {
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
        let takes = |sig: &Signature, form: &Form| {
            values.iter().zip(&form.slot).all(|(v, slot)| match (v, slot.map(|i| &sig.params[i])) {
                (Some(v), Some(p)) => p.types.iter().any(|t| v.fits(t)),
                (Some(_), None) => false,
                (None, Some(p)) => p.default.is_some(),
                (None, None) => true,
            })
        };
        let chosen = m.overloads.iter().zip(&b.forms).find(|((_, sig), form)| takes(sig, form));
        if let Some(((def, sig), form)) = chosen {
            let Some(order) = &form.order else {
                return run(op, def, sig, x, values);
            };
            let mut values = values;
            let ordered: Values = order.iter().map(|&i| values[i].take()).collect();
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
    values: Values,
) -> JsResult<Outputs> {
    let forward = def.forward.ok_or_else(|| js_error(op, Kind::Argument, "has no forward"))?;
    let a = Args::bind(def, sig, x, values).named(op)?;
    forward.run(&a).named(op)
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
fn read_arguments(op: &str, b: &Bound, given: &[JsValue]) -> JsResult<Values> {
    let m = &b.method;
    // Borrowed, not cloned: each clone of a JsValue is a call into JS.
    let undefined = JsValue::UNDEFINED;
    let bag = given.get(b.positional).unwrap_or(&undefined);
    // No options object: nothing to check (the common call).
    let opts = if b.keys.is_empty() || bag.is_undefined() { None } else { Some(Opts::known(op, bag, &b.keys)?) };
    let mut out = Values::new();
    let mut pos = 0;
    for ((p, reader), name) in m.params.iter().zip(&b.readers).zip(&b.labels) {
        let value = if p.keyword {
            let v = opts.as_ref().map_or(JsValue::UNDEFINED, |o| o.get(&p.js));
            reader.read(op, name, &v)?
        } else {
            pos += 1;
            reader.read(op, name, given.get(pos - 1).unwrap_or(&undefined))?
        };
        out.push(value);
    }
    Ok(out)
}
