//! Device dispatch for reductions.

use super::cpu::reduce::{self as k, ReduceKind};
use super::cpu::CpuBuffer;
#[cfg(feature = "gpu")]
use super::gpu::reduce as g;
use super::Buffer;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Reduces `axes` (sorted, distinct); `out_shape` is the result's shape (keepdim applied).
pub fn reduce(op: &'static str, x: &Tensor, axes: &[usize], kind: ReduceKind, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for(op, x, out_shape, x.dtype())?;
    let gx = x.storage().read();
    let out = match &*gx {
        Buffer::Cpu(CpuBuffer::F32(v)) => Buffer::Cpu(CpuBuffer::F32(k::reduce(v, x.layout(), axes, kind))),
        Buffer::Cpu(CpuBuffer::F64(v)) => Buffer::Cpu(CpuBuffer::F64(k::reduce(v, x.layout(), axes, kind))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) if b.dtype == crate::dtype::DType::F32 => Buffer::Gpu(g::reduce(op, b, x.layout(), axes, kind)?),
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    Ok(Tensor::from_buffer(out, out_shape))
}

pub fn arg_reduce(op: &'static str, x: &Tensor, axis: usize, max: bool, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for(op, x, out_shape, crate::dtype::DType::I32)?;
    let gx = x.storage().read();
    let out = match &*gx {
        Buffer::Cpu(CpuBuffer::F32(v)) => Buffer::Cpu(CpuBuffer::I32(k::arg_reduce(v, x.layout(), axis, max))),
        Buffer::Cpu(CpuBuffer::F64(v)) => Buffer::Cpu(CpuBuffer::I32(k::arg_reduce(v, x.layout(), axis, max))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) if b.dtype == crate::dtype::DType::F32 => {
            Buffer::Gpu(g::arg_reduce(op, b, x.layout(), axis, max)?)
        }
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    let y = Tensor::from_buffer(out, out_shape);
    y.storage().set_index_bound(x.shape()[axis]);
    Ok(y)
}
