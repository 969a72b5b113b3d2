//! Writing into a copy at indexed positions: `scatter` (overwrite),
//! `scatter_reduce` (sum, prod, mean, amax, amin, with or without the
//! input's own element) and `index_put` (PyTorch's `index_put_` with a
//! tuple of index tensors, out of place). Composites: sums go through
//! `scatter_add` / `index_add`, the rest through masks of which index
//! positions share a target, so both backends, every derivative order and
//! capture come from existing kernels.
//!
//! **Duplicates.** PyTorch leaves an overwrite with repeated indices
//! undefined; here the last source in index order (row-major over the
//! index) wins, on every backend: each position learns whether a later one
//! aims at the same target, and only the last of each target is added into
//! zeros. Gradients follow that choice (the overwritten sources get none).
//! The masks compare index positions pairwise along `dim` (along the
//! linearised indices for `index_put`), so they cost (index size) x (its
//! extent along `dim`) elements: sums and means, which need no mask, cost
//! one pass.
//!
//! Index values are range-checked where they are, as the index ops do:
//! at once from the host, on a GPU with the call (reported at the next
//! readback), and an out-of-range index writes nothing.

use super::index::{data_axis, expect_index, index_fits};
#[cfg(feature = "testing")]
use super::reference as r;
use super::{expect_float, same_device, same_dtype, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dispatch::index::{check_on_device, check_range};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{CheckWhat, Effect, IndexCheck};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// How `scatter_reduce` combines the sources aimed at one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl ScatterReduce {
    /// PyTorch's name (`'sum'`, `'prod'`, `'mean'`, `'amax'`, `'amin'`).
    pub fn parse(op: &'static str, name: &str) -> Result<ScatterReduce> {
        Ok(match name {
            "sum" => ScatterReduce::Sum,
            "prod" => ScatterReduce::Prod,
            "mean" => ScatterReduce::Mean,
            "amax" => ScatterReduce::Amax,
            "amin" => ScatterReduce::Amin,
            other => {
                return Err(Error::value(
                    op,
                    format!("reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got {other:?}"),
                ))
            }
        })
    }
}

/// scatter / scatter_reduce's checks (PyTorch's rule, as `scatter_add`),
/// and the device range check under the called op's name (host-held
/// values are checked by the inner index ops, whose errors are renamed).
fn scatter_axis(op: &'static str, x: &Tensor, axis: isize, index: &Tensor, src: &Tensor) -> Result<usize> {
    same_device(op, &[x, index, src])?;
    same_dtype(op, x, src)?;
    expect_index(op, index)?;
    let ax = data_axis(op, x, axis)?;
    index_fits(op, "input", index, x, ax, false)?;
    index_fits(op, "src", index, src, ax, true)?;
    let what = CheckWhat::Index {
        axis: ax,
        data_shape: x.shape().to_vec(),
        index_shape: index.shape().to_vec(),
        effect: Effect::AddsNothing,
    };
    check_on_device(IndexCheck { op, dim: x.shape()[ax], what }, index)?;
    Ok(ax)
}

/// `src` cut down to `shape` (its leading part in every dim): the sources
/// the index positions use.
fn cut_to(src: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let mut t = src.clone();
    for (a, (&s, &n)) in src.shape().iter().zip(shape).enumerate() {
        if s != n {
            t = t.narrow(a as isize, 0, n)?;
        }
    }
    Ok(t)
}

/// For index positions k, k' along `ax` of one line: whether they aim at the
/// same target, with k on axis `ax` and k' on axis `ax + 1` (bool, rank + 1).
fn same_target(index: &Tensor, ax: usize) -> Result<Tensor> {
    index.unsqueeze(ax as isize + 1)?.eq(&index.unsqueeze(ax as isize)?)
}

/// Whether no later position along `ax` aims at the same target: the
/// position whose source an overwrite keeps (bool, the index's shape).
fn last_of_target(index: &Tensor, same: &Tensor, ax: usize) -> Result<Tensor> {
    let k = index.shape()[ax];
    let device = index.device();
    let position = |at: usize| -> Result<Tensor> {
        let mut shape = vec![1; index.ndim() + 1];
        shape[at] = k;
        Tensor::arange_on(0.0, k as f64, 1.0, DType::I32, &device)?.reshape_dims(&shape)
    };
    let later = position(ax + 1)?.gt(&position(ax)?)?;
    let no = Tensor::full_on(&[], 0.0, DType::Bool, &device)?;
    Tensor::where_(&later, same, &no)?.any(&[ax as isize + 1], false)?.eq(&no)
}

/// `values` (the index's shape) of the positions `keep` marks, added into
/// zeros of `x`'s shape at their targets, and where something landed.
fn place(x: &Tensor, ax: usize, index: &Tensor, values: &Tensor, keep: &Tensor) -> Result<(Tensor, Tensor)> {
    let zero = x.zeros_scalar()?;
    let base = zero.expand_dims(x.shape())?;
    let kept = Tensor::where_(keep, values, &zero)?;
    let placed = base.scatter_add(ax as isize, index, &kept)?;
    let hit = base.scatter_add(ax as isize, index, &keep.to_dtype(x.dtype())?)?.gt_scalar(0.0)?;
    Ok((placed, hit))
}

/// The product along `axis` (removed), as a tree of halves: `mul` is
/// differentiable everywhere, zeros included (no division).
fn product_along(t: &Tensor, axis: usize) -> Result<Tensor> {
    let a = axis as isize;
    let mut t = t.clone();
    while t.shape()[axis] > 1 {
        let n = t.shape()[axis];
        let half = n / 2;
        let mut p = t.narrow(a, 0, half)?.mul(&t.narrow(a, half, half)?)?;
        if n % 2 == 1 {
            p = Tensor::concat(&[p, t.narrow(a, n - 1, 1)?], a)?;
        }
        t = p;
    }
    t.squeeze(Some(a))
}

/// Bool tensors through int32: the masks and sums are not defined on bool.
fn via_int32(x: &Tensor, other: &Tensor, f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
    f(&x.to_dtype(DType::I32)?, &other.to_dtype(DType::I32)?)?.to_dtype(DType::Bool)
}

impl Tensor {
    /// PyTorch's `scatter` out of place: a copy of `self` with `src[p]`
    /// written at `p` with `p[axis]` replaced by `index[p]`, for every
    /// position `p` of `index` (i32, the shapes as `scatter_add`). Where
    /// positions along `axis` repeat a target, the last one wins.
    pub fn scatter(&self, axis: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let op = "scatter";
        super::as_op(op, || {
            if self.dtype() == DType::Bool && src.dtype() == DType::Bool {
                return via_int32(self, src, |x, s| x.scatter(axis, index, s));
            }
            let ax = scatter_axis(op, self, axis, index, src)?;
            let src = cut_to(src, index.shape())?;
            let last = last_of_target(index, &same_target(index, ax)?, ax)?;
            let (placed, hit) = place(self, ax, index, &src, &last)?;
            Tensor::where_(&hit, &placed, self)
        })
    }

    /// PyTorch's `scatter_reduce` out of place: every element of `self`
    /// that `index` aims at becomes the `reduce` of the sources aimed at it,
    /// and of itself when `include_self`; the others are kept. Float
    /// tensors. amax / amin split the gradient evenly between the tied
    /// extremes (the element itself included), as PyTorch.
    pub fn scatter_reduce(
        &self,
        axis: isize,
        index: &Tensor,
        src: &Tensor,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor> {
        let op = "scatter_reduce";
        super::as_op(op, || {
            expect_float(op, self)?;
            let ax = scatter_axis(op, self, axis, index, src)?;
            if index.numel() == 0 {
                return Ok(self.clone());
            }
            let a = ax as isize;
            let src = cut_to(src, index.shape())?;
            let base = self.zeros_scalar()?.expand_dims(self.shape())?;
            let counts = || base.scatter_add(a, index, &self.scalar_like(1.0)?.expand_dims(index.shape())?);
            match reduce {
                ScatterReduce::Sum if include_self => self.scatter_add(a, index, &src),
                ScatterReduce::Sum => {
                    let hit = counts()?.gt_scalar(0.0)?;
                    Tensor::where_(&hit, &base.scatter_add(a, index, &src)?, self)
                }
                ScatterReduce::Mean => {
                    let (sum, n) = (base.scatter_add(a, index, &src)?, counts()?);
                    if include_self {
                        return self.add(&sum)?.div(&n.add_scalar(1.0)?);
                    }
                    let hit = n.gt_scalar(0.0)?;
                    let n = Tensor::where_(&hit, &n, &self.scalar_like(1.0)?)?;
                    Tensor::where_(&hit, &sum.div(&n)?, self)
                }
                ScatterReduce::Prod | ScatterReduce::Amax | ScatterReduce::Amin => {
                    let same = same_target(index, ax)?;
                    // Every position's group: the sources aimed at its target.
                    let fill = match reduce {
                        ScatterReduce::Prod => 1.0,
                        ScatterReduce::Amax => f64::NEG_INFINITY,
                        _ => f64::INFINITY,
                    };
                    let group = Tensor::where_(&same, &src.unsqueeze(a)?, &self.scalar_like(fill)?)?;
                    let own = if include_self { Some(self.gather(a, index)?) } else { None };
                    let value = match (reduce, own) {
                        (ScatterReduce::Prod, own) => {
                            let p = product_along(&group, ax + 1)?;
                            match own {
                                Some(o) => p.mul(&o)?,
                                None => p,
                            }
                        }
                        (_, own) => {
                            // The element itself is one more candidate, so ties with it share the gradient.
                            let all = match own {
                                Some(o) => Tensor::concat(&[o.unsqueeze(a + 1)?, group], a + 1)?,
                                None => group,
                            };
                            if reduce == ScatterReduce::Amax {
                                all.amax(&[a + 1], false)?
                            } else {
                                all.amin(&[a + 1], false)?
                            }
                        }
                    };
                    let (placed, hit) = place(self, ax, index, &value, &last_of_target(index, &same, ax)?)?;
                    Tensor::where_(&hit, &placed, self)
                }
            }
        })
    }

    /// PyTorch's `index_put_` out of place: `indices` (i32, broadcast
    /// together to shape B) index the leading `indices.len()` dims, and
    /// `values` (broadcast to B + the remaining dims) are written there,
    /// summed where `accumulate`, else the last in index order wins.
    /// Index values lie in `-size..size` of their dim; a negative one counts
    /// from the end, as in PyTorch's `x[i] = v` (on a GPU, along dims of at
    /// most 2^24, where int32 values convert exactly to f32; a negative
    /// index along a longer dim there is reported out of range).
    pub fn index_put(&self, indices: &[Tensor], values: &Tensor, accumulate: bool) -> Result<Tensor> {
        let op = "index_put";
        super::as_op(op, || {
            if self.dtype() == DType::Bool && values.dtype() == DType::Bool {
                return via_int32(self, values, |x, v| x.index_put(indices, v, accumulate));
            }
            if indices.is_empty() || indices.len() > self.ndim() {
                return Err(Error::shape(
                    op,
                    format!(
                        "takes 1 to {} index tensors for a tensor of shape {:?}, got {}",
                        self.ndim(),
                        self.shape(),
                        indices.len()
                    ),
                ));
            }
            let mut all: Vec<&Tensor> = vec![self, values];
            all.extend(indices);
            same_device(op, &all)?;
            same_dtype(op, self, values)?;
            for i in indices {
                expect_index(op, i)?;
            }
            let (lead, rest) = self.shape().split_at(indices.len());
            let mut b: Vec<usize> = Vec::new();
            for i in indices {
                b = broadcast_shapes(op, &b, i.shape())?.to_vec();
            }
            let target: Vec<usize> = b.iter().chain(rest).copied().collect();
            let fits = broadcast_shapes(op, values.shape(), &target).is_ok_and(|s| s.as_slice() == target.as_slice());
            if !fits {
                return Err(Error::shape(
                    op,
                    format!(
                        "values of shape {:?} do not broadcast to the indexed shape {target:?} (indices broadcast to {b:?}, input {:?})",
                        values.shape(),
                        self.shape()
                    ),
                ));
            }
            let positions: usize = lead.iter().product();
            if positions > i32::MAX as usize {
                return Err(Error::shape(
                    op,
                    format!("the indexed dims {lead:?} hold more than 2^31 - 1 positions (int32 indices)"),
                ));
            }
            let wrapped = indices.iter().zip(lead).map(|(i, &n)| from_the_end(i, n)).collect::<Result<Vec<_>>>()?;
            let indices = wrapped.as_slice();
            for (j, i) in indices.iter().enumerate() {
                let what = CheckWhat::Index {
                    axis: j,
                    data_shape: self.shape().to_vec(),
                    index_shape: i.shape().to_vec(),
                    effect: Effect::AddsNothing,
                };
                check_range(IndexCheck { op, dim: lead[j], what }, i)?;
            }
            let m: usize = b.iter().product();
            if m == 0 || positions == 0 {
                return Ok(self.clone());
            }
            let lin = linear_index(indices, lead, &b)?.reshape_dims(&[m])?;
            let flat: Vec<usize> = [&[positions][..], rest].concat();
            let rows: Vec<usize> = [&[m][..], rest].concat();
            let x = self.reshape_dims(&flat)?;
            let values = values.expand_dims(&target)?.reshape_dims(&rows)?;
            let out = if accumulate {
                x.index_add(0, &lin, &values)?
            } else {
                let last = last_of_target(&lin, &same_target(&lin, 0)?, 0)?;
                let zero = self.zeros_scalar()?;
                let mut column = vec![1; flat.len()];
                column[0] = m;
                let kept = Tensor::where_(&last.reshape_dims(&column)?, &values, &zero)?;
                let placed = zero.expand_dims(&flat)?.index_add(0, &lin, &kept)?;
                column[0] = positions;
                let hits = zero.expand_dims(&[positions])?.index_add(0, &lin, &last.to_dtype(self.dtype())?)?;
                Tensor::where_(&hits.gt_scalar(0.0)?.reshape_dims(&column)?, &placed, &x)?
            };
            out.reshape_dims(self.shape())
        })
    }
}

/// `i + n` where `-n <= i < 0` (an index counted from the end of a dim of
/// `n`), `i` elsewhere: a value below `-n` stays as it is, so the range
/// check names the value the caller passed.
///
/// Where the host holds the values (a cpu index, or a GPU one uploaded
/// rather than computed there), they are wrapped on the host, and only when
/// one is negative; a GPU index keeps its values, so its range check still
/// runs at once rather than at the next readback. Otherwise (a device-made
/// index, or any index while `jit` records) the wrap is elementwise ops:
/// int32 has no arithmetic kernels, so the sum is taken in f64 on the cpu
/// and in f32 on a GPU, exact there for dims up to 2^24 only, so longer GPU
/// dims keep `i` unchanged.
fn from_the_end(i: &Tensor, n: usize) -> Result<Tensor> {
    let device = i.device();
    if !crate::dispatch::record::active() {
        let host = if device.is_gpu() { i.storage().mirrored(i.layout()) } else { Some(i.to_vec::<i32>()?) };
        if let Some(values) = host {
            if values.iter().all(|&v| v >= 0) {
                return Ok(i.clone());
            }
            let n = n as i64;
            let wrap = |v: i32| if v < 0 && v as i64 >= -n { (v as i64 + n) as i32 } else { v };
            return Tensor::from_vec(values.into_iter().map(wrap).collect::<Vec<i32>>(), i.shape())?.to(&device);
        }
    }
    if device.is_gpu() && n > 1 << 24 {
        return Ok(i.clone());
    }
    let float = if device.is_gpu() { DType::F32 } else { DType::F64 };
    let no = Tensor::full_on(&[], 0.0, DType::Bool, &device)?;
    let counted_back = Tensor::where_(&i.lt_scalar(0.0)?, &i.ge_scalar(-(n as f64))?, &no)?;
    let shifted = i.to_dtype(float)?.add_scalar(n as f64)?.to_dtype(DType::I32)?;
    Tensor::where_(&counted_back, &shifted, i)
}

/// The flat position of each indexed slice, sum_j index_j * stride_j,
/// broadcast to `b` (int32). Int32 has no arithmetic kernels, so the sum is
/// formed in a float dtype where it is exact (f64 on the cpu; f32 on a GPU
/// up to 2^24 positions) and cast back; past that a GPU looks the positions
/// up in a table instead (`table_lookup`). On a GPU, where the range checks
/// report later, a position with any index out of its range becomes -1, so
/// it writes nothing rather than into another slice.
fn linear_index(indices: &[Tensor], lead: &[usize], b: &[usize]) -> Result<Tensor> {
    if indices.len() == 1 {
        return indices[0].expand_dims(b);
    }
    let device = indices[0].device();
    let positions: usize = lead.iter().product();
    let lin = if device.is_gpu() && positions > 1 << 24 {
        table_lookup(indices, lead, b)?
    } else {
        let float = if device.is_gpu() { DType::F32 } else { DType::F64 };
        let mut stride = positions;
        let mut lin = Tensor::full_on(&[], 0.0, float, &device)?;
        for (i, &n) in indices.iter().zip(lead) {
            stride /= n;
            lin = lin.add(&i.to_dtype(float)?.mul_scalar(stride as f64)?)?;
        }
        lin.to_dtype(DType::I32)?
    };
    if !device.is_gpu() {
        return lin.expand_dims(b);
    }
    let no = Tensor::full_on(&[], 0.0, DType::Bool, &device)?;
    let mut valid = Tensor::full_on(&[], 1.0, DType::Bool, &device)?;
    for (i, &n) in indices.iter().zip(lead) {
        let inside = Tensor::where_(&i.ge_scalar(0.0)?, &i.lt_scalar(n as f64)?, &no)?;
        valid = Tensor::where_(&valid, &inside, &no)?;
    }
    Tensor::where_(&valid, &lin, &Tensor::full_on(&[], -1.0, DType::I32, &device)?)?.expand_dims(b)
}

/// The flat positions read from a table of them (`arange` shaped like the
/// leading dims), one index at a time: exact for any size, at the cost of
/// (index count) x (the leading dims after the first) int32 elements.
fn table_lookup(indices: &[Tensor], lead: &[usize], b: &[usize]) -> Result<Tensor> {
    let device = indices[0].device();
    let positions: usize = lead.iter().product();
    let m: usize = b.iter().product();
    let flat = |i: &Tensor| i.expand_dims(b)?.reshape_dims(&[m]);
    let table = Tensor::arange_on(0.0, positions as f64, 1.0, DType::I32, &device)?.reshape_dims(lead)?;
    let mut t = table.index_select(0, &flat(&indices[0])?)?;
    for (j, i) in indices.iter().enumerate().skip(1) {
        let mut pick = vec![m, 1];
        pick.extend_from_slice(&lead[j + 1..]);
        let mut shape = vec![1; pick.len()];
        shape[0] = m;
        t = t.gather(1, &flat(i)?.reshape_dims(&shape)?.expand_dims(&pick)?)?.squeeze(Some(1))?;
    }
    t.reshape_dims(b)
}

static SCATTER: OpDef = OpDef {
    name: "scatter",
    signature: "scatter(self, dim: int, index: Tensor<int32>, src: Tensor) -> Tensor",
    doc: "A copy with src[p] written at p with p[dim] replaced by index[p]; where targets repeat, the last in index order wins.",
    forward: Some(Forward::One(|a| a.this()?.scatter(a.int("dim")?, a.tensor("index")?, a.tensor("src")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: &[usize]| Input::Uniform(s.to_vec(), -1.0, 1.0);
        vec![
            Case::new("scatter axis 0 with duplicates", vec![u(&[3, 4]), Input::Int(vec![4, 4], 0, 3), u(&[4, 4])], |x| {
                x[0].scatter(0, &x[1], &x[2])
            })
            .also(Sample::Empty, &[&[3, 4], &[0, 4], &[0, 4]])
            .reference(|h| r::scatter(&h[0], 0, &h[1], &h[2])),
            Case::new("scatter middle axis, src larger", vec![u(&[2, 5, 3]), Input::Int(vec![2, 4, 2], 0, 5), u(&[2, 4, 3])], |x| {
                x[0].scatter(1, &x[1], &x[2])
            })
            .reference(|h| r::scatter(&h[0], 1, &h[1], &h[2])),
            Case::new("scatter int32", vec![Input::Int(vec![2, 5], -9, 9), Input::Int(vec![2, 4], 0, 5), Input::Int(vec![2, 4], -9, 9)], |x| {
                x[0].scatter(-1, &x[1], &x[2])
            })
            .reference(|h| r::scatter(&h[0], -1, &h[1], &h[2])),
            Case::new("scatter bool", vec![Input::Mask(vec![3, 4]), Input::Int(vec![3, 4], 0, 3), Input::Mask(vec![3, 4])], |x| {
                x[0].scatter(0, &x[1], &x[2])
            })
            .reference(|h| r::scatter(&h[0], 0, &h[1], &h[2])),
        ]
    },
};

/// One scatter_reduce case over [3, 4] along axis 0 with duplicates; amax
/// and amin draw distinct values (x and src share none: 12 and 16 evenly
/// spaced values), so no tie sits under a finite difference.
#[cfg(feature = "testing")]
macro_rules! reduce_case {
    ($name:literal, $reduce:ident, $with:literal, $input:expr) => {
        Case::new($name, vec![$input(vec![3, 4]), Input::Int(vec![4, 4], 0, 3), $input(vec![4, 4])], |x| {
            x[0].scatter_reduce(0, &x[1], &x[2], ScatterReduce::$reduce, $with)
        })
        .reference(|h| r::scatter_reduce(&h[0], 0, &h[1], &h[2], &stringify!($reduce).to_lowercase(), $with))
    };
}

static SCATTER_REDUCE: OpDef = OpDef {
    name: "scatter_reduce",
    signature: "scatter_reduce(self, dim: int, index: Tensor<int32>, src: Tensor, reduce: 'sum' | 'prod' | 'mean' | 'amax' | 'amin', *, include_self: bool = True) -> Tensor",
    doc: "A copy where each element index aims at becomes the reduce of the sources aimed at it (and of itself with include_self); amax/amin ties share the gradient.",
    forward: Some(Forward::One(|a| {
        let reduce = ScatterReduce::parse(a.def.name, a.str("reduce")?)?;
        a.this()?.scatter_reduce(a.int("dim")?, a.tensor("index")?, a.tensor("src")?, reduce, a.bool("include_self")?)
    })),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: Vec<usize>| Input::Uniform(s, -1.0, 1.0);
        vec![
            reduce_case!("scatter_reduce sum with self", Sum, true, u)
                .also(Sample::Empty, &[&[3, 4], &[0, 4], &[0, 4]]),
            reduce_case!("scatter_reduce sum", Sum, false, u),
            reduce_case!("scatter_reduce prod with self", Prod, true, u),
            reduce_case!("scatter_reduce prod", Prod, false, u),
            reduce_case!("scatter_reduce mean with self", Mean, true, u),
            reduce_case!("scatter_reduce mean", Mean, false, u),
            reduce_case!("scatter_reduce amax with self", Amax, true, Input::Distinct),
            reduce_case!("scatter_reduce amax", Amax, false, Input::Distinct),
            reduce_case!("scatter_reduce amin with self", Amin, true, Input::Distinct),
            reduce_case!("scatter_reduce amin", Amin, false, Input::Distinct),
            // Every source aimed at element 0, drawn in pairs: the largest
            // value twice, and the gradient split between the two.
            Case::new("scatter_reduce amax tie", vec![u(vec![2]), Input::Int(vec![6], 0, 1), Input::Pairs(vec![6])], |x| {
                x[0].scatter_reduce(0, &x[1], &x[2], ScatterReduce::Amax, false)
            })
            .reference(|h| r::scatter_reduce(&h[0], 0, &h[1], &h[2], "amax", false))
            .first_order_only(),
            Case::new("scatter_reduce prod along the last axis", vec![u(vec![2, 3]), Input::Int(vec![2, 5], 0, 3), u(vec![2, 5])], |x| {
                x[0].scatter_reduce(-1, &x[1], &x[2], ScatterReduce::Prod, false)
            })
            .reference(|h| r::scatter_reduce(&h[0], -1, &h[1], &h[2], "prod", false)),
        ]
    },
};

static INDEX_PUT: OpDef = OpDef {
    name: "index_put",
    signature: "index_put(self, indices: Tensor[], values: Tensor, accumulate: bool = False) -> Tensor",
    doc: "A copy with `values` written at the positions the int32 `indices` (broadcast together) give in the leading dims; summed with accumulate, else the last in index order wins.",
    forward: Some(Forward::One(|a| a.this()?.index_put(a.tensors("indices")?, a.tensor("values")?, a.bool("accumulate")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: &[usize]| Input::Uniform(s.to_vec(), -1.0, 1.0);
        vec![
            Case::new(
                "index_put accumulate, two indices with duplicates",
                vec![u(&[4, 3, 2]), Input::Int(vec![5], 0, 2), Input::Int(vec![5], 0, 3), u(&[5, 2])],
                |x| x[0].index_put(&[x[1].clone(), x[2].clone()], &x[3], true),
            )
            .reference(|h| r::index_put(&h[0], &[&h[1], &h[2]], &h[3], true)),
            Case::new(
                "index_put overwrite, broadcast indices and values",
                vec![u(&[4, 3]), Input::Int(vec![3, 1], 0, 2), Input::Int(vec![1, 2], 0, 3), u(&[2])],
                |x| x[0].index_put(&[x[1].clone(), x[2].clone()], &x[3], false),
            )
            .reference(|h| r::index_put(&h[0], &[&h[1], &h[2]], &h[3], false)),
            Case::new(
                "index_put overwrite rows with duplicates",
                vec![u(&[5, 3]), Input::Int(vec![4], 0, 3), u(&[4, 3])],
                |x| x[0].index_put(&x[1..2], &x[2], false),
            )
            .also(Sample::Empty, &[&[5, 3], &[0], &[0, 3]])
            .reference(|h| r::index_put(&h[0], &[&h[1]], &h[2], false)),
            Case::new(
                "index_put int32 accumulate",
                vec![Input::Int(vec![4, 3], -9, 9), Input::Int(vec![3], 0, 4), Input::Int(vec![3, 3], -9, 9)],
                |x| x[0].index_put(&x[1..2], &x[2], true),
            )
            .reference(|h| r::index_put(&h[0], &[&h[1]], &h[2], true)),
            // Negative indices count from the end: -1 and 3 (and -4 and 0)
            // are one row, so they add up, or the later one wins.
            Case::new(
                "index_put accumulate, negative indices",
                vec![u(&[4, 3]), Input::Int(vec![7], -4, 4), u(&[7, 3])],
                |x| x[0].index_put(&x[1..2], &x[2], true),
            )
            .reference(|h| r::index_put(&h[0], &[&h[1]], &h[2], true)),
            Case::new(
                "index_put overwrite, negative indices",
                vec![u(&[4, 3]), Input::Int(vec![3, 1], -4, 4), Input::Int(vec![1, 2], -3, 3), u(&[2])],
                |x| x[0].index_put(&[x[1].clone(), x[2].clone()], &x[3], false),
            )
            .reference(|h| r::index_put(&h[0], &[&h[1], &h[2]], &h[3], false)),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&SCATTER, &SCATTER_REDUCE, &INDEX_PUT]
}
