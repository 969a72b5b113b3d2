//! A context's buffer pool, and what happens when the GPU cannot back an
//! allocation.
//!
//! Every new buffer is created inside out-of-memory and validation error
//! scopes. Natively their outcome is known at once: a failure is an `Error`
//! for the op that asked (after one retry with the pool emptied, as PyTorch's
//! caching allocator does), the failed buffer is dropped unused, and the
//! device keeps working.
//!
//! In the browser a scope resolves only later, so the op gets its buffer and
//! records its work; the batch that uses a failed buffer is then invalid as a
//! whole, and its errors land in the batch's own scopes
//! (`context::open_batch_scopes`) instead of the device's uncaptured-error
//! handler, which would fail every later op. (Work recorded before a new
//! buffer is created is submitted first, so only work recorded after it can
//! share its batch.) The next readback awaits those scopes and fails with the
//! allocation's error, naming the op and the size.
//! From then on the failed buffer is kept out of the pool (and out of the
//! bind-group cache), and the buffers the discarded batch wrote are *stale*,
//! as is anything computed from them: reading one back is an error saying so
//! (recompute it), never old values. Work recorded after that runs normally.

use super::context;
use super::runtime::GpuContext;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Buffers that must not be read as if they held data (browser only; see
/// the module docs), each with the reason reading it fails.
#[derive(Default)]
pub(crate) struct BadBuffers {
    /// The allocation failed: never pooled, never reused.
    invalid: HashMap<wgpu::Buffer, String>,
    /// The work that wrote it was discarded, or it was computed from such a buffer.
    stale: HashMap<wgpu::Buffer, String>,
}

/// Pool size class: the next power of two, at least 256 bytes; or, past the
/// largest power of two the device allows, the size itself (in 256-byte
/// steps), so an allocation that fits the limit never fails for rounding.
fn size_class(bytes: u64, max: u64) -> Option<u64> {
    let class = bytes.max(256).next_power_of_two();
    if class <= max {
        return Some(class);
    }
    let exact = bytes.div_ceil(256) * 256;
    (exact <= max).then_some(exact)
}

const STORAGE_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

impl GpuContext {
    /// The most bytes one storage buffer may hold on this device.
    pub(crate) fn max_buffer_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// A storage buffer of at least `bytes`, from the pool when one is free.
    pub(crate) fn alloc(&self, op: &'static str, bytes: u64) -> Result<(wgpu::Buffer, u64)> {
        self.check(op)?;
        let max = self.max_buffer_bytes();
        let Some(class) = size_class(bytes, max) else {
            return Err(Error::memory(
                op,
                format!("a GPU buffer of {bytes} bytes exceeds the adapter's limit of {max} bytes per storage buffer"),
            ));
        };
        if let Some(b) = lock(&self.pool).get_mut(&class).and_then(|v| v.pop_first()) {
            self.pooled_bytes.fetch_sub(class, Ordering::Relaxed);
            self.counters.buffers_reused.fetch_add(1, Ordering::Relaxed);
            self.counters.bytes_live.fetch_add(class, Ordering::Relaxed);
            return Ok((b, class));
        }
        let create = || self.create_storage(op, class);
        let b = match create() {
            // Cached free buffers may be what the device lacks: free them and retry once.
            Err(_) if self.pooled_bytes.load(Ordering::Relaxed) > 0 => {
                self.empty_cache();
                // wgpu frees a dropped buffer once no submitted work uses it.
                self.flush();
                context::wait_idle(&self.device)?;
                create()?
            }
            r => r?,
        };
        self.counters.buffers_created.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_allocated.fetch_add(class, Ordering::Relaxed);
        self.counters.bytes_live.fetch_add(class, Ordering::Relaxed);
        Ok((b, class))
    }

    /// A new storage buffer of `size` bytes (see the module docs for failures).
    fn create_storage(&self, op: &'static str, size: u64) -> Result<wgpu::Buffer> {
        if context::DEFERRED_ERRORS {
            // Work recorded so far goes out in a batch of its own, so a failure
            // of this allocation discards only work recorded after it. A
            // steady training loop creates no buffers, so this costs no submits.
            self.flush();
        }
        self.create_checked(op, &format!("{size} bytes for its result"), || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: STORAGE_USAGE,
                mapped_at_creation: false,
            })
        })
    }

    /// Runs `create` inside error scopes. Natively a failure is this op's
    /// error now; in the browser the buffer comes back, and if its creation
    /// failed, the next readback reports `op`'s error and the buffer is kept
    /// out of the pool from then on.
    pub(crate) fn create_checked(
        &self,
        op: &'static str,
        what: &str,
        create: impl FnOnce() -> wgpu::Buffer,
    ) -> Result<wgpu::Buffer> {
        let scopes = context::open_scopes(&self.device);
        let b = create();
        let reason = |e: &wgpu::Error| {
            format!(
                "the GPU could not allocate {what} ({e}); nothing else was lost and the device keeps working: \
                 free tensors or call empty_cache(), then retry"
            )
        };
        let (me, failed, what_owned) = (self.me.clone(), b.clone(), what.to_string());
        let on_error = move |e: wgpu::Error| {
            let msg = format!(
                "the GPU could not allocate {what_owned} ({e}); the work queued with it since the previous \
                 readback was discarded, and reading the tensors it wrote is an error: recompute them"
            );
            if let Some(ctx) = me.upgrade() {
                ctx.mark_invalid(failed, &format!("{op}: {msg}"));
            }
            Error::memory(op, msg)
        };
        match context::close_scopes(scopes, on_error) {
            Some(e) => Err(Error::memory(op, reason(&e))),
            None => Ok(b),
        }
    }

    /// Takes back a buffer whose last tensor dropped. Work already recorded
    /// that reads it runs before any later write to it (one queue, in order).
    pub(crate) fn release(&self, b: wgpu::Buffer, class: u64) {
        self.counters.bytes_live.fetch_sub(class, Ordering::Relaxed);
        if self.any_bad.load(Ordering::Acquire) {
            let mut bad = lock(&self.bad);
            bad.stale.remove(&b);
            if bad.invalid.remove(&b).is_some() {
                return; // a failed allocation: dropped, never reused
            }
        }
        self.pooled_bytes.fetch_add(class, Ordering::Relaxed);
        lock(&self.pool).entry(class).or_default().insert(b);
    }

    /// Frees every pooled buffer.
    pub fn empty_cache(&self) {
        for k in lock(&self.layouts).values_mut() {
            k.bind_groups.clear();
        }
        lock(&self.pool).clear();
        self.pooled_bytes.store(0, Ordering::Relaxed);
    }

    /// Records that `b`'s allocation failed: out of the pool and the
    /// bind-group cache, and reading it fails with `reason`.
    pub(crate) fn mark_invalid(&self, b: wgpu::Buffer, reason: &str) {
        let mut pool = lock(&self.pool);
        for (&class, free) in pool.iter_mut() {
            if free.remove(&b) {
                self.pooled_bytes.fetch_sub(class, Ordering::Relaxed);
            }
        }
        drop(pool);
        for k in lock(&self.layouts).values_mut() {
            k.bind_groups.retain(|buffers, _| !buffers.contains(&b));
        }
        lock(&self.bad).invalid.insert(b, reason.to_string());
        self.any_bad.store(true, Ordering::Release);
    }

    /// Records that the work writing `buffers` was discarded.
    pub(crate) fn mark_stale(&self, buffers: Vec<wgpu::Buffer>, reason: &str) {
        let mut bad = lock(&self.bad);
        for b in buffers {
            bad.stale.entry(b).or_insert_with(|| reason.to_string());
        }
        self.any_bad.store(true, Ordering::Release);
    }

    /// A dispatch writes `out` from `inputs`: computed from a bad buffer, it is stale too.
    pub(crate) fn note_written(&self, out: &wgpu::Buffer, inputs: &[&wgpu::Buffer]) {
        if !self.any_bad.load(Ordering::Acquire) {
            return;
        }
        let mut bad = lock(&self.bad);
        let BadBuffers { invalid, stale } = &mut *bad;
        let cause = inputs.iter().find_map(|b| invalid.get(*b).or_else(|| stale.get(*b))).cloned();
        if let Some(cause) = cause {
            stale.entry(out.clone()).or_insert(cause);
        }
    }

    /// An error if `b` holds no valid data (see the module docs).
    pub(crate) fn refuse_bad(&self, b: &wgpu::Buffer) -> Result<()> {
        if !self.any_bad.load(Ordering::Acquire) {
            return Ok(());
        }
        let bad = lock(&self.bad);
        if let Some(reason) = bad.invalid.get(b) {
            return Err(Error::memory("to_vec", format!("this tensor has no GPU memory: {reason}")));
        }
        if let Some(reason) = bad.stale.get(b) {
            return Err(Error::value("to_vec", format!("this tensor's values were lost: {reason}")));
        }
        Ok(())
    }
}
