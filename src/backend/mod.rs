//! Backends know how to run ops, not which ops exist (DESIGN principle 4).
//!
//! A storage holds one device buffer plus the version counter that in-place
//! ops bump. Each `backend::<family>` module offers device-independent entry
//! points (unary map, binary map, reduce, matmul, copy, ...) that match on the
//! device and run the cpu kernel (today) or, in the next issue, a WGSL kernel.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;

use crate::device::Device;
use crate::dtype::DType;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use cpu::CpuBuffer;

/// A device buffer.
#[derive(Debug)]
pub enum Buffer {
    Cpu(CpuBuffer),
    #[cfg(feature = "gpu")]
    Gpu(gpu::GpuBuffer),
}

impl Buffer {
    pub fn device(&self) -> Device {
        match self {
            Buffer::Cpu(_) => Device::Cpu,
            #[cfg(feature = "gpu")]
            Buffer::Gpu(b) => Device::Gpu(b.device()),
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Cpu(b) => b.dtype(),
            #[cfg(feature = "gpu")]
            Buffer::Gpu(b) => b.dtype,
        }
    }
}

/// The shared memory behind a tensor and all of its views.
#[derive(Debug)]
pub struct StorageInner {
    data: RwLock<Buffer>,
    /// Bumped by every in-place write; saved tensors compare against it.
    version: AtomicU64,
    device: Device,
}

/// Reference-counted handle to a storage.
pub type Storage = Arc<StorageInner>;

pub fn new_storage(buf: Buffer) -> Storage {
    let device = buf.device();
    Arc::new(StorageInner { data: RwLock::new(buf), version: AtomicU64::new(0), device })
}

impl Drop for StorageInner {
    fn drop(&mut self) {
        let buf = self.data.get_mut().unwrap_or_else(|e| e.into_inner());
        // A GpuBuffer returns itself to its device's pool when dropped.
        #[allow(irrefutable_let_patterns)] // without the `gpu` feature
        if let Buffer::Cpu(b) = std::mem::replace(buf, Buffer::Cpu(CpuBuffer::F32(Vec::new()))) {
            cpu::pool::give(b);
        }
    }
}

impl StorageInner {
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }
    pub fn write(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.data.write().unwrap_or_else(|e| e.into_inner())
    }
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }
}

pub mod conv;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod movement;
pub mod reduce;

/// A copy of `x` on `device` (contiguous), converting the storage format as needed.
pub fn transfer(x: &crate::tensor::Tensor, device: &Device) -> crate::error::Result<crate::tensor::Tensor> {
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
    Ok(crate::tensor::Tensor::from_buffer(buf, x.shape()))
}

/// The elements of `x` in row-major order as a host buffer (reads back from a GPU).
pub fn host_copy(x: &crate::tensor::Tensor) -> crate::error::Result<CpuBuffer> {
    let g = x.storage().read();
    match &*g {
        Buffer::Cpu(b) => {
            Ok(crate::with_cpu_buffer!(b, v, T => <T as cpu::Elem>::wrap(cpu::gather_strided(v, x.layout()))))
        }
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => gpu::elementwise::download(b, x.layout()),
    }
}
