//! Device dispatch for batched matrix products.

use super::cpu::matmul as k;
use super::cpu::CpuBuffer;
use super::Buffer;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `a` [..., m, k] times `b` [..., k, n], same rank, batch dims broadcast to `batch`.
pub fn matmul(a: &Tensor, b: &Tensor, batch: &[usize], out_shape: &[usize]) -> Result<Tensor> {
    super::room_for("matmul", a, out_shape, a.dtype())?;
    let ga = a.storage().read();
    let gb = b.storage().read();
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(CpuBuffer::F32(x)), Buffer::Cpu(CpuBuffer::F32(y))) => {
            Buffer::Cpu(CpuBuffer::F32(k::matmul(x, a.layout(), y, b.layout(), batch)))
        }
        (Buffer::Cpu(CpuBuffer::F64(x)), Buffer::Cpu(CpuBuffer::F64(y))) => {
            Buffer::Cpu(CpuBuffer::F64(k::matmul(x, a.layout(), y, b.layout(), batch)))
        }
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(x), Buffer::Gpu(y)) => {
            Buffer::Gpu(super::gpu::matmul::matmul(x, a.layout(), y, b.layout(), batch)?)
        }
        _ => return Err(Error::dtype("matmul", format!("unsupported dtypes {} and {}", a.dtype(), b.dtype()))),
    };
    Ok(Tensor::from_buffer(out, out_shape))
}
