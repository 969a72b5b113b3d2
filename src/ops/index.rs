//! Index ops, in two adjoint pairs: `index_select` (whole slices along an
//! axis) with `index_add`, and `gather` (one element per index position,
//! PyTorch semantics) with `scatter_add`. Each op's backward is its partner,
//! so both pairs are differentiable to any order. Indices are I32 tensors
//! that never carry gradients; they are node inputs (with no edge) and saved.
//!
//! An index out of range is an error naming the op, the value, the axis size
//! and the shapes. It comes from the call itself when the host holds the
//! values (cpu tensors, indices uploaded to a GPU). Indices that exist only on
//! a GPU (made there, e.g. by `full_on` or a cast) are checked on the device
//! instead, without a readback: the error then comes from the next readback
//! or `synchronize()`, once, and the call's result holds 0 where gather or
//! index_select read such an index and leaves out what scatter_add or
//! index_add would have added there (see `KernelSpec::IndexCheck`).

#[cfg(feature = "testing")]
use super::reference as r;
use super::{same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::node::BackwardCtx;
use crate::autograd::{needs_record, record};
use crate::dispatch::index as be;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::normalize_axis;
use crate::tensor::Tensor;

fn axis_of(c: &BackwardCtx) -> usize {
    let Attrs::Axis(a) = c.attrs() else { unreachable!("index node without Axis attrs") };
    *a
}

/// Zeros of the input's shape as a broadcast scalar: the backward's scatter
/// target costs one allocation (the kernel's output), not two.
fn zeros_of_input(c: &BackwardCtx, g: &Tensor) -> Result<Tensor> {
    g.zeros_scalar()?.expand_dims(c.input_shape(0))
}

static INDEX_SELECT: OpDef = OpDef {
    name: "index_select",
    signature: "index_select(self, dim: int, index: Tensor<int32>) -> Tensor",
    doc: "The slices along `dim` at the positions in the 1-D `index`.",
    forward: Some(Forward::One(|a| a.this()?.index_select(a.int("dim")?, a.tensor("index")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let gx = zeros_of_input(c, &g[0])?.index_add(axis_of(c) as isize, c.saved(0), &g[0])?;
        Ok(vec![Some(gx), None])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "index_select axis 0 with repeats",
                vec![Input::Uniform(vec![4, 3], -1.0, 1.0), Input::Int(vec![6], 0, 4)],
                |x| x[0].index_select(0, &x[1]),
            )
            .also(Sample::Empty, &[&[4, 3], &[0]])
            .reference(|h| r::index_select(&h[0], 0, &h[1])),
            Case::new(
                "index_select last axis",
                vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0), Input::Int(vec![3], 0, 4)],
                |x| x[0].index_select(-1, &x[1]),
            )
            .reference(|h| r::index_select(&h[0], -1, &h[1])),
            Case::new(
                "index_select of a transposed view",
                vec![Input::Uniform(vec![3, 4], -1.0, 1.0), Input::Int(vec![5], 0, 3)],
                |x| x[0].transpose(0, 1)?.index_select(1, &x[1]),
            )
            .reference(|h| r::index_select(&r::transpose(&h[0], 0, 1), 1, &h[1])),
        ]
    },
};

static INDEX_ADD: OpDef = OpDef {
    name: "index_add",
    signature: "index_add(self, dim: int, index: Tensor<int32>, source: Tensor, *, alpha: float = 1) -> Tensor",
    doc: "A copy with slice k of `source` (times `alpha`) added at index[k] along `dim`.",
    forward: Some(Forward::One(|a| {
        let alpha = a.finite("alpha")?;
        let source = a.tensor("source")?;
        let source = if alpha == 1.0 { source.clone() } else { source.mul_scalar(alpha)? };
        a.this()?.index_add(a.int("dim")?, a.tensor("index")?, &source)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let gb = if c.needs_input_grad(0) { Some(g[0].clone()) } else { None };
        let gs = if c.needs_input_grad(2) { Some(g[0].index_select(axis_of(c) as isize, c.saved(0))?) } else { None };
        Ok(vec![gb, None, gs])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "index_add axis 0 with repeats",
                vec![
                    Input::Uniform(vec![4, 3], -1.0, 1.0),
                    Input::Int(vec![5], 0, 4),
                    Input::Uniform(vec![5, 3], -1.0, 1.0),
                ],
                |x| x[0].index_add(0, &x[1], &x[2]),
            )
            .also(Sample::Empty, &[&[4, 3], &[0], &[0, 3]])
            .reference(|h| r::index_add(&h[0], 0, &h[1], &h[2])),
            Case::new(
                "index_add middle axis",
                vec![
                    Input::Uniform(vec![2, 3, 2], -1.0, 1.0),
                    Input::Int(vec![4], 0, 3),
                    Input::Uniform(vec![2, 4, 2], -1.0, 1.0),
                ],
                |x| x[0].index_add(1, &x[1], &x[2]),
            )
            .reference(|h| r::index_add(&h[0], 1, &h[1], &h[2])),
        ]
    },
};

static GATHER: OpDef = OpDef {
    name: "gather",
    signature: "gather(self, dim: int, index: Tensor<int32>) -> Tensor",
    doc: "out[p] = x[p with p[dim] replaced by index[p]].",
    forward: Some(Forward::One(|a| a.this()?.gather(a.int("dim")?, a.tensor("index")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let gx = zeros_of_input(c, &g[0])?.scatter_add(axis_of(c) as isize, c.saved(0), &g[0])?;
        Ok(vec![Some(gx), None])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "gather axis 1",
                vec![Input::Uniform(vec![3, 4], -1.0, 1.0), Input::Int(vec![3, 2], 0, 4)],
                |x| x[0].gather(1, &x[1]),
            )
            .also(Sample::Empty, &[&[3, 4], &[3, 0]])
            .reference(|h| r::gather(&h[0], 1, &h[1])),
            Case::new(
                "gather axis 0 with repeats",
                vec![Input::Uniform(vec![3, 4], -1.0, 1.0), Input::Int(vec![5, 3], 0, 3)],
                |x| x[0].gather(0, &x[1]),
            )
            .reference(|h| r::gather(&h[0], 0, &h[1])),
            Case::new(
                "gather of a permuted view",
                vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0), Input::Int(vec![4, 2, 2], 0, 3)],
                |x| x[0].permute(&[2, 0, 1])?.gather(-1, &x[1]),
            )
            .reference(|h| r::gather(&r::permute(&h[0], &[2, 0, 1]), -1, &h[1])),
        ]
    },
};

static SCATTER_ADD: OpDef = OpDef {
    name: "scatter_add",
    signature: "scatter_add(self, dim: int, index: Tensor<int32>, src: Tensor) -> Tensor",
    doc: "A copy with src[p] added at p with p[dim] replaced by index[p].",
    forward: Some(Forward::One(|a| a.this()?.scatter_add(a.int("dim")?, a.tensor("index")?, a.tensor("src")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let gb = if c.needs_input_grad(0) { Some(g[0].clone()) } else { None };
        let gs = if c.needs_input_grad(2) {
            // src may be larger than the index: its unused elements get zero gradient.
            let picked = g[0].gather(axis_of(c) as isize, c.saved(0))?;
            let pads: Vec<(usize, usize)> =
                c.input_shape(2).iter().zip(picked.shape()).map(|(&s, &i)| (0, s - i)).collect();
            Some(if pads.iter().any(|&(_, a)| a > 0) { picked.pad(&pads, 0.0)? } else { picked })
        } else {
            None
        };
        Ok(vec![gb, None, gs])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new(
                "scatter_add axis 0 with repeats",
                vec![
                    Input::Uniform(vec![3, 4], -1.0, 1.0),
                    Input::Int(vec![4, 4], 0, 3),
                    Input::Uniform(vec![4, 4], -1.0, 1.0),
                ],
                |x| x[0].scatter_add(0, &x[1], &x[2]),
            )
            .also(Sample::Empty, &[&[3, 4], &[0, 4], &[0, 4]])
            .reference(|h| r::scatter_add(&h[0], 0, &h[1], &h[2])),
            Case::new(
                "scatter_add src larger than index",
                vec![
                    Input::Uniform(vec![3, 4], -1.0, 1.0),
                    Input::Int(vec![3, 2], 0, 4),
                    Input::Uniform(vec![3, 3], -1.0, 1.0),
                ],
                |x| x[0].scatter_add(1, &x[1], &x[2]),
            )
            .reference(|h| r::scatter_add(&h[0], 1, &h[1], &h[2])),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&INDEX_SELECT, &INDEX_ADD, &GATHER, &SCATTER_ADD]
}

pub(super) fn expect_index(op: &'static str, index: &Tensor) -> Result<()> {
    if index.dtype() != DType::I32 {
        return Err(Error::dtype(op, format!("index must be i32, got {} of shape {:?}", index.dtype(), index.shape())));
    }
    Ok(())
}

/// Checks the data operand has at least one axis and normalises `axis`.
pub(super) fn data_axis(op: &'static str, x: &Tensor, axis: isize) -> Result<usize> {
    if x.ndim() == 0 {
        return Err(Error::shape(op, "needs a tensor with at least one axis, got a scalar (shape [])"));
    }
    normalize_axis(op, axis, x.shape())
}

/// Accumulating ops need an addable dtype; `src` must match `base`.
fn expect_addable(op: &'static str, base: &Tensor, src: &Tensor) -> Result<()> {
    if base.dtype() == DType::Bool {
        return Err(Error::dtype(op, format!("cannot add into a bool tensor of shape {:?}", base.shape())));
    }
    same_dtype(op, base, src)
}

fn expect_1d(op: &'static str, index: &Tensor) -> Result<()> {
    if index.ndim() != 1 {
        return Err(Error::shape(op, format!("index must be 1-D, got shape {:?}", index.shape())));
    }
    Ok(())
}

/// PyTorch's gather/scatter rule: same rank, and the index no larger than
/// `data` in every dim (except `axis`, unless `including_axis`).
pub(super) fn index_fits(
    op: &'static str,
    what: &str,
    index: &Tensor,
    data: &Tensor,
    axis: usize,
    including_axis: bool,
) -> Result<()> {
    let fits = index.ndim() == data.ndim()
        && index
            .shape()
            .iter()
            .zip(data.shape())
            .enumerate()
            .all(|(d, (&i, &s))| i <= s || (d == axis && !including_axis));
    if !fits {
        let rule = if including_axis { "in every dim" } else { "in every dim but the axis" };
        return Err(Error::shape(
            op,
            format!(
                "index of shape {:?} must have the rank of {what} {:?} and be no larger {rule} (axis {axis})",
                index.shape(),
                data.shape()
            ),
        ));
    }
    Ok(())
}

impl Tensor {
    /// The slices along `axis` at the positions in `index` (1-D, i32; repeats allowed).
    /// The result has `index.len()` entries along `axis`.
    pub fn index_select(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let op = INDEX_SELECT.name;
        same_device(op, &[self, index])?;
        expect_index(op, index)?;
        expect_1d(op, index)?;
        let ax = data_axis(op, self, axis)?;
        let mut out_shape = self.dims();
        out_shape[ax] = index.numel();
        crate::shape::check_size(op, &out_shape)?;
        let out = be::index_select(op, self, ax, index)?;
        if !needs_record(&[self]) {
            return Ok(out);
        }
        record(&INDEX_SELECT, Attrs::Axis(ax), &[self, index], &[index], false, out)
    }

    /// Out-of-place `index_add`: a copy of `self` with slice `k` of `source`
    /// along `axis` added at position `index[k]` (repeats accumulate).
    /// `source` has `self`'s shape except `index.len()` along `axis`.
    pub fn index_add(&self, axis: isize, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let op = INDEX_ADD.name;
        same_device(op, &[self, index, source])?;
        expect_addable(op, self, source)?;
        expect_index(op, index)?;
        expect_1d(op, index)?;
        let ax = data_axis(op, self, axis)?;
        let mut want = self.dims();
        want[ax] = index.numel();
        if source.shape() != want.as_slice() {
            return Err(Error::shape(
                op,
                format!(
                    "source must have shape {want:?} (input {:?} with {} index entries on axis {ax}), got {:?}",
                    self.shape(),
                    index.numel(),
                    source.shape()
                ),
            ));
        }
        let out = be::index_add(op, self, ax, index, source)?;
        if !needs_record(&[self, source]) {
            return Ok(out);
        }
        record(&INDEX_ADD, Attrs::Axis(ax), &[self, index, source], &[index], false, out)
    }

    /// PyTorch's `gather`: `out[p] = self[p with p[axis] replaced by index[p]]`.
    /// `index` (i32) has `self`'s rank and is no larger in any other dim; the
    /// result has `index`'s shape.
    pub fn gather(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let op = GATHER.name;
        same_device(op, &[self, index])?;
        expect_index(op, index)?;
        let ax = data_axis(op, self, axis)?;
        index_fits(op, "input", index, self, ax, false)?;
        let out = be::gather(op, self, ax, index)?;
        if !needs_record(&[self]) {
            return Ok(out);
        }
        record(&GATHER, Attrs::Axis(ax), &[self, index], &[index], false, out)
    }

    /// Out-of-place `scatter_add`: a copy of `self` with `src[p]` added at `p`
    /// with `p[axis]` replaced by `index[p]`, for every position `p` of `index`
    /// (repeats accumulate). As in PyTorch, `index` has the rank of both and is
    /// no larger than `src` in any dim, nor than `self` outside `axis`.
    pub fn scatter_add(&self, axis: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let op = SCATTER_ADD.name;
        same_device(op, &[self, index, src])?;
        expect_addable(op, self, src)?;
        expect_index(op, index)?;
        let ax = data_axis(op, self, axis)?;
        index_fits(op, "input", index, self, ax, false)?;
        index_fits(op, "src", index, src, ax, true)?;
        let out = be::scatter_add(op, self, ax, index, src)?;
        if !needs_record(&[self, src]) {
            return Ok(out);
        }
        record(&SCATTER_ADD, Attrs::Axis(ax), &[self, index, src], &[index], false, out)
    }
}
