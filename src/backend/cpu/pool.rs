//! A pool of freed host buffers, keyed by dtype and exact length.
//!
//! Note (why a pool): a training step allocates the same large buffers every
//! step. Freed to the system allocator, blocks above its mmap/trim thresholds
//! go back to the OS and come back zero-faulted page by page, which cost more
//! than the arithmetic in the MLP benchmark. Storages return their buffer here
//! on drop and kernels take buffers from here, so a steady training loop
//! touches the OS allocator only during its first step. Small buffers skip
//! the pool: malloc serves those well, and per-op overhead matters more there.

use super::buffer::{CpuBuffer, Elem};
use crate::dtype::DType;
use std::collections::HashMap;
use std::sync::Mutex;

/// Buffers smaller than this many bytes are not pooled.
const MIN_POOLED_BYTES: usize = 16 * 1024;
/// Freed buffers beyond this many pooled bytes are released to the allocator.
const MAX_POOLED_BYTES: usize = 256 << 20;

#[derive(Default)]
struct Pool {
    free: HashMap<(DType, usize), Vec<CpuBuffer>>,
    bytes: usize,
    stats: PoolStats,
}

/// Counters for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pool-sized buffers that had to be allocated.
    pub allocated: u64,
    /// Pool-sized buffers served from the pool.
    pub reused: u64,
    /// Bytes currently held by the pool.
    pub pooled_bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Pool::default))
}

fn pooled(dtype: DType, n: usize) -> bool {
    n * dtype.size_in_bytes() >= MIN_POOLED_BYTES
}

/// A buffer of length `n` whose contents are unspecified (but initialised):
/// for kernels that overwrite every element.
pub fn take<T: Elem>(n: usize) -> Vec<T> {
    if pooled(T::DTYPE, n) {
        let hit = with_pool(|p| {
            let b = p.free.get_mut(&(T::DTYPE, n)).and_then(|v| v.pop());
            match &b {
                Some(_) => {
                    p.bytes -= n * T::DTYPE.size_in_bytes();
                    p.stats.reused += 1;
                }
                None => p.stats.allocated += 1,
            }
            b
        });
        if let Some(b) = hit {
            if let Some(v) = T::unwrap(b) {
                return v;
            }
        }
    }
    vec![T::default(); n]
}

/// A buffer of length `n` filled with `value`.
pub fn take_filled<T: Elem>(n: usize, value: T) -> Vec<T> {
    let mut v = take::<T>(n);
    v.fill(value);
    v
}

/// Returns a freed buffer to the pool (or to the allocator when it is small or the pool is full).
pub fn give(buf: CpuBuffer) {
    let (dtype, n) = (buf.dtype(), buf.len());
    if !pooled(dtype, n) {
        return;
    }
    let bytes = n * dtype.size_in_bytes();
    with_pool(|p| {
        if p.bytes + bytes <= MAX_POOLED_BYTES {
            p.bytes += bytes;
            p.free.entry((dtype, n)).or_default().push(buf);
        }
    });
}

/// Current counters.
pub fn stats() -> PoolStats {
    with_pool(|p| PoolStats { pooled_bytes: p.bytes, ..p.stats })
}

/// Releases every pooled buffer to the allocator (PyTorch's `empty_cache`).
pub fn empty_cache() {
    with_pool(|p| {
        p.free.clear();
        p.bytes = 0;
    });
}
