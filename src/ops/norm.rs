//! Reductions PyTorch names separately, composed from the primitive ones:
//! `amax` / `amin` (max and min: the gradient split evenly between tied
//! extremes, as PyTorch's amax) and the vector `norm`.

#[cfg(feature = "testing")]
use super::reference::{self as r, Host, Kind};
use super::{composite_op, expect_float, OpDef};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// The maximum over `axes` (all when empty): `max` under PyTorch's name.
    pub fn amax(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        super::as_op("amax", || self.max(axes, keepdim))
    }

    /// The minimum over `axes` (all when empty): `min` under PyTorch's name.
    pub fn amin(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        super::as_op("amin", || self.min(axes, keepdim))
    }

    /// The vector p-norm over `axes` (all when empty), as PyTorch's
    /// `linalg.vector_norm`: (sum |x|^p)^(1/p); p = inf and -inf give the
    /// largest and smallest |x|, p = 0 the count of nonzero elements. Where
    /// the norm is 0 its gradient is 0 (the subgradient PyTorch picks),
    /// not the NaN that differentiating the root there would give; so is
    /// the gradient of each zero element for p < 1, as in PyTorch.
    pub fn norm(&self, p: f64, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let op = "norm";
        super::as_op(op, || {
            expect_float(op, self)?;
            if p.is_nan() {
                return Err(Error::value(op, "the order p must be a number or +-inf, got NaN"));
            }
            let a = self.abs()?;
            if p == f64::INFINITY {
                return a.max(axes, keepdim);
            }
            if p == f64::NEG_INFINITY {
                return a.min(axes, keepdim);
            }
            if p == 0.0 {
                return self.ne(&self.zeros_scalar()?)?.to_dtype(self.dtype())?.sum(axes, keepdim);
            }
            if p == 1.0 {
                return a.sum(axes, keepdim);
            }
            let powered = if p == 2.0 { self.mul(self)? } else { pow_or_zero(&a, p)? };
            let s = powered.sum(axes, keepdim)?;
            // The root only where s > 0: elsewhere 0, with a constant under
            // the root so that neither branch's gradient is NaN.
            let zero = s.eq_scalar(0.0)?;
            let safe = Tensor::where_(&zero, &s.scalar_like(1.0)?, &s)?;
            let root = if p == 2.0 { safe.sqrt()? } else { safe.pow_scalar(1.0 / p)? };
            Tensor::where_(&zero, &s.zeros_scalar()?, &root)
        })
    }
}

/// |x|^p, and 0 with a zero gradient where x is 0: for p < 1 the power's
/// derivative there is infinite, and PyTorch takes 0 (so does this, by
/// keeping 0 out of the power).
fn pow_or_zero(a: &Tensor, p: f64) -> Result<Tensor> {
    let zero = a.eq_scalar(0.0)?;
    let safe = Tensor::where_(&zero, &a.scalar_like(1.0)?, a)?;
    Tensor::where_(&zero, &a.zeros_scalar()?, &safe.pow_scalar(p)?)
}

/// `(sum |x|^p)^(1/p)` of each reduced set, from the definition (and its limits).
#[cfg(feature = "testing")]
fn vector_norm(x: &Host, p: f64, axes: &[isize], keepdim: bool) -> Host {
    r::reduce(x, axes, keepdim, Kind::Float, |v| {
        let a = v.iter().map(|e| e.abs());
        match p {
            f64::INFINITY => a.fold(0.0, f64::max),
            f64::NEG_INFINITY => a.fold(f64::INFINITY, f64::min),
            0.0 => a.filter(|&e| e != 0.0).count() as f64,
            _ => a.map(|e| e.powf(p)).sum::<f64>().powf(1.0 / p),
        }
    })
}

composite_op!(AMAX, "amax", sig: "amax(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor", doc: "Maximum over `axes` (all when omitted); ties share the gradient evenly.", fwd: |a| a.this()?.amax(&a.ints("axes")?, a.bool("keepdim")?), cases: || vec![
    Case::new("amax axis 1", vec![Input::Distinct(vec![2, 3, 4])], |x| x[0].amax(&[1], false)).also(Sample::Empty, &[&[2, 3, 0]])
        .reference(|h| r::max(&h[0], &[1], false)),
    Case::new("amax axis 2 with ties", vec![Input::Pairs(vec![2, 3, 4])], |x| x[0].amax(&[2], true))
        .reference(|h| r::max(&h[0], &[2], true))
        .first_order_only(),
]);
composite_op!(AMIN, "amin", sig: "amin(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor", doc: "Minimum over `axes` (all when omitted); ties share the gradient evenly.", fwd: |a| a.this()?.amin(&a.ints("axes")?, a.bool("keepdim")?), cases: || vec![
    Case::new("amin axes 0, 2", vec![Input::Distinct(vec![2, 3, 4])], |x| x[0].amin(&[0, 2], false))
        .reference(|h| r::min(&h[0], &[0, 2], false)),
    Case::new("amin all with ties", vec![Input::Pairs(vec![2, 4])], |x| x[0].amin(&[], false))
        .reference(|h| r::min(&h[0], &[], false))
        .first_order_only(),
]);
composite_op!(NORM, "norm", sig: "norm(self, p: scalar = 2, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor", doc: "The vector p-norm over `axes` (all when omitted); p may be inf, -inf or 0.", fwd: |a| a.this()?.norm(a.float("p")?, &a.ints("axes")?, a.bool("keepdim")?), cases: || vec![
    Case::new("norm 2 of all", vec![Input::Uniform(vec![3, 4], -1.0, 1.0)], |x| x[0].norm(2.0, &[], false))
        .also(Sample::Scalar, &[&[]])
        .reference(|h| vector_norm(&h[0], 2.0, &[], false)),
    Case::new("norm 1 axis 1", vec![Input::AwayFromZero(vec![3, 4], 0.1, 1.0)], |x| x[0].norm(1.0, &[1], false))
        .also(Sample::Empty, &[&[0, 4]])
        .reference(|h| vector_norm(&h[0], 1.0, &[1], false)),
    // Distinct values shifted positive: no ties in |x| (Distinct's own
    // values are symmetric about 0).
    Case::new("norm inf axis 0", vec![Input::Distinct(vec![3, 4])], |x| x[0].add_scalar(1.5)?.norm(f64::INFINITY, &[0], false))
        .reference(|h| vector_norm(&r::map(&h[0], |v| v + 1.5), f64::INFINITY, &[0], false)),
    Case::new("norm -inf axis 1", vec![Input::Distinct(vec![3, 4])], |x| x[0].add_scalar(-1.5)?.norm(f64::NEG_INFINITY, &[1], true))
        .reference(|h| vector_norm(&r::map(&h[0], |v| v - 1.5), f64::NEG_INFINITY, &[1], true)),
    Case::new("norm 3 axes 0, 1 keepdim", vec![Input::AwayFromZero(vec![2, 3, 4], 0.1, 1.0)], |x| x[0].norm(3.0, &[0, 1], true))
        .reference(|h| vector_norm(&h[0], 3.0, &[0, 1], true)),
    Case::new("norm 0 counts nonzeros", vec![Input::Grid(vec![3, 4], -1.0, 1.0, 3)], |x| x[0].norm(0.0, &[1], false))
        .reference(|h| vector_norm(&h[0], 0.0, &[1], false))
        .forward_only(),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![&AMAX, &AMIN, &NORM]
}
