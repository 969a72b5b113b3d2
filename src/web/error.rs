//! The errors every export throws: JS `SkiffError`s whose message starts
//! with the op as the JS caller named it and that carry `op`, `kind` and,
//! where another op failed inside the called one, `innerOp`.
//!
//! The JS wrapper defines the `SkiffError` class (web/checks.js) and hands
//! it over once the wasm module is instantiated (`_setErrorClass`), so
//! errors made here and errors the wrapper throws are one class. Without
//! it (the raw wasm-bindgen module) they are plain `Error`s with the same
//! fields.

use crate::error::Error;
use js_sys::{Array, Function, Reflect};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// What went wrong, as JS sees it: `error.kind` (the `ErrorKind` union of
/// web/index.d.ts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Operand shapes do not fit the op (broadcasting, matmul, reshape, ...).
    Shape,
    /// An axis out of range for the tensor's rank.
    Axis,
    /// A dtype the op does not accept, or two that differ.
    DType,
    /// Tensors on different devices, no WebGPU device, or a GPU command
    /// that failed (a kernel that does not compile, discarded work).
    Device,
    /// A value of the right type out of its range (a negative size, a
    /// probability above 1, a label out of range, low >= high).
    Value,
    /// Misuse of autograd (a second backward, a write into a leaf that
    /// requires grad, a custom function's bad gradient).
    Autograd,
    /// Out of memory: an allocation the host or the GPU refused, or a size
    /// beyond what one tensor or buffer may hold here.
    Memory,
    /// The GPU device was lost: every later op on it fails.
    DeviceLost,
    /// A JS value of the wrong type or form: not a tensor, a disposed, freed
    /// or forged handle, a string where a number is needed, an unknown
    /// option or option value.
    Argument,
}

impl Kind {
    /// The JS name (`error.kind`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Shape => "shape",
            Kind::Axis => "axis",
            Kind::DType => "dtype",
            Kind::Device => "device",
            Kind::Value => "value",
            Kind::Autograd => "autograd",
            Kind::Memory => "memory",
            Kind::DeviceLost => "device-lost",
            Kind::Argument => "argument",
        }
    }

    /// The kind of a skiff error: its variant.
    pub fn of(e: &Error) -> Kind {
        match e {
            Error::Shape { .. } => Kind::Shape,
            Error::DType { .. } => Kind::DType,
            Error::Axis { .. } => Kind::Axis,
            // Distributed: never raised in a browser (MPI is native only).
            Error::Device { .. } | Error::Gpu { .. } | Error::Distributed { .. } => Kind::Device,
            Error::Value { .. } => Kind::Value,
            Error::Autograd { .. } => Kind::Autograd,
            Error::Memory { .. } => Kind::Memory,
            Error::DeviceLost { .. } => Kind::DeviceLost,
        }
    }
}

/// What every export throws: a `SkiffError` whose message starts with the op
/// as the JS caller named it (`broadcastTo: cannot expand shape [2] to [3]`).
///
/// It deliberately has no `From<skiff::Error>`: a skiff result reaches JS
/// only through [`Named::named`] or [`Named::within`], which put the JS name
/// first, so an internal op name (`expand`, `from_vec`,
/// `OptimState::from_flat`) cannot leak through a bare `?`.
#[derive(Debug)]
pub struct JsOpError {
    op: String,
    kind: Kind,
    /// The whole message, "`op`: ...".
    message: String,
    /// The op that failed inside `op`, when the message names it after `op`.
    inner_op: Option<String>,
}

impl JsOpError {
    /// The same error with another kind.
    pub fn kind(self, kind: Kind) -> JsOpError {
        JsOpError { kind, ..self }
    }
}

thread_local! {
    /// The wrapper's `SkiffError` class (see `set_error_class`).
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Hands the wrapper's `SkiffError` class to Rust, which then throws its
/// instances: `new SkiffError(message, { op, kind, innerOp })`.
#[wasm_bindgen(js_name = _setErrorClass, skip_typescript)]
pub fn set_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

impl From<JsOpError> for JsValue {
    fn from(e: JsOpError) -> Self {
        let details = js_sys::Object::new();
        let set = |key: &str, v: &str| {
            let _ = Reflect::set(&details, &JsValue::from_str(key), &JsValue::from_str(v));
        };
        set("op", &e.op);
        set("kind", e.kind.name());
        if let Some(inner) = &e.inner_op {
            set("innerOp", inner);
        }
        let message = JsValue::from_str(&e.message);
        let made = ERROR_CLASS.with(|c| {
            // Reflect.construct's binding catches: no JS exception unwinds through wasm.
            c.borrow().as_ref().and_then(|class| Reflect::construct(class, &Array::of2(&message, &details)).ok())
        });
        made.unwrap_or_else(|| {
            let err = js_sys::Error::new(&e.message);
            err.set_name("SkiffError");
            let _ = js_sys::Object::assign(&err, &details);
            err.into()
        })
    }
}

/// The result type of every export.
pub type JsResult<T> = std::result::Result<T, JsOpError>;

/// An error of the JS op `op`: "`op`: `msg`".
pub fn js_error(op: &str, kind: Kind, msg: impl std::fmt::Display) -> JsOpError {
    JsOpError { op: op.to_string(), kind, message: format!("{op}: {msg}"), inner_op: None }
}

/// A skiff error reported as the JS op `op`, keeping its kind; `inner` is
/// the name (in JS words) of the op that failed inside `op`, if the message
/// keeps it.
fn from_skiff(op: &str, e: &Error, msg: String, inner: Option<String>) -> JsOpError {
    JsOpError { inner_op: inner, ..js_error(op, Kind::of(e), msg) }
}

/// The part of a skiff error after its own op's name, in JS words.
pub(crate) fn without_op(e: &Error) -> String {
    let s = js_words(&e.to_string());
    // Every variant displays as "{op}: ..." (ops hold no ": ").
    match s.split_once(": ") {
        Some((_, rest)) => rest.to_string(),
        None => s,
    }
}

/// Rust names in skiff's messages and what JS calls them (dtypes, methods,
/// options): "dtypes differ: f32 [2] vs i32 [2] (cast one with to_dtype)"
/// reads "float32 [2] vs int32 [2] (cast one with toDtype)" in JS.
const JS_WORDS: &[(&str, &str)] = &[
    ("f32", "float32"),
    ("F32", "'float32'"),
    ("F64", "'float64'"),
    ("F16", "'float16'"),
    ("f16", "float16"),
    ("I32", "'int32'"),
    ("f64", "float64"),
    ("i32", "int32"),
    ("to_dtype", "toDtype"),
    ("no_grad", "noGrad"),
    ("grad_fn", "gradFn"),
    ("requires_grad", "requiresGrad"),
    ("retain_graph", "retainGraph"),
    ("create_graph", "createGraph"),
    ("allow_unused", "allowUnused"),
    ("retain_grad", "retainGrad"),
    ("normalized_shape", "normalizedShape"),
    ("weight_decay", "weightDecay"),
    ("init_scale", "initScale"),
    ("growth_factor", "growthFactor"),
    ("backoff_factor", "backoffFactor"),
    ("growth_interval", "growthInterval"),
    ("lr_decay", "lrDecay"),
    ("initial_accumulator_value", "initialAccumulatorValue"),
    ("label_smoothing", "labelSmoothing"),
    ("MultiHeadAttention", "MultiheadAttention"),
];

/// `msg` with every whole word of `JS_WORDS` (letters, digits and '_')
/// replaced by its JS name.
fn js_words(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while !rest.is_empty() {
        // A hyphen joins: "shader-f16" (a WebGPU feature) is one word, not "f16".
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let in_word = rest.starts_with(word);
        let split = rest.find(|c: char| word(c) != in_word).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(split);
        out.push_str(JS_WORDS.iter().find(|(rust, _)| *rust == run).map_or(run, |(_, js)| js));
        rest = tail;
    }
    out
}

/// Ops a readback reports under its own name (the readback machinery's).
const READBACK_OPS: &[&str] = &["to_vec", "to", "gpu", "synchronize"];

/// A skiff error as the value a promise of the JS op `op` rejects with. A
/// readback also reports what failed on the device since the last one (an
/// index out of range, an allocation the driver refused): those keep the
/// name of the op that failed after the called one ("data: gather: ...",
/// `innerOp` 'gather').
pub(crate) fn rejection(op: &str, e: Error) -> JsValue {
    let inner = e.op();
    if inner == op || READBACK_OPS.contains(&inner) {
        return from_skiff(op, &e, without_op(&e), None).into();
    }
    from_skiff(op, &e, js_words(&e.to_string()), Some(js_words(inner))).into()
}

/// Labels skiff results with the JS op that was called.
pub trait Named<T> {
    /// The error reported as the JS op `op`, the skiff op's name dropped:
    /// for calls that are one skiff op under another name (`broadcastTo` runs
    /// `expand`, `tensor` runs `from_vec`).
    fn named(self, op: &str) -> JsResult<T>;
    /// The error reported under `op`, keeping the name of the skiff op that
    /// failed when it is another one (`forward: matmul: ...`, `innerOp`
    /// 'matmul'): for calls that run many ops (a module's forward,
    /// backward, an optimizer step).
    fn within(self, op: &str) -> JsResult<T>;
}

impl<T> Named<T> for crate::error::Result<T> {
    fn named(self, op: &str) -> JsResult<T> {
        self.map_err(|e| from_skiff(op, &e, without_op(&e), None))
    }
    fn within(self, op: &str) -> JsResult<T> {
        self.map_err(|e| {
            let s = js_words(&e.to_string());
            let inner = s.split_once(": ").map_or("", |(inner, _)| inner).to_string();
            // "Linear.forward: Linear: ..." and "step: step: ..." say it twice.
            if inner == op || op.strip_prefix(inner.as_str()).is_some_and(|rest| rest.starts_with('.')) {
                from_skiff(op, &e, without_op(&e), None)
            } else {
                from_skiff(op, &e, s, Some(inner))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{js_words, without_op, Kind};
    use crate::error::Error;

    #[test]
    fn rust_names_in_messages_read_as_js_names() {
        assert_eq!(
            js_words("dtypes differ: f32 [2] vs i32 [2] (cast one with to_dtype)"),
            "dtypes differ: float32 [2] vs int32 [2] (cast one with toDtype)"
        );
        // Whole words only: a kernel or key that contains one is left alone.
        assert_eq!(js_words("reduce_f32 running_mean f64x"), "reduce_f32 running_mean f64x");
        assert_eq!(js_words("pass allow_unused=true, f64."), "pass allowUnused=true, float64.");
        assert_eq!(js_words("f16 tensors need shader-f16"), "float16 tensors need shader-f16");
        assert_eq!(js_words("convert with to_dtype(F32) first"), "convert with toDtype('float32') first");
        assert_eq!(js_words(""), "");
    }

    #[test]
    fn the_skiff_op_name_is_dropped() {
        let e = Error::shape("expand", "cannot expand shape [2] to [3]");
        assert_eq!(without_op(&e), "cannot expand shape [2] to [3]");
        let e = Error::Axis { op: "sum", axis: 5, ndim: 2, shape: vec![2, 2] };
        assert_eq!(without_op(&e), "axis 5 is out of range for a tensor of rank 2 (shape [2, 2])");
        let e = Error::dtype("pow", "dtypes differ: f32 [2] vs i32 [2]");
        assert_eq!(without_op(&e), "dtypes differ: float32 [2] vs int32 [2]");
    }

    #[test]
    fn every_variant_has_its_kind() {
        let cases = [
            (Error::shape("a", "m"), "shape"),
            (Error::dtype("a", "m"), "dtype"),
            (Error::Axis { op: "a", axis: 2, ndim: 1, shape: vec![1] }, "axis"),
            (Error::Device { op: "a", found: "cpu and gpu".into() }, "device"),
            (Error::value("a", "m"), "value"),
            (Error::autograd("a", "m"), "autograd"),
            (Error::memory("a", "m"), "memory"),
            (Error::Gpu { op: "a", msg: "m".into() }, "device"),
            (Error::DeviceLost { op: "a", msg: "m".into() }, "device-lost"),
        ];
        for (e, kind) in cases {
            assert_eq!(Kind::of(&e).name(), kind, "{e:?}");
        }
    }
}
