//! Host numbers a program reads and updates at every run: an optimizer's
//! hyperparameters (its learning rate, which a schedule changes between
//! calls) and step counts (Adam's bias corrections depend on them). Baking
//! them into the kernel specs, as `torch.jit.trace` bakes Python numbers,
//! would make a replayed training step use the traced call's learning rate
//! and step forever.
//!
//! - A `HostScalar` is a shared f64 cell owned by whoever keeps the number
//!   (the optimizer); the program holds a reference.
//! - An `Expr` computes a number from cells and constants
//!   (`lr / (1 - 0.9 ^ step)`).
//! - A `Sym` is a number with, while a capture runs, the expression it was
//!   computed by: host code does its arithmetic on `Sym`s, so eager calls
//!   and replays compute the very same f64 operations (bit-identical
//!   results), and the recorder learns which kernel parameter depends on
//!   which cell.

use crate::kernel::math::host_powf;
use crate::kernel::Scalar;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A named f64 cell shared between its owner and the programs that read it.
#[derive(Debug)]
pub struct HostScalar {
    bits: AtomicU64,
    name: String,
}

/// A shared handle to a `HostScalar`, compared and hashed by identity.
#[derive(Clone, Debug)]
pub struct HostRef(Arc<HostScalar>);

impl HostRef {
    /// A new cell.
    pub fn new(name: impl Into<String>, value: f64) -> HostRef {
        HostRef(Arc::new(HostScalar { bits: AtomicU64::new(value.to_bits()), name: name.into() }))
    }
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.bits.load(Ordering::Relaxed))
    }
    pub fn set(&self, v: f64) {
        self.0.bits.store(v.to_bits(), Ordering::Relaxed)
    }
    pub fn name(&self) -> &str {
        &self.0.name
    }
    fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl PartialEq for HostRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for HostRef {}
impl std::hash::Hash for HostRef {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}

/// A number computed from host cells and constants.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    Const(Scalar),
    Cell(HostRef),
    Add(Arc<Expr>, Arc<Expr>),
    Sub(Arc<Expr>, Arc<Expr>),
    Mul(Arc<Expr>, Arc<Expr>),
    Div(Arc<Expr>, Arc<Expr>),
    /// `a ** b` (`kernel::math::host_powf`: the same bits on every target).
    Pow(Arc<Expr>, Arc<Expr>),
    Sqrt(Arc<Expr>),
}

impl Expr {
    /// The value now (the same f64 operations `Sym` did when it was built).
    pub fn eval(&self) -> f64 {
        match self {
            Expr::Const(c) => c.0,
            Expr::Cell(c) => c.get(),
            Expr::Add(a, b) => a.eval() + b.eval(),
            Expr::Sub(a, b) => a.eval() - b.eval(),
            Expr::Mul(a, b) => a.eval() * b.eval(),
            Expr::Div(a, b) => a.eval() / b.eval(),
            Expr::Pow(a, b) => host_powf(a.eval(), b.eval()),
            Expr::Sqrt(a) => a.eval().sqrt(),
        }
    }

    /// Every cell the expression reads, in order of appearance (repeats included).
    pub fn cells(&self, out: &mut Vec<HostRef>) {
        match self {
            Expr::Const(_) => {}
            Expr::Cell(c) => out.push(c.clone()),
            Expr::Sqrt(a) => a.cells(out),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) | Expr::Pow(a, b) => {
                a.cells(out);
                b.cells(out);
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(c) => write!(f, "{}", c.0),
            Expr::Cell(c) => write!(f, "${}", c.name()),
            Expr::Add(a, b) => write!(f, "({a} + {b})"),
            Expr::Sub(a, b) => write!(f, "({a} - {b})"),
            Expr::Mul(a, b) => write!(f, "({a} * {b})"),
            Expr::Div(a, b) => write!(f, "({a} / {b})"),
            Expr::Pow(a, b) => write!(f, "({a} ^ {b})"),
            Expr::Sqrt(a) => write!(f, "sqrt({a})"),
        }
    }
}

/// A number, and while a capture runs the expression over host cells it
/// was computed by (None for a constant, and always outside a capture).
#[derive(Clone, Debug)]
pub struct Sym {
    pub value: f64,
    pub expr: Option<Arc<Expr>>,
}

impl Sym {
    pub fn constant(value: f64) -> Sym {
        Sym { value, expr: None }
    }
    /// The cell's value; with its expression when `traced`.
    pub fn cell(cell: &HostRef, traced: bool) -> Sym {
        Sym { value: cell.get(), expr: traced.then(|| Arc::new(Expr::Cell(cell.clone()))) }
    }
    fn expr(&self) -> Arc<Expr> {
        self.expr.clone().unwrap_or_else(|| Arc::new(Expr::Const(Scalar(self.value))))
    }
    fn combine(&self, other: &Sym, value: f64, make: fn(Arc<Expr>, Arc<Expr>) -> Expr) -> Sym {
        let expr = (self.expr.is_some() || other.expr.is_some()).then(|| Arc::new(make(self.expr(), other.expr())));
        Sym { value, expr }
    }
    pub fn powf(&self, e: &Sym) -> Sym {
        self.combine(e, host_powf(self.value, e.value), Expr::Pow)
    }
    pub fn sqrt(&self) -> Sym {
        Sym { value: self.value.sqrt(), expr: self.expr.as_ref().map(|e| Arc::new(Expr::Sqrt(e.clone()))) }
    }
}

impl From<f64> for Sym {
    fn from(v: f64) -> Sym {
        Sym::constant(v)
    }
}

macro_rules! sym_op {
    ($trait:ident, $method:ident, $op:tt, $variant:ident) => {
        impl std::ops::$trait<&Sym> for &Sym {
            type Output = Sym;
            fn $method(self, rhs: &Sym) -> Sym {
                self.combine(rhs, self.value $op rhs.value, Expr::$variant)
            }
        }
        impl std::ops::$trait<f64> for &Sym {
            type Output = Sym;
            fn $method(self, rhs: f64) -> Sym {
                self $op &Sym::constant(rhs)
            }
        }
        impl std::ops::$trait<&Sym> for f64 {
            type Output = Sym;
            fn $method(self, rhs: &Sym) -> Sym {
                &Sym::constant(self) $op rhs
            }
        }
    };
}
sym_op!(Add, add, +, Add);
sym_op!(Sub, sub, -, Sub);
sym_op!(Mul, mul, *, Mul);
sym_op!(Div, div, /, Div);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_recomputes_the_symbolic_value_bit_for_bit() {
        let lr = HostRef::new("lr", 0.1);
        let step = HostRef::new("step", 3.0);
        let (lr_s, t) = (Sym::cell(&lr, true), Sym::cell(&step, true));
        let bc1 = 1.0 - &Sym::constant(0.9).powf(&t);
        let scaled = &lr_s / &bc1;
        assert_eq!(scaled.value.to_bits(), (0.1 / (1.0 - host_powf(0.9, 3.0))).to_bits());
        let e = scaled.expr.clone().unwrap();
        assert_eq!(e.eval().to_bits(), scaled.value.to_bits());
        lr.set(0.05);
        step.set(4.0);
        assert_eq!(e.eval().to_bits(), (0.05 / (1.0 - host_powf(0.9, 4.0))).to_bits());
        assert_eq!(e.to_string(), "($lr / (1 - (0.9 ^ $step)))");
        let mut cells = Vec::new();
        e.cells(&mut cells);
        assert_eq!(cells, vec![lr.clone(), step.clone()]);
    }

    #[test]
    fn untraced_numbers_carry_no_expression() {
        let lr = HostRef::new("lr", 0.1);
        let s = &Sym::cell(&lr, false) * 2.0;
        assert!(s.expr.is_none());
        assert_eq!(s.value, 0.2);
    }
}
