//! Comparisons (masks, no gradient) and `where_`, which selects by a mask.

use super::args::{compare_number, scalar_like_checked, Args, Operand};
#[cfg(feature = "testing")]
use super::reference::{self, Host};
use super::{same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::binary_slices;
use crate::dispatch::elementwise as be;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::CompareKernel;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// One comparison row.
pub struct CompareDef {
    pub op: OpDef,
    pub kernel: CompareKernel,
}

macro_rules! compare_row {
    ($NAME:ident, $name:literal, sig: $sig:literal, doc: $doc:literal, $method:ident, |$a:ident, $b:ident| $e:expr, wgsl: $wgsl:literal) => {
        pub static $NAME: CompareDef = CompareDef {
            op: OpDef {
                name: $name,
                signature: $sig,
                doc: $doc,
                forward: Some(Forward::One(|a| {
                    let x = a.this()?;
                    match a.operand("other")? {
                        Operand::Tensor(t) => x.$method(t),
                        Operand::Number(c) => compare_number(x, c, Tensor::$method),
                    }
                })),
                kind: OpKind::NoGrad,
                backward: None,
                second_order: false,
                #[cfg(feature = "testing")]
                cases: || compare_cases(|xs| xs[0].$method(&xs[1]), |h| reference::compare(&h[0], &h[1], |$a, $b| $e)),
            },
            kernel: CompareKernel {
                name: $name,
        f32: binary_slices!(f32 => u8, |$a, $b| ($e) as u8),
        f64: binary_slices!(f64 => u8, |$a, $b| ($e) as u8),
        i32: binary_slices!(i32 => u8, |$a, $b| ($e) as u8),
        bool: binary_slices!(u8 => u8, |$a, $b| ($e) as u8),
                wgsl: $wgsl,
            },
        };
    };
}

/// The cases every comparison runs: random floats (broadcast), floats with
/// many equal pairs, i32 and bool operands (each dtype has its own kernel).
#[cfg(feature = "testing")]
fn compare_cases(run: fn(&[Tensor]) -> Result<Tensor>, reference: fn(&[Host]) -> Host) -> Vec<Case> {
    vec![
        Case::new(
            "floats, [3, 4] with [4]",
            vec![Input::Uniform(vec![3, 4], -1.0, 1.0), Input::Uniform(vec![4], -1.0, 1.0)],
            run,
        )
        .also(Sample::Empty, &[&[0, 4], &[4]])
        .also(Sample::Scalar, &[&[], &[]]),
        Case::new(
            "floats with ties",
            vec![Input::Grid(vec![3, 4], -1.0, 1.0, 3), Input::Grid(vec![3, 4], -1.0, 1.0, 3)],
            run,
        ),
        Case::new("i32, [3, 1] with [4]", vec![Input::Int(vec![3, 1], -1, 2), Input::Int(vec![4], -1, 2)], run),
        Case::new("bool", vec![Input::Mask(vec![3, 4]), Input::Mask(vec![3, 4])], run),
    ]
    .into_iter()
    .map(|c| c.reference(reference))
    .collect()
}

compare_row!(EQ, "eq", sig: "eq(self, other: Tensor | scalar) -> Tensor<bool>", doc: "x == y, elementwise, broadcast (a bool mask).", eq, |a, b| a == b, wgsl: "a == b");
// Not `a != b`: WGSL compiles that to an ordered comparison, false for NaN
// (IEEE's and the cpu's `!=` are true when either side is NaN).
compare_row!(NE, "ne", sig: "ne(self, other: Tensor | float) -> Tensor<bool>", doc: "x != y, elementwise, broadcast (a bool mask).", ne, |a, b| a != b, wgsl: "!(a == b)");
compare_row!(LT, "lt", sig: "lt(self, other: Tensor | float) -> Tensor<bool>", doc: "x < y, elementwise, broadcast (a bool mask).", lt, |a, b| a < b, wgsl: "a < b");
compare_row!(LE, "le", sig: "le(self, other: Tensor | float) -> Tensor<bool>", doc: "x <= y, elementwise, broadcast (a bool mask).", le, |a, b| a <= b, wgsl: "a <= b");
compare_row!(GT, "gt", sig: "gt(self, other: Tensor | float) -> Tensor<bool>", doc: "x > y, elementwise, broadcast (a bool mask).", gt, |a, b| a > b, wgsl: "a > b");
compare_row!(GE, "ge", sig: "ge(self, other: Tensor | float) -> Tensor<bool>", doc: "x >= y, elementwise, broadcast (a bool mask).", ge, |a, b| a >= b, wgsl: "a >= b");

fn compare(def: &'static CompareDef, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let name = def.op.name;
    same_device(name, &[a, b])?;
    same_dtype(name, a, b)?;
    let shape = broadcast_shapes(name, a.shape(), b.shape())?;
    be::compare(name, a, b, &shape, &def.kernel)
}

/// `where` with numbers: a number takes the other operand's dtype (checked to
/// fit it), and float32 when both are numbers.
fn where_forward(a: &Args) -> Result<Tensor> {
    let cond = a.tensor("condition")?;
    let (x, y) = match (a.operand("input")?, a.operand("other")?) {
        (Operand::Tensor(x), Operand::Tensor(y)) => (x.clone(), y.clone()),
        (Operand::Tensor(x), Operand::Number(c)) => (x.clone(), scalar_like_checked("where", "other", x, c)?),
        (Operand::Number(c), Operand::Tensor(y)) => (scalar_like_checked("where", "input", y, c)?, y.clone()),
        (Operand::Number(c), Operand::Number(d)) => {
            let device = cond.device();
            (Tensor::full_on(&[], c, DType::F32, &device)?, Tensor::full_on(&[], d, DType::F32, &device)?)
        }
    };
    Tensor::where_(cond, &x, &y)
}

static WHERE: OpDef = OpDef {
    name: "where",
    signature: "where(condition: Tensor<bool>, input: Tensor | scalar, other: Tensor | scalar) -> Tensor",
    doc: "condition ? input : other, elementwise, all three broadcast (Rust: `Tensor::where_`).",
    forward: Some(Forward::One(where_forward)),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let cond = c.saved(0);
        let zero = g[0].zeros_scalar()?;
        let ga = if c.needs_input_grad(1) {
            Some(Tensor::where_(cond, &g[0], &zero)?.sum_to(c.input_shape(1))?)
        } else {
            None
        };
        let gb = if c.needs_input_grad(2) {
            Some(Tensor::where_(cond, &zero, &g[0])?.sum_to(c.input_shape(2))?)
        } else {
            None
        };
        Ok(vec![None, ga, gb])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "where",
                vec![
                    Input::Mask(vec![3, 4]),
                    Input::Uniform(vec![3, 4], -1.0, 1.0),
                    Input::Uniform(vec![3, 4], -1.0, 1.0),
                ],
                |xs| Tensor::where_(&xs[0], &xs[1], &xs[2]),
            )
            .also(Sample::Empty, &[&[0, 4], &[0, 4], &[0, 4]])
            .also(Sample::Scalar, &[&[], &[], &[]]),
            Case::new(
                "where broadcast",
                vec![
                    Input::Mask(vec![3, 1]),
                    Input::Uniform(vec![4], -1.0, 1.0),
                    Input::Uniform(vec![3, 4], -1.0, 1.0),
                ],
                |xs| Tensor::where_(&xs[0], &xs[1], &xs[2]),
            ),
            Case::new(
                "where with i32 branches",
                vec![Input::Mask(vec![3, 4]), Input::Int(vec![3, 4], -5, 5), Input::Int(vec![1, 4], -5, 5)],
                |xs| Tensor::where_(&xs[0], &xs[1], &xs[2]),
            ),
        ]
        .into_iter()
        .map(|c| c.reference(|h| reference::where_(&h[0], &h[1], &h[2])))
        .collect()
    },
};

/// Every comparison row (the GPU kernel catalog instantiates one kernel per row and dtype).
pub fn rows() -> Vec<&'static CompareDef> {
    vec![&EQ, &NE, &LT, &LE, &GT, &GE]
}

pub fn ops() -> Vec<&'static OpDef> {
    let mut v: Vec<&'static OpDef> = rows().into_iter().map(|r| &r.op).collect();
    v.push(&WHERE);
    v
}

impl Tensor {
    pub fn eq(&self, other: &Tensor) -> Result<Tensor> {
        compare(&EQ, self, other)
    }
    pub fn ne(&self, other: &Tensor) -> Result<Tensor> {
        compare(&NE, self, other)
    }
    pub fn lt(&self, other: &Tensor) -> Result<Tensor> {
        compare(&LT, self, other)
    }
    pub fn le(&self, other: &Tensor) -> Result<Tensor> {
        compare(&LE, self, other)
    }
    pub fn gt(&self, other: &Tensor) -> Result<Tensor> {
        compare(&GT, self, other)
    }
    pub fn ge(&self, other: &Tensor) -> Result<Tensor> {
        compare(&GE, self, other)
    }
    /// A rank-0 tensor holding `v` with this tensor's dtype and device.
    pub fn scalar_like(&self, v: f64) -> Result<Tensor> {
        Tensor::full_on(&[], v, self.dtype(), &self.device())
    }
    pub(crate) fn zeros_scalar(&self) -> Result<Tensor> {
        self.scalar_like(0.0)
    }
    pub fn eq_scalar(&self, v: f64) -> Result<Tensor> {
        self.eq(&self.scalar_like(v)?)
    }
    pub fn gt_scalar(&self, v: f64) -> Result<Tensor> {
        self.gt(&self.scalar_like(v)?)
    }
    pub fn ge_scalar(&self, v: f64) -> Result<Tensor> {
        self.ge(&self.scalar_like(v)?)
    }
    pub fn lt_scalar(&self, v: f64) -> Result<Tensor> {
        self.lt(&self.scalar_like(v)?)
    }
    pub fn le_scalar(&self, v: f64) -> Result<Tensor> {
        self.le(&self.scalar_like(v)?)
    }
    /// Elementwise `cond ? a : b` with broadcasting; `cond` must be a bool mask.
    pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        same_device("where", &[cond, a, b])?;
        if cond.dtype() != DType::Bool {
            return Err(Error::dtype(
                "where",
                format!("condition must be bool, got {} {:?}", cond.dtype(), cond.shape()),
            ));
        }
        same_dtype("where", a, b)?;
        let shape = broadcast_shapes("where", a.shape(), b.shape())?;
        let shape = broadcast_shapes("where", cond.shape(), &shape)?;
        let out = be::where_(cond, a, b, &shape)?;
        if !needs_record(&[a, b]) {
            return Ok(out);
        }
        record(&WHERE, Attrs::None, &[cond, a, b], &[cond], false, out)
    }
}
