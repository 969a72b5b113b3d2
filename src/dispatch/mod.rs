//! The one place that turns tensors into what the backends run on: each
//! family module takes `&Tensor`s, checks there is room for the result, reads
//! their storages and calls the cpu or GPU kernel, and wraps the result in a
//! new `Tensor`. Backends (`crate::backend`) sit below and never see tensors.

pub mod conv;
pub mod create;
pub mod custom;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod movement;
pub mod optim;
pub(crate) mod record;
pub mod reduce;
pub mod scan;

use crate::backend::{self, CpuBuffer, View};
#[cfg(feature = "gpu")]
use crate::backend::{cpu, MIRROR_MAX};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
#[cfg(feature = "gpu")]
use crate::shape::Layout;
use crate::tensor::Tensor;

/// Before a kernel allocates a result of `shape` and `dtype` for an op on
/// `x`'s device: an error naming `op` unless the device has room for it
/// (`backend::room`).
pub(crate) fn room_for(op: &'static str, x: &Tensor, shape: &[usize], dtype: DType) -> Result<()> {
    backend::room(op, x.storage().device(), crate::shape::numel(shape), dtype)
}

/// A copy of `x` on `device` (contiguous), converting the storage format as needed.
pub fn transfer(x: &Tensor, device: &Device) -> Result<Tensor> {
    if record::active() {
        return Err(record::refuse("to", "a transfer between devices"));
    }
    backend::room("to", device, x.numel(), x.dtype())?;
    let g = x.storage().read();
    let buf = match g.as_cpu() {
        Some(host) => backend::upload(host, x.layout(), device)?,
        // Off a device: through the host (a readback).
        None => backend::upload_owned(backend::download(View::new(&g, x.layout()))?, device)?,
    };
    let out = Tensor::from_buffer(buf, x.shape());
    #[cfg(feature = "gpu")]
    if let (Some(CpuBuffer::I32(v)), true) = (g.as_cpu(), device.is_gpu()) {
        // The values are at hand: labels and indices moved to the GPU never
        // need reading back for their range checks.
        if x.numel() <= MIRROR_MAX {
            out.storage().set_mirror(cpu::gather_strided(v, x.layout()));
        }
    }
    Ok(out)
}

/// The elements of `x` in row-major order as a host buffer (reads back from a GPU).
pub fn host_copy(x: &Tensor) -> Result<CpuBuffer> {
    if record::active() {
        return Err(record::refuse("host_copy", "reading a tensor on the host (to_vec, item, data)"));
    }
    let g = x.storage().read();
    #[cfg(feature = "gpu")]
    if g.as_cpu().is_none() && g.dtype() == DType::I32 && g.len() <= MIRROR_MAX {
        // Note (index mirrors): index checks (cross_entropy labels, gather,
        // scatter_add) read i32 indices on the host. Reading them back from
        // the GPU every step would stall the queue, so small i32 storages
        // keep a host copy, valid while the storage version is unchanged.
        let st = x.storage();
        let version = st.version();
        let mut m = st.mirror.lock().unwrap_or_else(|e| e.into_inner());
        if m.as_ref().is_none_or(|(v, _)| *v != version) {
            let full = Layout::contiguous(&[g.len()]);
            let CpuBuffer::I32(all) = backend::download(View::new(&g, &full))? else {
                unreachable!("an i32 buffer reads back as i32")
            };
            *m = Some((version, all));
        }
        let (_, all) = m.as_ref().expect("filled above");
        return Ok(CpuBuffer::I32(cpu::gather_strided(all, x.layout())));
    }
    backend::download(View::new(&g, x.layout()))
}

/// `host_copy` without blocking: the GPU readback is awaited (in the browser
/// the map callback wakes it; natively the future waits for the device).
pub async fn host_copy_async(x: &Tensor) -> Result<CpuBuffer> {
    if record::active() {
        return Err(record::refuse("host_copy", "reading a tensor on the host (to_vec, item, data)"));
    }
    let pending = {
        let g = x.storage().read();
        backend::start_download(View::new(&g, x.layout()))?
    };
    pending.finish().await
}
