//! Slicing: `slice`/`narrow` are views (an offset and a step on one axis);
//! their backward, `slice_backward`, writes the gradient into zeros of the
//! full shape through the backend's `assemble` (as concat and pad do, in
//! `join.rs`), and its own backward slices again.

use super::movement::{one, view_op};
#[cfg(feature = "testing")]
use super::reference as r;
use super::{Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::movement as be;
use crate::error::{Error, Result};
use crate::shape::{normalize_real_axis, Layout};
use crate::tensor::Tensor;

static SLICE: OpDef = OpDef {
    name: "slice",
    signature: "slice(self, dim: int, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor",
    doc: "Elements start, start + step, ... below end along `dim` (Python bounds; a view).",
    forward: Some(Forward::One(|a| {
        let step = a.int("step")?;
        let step =
            usize::try_from(step).map_err(|_| Error::value("slice", format!("step must be at least 1, got {step}")))?;
        let (start, end) = (a.opt_int("start")?.unwrap_or(0), a.opt_int("end")?.unwrap_or(isize::MAX));
        a.this()?.slice(a.int("dim")?, start, end, step)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let Attrs::Slice { axis, start, step, len, dim } = c.attrs().clone() else { unreachable!() };
        one(slice_backward(&g[0], axis, start, step, len, dim))
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("slice step 2", vec![Input::Uniform(vec![5, 4], -1.0, 1.0)], |x| x[0].slice(0, 1, 5, 2))
                .reference(|h| r::slice(&h[0], 0, 1, 5, 2)),
            Case::new("narrow", vec![Input::Uniform(vec![3, 6], -1.0, 1.0)], |x| x[0].narrow(1, 2, 3))
                .also(Sample::Empty, &[&[0, 6]])
                .reference(|h| r::narrow(&h[0], 1, 2, 3)),
            Case::new("slice negative bounds", vec![Input::Uniform(vec![3, 6], -1.0, 1.0)], |x| {
                x[0].slice(-1, -4, -1, 1)
            })
            .reference(|h| r::slice(&h[0], -1, -4, -1, 1)),
            Case::new("slice i32 to nothing", vec![Input::Int(vec![3, 6], -9, 9)], |x| {
                x[0].slice(1, 4, 4, 1)?.contiguous()
            })
            .reference(|h| r::slice(&h[0], 1, 4, 4, 1)),
        ]
    },
};

/// The adjoint of `slice`: zeros of the full shape with `g` written into the slice.
static SLICE_BACKWARD: OpDef = OpDef {
    name: "slice_backward",
    signature: "slice_backward(grad: Tensor, dim: int, start: int, step: int, length: int, size: int) -> Tensor",
    doc: "The gradient of `slice`: `grad` placed into zeros of size `size` along `dim` (runs in backward).",
    forward: None,
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let Attrs::Slice { axis, start, step, len, .. } = c.attrs().clone() else { unreachable!() };
        one(g[0].slice(axis as isize, start as isize, (start + step * len.saturating_sub(1) + 1) as isize, step))
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![Case::new("slice_backward", vec![Input::Uniform(vec![2, 4], -1.0, 1.0)], |x| {
            slice_backward(&x[0], 0, 1, 2, 2, 5)
        })
        .also(Sample::Empty, &[&[2, 0]])
        // Rows 1 and 3 of five hold the gradient's rows; the rest are zero.
        .reference(|h| {
            let cols = h[0].shape[1];
            r::Host::build(&[5, cols], r::Kind::Float, |i| if i[0] % 2 == 1 { h[0].at(&[i[0] / 2, i[1]]) } else { 0.0 })
        })]
    },
};

fn slice_backward(g: &Tensor, axis: usize, start: usize, step: usize, len: usize, dim: usize) -> Result<Tensor> {
    let mut shape = g.dims();
    shape[axis] = dim;
    let full = Layout::contiguous(&shape);
    let region = slice_layout(&full, axis, start, step, len);
    let out = be::assemble("slice_backward", &shape, g.dtype(), 0.0, &[(region, g)])?;
    if !needs_record(&[g]) {
        return Ok(out);
    }
    record(&SLICE_BACKWARD, Attrs::Slice { axis, start, step, len, dim }, &[g], &[], false, out)
}

pub(super) fn slice_layout(l: &Layout, axis: usize, start: usize, step: usize, len: usize) -> Layout {
    let mut out = l.clone();
    out.strides[axis] *= step;
    out.shape[axis] = len;
    // An empty view keeps the offset it had: moving it could point past the
    // end of the buffer (a [2, 0] tensor has no element 1 to start at), and
    // kernels index the buffer at the offset.
    if out.shape.iter().all(|&d| d > 0) {
        out.offset += start * l.strides[axis];
    }
    out
}

pub fn ops() -> Vec<&'static OpDef> {
    vec![&SLICE, &SLICE_BACKWARD]
}

impl Tensor {
    /// Elements `start, start+step, ...` below `end` along `axis` (Python slice
    /// semantics for negative and out-of-range bounds; step >= 1). A view.
    pub fn slice(&self, axis: isize, start: isize, end: isize, step: usize) -> Result<Tensor> {
        let ax = normalize_real_axis("slice", axis, self.shape())?;
        if step == 0 {
            return Err(Error::value(
                "slice",
                format!("step must be at least 1, got 0 (axis {ax} of shape {:?})", self.shape()),
            ));
        }
        let dim = self.shape()[ax] as isize;
        // A step past the axis size selects at most one element either way;
        // capping it keeps the view's strides small (no overflow).
        let step = step.min(dim.max(1) as usize);
        let clampi = |v: isize| if v < 0 { (v + dim).max(0) } else { v.min(dim) };
        let (s, e) = (clampi(start) as usize, clampi(end) as usize);
        let len = if e > s { (e - s).div_ceil(step) } else { 0 };
        let layout = slice_layout(self.layout(), ax, s, step, len);
        view_op(&SLICE, self, layout, Attrs::Slice { axis: ax, start: s, step, len, dim: dim as usize })
    }
    /// `len` elements from `start` along `axis`.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Tensor> {
        let ax = normalize_real_axis("narrow", axis, self.shape())?;
        // checked: start + len can overflow usize for huge arguments.
        if start.checked_add(len).is_none_or(|end| end > self.shape()[ax]) {
            return Err(Error::shape(
                "narrow",
                format!(
                    "start {start} + length {len} exceeds size {} of axis {ax} (shape {:?})",
                    self.shape()[ax],
                    self.shape()
                ),
            ));
        }
        self.slice(ax as isize, start as isize, (start + len) as isize, 1)
    }
}
