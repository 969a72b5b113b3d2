//! The one place that turns tensors into what the backends run on: each
//! family module takes `&Tensor`s, checks there is room for the result, reads
//! their storages and calls the cpu or GPU kernel, and wraps the result in a
//! new `Tensor`. Backends (`crate::backend`) sit below and never see tensors.

pub mod conv;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod movement;
pub mod optim;
pub mod reduce;

use crate::backend::{cpu, Buffer, CpuBuffer};
#[cfg(feature = "gpu")]
use crate::backend::{gpu, MIRROR_MAX};
use crate::device::Device;
use crate::dtype::DType;

/// Before a kernel allocates a result of `shape` and `dtype` for an op on
/// `x`'s device: on the cpu, an error naming `op` unless the host can hold
/// it (`cpu/room.rs`). GPU allocations report their own failures.
pub(crate) fn room_for(
    op: &'static str,
    x: &crate::tensor::Tensor,
    shape: &[usize],
    dtype: DType,
) -> crate::error::Result<()> {
    if x.storage().device().is_gpu() {
        return Ok(());
    }
    cpu::room::ensure(op, crate::shape::numel(shape), dtype)
}

/// A copy of `x` on `device` (contiguous), converting the storage format as needed.
pub fn transfer(x: &crate::tensor::Tensor, device: &Device) -> crate::error::Result<crate::tensor::Tensor> {
    if !device.is_gpu() {
        cpu::room::ensure("to", x.numel(), x.dtype())?;
    }
    let g = x.storage().read();
    let buf = match (&*g, device) {
        (Buffer::Cpu(b), Device::Cpu) => {
            Buffer::Cpu(crate::with_cpu_buffer!(b, v, T => <T as cpu::Elem>::wrap(cpu::gather_strided(v, x.layout()))))
        }
        #[cfg(feature = "gpu")]
        (Buffer::Cpu(b), Device::Gpu(d)) => Buffer::Gpu(gpu::elementwise::upload(d.context(), b, x.layout())?),
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(b), Device::Cpu) => Buffer::Cpu(gpu::elementwise::download(b, x.layout())?),
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(b), Device::Gpu(d)) => {
            let host = gpu::elementwise::download(b, x.layout())?;
            Buffer::Gpu(gpu::elementwise::upload(d.context(), &host, &crate::shape::Layout::contiguous(x.shape()))?)
        }
    };
    let out = crate::tensor::Tensor::from_buffer(buf, x.shape());
    #[cfg(feature = "gpu")]
    if let (Buffer::Cpu(CpuBuffer::I32(v)), Device::Gpu(_)) = (&*g, device) {
        // The values are at hand: labels and indices moved to the GPU never
        // need reading back for their range checks.
        if x.numel() <= MIRROR_MAX {
            out.storage().set_mirror(cpu::gather_strided(v, x.layout()));
        }
    }
    Ok(out)
}

/// The elements of `x` in row-major order as a host buffer (reads back from a GPU).
pub fn host_copy(x: &crate::tensor::Tensor) -> crate::error::Result<CpuBuffer> {
    let g = x.storage().read();
    match &*g {
        Buffer::Cpu(b) => {
            Ok(crate::with_cpu_buffer!(b, v, T => <T as cpu::Elem>::wrap(cpu::gather_strided(v, x.layout()))))
        }
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => {
            // Note (index mirrors): index checks (cross_entropy labels, gather,
            // scatter_add) read i32 indices on the host. Reading them back from
            // the GPU every step would stall the queue, so small i32 storages
            // keep a host copy, valid while the storage version is unchanged.
            if b.dtype != crate::dtype::DType::I32 || b.len > MIRROR_MAX {
                return gpu::elementwise::download(b, x.layout());
            }
            let st = x.storage();
            let version = st.version();
            let mut m = st.mirror.lock().unwrap_or_else(|e| e.into_inner());
            if m.as_ref().is_none_or(|(v, _)| *v != version) {
                let full = crate::shape::Layout::contiguous(&[b.len]);
                let CpuBuffer::I32(all) = gpu::elementwise::download(b, &full)? else {
                    unreachable!("an i32 GPU buffer reads back as i32")
                };
                *m = Some((version, all));
            }
            let (_, all) = m.as_ref().expect("filled above");
            Ok(CpuBuffer::I32(cpu::gather_strided(all, x.layout())))
        }
    }
}

/// `host_copy` without blocking: the GPU readback is awaited (in the browser
/// the map callback wakes it; natively the future waits for the device).
pub async fn host_copy_async(x: &crate::tensor::Tensor) -> crate::error::Result<CpuBuffer> {
    #[cfg(feature = "gpu")]
    {
        let pending = {
            let g = x.storage().read();
            match &*g {
                Buffer::Gpu(b) => Some((gpu::elementwise::start_download(b, x.layout())?, b.dtype)),
                Buffer::Cpu(_) => None,
            }
        };
        if let Some((readback, dtype)) = pending {
            let bytes = gpu::readback::read(readback).await?;
            return Ok(gpu::elementwise::decode(&bytes, dtype));
        }
    }
    host_copy(x)
}
