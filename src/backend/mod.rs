//! Backends know how to run ops, not which ops exist (DESIGN principle 4).
//!
//! A storage holds one device buffer plus the version counter that in-place
//! ops bump. The cpu (`cpu/`) and GPU (`gpu/`) backends run kernels on
//! buffers and layouts; they import only the core types (shape, dtype,
//! device, error, `crate::kernel`), never tensors, autograd or ops
//! (tests/core/layering.rs). `crate::dispatch` turns tensors into their calls.

mod api;
pub mod census;
pub mod cpu;
pub mod events;
#[cfg(feature = "gpu")]
pub mod gpu;
mod half;
mod pick;
pub mod replay;
pub(crate) mod run;

pub use api::{View, ViewMut};
pub use run::{
    check, compile_errors, create, download, kernel_times, room, run, run_into, start_download, upload, upload_owned,
    CompileError, Pending,
};

use crate::device::Device;
use crate::dtype::DType;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use cpu::{CpuBuffer, Elem};
pub use replay::{ReplaySession, ReplayState, SlotInfo};

/// (name, full WGSL source) of every shader the GPU backend can build for
/// these rows (for validation with naga and the browser's compiler).
#[cfg(feature = "gpu")]
pub fn shader_sources(rows: &crate::kernel::RowSources) -> Vec<(String, String)> {
    gpu::catalog::all_kernel_sources(rows)
}

/// Whether a shader source (one of `shader_sources`) needs subgroup
/// operations, which only native devices grant: wgpu's WebGPU backend never
/// asks a browser for them (`gpu::matmul::uses_subgroups`).
#[cfg(feature = "gpu")]
pub fn shader_needs_subgroups(source: &str) -> bool {
    gpu::matmul::uses_subgroups(source)
}

/// The WGSL kernels the GPU backend generates for a fused program: one
/// output per invocation, and four with every input read as a vec4 (for
/// validation: tests/capture/fusion.rs checks those of traced programs).
#[cfg(feature = "gpu")]
pub fn fused_shader_sources(spec: &crate::kernel::FusedElementwise) -> Vec<String> {
    let lanes = vec![gpu::kernels::Lanes::Vector; spec.inputs.len()];
    vec![gpu::fused::source(spec, None), gpu::fused::source(spec, Some(&lanes))]
}

/// The WGSL kernels the GPU backend may run an epilogue as (for
/// validation: tests/capture/epilogue.rs checks those of traced programs).
#[cfg(feature = "gpu")]
pub fn epilogue_shader_sources(spec: &crate::kernel::Epilogue) -> Vec<String> {
    gpu::epilogue::sources(spec)
}

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
    /// The host buffer, when this one lives on the cpu.
    pub fn as_cpu(&self) -> Option<&CpuBuffer> {
        #[allow(irrefutable_let_patterns)] // without the `gpu` feature
        if let Buffer::Cpu(b) = self {
            Some(b)
        } else {
            None
        }
    }
    /// The device buffer, when this one lives on a GPU.
    #[cfg(feature = "gpu")]
    pub fn as_gpu(&self) -> Option<&gpu::GpuBuffer> {
        if let Buffer::Gpu(b) = self {
            Some(b)
        } else {
            None
        }
    }
    /// Elements in the buffer (all of it, whatever views look at).
    pub fn len(&self) -> usize {
        match self {
            Buffer::Cpu(b) => b.len(),
            #[cfg(feature = "gpu")]
            Buffer::Gpu(b) => b.len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes the buffer holds on its device (GPU elements are 4 bytes each, f16 2).
    pub fn bytes(&self) -> usize {
        match self {
            Buffer::Cpu(b) => b.len() * b.dtype().size_in_bytes(),
            #[cfg(feature = "gpu")]
            Buffer::Gpu(b) => b.len * gpu::element_bytes(b.dtype),
        }
    }
}

/// Host data (a `Vec` the caller made, a readback) is a buffer on the cpu.
impl From<CpuBuffer> for Buffer {
    fn from(host: CpuBuffer) -> Buffer {
        Buffer::Cpu(host)
    }
}

/// The shared memory behind a tensor and all of its views.
#[derive(Debug)]
pub struct StorageInner {
    data: RwLock<Buffer>,
    /// Bumped by every in-place write; saved tensors compare against it.
    version: AtomicU64,
    /// Bumped when a recorded in-place write gives a tensor over this storage
    /// a new history; views taken before then compare against it (`autograd::stale`).
    history_epoch: AtomicU64,
    device: Device,
    /// Host copy of a small i32 GPU storage (labels, indices) and the version it
    /// matches. See `host_copy`.
    #[cfg(feature = "gpu")]
    pub(crate) mirror: std::sync::Mutex<Option<(u64, Vec<i32>)>>,
    /// For i32 storages written by an op that guarantees it (argmax, the
    /// max-pool window argmax): every value lies in `0..bound`, valid while the
    /// storage version matches. Index ops then skip the host-side range check,
    /// so indices computed on a GPU need no readback (impossible to do
    /// synchronously in the browser).
    index_bound: std::sync::Mutex<Option<(u64, IndexBound)>>,
    /// Bytes of a cpu buffer, counted live in the cpu pool until this drops.
    cpu_bytes: usize,
    /// A range check of this whole storage recorded on its GPU and not yet
    /// read back: (version, bound, check sequence number). Later index ops
    /// on the same values skip their own check while it is pending (see
    /// `gpu::checks`); once it reads back clean, the bound becomes an
    /// `index_bound`.
    #[cfg(feature = "gpu")]
    device_check: std::sync::Mutex<Option<(u64, usize, u64)>>,
    /// Where it came from, while origins are tracked (`census`).
    pub(crate) origin: Option<Box<census::Origin>>,
}

/// What an op guarantees about the i32 values it wrote (see `index_bound`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexBound {
    /// Every value lies in `0..bound`.
    pub bound: usize,
    /// Written by max-pool's window argmax: the value at window position k
    /// (along the last axis) lies inside window k, so a scatter along that
    /// axis need only look at the windows covering each target.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))] // only the GPU scatter reads it
    pub windows: Option<crate::kernel::PoolWindows>,
    /// Guaranteed by the kernel that wrote the values (argmax, the window
    /// argmax), not learnt from a check that passed or carried over from
    /// another storage: a captured program that makes the values with that
    /// kernel can rely on it in every run (`dispatch::index`).
    pub by_kernel: bool,
}

/// i32 GPU storages up to this many elements keep a host mirror.
#[cfg(feature = "gpu")]
pub(crate) const MIRROR_MAX: usize = 1 << 20;

/// Releases the buffers skiff keeps for reuse: the cpu pool
/// (`cpu::pool::clear`) and, if it has been opened, the default GPU's pool
/// (`GpuDevice::empty_cache`; other devices opened with `GpuDevice::open`
/// have their own). PyTorch's `torch.cuda.empty_cache`; JS `emptyCache()`.
/// Live tensors are untouched. In wasm the freed memory goes back to the
/// allocator for later allocations, but the wasm memory itself never shrinks.
pub fn empty_cache() {
    cpu::pool::clear();
    #[cfg(feature = "gpu")]
    if let Some(g) = gpu::opened_default() {
        g.empty_cache();
    }
}

/// Reference-counted handle to a storage.
pub type Storage = Arc<StorageInner>;

pub fn new_storage(buf: Buffer) -> Storage {
    let device = buf.device();
    #[allow(irrefutable_let_patterns)] // without the `gpu` feature
    let cpu_bytes = if let Buffer::Cpu(b) = &buf { cpu::pool::storage_created(b) } else { 0 };
    let storage = Arc::new(StorageInner {
        data: RwLock::new(buf),
        version: AtomicU64::new(0),
        history_epoch: AtomicU64::new(0),
        device,
        #[cfg(feature = "gpu")]
        mirror: std::sync::Mutex::new(None),
        index_bound: std::sync::Mutex::new(None),
        cpu_bytes,
        #[cfg(feature = "gpu")]
        device_check: std::sync::Mutex::new(None),
        origin: if events::watched() { census::origin() } else { None },
    });
    if storage.origin.is_some() {
        census::register(&storage);
    }
    storage
}

impl Drop for StorageInner {
    fn drop(&mut self) {
        let buf = self.data.get_mut().unwrap_or_else(|e| e.into_inner());
        // A GpuBuffer returns itself to its device's pool when dropped.
        #[allow(irrefutable_let_patterns)] // without the `gpu` feature
        if let Buffer::Cpu(b) = std::mem::replace(buf, Buffer::Cpu(CpuBuffer::F32(Vec::new()))) {
            cpu::pool::storage_dropped(b, self.cpu_bytes);
        }
    }
}

impl StorageInner {
    /// Where it came from, if it was made while origins were tracked.
    pub fn origin(&self) -> Option<&census::Origin> {
        self.origin.as_deref()
    }
    #[cfg(feature = "gpu")]
    pub(crate) fn set_mirror(&self, values: Vec<i32>) {
        *self.mirror.lock().unwrap_or_else(|e| e.into_inner()) = Some((self.version(), values));
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    /// The values of the view `layout` from the host mirror, when the mirror
    /// matches the current version (no readback). Only device storages have
    /// one.
    pub(crate) fn mirrored(&self, layout: &crate::shape::Layout) -> Option<Vec<i32>> {
        #[cfg(feature = "gpu")]
        {
            let m = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
            m.as_ref().filter(|(v, _)| *v == self.version()).map(|(_, all)| cpu::gather_strided(all, layout))
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = layout;
            None
        }
    }
    /// Records that a device check of every value against `0..bound`, number
    /// `seq`, is pending for the current version.
    #[cfg(feature = "gpu")]
    pub(crate) fn set_device_check(&self, bound: usize, seq: u64) {
        *self.device_check.lock().unwrap_or_else(|e| e.into_inner()) = Some((self.version(), bound, seq));
    }
    /// The pending device check of the current version: (bound, seq).
    #[cfg(feature = "gpu")]
    pub(crate) fn device_check(&self) -> Option<(usize, u64)> {
        let g = self.device_check.lock().unwrap_or_else(|e| e.into_inner());
        g.filter(|(v, _, _)| *v == self.version()).map(|(_, b, s)| (b, s))
    }
    /// What a contiguous copy of `layout` (a view of this storage) can keep
    /// of the facts known about its values: the index bound (a copy keeps
    /// every value in range), and the host mirror of a small i32 GPU storage,
    /// so the copy's index checks need no readback either (in the browser
    /// they could not have one).
    pub(crate) fn carry_facts_to(&self, layout: &crate::shape::Layout, copy: &StorageInner) {
        if let Some(facts) = self.index_facts() {
            copy.set_index_facts(IndexBound { windows: None, by_kernel: false, ..facts });
        }
        #[cfg(feature = "gpu")]
        {
            let m = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, all)) = m.as_ref().filter(|(v, _)| *v == self.version()) {
                copy.set_mirror(cpu::gather_strided(all, layout));
            }
        }
        #[cfg(not(feature = "gpu"))]
        let _ = layout;
    }
    /// Records that every value is in `0..bound` (see `index_bound`), as a
    /// check found (not `by_kernel`): a passed GPU check, or the web's own
    /// reversed positions.
    #[cfg(any(feature = "gpu", feature = "web"))]
    pub(crate) fn set_index_bound(&self, bound: usize) {
        self.set_index_facts(IndexBound { bound, windows: None, by_kernel: false });
    }
    /// Records what the op that wrote this storage guarantees about its values.
    pub(crate) fn set_index_facts(&self, facts: IndexBound) {
        *self.index_bound.lock().unwrap_or_else(|e| e.into_inner()) = Some((self.version(), facts));
    }
    /// The recorded guarantees, unless the storage was written since.
    pub(crate) fn index_facts(&self) -> Option<IndexBound> {
        let g = self.index_bound.lock().unwrap_or_else(|e| e.into_inner());
        g.filter(|(v, _)| *v == self.version()).map(|(_, b)| b)
    }
    /// The recorded bound of this storage's values, unless written since.
    #[cfg(feature = "gpu")]
    pub(crate) fn index_bound(&self) -> Option<usize> {
        self.index_facts().map(|f| f.bound)
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
    pub fn history_epoch(&self) -> u64 {
        self.history_epoch.load(Ordering::Acquire)
    }
    /// A new history epoch (after a recorded in-place write); returns it.
    pub(crate) fn bump_history_epoch(&self) -> u64 {
        self.history_epoch.fetch_add(1, Ordering::AcqRel) + 1
    }
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }
}
