//! A registry op's arguments as data: one `Value` per parameter of its
//! signature, in order, defaults filled in. Each `OpDef::forward` reads them
//! by name, so any caller that can produce values (the JS bindings'
//! generated methods, a recorded program) runs any op through one entry
//! point; Rust users keep the typed methods, which `forward` calls.

use super::signature::{Param, Signature, Type};
use super::OpDef;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// One argument.
#[derive(Clone, Debug)]
pub enum Value {
    Tensor(Tensor),
    Tensors(Vec<Tensor>),
    /// Any number: a tensor value (`scalar`) or a hyperparameter (`float`).
    Float(f64),
    Int(isize),
    /// A list of ints (axes, a shape).
    Ints(Vec<isize>),
    Pair([usize; 2]),
    Bool(bool),
    Str(String),
    None,
    DType(DType),
    Device(Device),
}

impl Value {
    /// Whether this value is one `ty` admits (a literal must match too).
    pub fn fits(&self, ty: &Type) -> bool {
        match (self, ty) {
            (Value::Tensor(_), Type::Tensor | Type::TensorAny | Type::TensorOf(_)) => true,
            (Value::Tensors(_), Type::Tensors) => true,
            (Value::Float(_), Type::Scalar | Type::Float) => true,
            (Value::Int(_), Type::Int) => true,
            (Value::Ints(_), Type::Ints | Type::Shape) => true,
            (Value::Ints(v), Type::Sizes) => v.iter().all(|&d| d >= 0),
            (Value::Bool(b), Type::BoolLiteral(l)) => b == l,
            (Value::Int(i), Type::IntLiteral(l)) => i == l,
            (Value::Pair(_), Type::IntPair) => true,
            (Value::Bool(_), Type::Bool) => true,
            (Value::Str(s), Type::Literal(l)) => s == l,
            (Value::Str(_), Type::Str) => true,
            (Value::None, Type::None) => true,
            (Value::DType(_), Type::DType) => true,
            (Value::Device(_), Type::Device) => true,
            _ => false,
        }
    }

    /// A default as written in a signature (`None`, `False`, `0.01`, `'mean'`, `-1`).
    pub fn parse_default(text: &str, types: &[Type]) -> std::result::Result<Value, String> {
        Ok(match text {
            "None" => Value::None,
            "True" => Value::Bool(true),
            "False" => Value::Bool(false),
            t if t.starts_with('\'') && t.ends_with('\'') && t.len() >= 2 => Value::Str(t[1..t.len() - 1].to_string()),
            t if types.iter().any(|ty| matches!(ty, Type::Int | Type::IntLiteral(_))) && t.parse::<isize>().is_ok() => {
                Value::Int(t.parse().unwrap_or(0))
            }
            t => Value::Float(t.parse::<f64>().map_err(|_| format!("default {t:?} is not a value of {types:?}"))?),
        })
    }
}

/// One value per parameter (`None`: not given), inline for the few
/// parameters an op has: binding allocates nothing.
pub type Values = smallvec::SmallVec<[Option<Value>; 6]>;

/// A `Tensor | scalar` argument.
pub enum Operand<'t> {
    Tensor(&'t Tensor),
    Number(f64),
}

/// The arguments of one call of `def`.
pub struct Args<'a> {
    pub def: &'static OpDef,
    pub sig: &'a Signature,
    /// The tensor a method is called on.
    pub this: Option<Tensor>,
    /// One per `sig.params`, in order; every one is `Some` once bound (kept
    /// as options so binding fills the caller's vector in place: this runs
    /// for every op a JS method calls).
    values: Values,
}

/// A number as JS and PyTorch print it (`Infinity`, not Rust's `inf`).
fn show(n: f64) -> String {
    match n {
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        _ => format!("{n}"),
    }
}

impl<'a> Args<'a> {
    /// Binds `given` (one entry per parameter: `None` where the caller gave
    /// nothing) to `sig`: each value must fit the parameter's type, and a
    /// missing one takes its default. The error names the parameter.
    pub fn bind(
        def: &'static OpDef,
        sig: &'a Signature,
        this: Option<Tensor>,
        given: impl Into<Values>,
    ) -> Result<Args<'a>> {
        let mut given = given.into();
        if given.len() > sig.params.len() {
            return Err(Error::value(def.name, format!("takes {} arguments, got {}", sig.params.len(), given.len())));
        }
        given.resize_with(sig.params.len(), || None);
        for (p, v) in sig.params.iter().zip(given.iter_mut()) {
            match v {
                Some(v) if p.types.iter().any(|t| v.fits(t)) => {}
                Some(v) => return Err(Error::value(def.name, format!("{} does not take {v:?}", p.name))),
                None => *v = Some(default_of(def.name, p)?),
            }
        }
        Ok(Args { def, sig, this, values: given })
    }

    fn value(&self, name: &str) -> Result<&Value> {
        let found = self.sig.params.iter().position(|p| p.name == name).and_then(|i| self.values[i].as_ref());
        found.ok_or_else(|| Error::value(self.def.name, format!("the signature has no parameter {name:?}")))
    }

    fn wrong(&self, name: &str, want: &str) -> Error {
        Error::value(self.def.name, format!("{name} must be {want}"))
    }

    /// The tensor a method is called on.
    pub fn this(&self) -> Result<&Tensor> {
        self.this
            .as_ref()
            .ok_or_else(|| Error::value(self.def.name, "is a method: it needs the tensor it is called on"))
    }
    pub fn tensor(&self, name: &str) -> Result<&Tensor> {
        match self.value(name)? {
            Value::Tensor(t) => Ok(t),
            _ => Err(self.wrong(name, "a tensor")),
        }
    }
    /// `read` of a parameter that may be `None`.
    fn optional<'s, T>(&'s self, name: &str, read: fn(&'s Self, &str) -> Result<T>) -> Result<Option<T>> {
        match self.value(name)? {
            Value::None => Ok(None),
            _ => read(self, name).map(Some),
        }
    }
    pub fn opt_tensor(&self, name: &str) -> Result<Option<&Tensor>> {
        self.optional(name, Self::tensor)
    }
    /// A number (an int is one too).
    pub fn float(&self, name: &str) -> Result<f64> {
        match self.value(name)? {
            Value::Float(x) => Ok(*x),
            Value::Int(i) => Ok(*i as f64),
            _ => Err(self.wrong(name, "a number")),
        }
    }
    pub fn opt_float(&self, name: &str) -> Result<Option<f64>> {
        self.optional(name, Self::float)
    }
    pub fn int(&self, name: &str) -> Result<isize> {
        match self.value(name)? {
            Value::Int(i) => Ok(*i),
            _ => Err(self.wrong(name, "an integer")),
        }
    }
    pub fn opt_int(&self, name: &str) -> Result<Option<isize>> {
        self.optional(name, Self::int)
    }
    /// Ints given as one int or a list; `None` is the empty list (all axes).
    pub fn ints(&self, name: &str) -> Result<Vec<isize>> {
        match self.value(name)? {
            Value::Int(i) => Ok(vec![*i]),
            Value::Ints(v) => Ok(v.clone()),
            Value::None => Ok(Vec::new()),
            _ => Err(self.wrong(name, "an integer or a list of integers")),
        }
    }
    /// A non-negative int (a count: `groups`).
    pub fn size(&self, name: &str) -> Result<usize> {
        let i = self.int(name)?;
        usize::try_from(i).map_err(|_| self.wrong(name, &format!("a non-negative integer, got {i}")))
    }
    /// Sizes (non-negative ints).
    pub fn sizes(&self, name: &str) -> Result<Vec<usize>> {
        self.ints(name)?
            .into_iter()
            .map(|d| usize::try_from(d).map_err(|_| self.wrong(name, "a list of non-negative sizes")))
            .collect()
    }
    /// A pair of sizes given as one non-negative int or `(a, b)` (kernel sizes, strides).
    pub fn pair(&self, name: &str) -> Result<[usize; 2]> {
        match self.value(name)? {
            Value::Pair(p) => Ok(*p),
            Value::Int(i) if *i >= 0 => Ok([*i as usize; 2]),
            _ => Err(self.wrong(name, "a non-negative integer or a pair of them")),
        }
    }
    pub fn opt_pair(&self, name: &str) -> Result<Option<[usize; 2]>> {
        self.optional(name, Self::pair)
    }
    pub fn tensors(&self, name: &str) -> Result<&[Tensor]> {
        match self.value(name)? {
            Value::Tensors(ts) => Ok(ts),
            _ => Err(self.wrong(name, "a list of tensors")),
        }
    }
    pub fn device(&self, name: &str) -> Result<&Device> {
        match self.value(name)? {
            Value::Device(d) => Ok(d),
            _ => Err(self.wrong(name, "a device")),
        }
    }
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.value(name)? {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.wrong(name, "a boolean")),
        }
    }
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>> {
        self.optional(name, Self::bool)
    }
    pub fn str(&self, name: &str) -> Result<&str> {
        match self.value(name)? {
            Value::Str(s) => Ok(s),
            _ => Err(self.wrong(name, "a string")),
        }
    }
    pub fn dtype(&self, name: &str) -> Result<DType> {
        match self.value(name)? {
            Value::DType(d) => Ok(*d),
            _ => Err(self.wrong(name, "a dtype")),
        }
    }
    /// A `Tensor | scalar` argument as given.
    pub fn operand(&self, name: &str) -> Result<Operand<'_>> {
        match self.value(name)? {
            Value::Tensor(t) => Ok(Operand::Tensor(t)),
            _ => self.float(name).map(Operand::Number),
        }
    }
    /// A finite number (a hyperparameter such as a slope or a probability).
    pub fn finite(&self, name: &str) -> Result<f64> {
        let x = self.float(name)?;
        if !x.is_finite() {
            return Err(self.wrong(name, &format!("a finite number, got {}", show(x))));
        }
        Ok(x)
    }

    /// A `Tensor | scalar` operand as a tensor: a number becomes a 0-d
    /// tensor of `like`'s dtype and device, checked to be a value of that
    /// dtype (PyTorch: "value cannot be converted to type int32 without
    /// overflow"), so 1e10 or 2.5 cannot wrap, saturate or truncate.
    pub fn operand_like(&self, name: &str, like: &Tensor) -> Result<Tensor> {
        match self.value(name)? {
            Value::Tensor(t) => Ok(t.clone()),
            _ => scalar_like_checked(self.def.name, name, like, self.float(name)?),
        }
    }
}

fn default_of(op: &'static str, p: &Param) -> Result<Value> {
    match p.default {
        Some(text) => Value::parse_default(text, &p.types).map_err(|e| Error::value(op, format!("{}: {e}", p.name))),
        None => Err(Error::value(op, format!("{} is required", p.name))),
    }
}

/// `value` as a 0-d tensor of `like`'s dtype and device, refused when that
/// dtype cannot hold it exactly (int32: integers in range; floats and bool
/// take any number, bool as nonzero).
pub fn scalar_like_checked(op: &'static str, name: &str, like: &Tensor, value: f64) -> Result<Tensor> {
    value_for(op, name, value, like.dtype())?;
    like.scalar_like(value)
}

/// `value`, refused when `dtype` cannot hold it exactly (as `scalar_like_checked`).
pub fn value_for(op: &'static str, name: &str, value: f64, dtype: DType) -> Result<f64> {
    let fits_int32 = value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64;
    if dtype == DType::I32 && !fits_int32 {
        return Err(Error::value(
            op,
            format!(
                "{name} {} cannot be converted to int32 without overflow or rounding \
                 (int32 holds integers in [-2147483648, 2147483647])",
                show(value)
            ),
        ));
    }
    Ok(value)
}

/// `x <op> c` for a number `c`: integer and bool tensors are compared as
/// floats when `c` is not a value of their dtype (`ints.lt(2.5)`,
/// `mask.eq(2)`), as PyTorch promotes.
pub fn compare_number(x: &Tensor, c: f64, f: fn(&Tensor, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let exact = match x.dtype() {
        DType::F32 | DType::F64 | DType::F16 => true,
        DType::I32 => c.fract() == 0.0 && c.abs() <= i32::MAX as f64,
        DType::Bool => false,
    };
    if exact {
        return f(x, &x.scalar_like(c)?);
    }
    let wide = x.to_dtype(if x.device().is_gpu() { DType::F32 } else { DType::F64 })?;
    f(&wide, &wide.scalar_like(c)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> &'static OpDef {
        crate::ops::registry().into_iter().find(|d| d.name == name).unwrap()
    }

    #[test]
    fn binding_fills_defaults_and_checks_types() {
        let d = def("leaky_relu");
        let sig = Signature::parse(d.signature).unwrap();
        let x = Tensor::from_vec(vec![-2.0f32, 3.0], &[2]).unwrap();
        let a = Args::bind(d, &sig, Some(x.clone()), vec![None]).unwrap();
        assert_eq!(a.float("negative_slope").unwrap(), 0.01);
        assert_eq!(d.forward.unwrap().run(&a).unwrap()[0].to_f32_vec().unwrap(), vec![-0.02, 3.0]);
        let wrong = Args::bind(d, &sig, Some(x), vec![Some(Value::Str("x".into()))]);
        assert!(wrong.is_err_and(|e| e.to_string().contains("negative_slope")));
    }

    #[test]
    fn defaults_parse_by_type() {
        assert!(matches!(Value::parse_default("-1", &[Type::Int]), Ok(Value::Int(-1))));
        assert!(matches!(Value::parse_default("1", &[Type::Float]), Ok(Value::Float(x)) if x == 1.0));
        assert!(matches!(Value::parse_default("'mean'", &[Type::Literal("mean")]), Ok(Value::Str(s)) if s == "mean"));
        assert!(matches!(Value::parse_default("False", &[Type::Bool]), Ok(Value::Bool(false))));
    }

    #[test]
    fn a_number_operand_must_be_a_value_of_the_dtype() {
        let i = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
        let e = scalar_like_checked("maximum", "other", &i, 2.5).unwrap_err().to_string();
        assert!(e.contains("2.5") && e.contains("int32"), "{e}");
        let lt = compare_number(&i, 1.5, Tensor::lt).unwrap();
        assert_eq!(lt.to_vec::<u8>().unwrap(), vec![1, 0]);
    }
}
