//! Device dispatch for data movement that views cannot express.

use crate::backend::cpu::{self, CpuBuffer};
use crate::backend::Buffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// Builds a new contiguous tensor of `shape` filled with `fill`, then writes
/// each piece into its region (a strided sub-layout of the new tensor).
/// Concat, pad and the backward of slice are all this one primitive.
pub fn assemble(
    op: &'static str,
    shape: &[usize],
    dtype: DType,
    fill: f64,
    pieces: &[(Layout, &Tensor)],
) -> Result<Tensor> {
    if let Some((_, first)) = pieces.first() {
        super::room_for(op, first, shape, dtype)?;
    }
    #[cfg(feature = "gpu")]
    if let Some((_, first)) = pieces.first() {
        if let crate::device::Device::Gpu(dev) = first.device() {
            return assemble_gpu(op, dev.context(), shape, dtype, fill, pieces);
        }
    }
    let mut out = CpuBuffer::filled(dtype, shape.iter().product(), fill);
    for (region, src) in pieces {
        let g = src.storage().read();
        #[allow(irrefutable_let_patterns)] // without the `gpu` feature
        let Buffer::Cpu(s) = &*g
        else {
            return Err(Error::Device { op, found: format!("pieces on {} and cpu", src.device()) });
        };
        match (&mut out, s) {
            (CpuBuffer::F32(d), CpuBuffer::F32(s)) => {
                cpu::scatter_strided(d, region, &cpu::gather_strided(s, src.layout()))
            }
            (CpuBuffer::F64(d), CpuBuffer::F64(s)) => {
                cpu::scatter_strided(d, region, &cpu::gather_strided(s, src.layout()))
            }
            (CpuBuffer::I32(d), CpuBuffer::I32(s)) => {
                cpu::scatter_strided(d, region, &cpu::gather_strided(s, src.layout()))
            }
            (CpuBuffer::Bool(d), CpuBuffer::Bool(s)) => {
                cpu::scatter_strided(d, region, &cpu::gather_strided(s, src.layout()))
            }
            _ => {
                return Err(Error::dtype(op, format!("pieces must share one dtype, got {} and {}", dtype, src.dtype())))
            }
        }
    }
    Ok(Tensor::from_buffer(Buffer::Cpu(out), shape))
}

#[cfg(feature = "gpu")]
fn assemble_gpu(
    op: &'static str,
    ctx: &std::sync::Arc<crate::backend::gpu::GpuContext>,
    shape: &[usize],
    dtype: DType,
    fill: f64,
    pieces: &[(Layout, &Tensor)],
) -> Result<Tensor> {
    if let Some((_, first)) = pieces.first() {
        super::room_for(op, first, shape, dtype)?;
    }
    use crate::backend::gpu::elementwise as g;
    let n: usize = shape.iter().product();
    let out = g::full(ctx, dtype, n, fill)?;
    for (region, src) in pieces {
        let gs = src.storage().read();
        let Buffer::Gpu(s) = &*gs else {
            return Err(Error::Device { op, found: format!("pieces on gpu and {}", src.device()) });
        };
        g::copy_into(s, src.layout(), &out, region)?;
    }
    Ok(Tensor::from_buffer(Buffer::Gpu(out), shape))
}
