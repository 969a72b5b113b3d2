//! An op's user-facing call as data. Every registry entry carries its
//! signature as text in PyTorch's notation, which `Signature::parse` turns
//! into names and types:
//!
//! ```text
//! sum(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor
//! ```
//!
//! - `self` first makes it a `Tensor` method; without it the call is a module
//!   function (`where`, `cat`).
//! - Parameters after `*` are keyword-only: JS passes them in one options
//!   object (`x.sum(1, { keepdim: true })`), as the package always has.
//! - The name is PyTorch's (snake_case); the JS name is its camelCase
//!   (`js_name`). Where a Rust method is named otherwise, the op's doc says so.
//!
//! - Types: `Tensor` (in a method: of the receiver's dtype), `Tensor<any>`,
//!   `Tensor<int32>` and the other dtypes, `Tensor[]`, `str` (free text:
//!   an einsum equation), `scalar` (any number,
//!   NaN and infinities included: a value for a tensor), `float` (a finite
//!   hyperparameter), `int`, `int[]`, `size[]` (non-negative ints: paddings),
//!   `shape` (sizes that fit one tensor), `(int, int)`, `bool`, `None`,
//!   `DType`, `Device`, string literals (`'mean' | 'sum'`) and the literals
//!   `True`, `False` and small integers (`ceil_mode: False = False`: the one
//!   value skiff supports of an option PyTorch has).
//!
//! Types are a closed set (`Type`), so the op list, the JS methods and their
//! TypeScript declarations can all be derived from the same text, and a typo
//! in a signature fails `registry_problems` instead of reaching users.

use std::fmt;

/// One alternative of a parameter's or result's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    /// A tensor; in a method, of the receiver's dtype (no implicit promotion).
    Tensor,
    /// A tensor of any dtype (`Tensor<any>`: an embedding's weight).
    TensorAny,
    /// A tensor of one fixed dtype: `Tensor<bool>`, `Tensor<int32>`.
    TensorOf(&'static str),
    /// A list of tensors.
    Tensors,
    /// Any number, NaN and infinities included: a value for a tensor.
    Scalar,
    /// A finite number: a hyperparameter (a slope, a probability, eps).
    Float,
    Int,
    Bool,
    /// A list of ints (axes; a shape in which one entry may be -1).
    Ints,
    /// A list of non-negative ints that is no shape (paddings: their product means nothing).
    Sizes,
    /// A shape: non-negative sizes (one int or a list) that fit in one tensor.
    Shape,
    /// A pair of ints (`(int, int)`: kernel sizes, strides).
    IntPair,
    /// No value (`None`: "all axes", "no bias").
    None,
    DType,
    Device,
    /// One of a fixed set of strings: `'mean'`.
    Literal(&'static str),
    /// Any string (`str`: an einsum equation, parsed by the op itself).
    Str,
    /// Exactly this boolean (`False`): an option whose other value skiff lacks.
    BoolLiteral(bool),
    /// Exactly this integer (`1`), as `BoolLiteral`.
    IntLiteral(isize),
    /// A result only: PyTorch's (values, indices) pair, a tensor of the
    /// input's dtype and its int32 positions (`(Tensor, Tensor<int32>)`).
    ValuesIndices,
}

const DTYPES: [&str; 4] = ["float32", "float64", "int32", "bool"];

impl Type {
    fn parse(text: &'static str) -> Result<Type, String> {
        Ok(match text {
            "Tensor" => Type::Tensor,
            "Tensor[]" => Type::Tensors,
            "Tensor<any>" => Type::TensorAny,
            "scalar" => Type::Scalar,
            "shape" => Type::Shape,
            "float" => Type::Float,
            "int" => Type::Int,
            "bool" => Type::Bool,
            "int[]" => Type::Ints,
            "size[]" => Type::Sizes,
            "True" => Type::BoolLiteral(true),
            "False" => Type::BoolLiteral(false),
            "(int, int)" => Type::IntPair,
            "(Tensor, Tensor<int32>)" => Type::ValuesIndices,
            "None" => Type::None,
            "DType" => Type::DType,
            "Device" => Type::Device,
            "str" => Type::Str,
            t => {
                if let Some(d) = t.strip_prefix("Tensor<").and_then(|r| r.strip_suffix('>')) {
                    if !DTYPES.contains(&d) {
                        return Err(format!("unknown dtype {d:?} in {t:?} (one of {DTYPES:?})"));
                    }
                    Type::TensorOf(d)
                } else if let Some(s) = t.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
                    Type::Literal(s)
                } else if let Ok(n) = t.parse::<isize>() {
                    Type::IntLiteral(n)
                } else {
                    return Err(format!("unknown type {t:?}"));
                }
            }
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor => f.write_str("Tensor"),
            Type::TensorOf(d) => write!(f, "Tensor<{d}>"),
            Type::Tensors => f.write_str("Tensor[]"),
            Type::TensorAny => f.write_str("Tensor<any>"),
            Type::Scalar => f.write_str("scalar"),
            Type::Shape => f.write_str("shape"),
            Type::Float => f.write_str("float"),
            Type::Int => f.write_str("int"),
            Type::Bool => f.write_str("bool"),
            Type::Ints => f.write_str("int[]"),
            Type::Sizes => f.write_str("size[]"),
            Type::IntPair => f.write_str("(int, int)"),
            Type::None => f.write_str("None"),
            Type::DType => f.write_str("DType"),
            Type::Device => f.write_str("Device"),
            Type::Literal(s) => write!(f, "'{s}'"),
            Type::Str => f.write_str("str"),
            Type::BoolLiteral(b) => f.write_str(if *b { "True" } else { "False" }),
            Type::IntLiteral(n) => write!(f, "{n}"),
            Type::ValuesIndices => f.write_str("(Tensor, Tensor<int32>)"),
        }
    }
}

/// One parameter: its name, the alternatives of its type, its default as
/// written (`None` where it is required), and whether it is keyword-only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub types: Vec<Type>,
    pub default: Option<&'static str>,
    pub keyword: bool,
}

/// A parsed signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub name: &'static str,
    /// Called on a tensor (`self` first) rather than as a module function.
    pub method: bool,
    pub params: Vec<Param>,
    pub returns: Vec<Type>,
}

/// Splits at top-level `sep`s (not inside (), [] or <>).
fn split_top(text: &'static str, sep: char) -> Vec<&'static str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '<' => depth += 1,
            ')' | ']' | '>' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts
}

fn parse_types(text: &'static str) -> Result<Vec<Type>, String> {
    split_top(text, '|').into_iter().map(Type::parse).collect()
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl Signature {
    /// Parses `name(params) -> returns`; the error says what is wrong where.
    pub fn parse(text: &'static str) -> Result<Signature, String> {
        let fail = |why: String| format!("signature {text:?}: {why}");
        let (head, returns) = text.rsplit_once(") -> ").ok_or_else(|| fail("expected `name(...) -> type`".into()))?;
        let (name, params) = head.split_once('(').ok_or_else(|| fail("expected `(` after the name".into()))?;
        if !is_ident(name) {
            return Err(fail(format!("{name:?} is not a snake_case name")));
        }
        let mut sig =
            Signature { name, method: false, params: Vec::new(), returns: parse_types(returns).map_err(fail)? };
        let mut keyword = false;
        for (i, p) in split_top(params, ',').into_iter().enumerate() {
            match p {
                "" if params.trim().is_empty() => {}
                "self" if i == 0 => sig.method = true,
                "*" if !keyword => keyword = true,
                p => {
                    let (decl, default) = match p.split_once(" = ") {
                        Some((d, v)) => (d, Some(v.trim())),
                        None => (p, None),
                    };
                    let (pname, ty) =
                        decl.split_once(": ").ok_or_else(|| fail(format!("parameter {p:?} has no `: type`")))?;
                    if !is_ident(pname) {
                        return Err(fail(format!("{pname:?} is not a snake_case parameter name")));
                    }
                    if sig.params.iter().any(|q| q.name == pname) {
                        return Err(fail(format!("parameter {pname:?} appears twice")));
                    }
                    let positional_after_default =
                        !keyword && default.is_none() && sig.params.iter().any(|q| !q.keyword && q.default.is_some());
                    if positional_after_default {
                        return Err(fail(format!("required parameter {pname:?} follows one with a default")));
                    }
                    let types = parse_types(ty).map_err(fail)?;
                    if default == Some("None") && !types.contains(&Type::None) {
                        return Err(fail(format!("{pname:?} defaults to None but its type does not allow None")));
                    }
                    sig.params.push(Param { name: pname, types, default, keyword });
                }
            }
        }
        Ok(sig)
    }

    /// The JS name: the camelCase of PyTorch's (`log_softmax` -> `logSoftmax`).
    pub fn js_name(&self) -> String {
        camel_case(self.name)
    }
}

/// `layer_norm` -> `layerNorm`; a trailing `_` (in-place) stays.
pub fn camel_case(name: &str) -> String {
    let (body, tail) = match name.strip_suffix('_') {
        Some(b) => (b, "_"),
        None => (name, ""),
    };
    let mut out = String::new();
    for (i, part) in body.split('_').enumerate() {
        let mut chars = part.chars();
        match chars.next() {
            Some(c) if i > 0 => {
                out.push(c.to_ascii_uppercase());
                out.extend(chars);
            }
            _ => out.push_str(part),
        }
    }
    out + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_methods_keyword_parameters_and_unions() {
        let s =
            Signature::parse("sum(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor").unwrap();
        assert!(s.method);
        assert_eq!(s.name, "sum");
        assert_eq!(s.params.len(), 2);
        assert_eq!(s.params[0].types, vec![Type::Int, Type::Ints, Type::None]);
        assert_eq!(s.params[0].default, Some("None"));
        assert!(!s.params[0].keyword && s.params[1].keyword);
        assert_eq!(s.returns, vec![Type::Tensor]);
        let w = Signature::parse("where(condition: Tensor<bool>, input: Tensor, other: Tensor) -> Tensor").unwrap();
        assert!(!w.method);
        assert_eq!(w.params[0].types, vec![Type::TensorOf("bool")]);
        let p = Signature::parse("max_pool2d(self, kernel_size: int | (int, int)) -> Tensor").unwrap();
        assert_eq!(p.params[0].types, vec![Type::Int, Type::IntPair]);
        assert_eq!(Signature::parse("neg(self) -> Tensor").unwrap().params, vec![]);
        let q = Signature::parse("pool(self, pad: size[], *, ceil_mode: False = False, dilation: 1 = 1) -> Tensor")
            .unwrap();
        assert_eq!(q.params[0].types, vec![Type::Sizes]);
        assert_eq!(q.params[1].types, vec![Type::BoolLiteral(false)]);
        assert_eq!(q.params[2].types, vec![Type::IntLiteral(1)]);
        let e = Signature::parse("einsum(equation: str, operands: Tensor[]) -> Tensor").unwrap();
        assert_eq!((e.method, e.params[0].types.clone()), (false, vec![Type::Str]));
        assert_eq!(Type::Str.to_string(), "str");
    }

    #[test]
    fn refuses_what_would_mislead_users() {
        for (bad, why) in [
            ("neg(self) Tensor", "expected"),
            ("Neg(self) -> Tensor", "snake_case name"),
            ("add(self, other) -> Tensor", "no `: type`"),
            ("add(self, other: Tensr) -> Tensor", "unknown type"),
            ("cast(self, x: Tensor<f16>) -> Tensor", "unknown dtype"),
            ("f(self, a: int = 1, b: int) -> Tensor", "follows one with a default"),
            ("f(self, a: int = None) -> Tensor", "does not allow None"),
            ("f(self, a: int, a: float) -> Tensor", "twice"),
        ] {
            let e = Signature::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn js_names_are_camel_case() {
        assert_eq!(camel_case("log_softmax"), "logSoftmax");
        assert_eq!(camel_case("binary_cross_entropy_with_logits"), "binaryCrossEntropyWithLogits");
        assert_eq!(camel_case("max_pool2d"), "maxPool2d");
        assert_eq!(camel_case("add_"), "add_");
        assert_eq!(camel_case("index_add"), "indexAdd");
    }
}
