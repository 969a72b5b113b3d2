//! Joining and cutting along an axis: concat (a primitive: one copy through
//! the backend's `assemble`), stack, split/chunk (views via narrow) and
//! constant padding. Backward rules are the adjoint slices.

use super::args::value_for;
use super::movement::one;
#[cfg(feature = "testing")]
use super::reference as r;
use super::slice::slice_layout;
use super::{same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::movement as be;
use crate::error::{Error, Result};
use crate::shape::{add_sizes, normalize_real_axis, Dims, Layout};
use crate::tensor::Tensor;

static CONCAT: OpDef = OpDef {
    name: "concat",
    signature: "cat(tensors: Tensor[], dim: int = 0) -> Tensor",
    doc: "Joins tensors along an existing axis `dim` (Rust: `Tensor::concat`).",
    forward: Some(Forward::One(|a| {
        let tensors = a.tensors("tensors")?;
        // PyTorch's words for what `Tensor::concat` reports as an axis error.
        if let Some((i, t)) = tensors.iter().enumerate().find(|(_, t)| t.ndim() == 0) {
            return Err(Error::shape(
                "concat",
                format!("tensors[{i}] is zero-dimensional (shape {:?}) and cannot be concatenated", t.shape()),
            ));
        }
        Tensor::concat(tensors, a.int("dim")?)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let Attrs::Sizes { axis, sizes } = c.attrs() else { unreachable!() };
        let mut off = 0;
        let mut out = Vec::with_capacity(sizes.len());
        for (i, &s) in sizes.iter().enumerate() {
            out.push(if c.needs_input_grad(i) { Some(g[0].narrow(*axis as isize, off, s)?) } else { None });
            off += s;
        }
        Ok(out)
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "concat axis 1",
                vec![Input::Uniform(vec![2, 3], -1.0, 1.0), Input::Uniform(vec![2, 2], -1.0, 1.0)],
                |x| Tensor::concat(&[x[0].clone(), x[1].clone()], 1),
            )
            .also(Sample::Empty, &[&[0, 3], &[0, 2]])
            .reference(|h| r::concat(&[&h[0], &h[1]], 1)),
            Case::new(
                "concat i32 with an empty piece",
                vec![Input::Int(vec![2, 3], -9, 9), Input::Int(vec![0, 3], -9, 9)],
                |x| Tensor::concat(&[x[0].clone(), x[1].clone()], 0),
            )
            .reference(|h| r::concat(&[&h[0], &h[1]], 0)),
            Case::new(
                "stack",
                vec![Input::Uniform(vec![2, 3], -1.0, 1.0), Input::Uniform(vec![2, 3], -1.0, 1.0)],
                |x| Tensor::stack(&[x[0].clone(), x[1].clone()], 0),
            )
            .also(Sample::Scalar, &[&[], &[]])
            .reference(|h| r::stack(&[&h[0], &h[1]], 0)),
            Case::new("split then concat", vec![Input::Uniform(vec![5, 2], -1.0, 1.0)], |x| {
                let parts = x[0].split(2, 0)?;
                Tensor::concat(&[parts[2].clone(), parts[0].mul_scalar(2.0)?], 0)
            })
            .reference(|h| {
                let parts = r::split(&h[0], 2, 0);
                r::concat(&[&parts[2], &r::map(&parts[0], |v| 2.0 * v)], 0)
            }),
            Case::new("chunk", vec![Input::Uniform(vec![2, 6], -1.0, 1.0)], |x| {
                let parts = x[0].chunk(3, 1)?;
                parts[1].mul(&parts[2])
            })
            .reference(|h| {
                let parts = r::chunk(&h[0], 3, 1);
                r::zip(&parts[1], &parts[2], r::Kind::Float, |a, b| a * b)
            }),
        ]
    },
};

static PAD: OpDef = OpDef {
    name: "pad",
    signature: "pad(self, pad: size[], value: scalar = 0) -> Tensor",
    doc: "Constant padding in `F.pad` order: the last dim's (before, after) first.",
    forward: Some(Forward::One(|a| {
        let x = a.this()?;
        let flat = a.sizes("pad")?;
        if flat.len() % 2 != 0 {
            return Err(Error::value(
                "pad",
                format!("pad must hold (before, after) pairs, got {} numbers", flat.len()),
            ));
        }
        let value = value_for("pad", "value", a.float("value")?, x.dtype())?;
        // F.pad lists the last dim first; `Tensor::pad` lists the padded trailing dims in order.
        let pairs: Vec<(usize, usize)> = flat.chunks(2).rev().map(|p| (p[0], p[1])).collect();
        x.pad(&pairs, value)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let Attrs::Pad { pads, .. } = c.attrs() else { unreachable!() };
        let shape = c.input_shape(0);
        let mut t = g[0].clone();
        for (axis, &(before, _)) in pads.iter().enumerate() {
            if t.shape()[axis] != shape[axis] {
                t = t.narrow(axis as isize, before, shape[axis])?;
            }
        }
        one(Ok(t))
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![Case::new("pad last two axes", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| {
            x[0].pad(&[(1, 2), (0, 1)], 0.5)
        })
        .also(Sample::Empty, &[&[2, 0, 4]])
        .reference(|h| r::pad(&h[0], &[(1, 2), (0, 1)], 0.5))]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&CONCAT, &PAD]
}

impl Tensor {
    /// Joins tensors along an existing axis.
    pub fn concat(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::value("concat", "needs at least one tensor"))?;
        let ax = normalize_real_axis("concat", axis, first.shape())?;
        let refs: Vec<&Tensor> = tensors.iter().collect();
        same_device("concat", &refs)?;
        let mut shape = first.dims();
        shape[ax] = 0;
        for t in tensors {
            same_dtype("concat", first, t)?;
            let ok = t.ndim() == first.ndim() && (0..t.ndim()).all(|d| d == ax || t.shape()[d] == first.shape()[d]);
            if !ok {
                return Err(Error::shape(
                    "concat",
                    format!("shapes {:?} and {:?} differ outside axis {ax}", first.shape(), t.shape()),
                ));
            }
            shape[ax] = add_sizes("concat", "the joined length", shape[ax], t.shape()[ax])?;
        }
        crate::shape::check_size("concat", &shape)?;
        let full = Layout::contiguous(&shape);
        let mut off = 0;
        let mut pieces = Vec::with_capacity(tensors.len());
        for t in tensors {
            pieces.push((slice_layout(&full, ax, off, 1, t.shape()[ax]), t));
            off += t.shape()[ax];
        }
        let out = be::assemble("concat", &shape, first.dtype(), 0.0, &pieces)?;
        if !needs_record(&refs) {
            return Ok(out);
        }
        let sizes = tensors.iter().map(|t| t.shape()[ax]).collect();
        record(&CONCAT, Attrs::Sizes { axis: ax, sizes }, &refs, &[], false, out)
    }
    /// Joins same-shaped tensors along a new axis.
    pub fn stack(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::value("stack", "needs at least one tensor"))?;
        if let Some(bad) = tensors.iter().find(|t| t.shape() != first.shape()) {
            return Err(Error::shape(
                "stack",
                format!("all tensors need one shape, got {:?} and {:?}", first.shape(), bad.shape()),
            ));
        }
        let parts = tensors.iter().map(|t| t.unsqueeze(axis)).collect::<Result<Vec<_>>>()?;
        Tensor::concat(&parts, axis)
    }
    /// Pieces of `size` along `axis` (the last may be smaller).
    pub fn split(&self, size: usize, axis: isize) -> Result<Vec<Tensor>> {
        let ax = normalize_real_axis("split", axis, self.shape())?;
        if size == 0 {
            return Err(Error::value(
                "split",
                format!("split size must be at least 1, got 0 (axis {ax} of shape {:?})", self.shape()),
            ));
        }
        let n = self.shape()[ax];
        if n == 0 {
            // PyTorch: an empty axis splits into one empty piece.
            return Ok(vec![self.clone()]);
        }
        (0..n).step_by(size).map(|s| self.narrow(ax as isize, s, size.min(n - s))).collect()
    }
    /// Pieces of the given sizes along `axis` (they must add up to the axis size).
    pub fn split_sizes(&self, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>> {
        let ax = normalize_real_axis("split", axis, self.shape())?;
        if sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s)) != Some(self.shape()[ax]) {
            return Err(Error::shape(
                "split",
                format!("sizes {sizes:?} do not add up to axis {ax} of shape {:?}", self.shape()),
            ));
        }
        let mut off = 0;
        sizes
            .iter()
            .map(|&s| {
                let t = self.narrow(ax as isize, off, s);
                off += s;
                t
            })
            .collect()
    }
    /// `chunks` nearly equal pieces along `axis` (as PyTorch's `chunk`).
    pub fn chunk(&self, chunks: usize, axis: isize) -> Result<Vec<Tensor>> {
        let ax = normalize_real_axis("chunk", axis, self.shape())?;
        if chunks == 0 {
            return Err(Error::value(
                "chunk",
                format!("chunks must be at least 1, got 0 (axis {ax} of shape {:?})", self.shape()),
            ));
        }
        self.split(self.shape()[ax].div_ceil(chunks).max(1), ax as isize)
    }
    /// Constant padding. `pads[i] = (before, after)` applies to the last
    /// `pads.len()` axes in order (so `[(1, 1), (2, 2)]` pads H by 1 and W by 2).
    pub fn pad(&self, pads: &[(usize, usize)], value: f64) -> Result<Tensor> {
        if pads.len() > self.ndim() {
            return Err(Error::shape(
                "pad",
                format!("{} pad pairs for a tensor of rank {} (shape {:?})", pads.len(), self.ndim(), self.shape()),
            ));
        }
        let lead = self.ndim() - pads.len();
        let full_pads: Vec<(usize, usize)> =
            (0..self.ndim()).map(|i| if i < lead { (0, 0) } else { pads[i - lead] }).collect();
        let shape = (self.shape().iter().zip(&full_pads))
            .map(|(&d, &(b, a))| add_sizes("pad", "the padded size", d, add_sizes("pad", "the padding", b, a)?))
            .collect::<Result<Dims>>()?;
        crate::shape::check_size("pad", &shape)?;
        let mut region = Layout::contiguous(&shape);
        for (ax, &(b, _)) in full_pads.iter().enumerate() {
            region = slice_layout(&region, ax, b, 1, self.shape()[ax]);
        }
        let out = be::assemble("pad", &shape, self.dtype(), value, &[(region, self)])?;
        if !needs_record(&[self]) {
            return Ok(out);
        }
        record(&PAD, Attrs::Pad { pads: full_pads, value }, &[self], &[], false, out)
    }
}
