//! Dispatch for reductions.

use crate::backend::{self, View};
use crate::error::Result;
use crate::kernel::{KernelSpec, ReduceKind};
use crate::tensor::Tensor;

/// Reduces `axes` (sorted, distinct); `out_shape` is the result's shape (keepdim applied).
pub fn reduce(op: &'static str, x: &Tensor, axes: &[usize], kind: ReduceKind, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for(op, x, out_shape, x.dtype())?;
    let spec = KernelSpec::Reduce { kind, axes: axes.into() };
    let out = backend::run(op, &spec, &[View::new(&x.storage().read(), x.layout())], out_shape)?;
    let out = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        super::record::run(op, &spec, &[x], &out);
    }
    Ok(out)
}

pub fn arg_reduce(op: &'static str, x: &Tensor, axis: usize, max: bool, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for(op, x, out_shape, crate::dtype::DType::I32)?;
    let spec = KernelSpec::ArgReduce { axis, max };
    let out = backend::run(op, &spec, &[View::new(&x.storage().read(), x.layout())], out_shape)?;
    let y = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        super::record::run(op, &spec, &[x], &y);
    }
    y.storage().set_index_facts(crate::backend::IndexBound { bound: x.shape()[axis], windows: None, by_kernel: true });
    Ok(y)
}
