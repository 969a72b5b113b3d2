//! THE REGISTRY (DESIGN principles 1-3, 7). Every op has one `OpDef`: its name,
//! its backward rule (tensor code, so it can be differentiated again), and the
//! test cases the generated gradchecks run. The forward function that owns the
//! shape/dtype rule and calls the backend sits next to the `OpDef`.
//!
//! Elementwise ops are table rows (`unary.rs`, `binary.rs`); composite ops are
//! built from primitives and get their gradients from them.

pub mod binary;
pub mod compare;
pub mod composite;
pub mod conv;
pub mod index;
pub mod join;
pub mod matmul;
pub mod movement;
pub mod reduce;
pub mod unary;

use crate::autograd::node::BackwardCtx;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Dims;
use crate::tensor::Tensor;

/// A backward rule: given the context and the gradient of each output, the
/// gradient of each input (None where an input needs none).
pub type BackwardFn = fn(&BackwardCtx, &[Tensor]) -> Result<Vec<Option<Tensor>>>;

/// How an op relates to autodiff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Has a cpu kernel and a backward rule.
    Primitive,
    /// Built from other ops; differentiable through them.
    Composite,
    /// Produces masks, indices or other non-differentiable results.
    NoGrad,
}

/// One registry entry.
pub struct OpDef {
    pub name: &'static str,
    pub kind: OpKind,
    pub backward: Option<BackwardFn>,
    /// Gradchecks also check second derivatives for this op.
    pub second_order: bool,
    /// The cases the generated tests run (an op without cases fails the suite).
    pub cases: fn() -> Vec<Case>,
}

/// One test case: input specs and how to call the op on them.
pub struct Case {
    pub name: &'static str,
    pub inputs: Vec<Input>,
    pub run: fn(&[Tensor]) -> Result<Tensor>,
    /// Scales the gradcheck tolerances (1.0 normally; larger only where the
    /// case itself loses precision, e.g. a round trip through f32).
    pub tol: f64,
}

/// How to generate one test input (in the dtype the test asks for, for floats).
#[derive(Clone, Debug)]
pub enum Input {
    /// Uniform floats in [lo, hi).
    Uniform(Vec<usize>, f64, f64),
    /// Floats with |x| uniform in [lo, hi) and random sign: keeps kinks (abs,
    /// relu, ...) away from finite-difference steps.
    AwayFromZero(Vec<usize>, f64, f64),
    /// Floats that are distinct per element (no ties for max/min/sort-like ops).
    Distinct(Vec<usize>),
    /// I32 integers uniform in [lo, hi) (indices, labels).
    Int(Vec<usize>, i32, i32),
    /// A random bool mask.
    Mask(Vec<usize>),
}

impl Input {
    /// A tensor for this spec, drawn from `g` (floats in `dtype`; indices are
    /// I32 and masks Bool whatever `dtype` says).
    pub fn generate(&self, dtype: DType, g: &mut crate::random::Generator) -> Result<Tensor> {
        let floats = |s: &[usize], f: &mut dyn FnMut() -> f64| -> Result<Tensor> {
            let n: usize = s.iter().product();
            Tensor::from_vec((0..n).map(|_| f()).collect::<Vec<f64>>(), s)?.to_dtype(dtype)
        };
        match self {
            Input::Uniform(s, lo, hi) => floats(s, &mut || lo + (hi - lo) * g.uniform()),
            Input::AwayFromZero(s, lo, hi) => floats(s, &mut || {
                let m = lo + (hi - lo) * g.uniform();
                if g.uniform() < 0.5 {
                    -m
                } else {
                    m
                }
            }),
            Input::Distinct(s) => {
                // Evenly spaced values in a random order: no ties, and gaps far
                // wider than any finite-difference step.
                let n: usize = s.iter().product();
                let mut v: Vec<f64> = (0..n).map(|i| -1.0 + 2.0 * (i as f64 + 0.5) / n as f64).collect();
                for i in (1..n).rev() {
                    v.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
                }
                Tensor::from_vec(v, s)?.to_dtype(dtype)
            }
            Input::Int(s, lo, hi) => {
                let n: usize = s.iter().product();
                let span = (*hi as i64 - *lo as i64).max(1) as u64;
                Tensor::from_vec(
                    (0..n).map(|_| (*lo as i64 + (g.next_u64() % span) as i64) as i32).collect::<Vec<i32>>(),
                    s,
                )
            }
            Input::Mask(s) => {
                let n: usize = s.iter().product();
                Tensor::from_vec((0..n).map(|_| (g.uniform() < 0.5) as u8).collect::<Vec<u8>>(), s)
            }
        }
    }
}

impl Case {
    /// The case's inputs for run `k` of op `op`, reproducible across test files
    /// (the gradcheck and the GPU parity test draw the same values).
    pub fn make_inputs(&self, op: &str, k: usize, dtype: DType) -> Result<Vec<Tensor>> {
        let mut g = crate::random::Generator::new(case_seed(op, k));
        self.inputs.iter().map(|s| s.generate(dtype, &mut g)).collect()
    }

    pub fn new(name: &'static str, inputs: Vec<Input>, run: fn(&[Tensor]) -> Result<Tensor>) -> Case {
        Case { name, inputs, run, tol: 1.0 }
    }
    /// Loosens this case's gradcheck tolerances by `factor` (say why at the call).
    pub fn tolerance(mut self, factor: f64) -> Case {
        self.tol = factor;
        self
    }
}

/// The seed of case `k` of op `name` (FNV-1a of the name, mixed with `k`).
pub fn case_seed(name: &str, k: usize) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)) ^ k as u64
}

/// Attributes a node stores for its backward rule (records are data).
#[derive(Clone, Debug, PartialEq)]
pub enum Attrs {
    None,
    /// Scalar parameters (exponent, slope, clamp bounds, ...).
    Scalars([f64; 2]),
    /// Reduced axes (sorted, normalised) and keepdim.
    Reduce {
        axes: Dims,
        keepdim: bool,
    },
    /// A single axis (index_select, gather, concat, argmax, ...).
    Axis(usize),
    /// A target shape (reshape, expand) or a source shape (sum_to).
    Shape(Dims),
    /// A permutation of the axes.
    Perm(Dims),
    /// A strided slice along one axis: elements start, start+step, ... (len of
    /// them) of an axis of size `dim`.
    Slice {
        axis: usize,
        start: usize,
        step: usize,
        len: usize,
        dim: usize,
    },
    /// Sizes of consecutive pieces along an axis (concat).
    Sizes {
        axis: usize,
        sizes: Dims,
    },
    /// Constant padding: (before, after) per axis, from the first axis.
    Pad {
        pads: Vec<(usize, usize)>,
        value: f64,
    },
    /// 2-D sliding windows: kernel, stride, padding, dilation and the input's spatial size.
    Window {
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        input: [usize; 2],
    },
    /// A target dtype (cast).
    DType(DType),
}

/// Every op, for the generated tests and the docs.
pub fn registry() -> Vec<&'static OpDef> {
    let mut all = Vec::new();
    all.extend(unary::ops());
    all.extend(binary::ops());
    all.extend(compare::ops());
    all.extend(reduce::ops());
    all.extend(matmul::ops());
    all.extend(movement::ops());
    all.extend(join::ops());
    all.extend(index::ops());
    all.extend(conv::ops());
    all.extend(composite::ops());
    all
}

/// The one device check every multi-input op runs (DESIGN: placement rules).
pub(crate) fn same_device(op: &'static str, ts: &[&Tensor]) -> Result<()> {
    if let Some(first) = ts.first() {
        let d = first.device();
        if let Some(bad) = ts.iter().find(|t| t.device() != d) {
            return Err(Error::Device { op, found: format!("{} and {}", d, bad.device()) });
        }
    }
    Ok(())
}

/// Rejects non-float operands of ops that only make sense on floats.
pub(crate) fn expect_float(op: &'static str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        return Err(Error::dtype(op, format!("expected a float tensor, got {} of shape {:?}", t.dtype(), t.shape())));
    }
    Ok(())
}

/// Rejects operands whose dtypes differ (no implicit promotion).
pub(crate) fn same_dtype(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "dtypes differ: {} {:?} vs {} {:?} (cast one with to_dtype)",
                a.dtype(),
                a.shape(),
                b.dtype(),
                b.shape()
            ),
        ));
    }
    Ok(())
}
