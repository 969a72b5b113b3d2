//! A pool of freed host buffers, by dtype and size class, bounded by what is
//! live.
//!
//! Note (why a pool): a training step allocates the same large buffers every
//! step. Freed to the system allocator, blocks above its mmap/trim thresholds
//! go back to the OS and come back zero-faulted page by page, which cost more
//! than the arithmetic in the MLP benchmark. Storages return their buffer here
//! on drop and kernels take buffers from here, so a steady training loop
//! touches the OS allocator only during its first step. Small buffers skip
//! the pool: malloc serves those well, and per-op overhead matters more there.
//!
//! Note (why it is bounded by live bytes): buffers the pool never hands out
//! again (a fresh input tensor each step, made by the caller rather than by a
//! kernel, or sizes that change) would otherwise pile up to any fixed cap, and
//! wasm memory never shrinks. So:
//! - **size classes**: a request is rounded up to a class (four per power of
//!   two, at most 25% slack) and served by any buffer of that class, its
//!   length set to the request; a returned buffer files under the largest
//!   class its capacity covers, so near sizes share buffers;
//! - **a cap that follows live bytes**: the pool holds at most twice as many
//!   bytes as the cpu storages recently live at their peak (`FLOOR_BYTES` at
//!   least); past that it releases its least recently returned buffers first,
//!   which are the ones a steady loop does not reuse. Twice, because a step's
//!   buffers are needed at different moments: a CNN step (columns, products,
//!   pools and their gradients) uses more bytes in all than are ever live at
//!   once, and with the cap at the peak it reallocated 10-14 buffers a step;
//! - **an idle trim**: every `TRIM_PERIOD` pooled allocations, buffers that sat
//!   unused through a whole period are released, and the peak that sets the
//!   cap is forgotten after two periods.

use super::buffer::{CpuBuffer, Elem};
use crate::dtype::DType;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Buffers smaller than this many bytes are not pooled.
const MIN_POOLED_BYTES: usize = 16 * 1024;
/// The pool may hold this many bytes however little is live.
const FLOOR_BYTES: usize = 4 << 20;
/// Pooled allocations between two idle trims.
const TRIM_PERIOD: u64 = 1024;

/// A dtype and the size class (bytes) a buffer serves.
type Key = (DType, usize);

/// One free buffer.
struct Entry {
    /// Its place in the return order (`Pool::order`).
    seq: u64,
    /// Bytes it holds (its capacity).
    bytes: usize,
    buf: CpuBuffer,
}

#[derive(Default)]
struct Pool {
    /// Free buffers per key, least recently returned first.
    free: FxHashMap<Key, VecDeque<Entry>>,
    /// Every free buffer in return order: seq -> (its key, the allocation
    /// clock when it was returned). The first is the one to release first.
    order: BTreeMap<u64, (Key, u64)>,
    next_seq: u64,
    /// Bytes held by `free`.
    bytes: usize,
    /// The highest `LIVE` in the trim period before the current one (`PEAK`).
    peak_before: usize,
    /// Pooled allocations so far, and at the last trim.
    clock: u64,
    last_trim: u64,
    stats: PoolStats,
}

/// Counters for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pool-sized buffers that had to be allocated.
    pub allocated: u64,
    /// Pool-sized buffers served from the pool.
    pub reused: u64,
    /// Freed buffers the pool released to the allocator (over the cap, idle
    /// at a trim, or cleared), or did not keep.
    pub released: u64,
    /// Bytes currently held by the pool.
    pub pooled_bytes: usize,
    /// Bytes of the cpu storages alive now (each buffer's capacity).
    pub live_bytes: usize,
    /// What the pool may hold now: the recent peak of `live_bytes`, at least a floor.
    pub cap_bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);
/// Bytes of the live cpu storages (their buffers' capacities), and the
/// highest value in this trim period: atomics, so that small tensors, which
/// skip the pool, take no lock.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The highest `LIVE` since `take_high_water` last read it (for measuring
/// what a piece of code holds at once; the pool's own cap uses `PEAK`).
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Pool::default))
}

/// The spacing of the size classes around `bytes`: a quarter of the power of
/// two at or below it.
fn class_step(bytes: usize) -> usize {
    let top = usize::BITS - 1 - bytes.leading_zeros();
    1 << top.saturating_sub(2)
}

/// The smallest class holding `bytes`.
fn class_up(bytes: usize) -> usize {
    let step = class_step(bytes);
    bytes.div_ceil(step).saturating_mul(step)
}

/// The largest class a buffer of `bytes` can serve.
fn class_down(bytes: usize) -> usize {
    let step = class_step(bytes);
    bytes / step * step
}

impl Pool {
    fn cap(&self) -> usize {
        FLOOR_BYTES.max(2 * PEAK.load(Ordering::Relaxed).max(self.peak_before))
    }

    /// Every `TRIM_PERIOD` allocations: releases what was returned before the
    /// previous trim and not taken since, and forgets the older peak.
    fn maybe_trim(&mut self, out: &mut Vec<CpuBuffer>) {
        if self.clock - self.last_trim < TRIM_PERIOD {
            return;
        }
        while self.order.first_key_value().is_some_and(|(_, &(_, stamp))| stamp < self.last_trim) {
            self.release_oldest(out);
        }
        self.last_trim = self.clock;
        self.peak_before = PEAK.swap(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
        self.shrink_to_cap(out);
    }

    /// Files a returned buffer as the most recent.
    fn push(&mut self, key: Key, bytes: usize, buf: CpuBuffer) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, (key, self.clock));
        self.free.entry(key).or_default().push_back(Entry { seq, bytes, buf });
        self.bytes += bytes;
    }

    /// The most recently returned buffer of `key` (the warmest in cache).
    fn pop(&mut self, key: Key) -> Option<CpuBuffer> {
        let e = self.free.get_mut(&key)?.pop_back()?;
        self.order.remove(&e.seq);
        self.bytes -= e.bytes;
        Some(e.buf)
    }

    fn release_oldest(&mut self, out: &mut Vec<CpuBuffer>) {
        let Some((seq, (key, _))) = self.order.pop_first() else { return };
        // The oldest of all is the oldest of its key.
        let list = self.free.get_mut(&key).expect("pool: an ordered buffer has a list");
        let e = list.pop_front().expect("pool: an ordered buffer is in its list");
        debug_assert_eq!(e.seq, seq);
        if list.is_empty() {
            self.free.remove(&key);
        }
        self.bytes -= e.bytes;
        self.stats.released += 1;
        out.push(e.buf);
    }

    fn shrink_to_cap(&mut self, out: &mut Vec<CpuBuffer>) {
        while self.bytes > self.cap() {
            self.release_oldest(out);
        }
    }
}

fn pooled(bytes: usize) -> bool {
    bytes >= MIN_POOLED_BYTES
}

/// A buffer of length `n` whose contents are unspecified (but initialised):
/// for kernels that overwrite every element.
pub fn take<T: Elem>(n: usize) -> Vec<T> {
    let size = T::DTYPE.size_in_bytes();
    let bytes = n.saturating_mul(size);
    if !pooled(bytes) {
        return vec![T::default(); n];
    }
    let class = class_up(bytes);
    // Buffers released by a trim are dropped after the lock is let go.
    let mut released = Vec::new();
    let hit = with_pool(|p| {
        p.clock += 1;
        p.maybe_trim(&mut released);
        match p.pop((T::DTYPE, class)) {
            Some(buf) => {
                p.stats.reused += 1;
                Some(buf)
            }
            None => {
                p.stats.allocated += 1;
                None
            }
        }
    });
    drop(released);
    if let Some(mut v) = hit.and_then(T::unwrap) {
        // The class guarantees the capacity: no reallocation here.
        v.resize(n, T::default());
        return v;
    }
    let mut v = Vec::with_capacity(class / size);
    v.resize(n, T::default());
    v
}

/// A buffer of length `n` filled with `value`.
pub fn take_filled<T: Elem>(n: usize, value: T) -> Vec<T> {
    let mut v = take::<T>(n);
    v.fill(value);
    v
}

/// The bytes a buffer holds (its capacity, which is what it costs).
pub(crate) fn buffer_bytes(buf: &CpuBuffer) -> usize {
    crate::with_cpu_buffer!(buf, v, T => v.capacity() * std::mem::size_of::<T>())
}

/// Counts a new cpu storage's buffer as live (`new_storage`); returns the
/// bytes counted, for `storage_dropped`.
pub(crate) fn storage_created(buf: &CpuBuffer) -> usize {
    let bytes = buffer_bytes(buf);
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
    HIGH_WATER.fetch_max(live, Ordering::Relaxed);
    bytes
}

/// Returns a dropped storage's buffer to the pool, or to the allocator when
/// it is small or the pool is at its cap; `counted` is what
/// `storage_created` returned for the storage.
pub(crate) fn storage_dropped(buf: CpuBuffer, counted: usize) {
    LIVE.fetch_sub(counted, Ordering::Relaxed);
    file(buf);
}

/// Takes back a buffer a kernel used only while it ran (`buffer::Scratch`):
/// it was never a storage, so no live bytes change. Without this, a step's
/// temporaries (gathered copies of strided inputs, im2col columns) went back
/// to the allocator, and from there large ones went back to the OS, so every
/// step faulted their pages in again.
pub(crate) fn give_back<T: Elem>(v: Vec<T>) {
    file(T::wrap(v));
}

/// Files a free buffer under the largest class it serves, or lets it go to
/// the allocator when it is small or the pool is at its cap.
fn file(buf: CpuBuffer) {
    let bytes = buffer_bytes(&buf);
    if !pooled(bytes) {
        return;
    }
    let mut released = Vec::new();
    with_pool(|p| {
        if bytes > p.cap() {
            p.stats.released += 1;
            released.push(buf);
            return;
        }
        p.push((buf.dtype(), class_down(bytes)), bytes, buf);
        p.shrink_to_cap(&mut released);
    });
    drop(released);
}

/// The most bytes of cpu storages alive at once since the last call, which
/// starts a new measurement from what is alive now.
pub fn take_high_water() -> usize {
    HIGH_WATER.swap(LIVE.load(Ordering::Relaxed), Ordering::Relaxed)
}

/// Current counters.
pub fn stats() -> PoolStats {
    with_pool(|p| PoolStats {
        pooled_bytes: p.bytes,
        live_bytes: LIVE.load(Ordering::Relaxed),
        cap_bytes: p.cap(),
        ..p.stats
    })
}

/// Releases every pooled buffer to the allocator (PyTorch's `empty_cache`).
/// `crate::empty_cache` clears this pool and the default GPU's together.
pub fn clear() {
    let drained = with_pool(|p| {
        p.bytes = 0;
        p.stats.released += p.order.len() as u64;
        p.order.clear();
        std::mem::take(&mut p.free)
    });
    drop(drained);
}

#[cfg(test)]
mod tests {
    use super::{class_down, class_up};

    #[test]
    fn size_classes_are_quarter_steps_of_powers_of_two() {
        let k = 1 << 14;
        for (bytes, up, down) in [
            (k, k, k),
            (k + 1, k + k / 4, k),
            (k + k / 4, k + k / 4, k + k / 4),
            (2 * k - 1, 2 * k, k + 3 * k / 4),
            (200_704, 229_376, 196_608),
        ] {
            assert_eq!((class_up(bytes), class_down(bytes)), (up, down), "{bytes} bytes");
        }
        // A request's class never exceeds the request by more than a quarter,
        // and a buffer serves only requests it holds.
        for bytes in (k..40 * k).step_by(997) {
            assert!(class_up(bytes) >= bytes && class_up(bytes) - bytes <= bytes / 4, "{bytes}");
            assert!(class_down(bytes) <= bytes && class_down(class_up(bytes)) == class_up(bytes), "{bytes}");
        }
    }
}
