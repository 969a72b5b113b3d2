//! Sorting along one axis: `argsort` runs the sort kernel
//! (`KernelSpec::Argsort`: a stable sort on the cpu, a bitonic network over
//! (value, position) pairs on a GPU), and `sort` and `topk` gather the values
//! at its positions. The positions are made on the device and carry their
//! bound (the device-made index rule): nothing is read back, and the values'
//! gradient is gather's (a scatter-add of the upstream gradient).
//!
//! The registry's `sort` and `topk` entries return the values; the Rust
//! methods return (values, indices) as PyTorch does, and `argsort` gives
//! the indices alone.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{expect_float, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dispatch::scan as be;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// The i32 positions that sort the tensor along `dim` (PyTorch's
    /// `argsort` with `stable=True`: equal values keep their order; NaN is
    /// the largest value). Float, int32 and bool tensors (false first).
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        let op = ARGSORT.name;
        match self.dtype() {
            DType::I32 => {}
            // false before true, as PyTorch orders bools.
            DType::Bool => return self.to_dtype(DType::I32)?.argsort(dim, descending),
            _ => expect_float(op, self)?,
        }
        let axis = super::scan::dim_of(op, dim, self.shape())?;
        if self.ndim() == 0 {
            return be::argsort(op, &self.reshape_dims(&[1])?, 0, descending)?.reshape_dims(&[]);
        }
        be::argsort(op, self, axis, descending)
    }

    /// The values sorted along `dim` and their original positions (i32), as
    /// PyTorch's `sort`. Always stable (`stable` is accepted for PyTorch's
    /// signature: a stable order is also a valid unstable one).
    pub fn sort(&self, dim: isize, descending: bool, stable: bool) -> Result<(Tensor, Tensor)> {
        let _ = stable;
        super::as_op(SORT.name, || {
            let idx = self.argsort(dim, descending)?;
            Ok((gathered(self, dim, &idx)?, idx))
        })
    }

    /// The `k` largest (or, with `largest` false, smallest) values along
    /// `dim` and their positions (i32), as PyTorch's `topk`: in sorted order
    /// (so `sorted` is accepted and always holds); ties keep their order.
    pub fn topk(&self, k: usize, dim: isize, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
        let _ = sorted;
        let op = TOPK.name;
        super::as_op(op, || {
            let axis = super::scan::dim_of(op, dim, self.shape())?;
            let n = if self.ndim() == 0 { 1 } else { self.shape()[axis] };
            if k > n {
                return Err(Error::value(
                    op,
                    format!("k = {k} is larger than the {n} elements along dim {dim} of shape {:?}", self.shape()),
                ));
            }
            let idx = self.argsort(dim, largest)?;
            let idx = if self.ndim() == 0 { idx } else { idx.narrow(axis as isize, 0, k)? };
            Ok((gathered(self, dim, &idx)?, idx))
        })
    }
}

/// `x`'s values at the positions `idx` along `dim` (a 0-d tensor is its own value).
fn gathered(x: &Tensor, dim: isize, idx: &Tensor) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(x.clone());
    }
    x.gather(dim, idx)
}

/// Values from {-1, -0.5, 0, 0.5, 1}: ties in every line.
#[cfg(feature = "testing")]
fn ties(shape: &[usize]) -> Input {
    Input::Grid(shape.to_vec(), -1.0, 1.0, 5)
}

/// Two operands from {-1, 0, 1} whose quotient has NaN (0 / 0), both
/// infinities (1 / 0, -1 / 0), -0 and ties. Made by division, whose
/// specials are exact on every backend: WGSL leaves log(0) and the log of a
/// negative number undefined, and WebGPU implementations give other values.
#[cfg(feature = "testing")]
fn specials(shape: &[usize]) -> Vec<Input> {
    vec![Input::Grid(shape.to_vec(), -1.0, 1.0, 3), Input::Grid(shape.to_vec(), -1.0, 1.0, 3)]
}

#[cfg(feature = "testing")]
fn quotient(x: &[Tensor]) -> Result<Tensor> {
    x[0].div(&x[1])
}

#[cfg(feature = "testing")]
fn quotient_host(h: &[r::Host]) -> r::Host {
    r::zip(&h[0], &h[1], r::Kind::Float, |a, b| a / b)
}

static ARGSORT: OpDef = OpDef {
    name: "argsort",
    signature: "argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor<int32>",
    doc: "The positions that sort the tensor along `dim` (stable; NaN is the largest value; float, int32 or bool).",
    forward: Some(Forward::One(|a| a.this()?.argsort(a.int("dim")?, a.bool("descending")?))),
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("argsort last axis, ties stable", vec![ties(&[3, 7])], |x| x[0].argsort(-1, false))
                .also(Sample::Empty, &[&[3, 0]])
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::argsort(&h[0], -1, false)),
            Case::new("argsort axis 0 descending, ties stable", vec![ties(&[9, 2, 3])], |x| x[0].argsort(0, true))
                .reference(|h| r::argsort(&h[0], 0, true)),
            Case::new("argsort with NaN and -inf", specials(&[4, 6]), |x| quotient(x)?.argsort(1, false))
                .reference(|h| r::argsort(&quotient_host(h), 1, false)),
            Case::new("argsort descending with NaN", specials(&[4, 6]), |x| quotient(x)?.argsort(-1, true))
                .reference(|h| r::argsort(&quotient_host(h), -1, true)),
            // Several rows of 1 (nothing to sort) and rows past one 512-pair
            // block of the GPU network (its global merge passes).
            Case::new("argsort rows of 1", vec![ties(&[5, 1])], |x| x[0].argsort(1, false))
                .reference(|h| r::argsort(&h[0], 1, false)),
            Case::new("argsort rows of 1500", vec![Input::Grid(vec![2, 1500], -1.0, 1.0, 64)], |x| {
                x[0].argsort(1, true)
            })
            .reference(|h| r::argsort(&h[0], 1, true)),
            // Negative and positive integers with ties, both ways, and rows
            // past one GPU block; bools through int32.
            Case::new("argsort int32, ties stable", vec![Input::Int(vec![4, 9], -3, 3)], |x| x[0].argsort(-1, false))
                .reference(|h| r::argsort(&h[0], -1, false)),
            Case::new("argsort int32 descending, rows of 700", vec![Input::Int(vec![2, 700], -50, 50)], |x| {
                x[0].argsort(1, true)
            })
            .reference(|h| r::argsort(&h[0], 1, true)),
            Case::new("argsort bool", vec![Input::Int(vec![3, 5], 0, 2)], |x| {
                x[0].to_dtype(DType::Bool)?.argsort(1, false)
            })
            .reference(|h| r::argsort(&h[0], 1, false)),
        ]
    },
};

static SORT: OpDef = OpDef {
    name: "sort",
    signature: "sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> (Tensor, Tensor<int32>)",
    doc: "The values sorted along `dim` and their positions, (values, indices) (stable; NaN largest); the indices alone: `argsort`.",
    forward: Some(Forward::Pair(|a| a.this()?.sort(a.int("dim")?, a.bool("descending")?, a.bool("stable")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("sort last axis", vec![Input::Distinct(vec![3, 5])], |x| Ok(x[0].sort(-1, false, true)?.0))
                .also(Sample::Empty, &[&[3, 0]])
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::sort(&h[0], -1, false)),
            Case::new("sort axis 1 descending", vec![Input::Distinct(vec![2, 6, 3])], |x| {
                Ok(x[0].sort(1, true, false)?.0)
            })
            .reference(|h| r::sort(&h[0], 1, true)),
            // Ties: the sorted values are the same whichever tied element
            // lands first, but a tie is a kink (min and max of the pair),
            // where central differences split what gather gives one element:
            // forward only (the distinct cases check the gradient).
            Case::new("sort with ties", vec![Input::Pairs(vec![2, 6])], |x| Ok(x[0].sort(1, false, true)?.0))
                .reference(|h| r::sort(&h[0], 1, false))
                .forward_only(),
            Case::new("sort with NaN", specials(&[3, 5]), |x| Ok(quotient(x)?.sort(-1, true, true)?.0))
                .reference(|h| r::sort(&quotient_host(h), -1, true))
                .nonfinite()
                .forward_only(),
            Case::new("sort int32 descending", vec![Input::Int(vec![3, 8], -9, 9)], |x| Ok(x[0].sort(1, true, true)?.0))
                .reference(|h| r::sort(&h[0], 1, true)),
        ]
    },
};

static TOPK: OpDef = OpDef {
    name: "topk",
    signature:
        "topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> (Tensor, Tensor<int32>)",
    doc: "The `k` largest (or smallest) values along `dim`, in order, and their positions: (values, indices).",
    forward: Some(Forward::Pair(|a| {
        let (k, dim) = (a.size("k")?, a.int("dim")?);
        a.this()?.topk(k, dim, a.bool("largest")?, a.bool("sorted")?)
    })),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("topk 2 largest of the last axis", vec![Input::Distinct(vec![3, 5])], |x| {
                Ok(x[0].topk(2, -1, true, true)?.0)
            })
            .also(Sample::Empty, &[&[0, 5]])
            .reference(|h| r::topk(&h[0], 2, -1, true)),
            Case::new("topk 3 smallest along axis 0", vec![Input::Distinct(vec![4, 3])], |x| {
                Ok(x[0].topk(3, 0, false, true)?.0)
            })
            .reference(|h| r::topk(&h[0], 3, 0, false)),
            Case::new("topk indices with ties", vec![ties(&[3, 6])], |x| Ok(x[0].topk(4, 1, true, true)?.1))
                .reference(|h| r::topk_indices(&h[0], 4, 1, true)),
            Case::new("topk int32 indices with ties", vec![Input::Int(vec![4, 7], -2, 2)], |x| {
                Ok(x[0].topk(3, -1, true, true)?.1)
            })
            .reference(|h| r::topk_indices(&h[0], 3, -1, true)),
            Case::new("topk of a scalar", vec![Input::Uniform(vec![], -1.0, 1.0)], |x| {
                Ok(x[0].topk(1, 0, true, true)?.0)
            })
            .reference(|h| h[0].clone()),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&ARGSORT, &SORT, &TOPK]
}
