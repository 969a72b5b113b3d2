//! `KernelSpec`: one value per kernel a registry entry runs, with everything
//! the kernel needs besides its inputs (which arrive as views). Two equal
//! specs over equal inputs compute the same result on any backend, so a spec
//! can be recorded, compared, hashed and replayed.

use super::{
    BinaryKernel, CompareKernel, CustomKernel, Distribution, Epilogue, FusedElementwise, IndexCheck, PoolWindows,
    ReduceKind, ScanKind, Sequence, UnaryKernel, Window2d,
};
use crate::dtype::DType;
use crate::shape::Dims;
use std::sync::Arc;

/// An f64 parameter compared and hashed by its bits (so specs can be keys;
/// `-0.0` and `0.0` are different kernels, every NaN its own).
#[derive(Clone, Copy, Debug)]
pub struct Scalar(pub f64);

impl PartialEq for Scalar {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for Scalar {}
impl std::hash::Hash for Scalar {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h);
    }
}

/// A kernel, as data. Inputs are views (buffer + layout) in the order each
/// variant names; the output is a new contiguous buffer of the shape the
/// caller passes, except for in-place kernels, which write into a view.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelSpec {
    /// `out = row(x, params)` for a unary table row. Inputs: `[x]`.
    Unary {
        #[serde(with = "super::serial::by_name")]
        row: &'static UnaryKernel,
        params: [Scalar; 2],
    },
    /// `out = row(a, b)`, broadcast to the output shape. Inputs: `[a, b]`.
    Binary {
        #[serde(with = "super::serial::by_name")]
        row: &'static BinaryKernel,
    },
    /// A comparison row: a bool mask, broadcast. Inputs: `[a, b]`.
    Compare {
        #[serde(with = "super::serial::by_name")]
        row: &'static CompareKernel,
    },
    /// `out = cond ? a : b`, broadcast. Inputs: `[cond, a, b]`.
    Where,
    /// A contiguous copy converted to `to` (saturating float to int, NaN to 0). Inputs: `[x]`.
    Cast { to: DType },
    /// A contiguous copy in the same dtype. Inputs: `[x]`.
    Copy,
    /// In place: writes the source view into the destination view (same
    /// shape and dtype). Inputs: `[src]`; output: the destination view.
    CopyInto,
    /// Reduces `axes` (sorted, distinct) of a float tensor. Inputs: `[x]`.
    Reduce { kind: ReduceKind, axes: Dims },
    /// The i32 position of the max (or min) along `axis`. Inputs: `[x]`.
    ArgReduce { axis: usize, max: bool },
    /// The inclusive running sum or product along `axis` (from the last
    /// element backwards when `reverse`), same shape. Inputs: `[x]`.
    Scan { axis: usize, kind: ScanKind, reverse: bool },
    /// The i32 positions that sort each line along `axis` (ascending, or
    /// `descending`), stable: equal values keep their order; NaN is the
    /// largest value. Inputs: `[x]`; the output has x's shape.
    Argsort { axis: usize, descending: bool },
    /// `a [..., m, k] x b [..., k, n]`, same rank, batch dims broadcast to
    /// `batch`. Inputs: `[a, b]`.
    Matmul { batch: Dims },
    /// A new buffer of `dtype` with every element `value`. No inputs: the
    /// device is named by the caller (`backend::create`).
    Fill { dtype: DType, value: Scalar },
    /// A new buffer of `dtype` whose element i (row-major) is `seq`'s
    /// formula at i for the output shape (arange, linspace, eye). No inputs.
    Sequence { seq: Sequence, dtype: DType },
    /// A new buffer of `dtype` drawn from `dist`: element i is a function of
    /// (`seed`, i) alone (`kernel::random`), so equal specs give equal bits
    /// on every backend and target. The dispatcher draws `seed` from the
    /// global generator (`manual_seed`) once per call. No inputs.
    Random { dist: Distribution, dtype: DType, seed: u64 },
    /// Range check of an i32 index against `0..dim` (`backend::check`):
    /// writes no tensor; a failure is an error naming `check.op`, at once on
    /// the cpu, at the next readback on a GPU. Inputs: `[index]`.
    IndexCheck(IndexCheck),
    /// im2col: `[n, c, h, w]` to `[n, c * kh * kw, out_h * out_w]`. Inputs: `[x]`.
    Unfold(Window2d),
    /// col2im, summing overlaps: `[n, c * kh * kw, out_h * out_w]` to `[n, c, h, w]`. Inputs: `[cols]`.
    Fold(Window2d),
    /// i32 `[n, c, out_h, out_w]`: where in its `[h, w]` plane each window's
    /// maximum is (padding never wins). Inputs: `[x]`.
    WindowArgmax(Window2d),
    /// A convolution's product without its columns (implicit GEMM): `w
    /// [o, c * kh * kw]` times the im2col columns of `x [n, c, h, w]`, to
    /// `[n, o, out_h * out_w]`; the values of `Matmul` over `Unfold`'s
    /// output. Inputs: `[w, x]`.
    ConvGemm(Window2d),
    /// Each image's weight gradient without the columns: `gy [n, o, out_h *
    /// out_w]` times the transposed im2col columns of `x [n, c, h, w]`, to
    /// `[n, o, c * kh * kw]` (summed over n by the caller). Inputs: `[gy, x]`.
    ConvWeightGemm(Window2d),
    /// Slices of `x` along `axis` at the positions of the 1-D i32 `index`.
    /// Inputs: `[x, index]`; every index value was checked to be in range
    /// (dispatch), on the host or on the device.
    IndexSelect { axis: usize },
    /// PyTorch's gather: `out[p] = x[p with p[axis] = index[p]]`. Inputs: `[x, index]`.
    Gather { axis: usize },
    /// A copy of `base` with the slices of `src` along `axis` added at the
    /// positions of the 1-D `index`. Inputs: `[base, index, src]`. On a
    /// device, an index held on the cpu carries host-checked values (the
    /// backend plans the scatter from them); an index on the device is read
    /// there.
    IndexAdd { axis: usize },
    /// A copy of `base` with `src[p]` added at `p with p[axis] = index[p]`.
    /// Inputs: `[base, index, src]`, the index as for `IndexAdd`. `windows`:
    /// the index is a max-pool argmax viewed by window (max-pool's backward),
    /// so a device scatter may visit only the windows covering each target.
    ScatterAdd { axis: usize, windows: Option<PoolWindows> },
    /// In place: one fused Adam/AdamW step on contiguous buffers of one shape.
    /// `hyper` is `[lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled (0/1)]`.
    /// Inputs: `[grad]`; outputs (written): `[param, m, v]`.
    Adam { hyper: [Scalar; 8] },
    /// A chain (or DAG) of elementwise steps in one kernel (`program::fuse`
    /// makes these): inputs broadcast to the output shape, one contiguous
    /// output. Inputs: one view per `FusedElementwise::inputs`.
    Fused(Arc<FusedElementwise>),
    /// A matmul or reduction with an elementwise tail before its store
    /// (`program::fuse_epilogues`). Inputs: the head's, then the tail's
    /// inputs after its first (which is the head's result).
    Epilogue(Arc<Epilogue>),
    /// A user-written kernel (`skiff::custom`): one output element per
    /// invocation, f32 (f64 on the cpu). Inputs: `kernel.inputs` views;
    /// `scalars`: the call's numbers (a program's inputs when they change).
    Custom {
        #[serde(with = "super::custom::by_name")]
        kernel: Arc<CustomKernel>,
        scalars: Vec<Scalar>,
    },
}

impl KernelSpec {
    /// The kernel's name, for messages (`unary:exp`, `reduce:Sum`, ...).
    pub fn name(&self) -> String {
        match self {
            KernelSpec::Unary { row, .. } => format!("unary:{}", row.name),
            KernelSpec::Binary { row } => format!("binary:{}", row.name),
            KernelSpec::Compare { row } => format!("compare:{}", row.name),
            KernelSpec::Where => "where".into(),
            KernelSpec::Cast { to } => format!("cast:{}", to.name()),
            KernelSpec::Copy => "copy".into(),
            KernelSpec::CopyInto => "copy_into".into(),
            KernelSpec::Reduce { kind, .. } => format!("reduce:{kind:?}"),
            KernelSpec::ArgReduce { max, .. } => format!("arg_reduce:{}", if *max { "max" } else { "min" }),
            KernelSpec::Scan { kind, reverse, .. } => {
                format!("scan:{kind:?}{}", if *reverse { ":reverse" } else { "" })
            }
            KernelSpec::Argsort { descending, .. } => {
                format!("argsort:{}", if *descending { "descending" } else { "ascending" })
            }
            KernelSpec::Matmul { .. } => "matmul".into(),
            KernelSpec::Fill { dtype, .. } => format!("fill:{}", dtype.name()),
            KernelSpec::Sequence { seq, dtype } => format!("sequence:{}:{}", seq.name(), dtype.name()),
            KernelSpec::Random { dist, dtype, .. } => format!("random:{}:{}", dist.name(), dtype.name()),
            KernelSpec::IndexCheck(c) => format!("index_check:{}", c.op),
            KernelSpec::Unfold(_) => "unfold2d".into(),
            KernelSpec::Fold(_) => "fold2d".into(),
            KernelSpec::WindowArgmax(_) => "window_argmax".into(),
            KernelSpec::ConvGemm(_) => "conv_gemm".into(),
            KernelSpec::ConvWeightGemm(_) => "conv_weight_gemm".into(),
            KernelSpec::Adam { .. } => "adam".into(),
            KernelSpec::IndexSelect { .. } => "index_select".into(),
            KernelSpec::Gather { .. } => "gather".into(),
            KernelSpec::IndexAdd { .. } => "index_add".into(),
            KernelSpec::ScatterAdd { .. } => "scatter_add".into(),
            KernelSpec::Fused(f) => f.name(),
            KernelSpec::Epilogue(e) => e.name(),
            KernelSpec::Custom { kernel, .. } => format!("custom:{}", kernel.name),
        }
    }

    /// The spec's f64 parameters in a fixed order (a unary row's two params,
    /// a fill's value, Adam's eight hyperparameters, a fused kernel's unary
    /// steps' params in step order): what a program may recompute from host
    /// numbers at every run (`program::Bind`).
    pub fn scalars(&self) -> Vec<Scalar> {
        match self {
            KernelSpec::Unary { params, .. } => params.to_vec(),
            KernelSpec::Fill { value, .. } => vec![*value],
            KernelSpec::Adam { hyper } => hyper.to_vec(),
            KernelSpec::Fused(f) => f.steps.iter().flat_map(|s| s.op.scalars().iter().copied()).collect(),
            KernelSpec::Custom { scalars, .. } => scalars.clone(),
            KernelSpec::Epilogue(e) => {
                let mut all = e.head.scalars();
                all.extend(e.tail.steps.iter().flat_map(|s| s.op.scalars().iter().copied()));
                all
            }
            _ => Vec::new(),
        }
    }

    /// Sets scalar `at` of `scalars`' order; false when there is none there.
    pub fn set_scalar(&mut self, at: usize, v: f64) -> bool {
        let slot = match self {
            KernelSpec::Unary { params, .. } => params.get_mut(at),
            KernelSpec::Fill { value, .. } => (at == 0).then_some(value),
            KernelSpec::Adam { hyper } => hyper.get_mut(at),
            KernelSpec::Custom { scalars, .. } => scalars.get_mut(at),
            KernelSpec::Epilogue(e) => {
                let head = e.head.scalars().len();
                let e = Arc::make_mut(e);
                return if at < head {
                    e.head.set_scalar(at, v)
                } else {
                    fused_scalar(&mut e.tail, at - head).map(|s| *s = Scalar(v)).is_some()
                };
            }
            KernelSpec::Fused(f) => fused_scalar(Arc::make_mut(f), at),
            _ => None,
        };
        match slot {
            Some(s) => {
                *s = Scalar(v);
                true
            }
            None => false,
        }
    }

    /// How many input views the kernel reads.
    pub fn arity(&self) -> usize {
        match self {
            KernelSpec::Binary { .. }
            | KernelSpec::Compare { .. }
            | KernelSpec::Matmul { .. }
            | KernelSpec::ConvGemm(_)
            | KernelSpec::ConvWeightGemm(_)
            | KernelSpec::IndexSelect { .. }
            | KernelSpec::Gather { .. } => 2,
            KernelSpec::Where | KernelSpec::IndexAdd { .. } | KernelSpec::ScatterAdd { .. } => 3,
            KernelSpec::Fill { .. } | KernelSpec::Sequence { .. } | KernelSpec::Random { .. } => 0,
            KernelSpec::Fused(f) => f.inputs.len(),
            KernelSpec::Epilogue(e) => e.arity(),
            KernelSpec::Custom { kernel, .. } => kernel.inputs,
            _ => 1,
        }
    }
}

/// Scalar `at` of a fused program's steps (their unary params, in step order).
fn fused_scalar(f: &mut FusedElementwise, at: usize) -> Option<&mut Scalar> {
    let mut left = at;
    f.steps.iter_mut().find_map(|s| {
        let params = s.op.scalars_mut();
        if left < params.len() {
            params.get_mut(left)
        } else {
            left -= params.len();
            None
        }
    })
}
