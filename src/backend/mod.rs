//! Backends know how to run ops, not which ops exist (DESIGN principle 4).
//!
//! A storage holds one device buffer plus the version counter that in-place
//! ops bump. Each `backend::<family>` module offers device-independent entry
//! points (unary map, binary map, reduce, matmul, copy, ...) that match on the
//! device and run the cpu kernel (today) or, in the next issue, a WGSL kernel.

pub mod cpu;

use crate::device::Device;
use crate::dtype::DType;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use cpu::CpuBuffer;

/// A device buffer.
#[derive(Debug)]
pub enum Buffer {
    Cpu(CpuBuffer),
}

impl Buffer {
    pub fn device(&self) -> Device {
        match self {
            Buffer::Cpu(_) => Device::Cpu,
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Cpu(b) => b.dtype(),
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
        let Buffer::Cpu(b) = std::mem::replace(buf, Buffer::Cpu(CpuBuffer::F32(Vec::new())));
        cpu::pool::give(b);
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
