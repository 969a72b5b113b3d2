//! Device dispatch for reductions.

use super::cpu::reduce::{self as k, ReduceKind};
use super::cpu::CpuBuffer;
use super::Buffer;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Reduces `axes` (sorted, distinct); `out_shape` is the result's shape (keepdim applied).
pub fn reduce(op: &'static str, x: &Tensor, axes: &[usize], kind: ReduceKind, out_shape: &[usize]) -> Result<Tensor> {
    let g = x.storage().read();
    let out = match &*g {
        Buffer::Cpu(CpuBuffer::F32(v)) => CpuBuffer::F32(k::reduce(v, x.layout(), axes, kind)),
        Buffer::Cpu(CpuBuffer::F64(v)) => CpuBuffer::F64(k::reduce(v, x.layout(), axes, kind)),
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), out_shape))
}

pub fn arg_reduce(op: &'static str, x: &Tensor, axis: usize, max: bool, out_shape: &[usize]) -> Result<Tensor> {
    let g = x.storage().read();
    let out = match &*g {
        Buffer::Cpu(CpuBuffer::F32(v)) => k::arg_reduce(v, x.layout(), axis, max),
        Buffer::Cpu(CpuBuffer::F64(v)) => k::arg_reduce(v, x.layout(), axis, max),
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(CpuBuffer::I32(out)), out_shape))
}
