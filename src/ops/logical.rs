//! Tests of values and masks, composed from comparisons and selection:
//! isnan / isinf / isfinite, any / all, masked_fill, one_hot, and clamp with
//! tensor bounds. No kernels of their own: both backends and capture come
//! from the comparisons, casts, reductions and `where` they are made of.

use super::args::scalar_like_checked;
#[cfg(feature = "testing")]
use super::reference::{self as r, Host, Kind};
use super::{same_device, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{CheckWhat, IndexCheck};
use crate::shape::{broadcast_shapes, normalize_axes};
use crate::tensor::Tensor;

impl Tensor {
    /// True where the element is NaN (never for int32 and bool tensors).
    pub fn isnan(&self) -> Result<Tensor> {
        // `ne` is NaN-aware on every backend (true when either side is NaN).
        super::as_op("isnan", || self.ne(self))
    }

    /// True where the element is +inf or -inf.
    pub fn isinf(&self) -> Result<Tensor> {
        super::as_op("isinf", || {
            if self.dtype().is_float() {
                self.abs()?.eq_scalar(f64::INFINITY)
            } else {
                self.ne(self)
            }
        })
    }

    /// True where the element is neither NaN nor infinite.
    pub fn isfinite(&self) -> Result<Tensor> {
        // |x| < inf is false for NaN (an ordered comparison) and for +-inf.
        super::as_op("isfinite", || {
            if self.dtype().is_float() {
                self.abs()?.lt_scalar(f64::INFINITY)
            } else {
                self.eq(self)
            }
        })
    }

    /// Whether any element along `axes` (all when empty) is nonzero (true).
    pub fn any(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        truth("any", self, axes, keepdim)
    }

    /// Whether every element along `axes` (all when empty) is nonzero (true).
    pub fn all(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        truth("all", self, axes, keepdim)
    }

    /// `value` where `mask` (bool, broadcast to this tensor's shape) is
    /// true, this tensor's element elsewhere.
    pub fn masked_fill(&self, mask: &Tensor, value: f64) -> Result<Tensor> {
        let op = "masked_fill";
        super::as_op(op, || {
            same_device(op, &[self, mask])?;
            if mask.dtype() != DType::Bool {
                return Err(Error::dtype(
                    op,
                    format!("mask must be bool, got {} of shape {:?}", mask.dtype(), mask.shape()),
                ));
            }
            let shape = broadcast_shapes(op, self.shape(), mask.shape())?;
            if shape.as_slice() != self.shape() {
                return Err(Error::shape(
                    op,
                    format!(
                        "mask of shape {:?} does not broadcast to the input's shape {:?}",
                        mask.shape(),
                        self.shape()
                    ),
                ));
            }
            Tensor::where_(mask, &scalar_like_checked(op, "value", self, value)?, self)
        })
    }

    /// int32 class indices to one-hot int32 rows: shape `self.shape() + [num_classes]`.
    /// Every index must lie in `0..num_classes` (checked where the values
    /// are, without a readback on a GPU).
    pub fn one_hot(&self, num_classes: usize) -> Result<Tensor> {
        let op = "one_hot";
        super::as_op(op, || {
            if self.dtype() != DType::I32 {
                return Err(Error::dtype(
                    op,
                    format!("indices must be int32, got {} of shape {:?}", self.dtype(), self.shape()),
                ));
            }
            let what = CheckWhat::Class { index_shape: self.shape().to_vec() };
            crate::dispatch::index::check_range(IndexCheck { op, dim: num_classes, what }, self)?;
            let classes = Tensor::arange_on(0.0, num_classes as f64, 1.0, DType::I32, &self.device())?;
            let mut shape = self.shape().to_vec();
            shape.push(num_classes);
            self.unsqueeze(-1)?.eq(&classes)?.to_dtype(DType::I32)?.reshape_dims(&shape)
        })
    }

    /// Clamps into tensor bounds (broadcast): `maximum(x, min)`, then
    /// `minimum(.., max)`, as PyTorch's `clamp` with tensors; either bound
    /// may be absent, not both. Gradients reach `x` and the bounds.
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        super::as_op("clamp", || {
            if min.is_none() && max.is_none() {
                return Err(Error::value("clamp", "at least one of min and max must be given"));
            }
            let mut y = self.clone();
            if let Some(lo) = min {
                y = y.maximum(lo)?;
            }
            if let Some(hi) = max {
                y = y.minimum(hi)?;
            }
            Ok(y)
        })
    }
}

/// any / all: the nonzero mask as 0/1 floats, reduced by max (any) or min
/// (all), then compared with 0. Over no elements, any is false and all true.
fn truth(op: &'static str, x: &Tensor, axes: &[isize], keepdim: bool) -> Result<Tensor> {
    super::as_op(op, || {
        let ax = normalize_axes(op, axes, x.shape())?;
        let count: usize = ax.iter().map(|&a| x.shape()[a]).product();
        if count == 0 {
            let shape: Vec<usize> = (0..x.ndim())
                .filter_map(|i| match (ax.contains(&i), keepdim) {
                    (false, _) => Some(x.shape()[i]),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect();
            return Tensor::full_on(&shape, if op == "all" { 1.0 } else { 0.0 }, DType::Bool, &x.device());
        }
        let nonzero = if x.dtype() == DType::Bool { x.clone() } else { x.ne(&x.zeros_scalar()?)? };
        let ones = nonzero.to_dtype(DType::F32)?;
        let reduced = if op == "all" { ones.min(axes, keepdim)? } else { ones.max(axes, keepdim)? };
        reduced.gt_scalar(0.0)
    })
}

macro_rules! logical {
    ($NAME:ident, $name:literal, $kind:ident, sig: $sig:literal, doc: $doc:literal, fwd: $fw:expr, cases: $cases:expr) => {
        static $NAME: OpDef = OpDef {
            name: $name,
            signature: $sig,
            doc: $doc,
            forward: Some(Forward::One($fw)),
            kind: OpKind::$kind,
            backward: None,
            second_order: true,
            #[cfg(feature = "testing")]
            cases: $cases,
        };
    };
}

/// x / y over {-1, 0, 1} x {-1, 0, 1}: finite values, both infinities and NaN (0 / 0).
#[cfg(feature = "testing")]
fn specials() -> Vec<Input> {
    vec![Input::Grid(vec![3, 4], -1.0, 1.0, 3), Input::Grid(vec![3, 4], -1.0, 1.0, 3)]
}

/// A float class test of the quotients `specials` make, against `f` of each quotient.
#[cfg(feature = "testing")]
fn classify(h: &[Host], f: fn(f64) -> bool) -> Host {
    r::compare(&h[0], &h[1], move |a, b| f(a / b))
}

logical!(ISNAN, "isnan", NoGrad, sig: "isnan(self) -> Tensor<bool>", doc: "True where the element is NaN.", fwd: |a| a.this()?.isnan(), cases: || vec![
    Case::new("isnan of quotients", specials(), |x| x[0].div(&x[1])?.isnan()).reference(|h| classify(h, f64::is_nan)),
    Case::new("isnan of int32", vec![Input::Int(vec![3], -2, 2)], |x| x[0].isnan()).also(Sample::Empty, &[&[0]])
        .reference(|h| r::map_to(&h[0], Kind::Bool, |_| 0.0)),
]);
logical!(ISINF, "isinf", NoGrad, sig: "isinf(self) -> Tensor<bool>", doc: "True where the element is +inf or -inf.", fwd: |a| a.this()?.isinf(), cases: || vec![
    Case::new("isinf of quotients", specials(), |x| x[0].div(&x[1])?.isinf()).also(Sample::Scalar, &[&[], &[]])
        .reference(|h| classify(h, f64::is_infinite)),
]);
logical!(ISFINITE, "isfinite", NoGrad, sig: "isfinite(self) -> Tensor<bool>", doc: "True where the element is neither NaN nor infinite.", fwd: |a| a.this()?.isfinite(), cases: || vec![
    Case::new("isfinite of quotients", specials(), |x| x[0].div(&x[1])?.isfinite()).also(Sample::Empty, &[&[0, 4], &[0, 4]])
        .reference(|h| classify(h, f64::is_finite)),
    Case::new("isfinite of bool", vec![Input::Mask(vec![2, 3])], |x| x[0].isfinite()).reference(|h| r::map_to(&h[0], Kind::Bool, |_| 1.0)),
]);
logical!(ANY, "any", NoGrad, sig: "any(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor<bool>", doc: "Whether any element along `axes` (all when omitted) is nonzero.", fwd: |a| a.this()?.any(&a.ints("axes")?, a.bool("keepdim")?), cases: || vec![
    Case::new("any axis 1 of floats with zeros", vec![Input::Grid(vec![2, 3, 4], 0.0, 1.0, 2)], |x| x[0].any(&[1], false))
        .also(Sample::Empty, &[&[2, 0, 4]])
        .reference(|h| r::reduce(&h[0], &[1], false, Kind::Bool, |v| f64::from(u8::from(v.iter().any(|&e| e != 0.0))))),
    Case::new("any of a mask, all axes keepdim", vec![Input::Mask(vec![3, 4])], |x| x[0].any(&[], true)).also(Sample::Scalar, &[&[]])
        .reference(|h| r::reduce(&h[0], &[], true, Kind::Bool, |v| f64::from(u8::from(v.iter().any(|&e| e != 0.0))))),
]);
logical!(ALL, "all", NoGrad, sig: "all(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor<bool>", doc: "Whether every element along `axes` (all when omitted) is nonzero.", fwd: |a| a.this()?.all(&a.ints("axes")?, a.bool("keepdim")?), cases: || vec![
    Case::new("all axis 0 of int32", vec![Input::Int(vec![2, 5], 0, 3)], |x| x[0].all(&[0], false))
        .also(Sample::Empty, &[&[0, 5]])
        .reference(|h| r::reduce(&h[0], &[0], false, Kind::Bool, |v| f64::from(u8::from(v.iter().all(|&e| e != 0.0))))),
    Case::new("all axes 0, 2 of a mask", vec![Input::Mask(vec![2, 3, 2])], |x| x[0].all(&[0, 2], true))
        .reference(|h| r::reduce(&h[0], &[0, 2], true, Kind::Bool, |v| f64::from(u8::from(v.iter().all(|&e| e != 0.0))))),
]);
logical!(MASKED_FILL, "masked_fill", Composite, sig: "masked_fill(self, mask: Tensor<bool>, value: scalar) -> Tensor", doc: "`value` where the mask (broadcast) is true, the element elsewhere.", fwd: |a| a.this()?.masked_fill(a.tensor("mask")?, a.float("value")?), cases: || vec![
    Case::new("masked_fill with a broadcast mask", vec![Input::Uniform(vec![3, 4], -1.0, 1.0), Input::Mask(vec![4])], |x| x[0].masked_fill(&x[1], -1.5))
        .also(Sample::Empty, &[&[0, 4], &[4]])
        .also(Sample::Scalar, &[&[], &[]])
        .reference(|h| r::zip(&h[0], &h[1], Kind::Float, |v, m| if m != 0.0 { -1.5 } else { v })),
]);
logical!(ONE_HOT, "one_hot", NoGrad, sig: "one_hot(self, num_classes: int) -> Tensor<int32>", doc: "int32 class indices to one-hot int32 rows over `num_classes`.", fwd: |a| a.this()?.one_hot(a.size("num_classes")?), cases: || vec![
    Case::new("one_hot of a [3, 2] index", vec![Input::Int(vec![3, 2], 0, 4)], |x| x[0].one_hot(4))
        .also(Sample::Empty, &[&[0, 2]])
        .also(Sample::Scalar, &[&[]])
        .reference(|h| {
            let mut shape = h[0].shape.clone();
            shape.push(4);
            Host::build(&shape, Kind::I32, |i| f64::from(u8::from(h[0].at(&i[..i.len() - 1]) as usize == i[i.len() - 1])))
        }),
]);
logical!(CLAMP_TENSOR, "clamp_tensor", Composite, sig: "clamp(self, min: Tensor | None = None, max: Tensor | None = None) -> Tensor", doc: "Clamps into tensor bounds (broadcast): maximum with min, then minimum with max (Rust: `clamp_tensor`).", fwd: |a| a.this()?.clamp_tensor(a.opt_tensor("min")?, a.opt_tensor("max")?), cases: || vec![
    // Random bounds with min < max; a tie of x with a bound (a kink) has
    // probability 0.
    Case::new("clamp by tensors", vec![Input::Uniform(vec![3, 4], -2.0, 2.0), Input::Uniform(vec![4], -1.0, -0.2), Input::Uniform(vec![3, 1], 0.2, 1.0)],
        |x| x[0].clamp_tensor(Some(&x[1]), Some(&x[2])))
        .also(Sample::Empty, &[&[0, 4], &[4], &[0, 1]])
        .reference(|h| r::zip(&r::zip(&h[0], &h[1], Kind::Float, f64::max), &h[2], Kind::Float, f64::min)),
    Case::new("clamp by a min tensor only", vec![Input::Uniform(vec![2, 3], -1.0, 1.0), Input::Uniform(vec![2, 3], -1.0, 1.0)],
        |x| x[0].clamp_tensor(Some(&x[1]), None))
        .reference(|h| r::zip(&h[0], &h[1], Kind::Float, f64::max)),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![&ISNAN, &ISINF, &ISFINITE, &ANY, &ALL, &MASKED_FILL, &ONE_HOT, &CLAMP_TENSOR]
}
