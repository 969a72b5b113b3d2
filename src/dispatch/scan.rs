//! Dispatch for scans and the argsort along one axis.

use crate::backend::{self, IndexBound, View};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::{KernelSpec, ScanKind};
use crate::tensor::Tensor;

/// The inclusive running sum or product of `x` along `axis` (from the end when `reverse`).
pub fn scan(op: &'static str, x: &Tensor, axis: usize, kind: ScanKind, reverse: bool) -> Result<Tensor> {
    run(op, x, KernelSpec::Scan { axis, kind, reverse }, x.dtype())
}

/// The i32 positions that sort `x` along `axis` (stable). They carry their
/// bound, so indexing with them needs no range check (the device-made index
/// rule: nothing is read back).
pub fn argsort(op: &'static str, x: &Tensor, axis: usize, descending: bool) -> Result<Tensor> {
    let y = run(op, x, KernelSpec::Argsort { axis, descending }, DType::I32)?;
    y.storage().set_index_facts(IndexBound { bound: x.shape()[axis], windows: None, by_kernel: true });
    Ok(y)
}

fn run(op: &'static str, x: &Tensor, spec: KernelSpec, dtype: DType) -> Result<Tensor> {
    super::room_for(op, x, x.shape(), dtype)?;
    let out = backend::run(op, &spec, &[View::new(&x.storage().read(), x.layout())], x.shape())?;
    let y = Tensor::from_buffer(out, x.shape());
    if super::record::active() {
        super::record::run(op, &spec, &[x], &y);
    }
    Ok(y)
}
