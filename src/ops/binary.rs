//! Binary elementwise ops with NumPy broadcasting: one table row each. Every
//! backward rule reduces its gradient back to the operand's shape (`sum_to`).

use super::args::Operand;
#[cfg(feature = "testing")]
use super::reference::{self, Host, Kind};
use super::{expect_float, same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::elementwise as be;
use crate::error::Result;
use crate::kernel::BinarySlices;
use crate::kernel::{BinaryFns, BinaryKernel};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// One row of the binary table.
pub struct BinaryDef {
    pub op: OpDef,
    pub kernel: BinaryKernel,
    /// Backward reads the operands (a, b) and, with `saves_output`, the result.
    pub saves_inputs: bool,
    pub saves_output: bool,
}

/// Expands `|a, b| expr` into the four slice kernels for element type `$t`.
#[macro_export]
#[doc(hidden)]
macro_rules! binary_slices {
    ($t:ty => $u:ty, |$a:ident, $b:ident| $e:expr) => {
        $crate::binary_slices!(fast, $t => $u, |$a, $b| $e)
    };
    // With the math route (`kernel::math::fast` or `portable`) the formula's
    // `powf(a, b)` and the like resolve to.
    ($route:ident, $t:ty => $u:ty, |$a:ident, $b:ident| $e:expr) => {{
        #[inline(always)]
        fn f($a: $t, $b: $t) -> $u {
            #[allow(unused_imports)]
            use $crate::kernel::math::$route::*;
            $e
        }
        fn vv(x: &[$t], y: &[$t], o: &mut [$u]) {
            for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = f(x, y);
            }
        }
        fn vs(x: &[$t], y: $t, o: &mut [$u]) {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = f(x, y);
            }
        }
        fn sv(x: $t, y: &[$t], o: &mut [$u]) {
            for (o, &y) in o.iter_mut().zip(y) {
                *o = f(x, y);
            }
        }
        $crate::kernel::BinarySlices::<$t, $u> { vv, vs, sv, ss: f }
    }};
}

macro_rules! binary_row {
    ($NAME:ident, $name:literal, sig: $sig:literal, doc: $doc:literal, fwd: $fw:expr, |$a:ident, $b:ident| $e:expr, wgsl: $wgsl:literal, saves_inputs: $si:expr,
     saves_output: $so:expr, backward: $bw:expr, cases: $cases:expr) => {
        pub static $NAME: BinaryDef = BinaryDef {
            op: OpDef {
                name: $name,
                signature: $sig,
                doc: $doc,
                forward: Some(Forward::One($fw)),
                kind: OpKind::Primitive,
                backward: Some($bw),
                second_order: true,
                #[cfg(feature = "testing")]
                cases: $cases,
            },
            kernel: BinaryKernel {
                name: $name,
                #[cfg(not(target_arch = "wasm32"))]
                fast: BinaryFns {
            f32: binary_slices!(fast, f32 => f32, |$a, $b| $e),
            f64: binary_slices!(fast, f64 => f64, |$a, $b| $e),
                },
                portable: BinaryFns {
            f32: binary_slices!(portable, f32 => f32, |$a, $b| $e),
            f64: binary_slices!(portable, f64 => f64, |$a, $b| $e),
                },
                wgsl: $wgsl,
            },
            saves_inputs: $si,
            saves_output: $so,
        };
    };
}

// Keeps BinarySlices referenced for readers of this file: the macro builds them.
#[allow(dead_code)]
type Slices = BinarySlices<f32, f32>;

/// Gradient of each operand, reduced to its shape; skipped where not needed.
fn grads(
    c: &crate::autograd::node::BackwardCtx,
    ga: impl FnOnce() -> Result<Tensor>,
    gb: impl FnOnce() -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    let a = if c.needs_input_grad(0) { Some(ga()?.sum_to(c.input_shape(0))?) } else { None };
    let b = if c.needs_input_grad(1) { Some(gb()?.sum_to(c.input_shape(1))?) } else { None };
    Ok(vec![a, b])
}

/// The broadcasting cases every binary row runs (in both directions, with
/// empty and 0-d samples), each checked against `reference`.
#[cfg(feature = "testing")]
fn broadcast_cases(
    lo: f64,
    hi: f64,
    run: fn(&[Tensor]) -> Result<Tensor>,
    reference: fn(&[Host]) -> Host,
) -> Vec<Case> {
    let u = |s: &[usize]| Input::Uniform(s.to_vec(), lo, hi);
    vec![
        Case::new("same shapes", vec![u(&[3, 4]), u(&[3, 4])], run)
            .also(Sample::Empty, &[&[0, 4], &[0, 4]])
            .also(Sample::Scalar, &[&[], &[]]),
        Case::new("[2, 3, 4] with [4]", vec![u(&[2, 3, 4]), u(&[4])], run).also(Sample::Empty, &[&[2, 0, 4], &[4]]),
        Case::new("[4] with [2, 3, 4]", vec![u(&[4]), u(&[2, 3, 4])], run),
        Case::new("[3, 1] with [1, 4]", vec![u(&[3, 1]), u(&[1, 4])], run).also(Sample::Empty, &[&[0, 1], &[1, 4]]),
        Case::new("0-d with [2, 3]", vec![u(&[]), u(&[2, 3])], run),
    ]
    .into_iter()
    .map(|c| c.reference(reference))
    .collect()
}

/// `broadcast_cases` plus ties: both operands from {-1, 0, 1}, so about a
/// third of the pairs are equal and each gets half the gradient. Ties are
/// kinks (once differentiable), so the tie case stops at first order.
#[cfg(feature = "testing")]
fn tie_cases(run: fn(&[Tensor]) -> Result<Tensor>, reference: fn(&[Host]) -> Host) -> Vec<Case> {
    let g = |s: &[usize]| Input::Grid(s.to_vec(), -1.0, 1.0, 3);
    let mut v = broadcast_cases(-2.0, 2.0, run, reference);
    v.push(Case::new("ties", vec![g(&[3, 4]), g(&[3, 4])], run).reference(reference).first_order_only());
    v.push(Case::new("ties broadcast", vec![g(&[3, 1]), g(&[4])], run).reference(reference).first_order_only());
    v
}

binary_row!(ADD, "add", sig: "add(self, other: Tensor) -> Tensor", doc: "x + y, broadcast.", fwd: |a| a.this()?.add(a.tensor("other")?), |a, b| a + b, wgsl: "a + b", saves_inputs: false, saves_output: false,
    backward: |c, g| grads(c, || Ok(g[0].clone()), || Ok(g[0].clone())),
    cases: || broadcast_cases(-2.0, 2.0, |xs| xs[0].add(&xs[1]),
        |h| reference::zip(&h[0], &h[1], Kind::Float, |a, b| a + b)));
binary_row!(SUB, "sub", sig: "sub(self, other: Tensor | scalar) -> Tensor", doc: "x - y, broadcast; for a number, `sub_scalar`.", fwd: |a| match a.operand("other")? { Operand::Tensor(t) => a.this()?.sub(t), Operand::Number(c) => a.this()?.sub_scalar(c) }, |a, b| a - b, wgsl: "a - b", saves_inputs: false, saves_output: false,
    backward: |c, g| grads(c, || Ok(g[0].clone()), || g[0].neg()),
    cases: || broadcast_cases(-2.0, 2.0, |xs| xs[0].sub(&xs[1]),
        |h| reference::zip(&h[0], &h[1], Kind::Float, |a, b| a - b)));
binary_row!(MUL, "mul", sig: "mul(self, other: Tensor) -> Tensor", doc: "x * y, broadcast.", fwd: |a| a.this()?.mul(a.tensor("other")?), |a, b| a * b, wgsl: "a * b", saves_inputs: true, saves_output: false,
    backward: |c, g| grads(c, || g[0].mul(c.saved(1)), || g[0].mul(c.saved(0))),
    cases: || broadcast_cases(-2.0, 2.0, |xs| xs[0].mul(&xs[1]),
        |h| reference::zip(&h[0], &h[1], Kind::Float, |a, b| a * b)));
binary_row!(DIV, "div", sig: "div(self, other: Tensor | scalar) -> Tensor", doc: "x / y, broadcast; for a number, `div_scalar`.", fwd: |a| match a.operand("other")? { Operand::Tensor(t) => a.this()?.div(t), Operand::Number(c) => a.this()?.div_scalar(c) }, |a, b| a / b, wgsl: "a / b", saves_inputs: true, saves_output: false,
    backward: |c, g| {
        let (a, b) = (c.saved(0), c.saved(1));
        grads(c, || g[0].div(b), || g[0].mul(a)?.div(&b.mul(b)?)?.neg())
    },
    cases: || broadcast_cases(0.5, 2.0, |xs| xs[0].div(&xs[1]),
        |h| reference::zip(&h[0], &h[1], Kind::Float, |a, b| a / b)));
binary_row!(POW, "pow", sig: "pow(self, exponent: Tensor) -> Tensor", doc: "x ** y, broadcast.", fwd: |a| a.this()?.pow(a.tensor("exponent")?), |a, b| powf(a, b), wgsl: "spow(a, b)", saves_inputs: true, saves_output: true,
    backward: |c, g| {
        let (a, b, y) = (c.saved(0), c.saved(1), c.saved(2));
        grads(c, || g[0].mul(b)?.mul(&a.pow(&b.sub_scalar(1.0)?)?), || g[0].mul(y)?.mul(&a.log()?))
    },
    cases: || broadcast_cases(0.5, 2.0, |xs| xs[0].pow(&xs[1]),
        |h| reference::zip(&h[0], &h[1], Kind::Float, |a, b| (b * a.ln()).exp())));
binary_row!(MAXIMUM, "maximum", sig: "maximum(self, other: Tensor | scalar) -> Tensor", doc: "The elementwise larger of x and y, broadcast.", fwd: |a| { let x = a.this()?; x.maximum(&a.operand_like("other", x)?) }, |a, b| if a >= b { a } else { b }, wgsl: "select(b, a, a >= b)", saves_inputs: true, saves_output: false,
    backward: |c, g| {
        let (wa, wb) = tie_weights(c.saved(0), c.saved(1))?;
        grads(c, || g[0].mul(&wa), || g[0].mul(&wb))
    },
    cases: || tie_cases(|xs| xs[0].maximum(&xs[1]), |h| reference::zip(&h[0], &h[1], Kind::Float, f64::max)));
binary_row!(MINIMUM, "minimum", sig: "minimum(self, other: Tensor | scalar) -> Tensor", doc: "The elementwise smaller of x and y, broadcast.", fwd: |a| { let x = a.this()?; x.minimum(&a.operand_like("other", x)?) }, |a, b| if a <= b { a } else { b }, wgsl: "select(b, a, a <= b)", saves_inputs: true, saves_output: false,
    backward: |c, g| {
        // a gets the gradient where b > a: the weight of the larger of (b, a) goes to a.
        let (wa, wb) = tie_weights(c.saved(1), c.saved(0))?;
        grads(c, || g[0].mul(&wa), || g[0].mul(&wb))
    },
    cases: || tie_cases(|xs| xs[0].minimum(&xs[1]), |h| reference::zip(&h[0], &h[1], Kind::Float, f64::min)));

binary_row!(RELU_BACKWARD, "relu_backward", sig: "relu_backward(self, output: Tensor) -> Tensor", doc: "ReLU's backward in one pass: the gradient where the ReLU's output is positive, else 0 (PyTorch's threshold_backward).", fwd: |a| a.this()?.relu_backward(a.tensor("output")?), |g, y| if y > 0.0 { g } else { 0.0 }, wgsl: "select(0.0, a, b > 0.0)", saves_inputs: true, saves_output: false,
    // Linear in the gradient; the mask is flat in the output (0 wherever it
    // is differentiable), so the output gets no gradient.
    backward: |c, g| Ok(vec![if c.needs_input_grad(0) { Some(g[0].relu_backward(c.saved(1))?.sum_to(c.input_shape(0))?) } else { None }, None]),
    cases: relu_backward_cases);

/// The gradient uniform, the output away from the mask's step at 0 (where
/// central differences would straddle it), and outputs that are exactly 0
/// (a ReLU's output where its input was negative: they pass nothing).
#[cfg(feature = "testing")]
fn relu_backward_cases() -> Vec<Case> {
    let run = |xs: &[Tensor]| xs[0].relu_backward(&xs[1]);
    let reference = |h: &[Host]| reference::zip(&h[0], &h[1], Kind::Float, |g, y| if y > 0.0 { g } else { 0.0 });
    let (u, away) =
        (|s: &[usize]| Input::Uniform(s.to_vec(), -2.0, 2.0), |s: &[usize]| Input::AwayFromZero(s.to_vec(), 0.1, 2.0));
    vec![
        Case::new("same shapes", vec![u(&[3, 4]), away(&[3, 4])], run)
            .also(Sample::Empty, &[&[0, 4], &[0, 4]])
            .also(Sample::Scalar, &[&[], &[]]),
        Case::new("[2, 3, 4] with [4]", vec![u(&[2, 3, 4]), away(&[4])], run),
        Case::new("[3, 1] with [1, 4]", vec![u(&[3, 1]), away(&[1, 4])], run),
        Case::new("outputs of a relu, zeros included", vec![u(&[4, 5]), u(&[4, 5])], |xs| {
            xs[0].relu_backward(&xs[1].relu()?)
        })
        .first_order_only(),
    ]
    .into_iter()
    .map(|c| c.reference(reference))
    .collect()
}

/// Weights routing the gradient of max(a, b): 1 to the larger, 0.5 each on ties (as PyTorch).
fn tie_weights(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let dt = a.dtype();
    let gt = a.gt(b)?.to_dtype(dt)?;
    let eq = a.eq(b)?.to_dtype(dt)?.mul_scalar(0.5)?;
    let wa = gt.add(&eq)?;
    let wb = wa.neg()?.add_scalar(1.0)?;
    Ok((wa, wb))
}

/// Runs a binary row: placement/dtype/broadcast checks, kernel, record.
pub(crate) fn binary(def: &'static BinaryDef, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // Under autocast mixed f16 and f32 operands compute in f32 (`amp`).
    let (a, b) = &crate::amp::promote(a, b)?;
    let name = def.op.name;
    same_device(name, &[a, b])?;
    expect_float(name, a)?;
    same_dtype(name, a, b)?;
    let shape = broadcast_shapes(name, a.shape(), b.shape())?;
    let out = be::binary(name, a, b, &shape, &def.kernel)?;
    if !needs_record(&[a, b]) {
        return Ok(out);
    }
    let saved: &[&Tensor] = if def.saves_inputs { &[a, b] } else { &[] };
    record(&def.op, Attrs::None, &[a, b], saved, def.saves_output, out)
}

/// Every binary table row (the GPU kernel catalog instantiates one kernel per row).
pub fn rows() -> Vec<&'static BinaryDef> {
    vec![&ADD, &SUB, &MUL, &DIV, &POW, &MAXIMUM, &MINIMUM, &RELU_BACKWARD]
}

pub fn ops() -> Vec<&'static OpDef> {
    rows().into_iter().map(|r| &r.op).collect()
}

impl Tensor {
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        binary(&ADD, self, other)
    }
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        binary(&SUB, self, other)
    }
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        binary(&MUL, self, other)
    }
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        binary(&DIV, self, other)
    }
    /// Elementwise power with a tensor exponent (see `pow_scalar` for a scalar one).
    pub fn pow(&self, exponent: &Tensor) -> Result<Tensor> {
        binary(&POW, self, exponent)
    }
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        binary(&MAXIMUM, self, other)
    }
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        binary(&MINIMUM, self, other)
    }
    /// ReLU's backward (PyTorch's `threshold_backward(grad, output, 0)`):
    /// `self` (the incoming gradient) where `output` > 0, else 0, in one
    /// pass. A NaN or infinite gradient where the output is 0 passes 0, as
    /// in PyTorch.
    pub fn relu_backward(&self, output: &Tensor) -> Result<Tensor> {
        binary(&RELU_BACKWARD, self, output)
    }
}
