//! Reading one JS argument of a generated method by its signature types.
//! The reader is chosen once per parameter when the method table is built
//! (`Reader::of`), so a call only runs the checked conversion it needs: this
//! is on the path of every small op a JS program calls.

use super::shape_arg;
use crate::ops::args::Value;
use crate::ops::signature::Type;
use crate::ops::surface::MethodParam;
use crate::web::args::{self, describe, Operand};
use crate::web::{js_error, JsResult, Kind};
use wasm_bindgen::prelude::*;

/// The conversion a parameter's types call for, most specific first (a
/// `Tensor | scalar` operand before a bare tensor, a pair before an int).
enum Conversion {
    /// `Tensor | scalar` (any number) or `Tensor | float` (finite).
    TensorOrNumber {
        any_number: bool,
    },
    Tensor,
    Tensors,
    Pair,
    Shape,
    Ints,
    Sizes,
    Int,
    Scalar,
    Float,
    Bool,
    BoolLiteral(bool),
    IntLiteral(isize),
    Literals(Vec<&'static str>),
    /// Any string (an einsum equation).
    Str,
    DType,
    Device,
    /// No JS reader for these types (a registry error, reported at the call).
    None,
}

/// How to read one parameter, and what `null` / `undefined` mean for it.
pub(super) struct Reader {
    conversion: Conversion,
    /// `null` is the value `None`.
    takes_none: bool,
    /// `undefined` (or `null`) is "not given": some form has a default.
    optional: bool,
    /// A list reader would take a missing value as "all axes": refuse it.
    required_list: bool,
    types: Vec<Type>,
}

impl Reader {
    pub(super) fn of(p: &MethodParam) -> Reader {
        let has = |t: &Type| p.types.contains(t);
        let tensor = p.types.iter().any(|t| matches!(t, Type::Tensor | Type::TensorAny | Type::TensorOf(_)));
        let literals: Vec<&'static str> =
            p.types.iter().filter_map(|t| if let Type::Literal(s) = t { Some(*s) } else { None }).collect();
        let bool_literal = p.types.iter().find_map(|t| if let Type::BoolLiteral(b) = t { Some(*b) } else { None });
        let int_literal = p.types.iter().find_map(|t| if let Type::IntLiteral(n) = t { Some(*n) } else { None });
        let conversion = if tensor && (has(&Type::Scalar) || has(&Type::Float)) {
            Conversion::TensorOrNumber { any_number: has(&Type::Scalar) }
        } else if tensor {
            Conversion::Tensor
        } else if has(&Type::Tensors) {
            Conversion::Tensors
        } else if has(&Type::IntPair) {
            Conversion::Pair
        } else if has(&Type::Shape) {
            Conversion::Shape
        } else if has(&Type::Ints) {
            Conversion::Ints
        } else if has(&Type::Sizes) {
            Conversion::Sizes
        } else if has(&Type::Int) {
            Conversion::Int
        } else if has(&Type::Scalar) {
            Conversion::Scalar
        } else if has(&Type::Float) {
            Conversion::Float
        } else if has(&Type::Bool) {
            Conversion::Bool
        } else if let Some(b) = bool_literal {
            Conversion::BoolLiteral(b)
        } else if let Some(n) = int_literal {
            Conversion::IntLiteral(n)
        } else if !literals.is_empty() {
            Conversion::Literals(literals)
        } else if has(&Type::Str) {
            Conversion::Str
        } else if has(&Type::DType) {
            Conversion::DType
        } else if has(&Type::Device) {
            Conversion::Device
        } else {
            Conversion::None
        };
        let list = matches!(conversion, Conversion::Ints | Conversion::Shape | Conversion::Sizes);
        Reader {
            conversion,
            takes_none: has(&Type::None),
            optional: p.optional,
            required_list: list,
            types: p.types.clone(),
        }
    }

    /// One argument. `undefined` is "not given" where some form of the
    /// method can do without it; `null` is `None` where a type allows it,
    /// else "not given" as well (so is `undefined` otherwise: its error says so).
    pub(super) fn read(&self, op: &str, name: &str, v: &JsValue) -> JsResult<Option<Value>> {
        // Rust's facts before JS's: each `is_null()` is a call into JS.
        if self.takes_none && v.is_null() {
            return Ok(Some(Value::None));
        }
        if self.optional && (v.is_undefined() || v.is_null()) {
            return Ok(None);
        }
        if self.required_list && (v.is_undefined() || v.is_null()) {
            return Err(js_error(op, Kind::Argument, format!("{name} is required, got {}", describe(v))));
        }
        let value = match &self.conversion {
            Conversion::TensorOrNumber { any_number } => match Operand::parse(op, name, v)? {
                Operand::Tensor(t) => Value::Tensor(t),
                Operand::Scalar(x) if *any_number => Value::Float(x),
                Operand::Scalar(_) => Value::Float(args::finite_arg(op, name, v)?),
            },
            Conversion::Tensor => Value::Tensor(args::tensor(op, name, v)?),
            Conversion::Tensors => Value::Tensors(args::tensors(op, name, v)?),
            Conversion::Pair => Value::Pair(args::pair(op, name, v)?),
            Conversion::Shape => Value::Ints(shape_arg(op, name, v)?.into_iter().map(|d| d as isize).collect()),
            Conversion::Ints => Value::Ints(args::axes(op, name, v)?),
            Conversion::Sizes => {
                let sizes = args::sizes(op, name, v)?;
                // Read as u32, held as isize: on wasm32 a size past i32::MAX would wrap.
                let held = sizes.iter().enumerate().map(|(i, &d)| {
                    isize::try_from(d).map_err(|_| {
                        js_error(op, Kind::Memory, format!("{name}[{i}] = {d} is too large for one tensor here"))
                    })
                });
                Value::Ints(held.collect::<JsResult<_>>()?)
            }
            Conversion::Int => Value::Int(args::int_arg(op, name, v)?),
            Conversion::Scalar => Value::Float(args::number(op, name, v)?),
            Conversion::Float => Value::Float(args::finite_arg(op, name, v)?),
            Conversion::Bool => Value::Bool(args::bool_arg(op, name, v)?),
            Conversion::BoolLiteral(want) => {
                let b = args::bool_arg(op, name, v)?;
                if b != *want {
                    return Err(js_error(op, Kind::Value, format!("{name}: {b} is not supported (only {want})")));
                }
                Value::Bool(b)
            }
            Conversion::IntLiteral(want) => {
                let n = args::int_arg(op, name, v)?;
                if n != *want {
                    return Err(js_error(op, Kind::Value, format!("{name}: {n} is not supported (only {want})")));
                }
                Value::Int(n)
            }
            Conversion::Literals(literals) => match v.as_string() {
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
            },
            Conversion::Str => Value::Str(args::string_arg(op, name, v)?),
            Conversion::DType => Value::DType(args::dtype(op, v)?),
            Conversion::Device => Value::Device(args::device(op, v)?),
            Conversion::None => {
                return Err(js_error(op, Kind::Argument, format!("{name}: no reader for the types {:?}", self.types)))
            }
        };
        Ok(Some(value))
    }
}
