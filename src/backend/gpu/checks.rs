//! Range checks of index operands on the device (gather, index_select,
//! scatter_add, index_add, embedding, the labels of cross_entropy/nll_loss).
//!
//! An index tensor made on the GPU (`zeros`/`full` of int32, arithmetic on
//! indices; not uploaded from the host, whose values the host keeps, nor written
//! by argmax, whose range is known) could only be checked on the host after a
//! readback, and the browser cannot block for one. Instead the op records the
//! `check` kernel of `shaders/index.wgsl` ahead of its own kernel: it counts the
//! values outside `0..dim` into a slot of the context's flag buffer, with the
//! smallest negative and the largest too-large value. Each slot belongs to one
//! pending check, described on the host (the op the caller called, the axis,
//! the shapes). The next readback copies the used slots after its data in the
//! same staging buffer and submit, and clears them; when its bytes arrive, a
//! flagged slot turns that readback into an `Error` naming the op, and the
//! context keeps working. The op's own kernels never touch memory out of
//! bounds: gather writes 0 where an index is out of range and the scatters
//! add nothing for it, so the failed op's result is deterministic.
//!
//! A check of a whole storage is remembered on it (`StorageInner::device_check`):
//! later ops on the same values skip theirs while it is pending (cross_entropy's
//! check covers its inner gather and the gather's backward), and once it reads
//! back clean its bound becomes the storage's `index_bound`, so the values are
//! never checked again while unchanged.
//!
//! A readback future dropped before it completes (a Rust caller giving up on
//! `to_vec_async`) takes the results of the checks it collected with it: they
//! count as not passed, so their values are checked again when next used, but
//! a failure among them goes unreported. JS promises always run to the end.

use super::kernels::{elementwise_params, workgroups};
use super::{GpuBuffer, GpuContext};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::IndexCheck;
use crate::shape::Layout;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Weak;

/// Slots in a context's flag buffer: checks pending at once (identical
/// checks share a slot, so a loop that never reads back stays within it).
pub const CHECK_SLOTS: usize = 4096;
/// u32 words per slot: [negative count, smallest negative, too-large count, largest].
pub const SLOT_WORDS: usize = 4;
pub const SLOT_BYTES: u64 = (SLOT_WORDS * 4) as u64;

/// A storage a check covered whole: (storage, its version, the bound).
type Cover = (Weak<crate::backend::StorageInner>, u64, usize);

struct Pending {
    desc: IndexCheck,
    /// The latest check sequence number recorded into this slot.
    seq: u64,
    covers: Vec<Cover>,
}

/// Storages remembered per slot for promotion to a trusted bound (more are
/// simply checked again later).
const MAX_COVERS: usize = 64;

/// The checks recorded since the last readback took them; slot `i` of the
/// flag buffer belongs to `pending[i]`. Lives in the context's batch, under
/// its lock, so a slot is assigned and its dispatch recorded atomically with
/// respect to a readback taking the slots.
#[derive(Default)]
pub(crate) struct IndexChecks {
    pending: Vec<Pending>,
    slot_of: HashMap<IndexCheck, usize>,
    next_seq: u64,
}

/// The checks one readback took, with the highest sequence number among them.
pub(crate) struct TakenChecks {
    pending: Vec<Pending>,
    pub(crate) through: u64,
}

impl TakenChecks {
    /// Reads the copied slots: promotes the storages of clean checks to a
    /// trusted bound and returns the error of the first flagged check (naming
    /// how many more failed).
    pub(crate) fn resolve(self, flags: &[u8]) -> Result<()> {
        let words: Vec<i32> = bytemuck::pod_collect_to_vec(flags);
        let mut failed = Vec::new();
        for (i, p) in self.pending.iter().enumerate() {
            let w = &words[i * SLOT_WORDS..(i + 1) * SLOT_WORDS];
            let (negative, large) = (w[0] as u32 as u64, w[2] as u32 as u64);
            if negative + large == 0 {
                for (storage, version, bound) in &p.covers {
                    if let Some(s) = storage.upgrade().filter(|s| s.version() == *version) {
                        s.set_index_bound(*bound);
                    }
                }
                continue;
            }
            let value = if large > 0 { w[3] as i64 } else { w[1] as i64 };
            failed.push(p.desc.device_error(value, negative + large));
        }
        let mut failed = failed.into_iter();
        let Some(first) = failed.next() else { return Ok(()) };
        let more: Vec<String> = failed.map(|e| e.to_string()).collect();
        if more.is_empty() {
            return Err(first);
        }
        let Error::Value { op, msg } = first else { return Err(first) };
        Err(Error::value(
            op,
            format!(
                "{msg}. {} more range check(s) failed since the previous readback: {}",
                more.len(),
                more.join("; ")
            ),
        ))
    }
}

impl IndexChecks {
    /// The slot for `desc` (shared with an identical pending check), noting
    /// `cover`; an error naming the op when every slot is taken.
    fn assign(&mut self, desc: IndexCheck, cover: Option<Cover>) -> Result<(usize, u64)> {
        self.next_seq += 1;
        let seq = self.next_seq;
        let slot = match self.slot_of.get(&desc) {
            Some(&slot) => slot,
            None if self.pending.len() == CHECK_SLOTS => {
                return Err(Error::value(
                    desc.op,
                    format!(
                        "{CHECK_SLOTS} different index range checks are pending on the GPU: read a result back \
                         (to_vec_async, data()) or synchronize() to collect them before recording more"
                    ),
                ))
            }
            None => {
                self.pending.push(Pending { desc: desc.clone(), seq, covers: Vec::new() });
                self.slot_of.insert(desc, self.pending.len() - 1);
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[slot];
        p.seq = seq;
        if let Some(c) = cover.filter(|_| p.covers.len() < MAX_COVERS) {
            p.covers.push(c);
        }
        Ok((slot, seq))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Bytes of the flag slots in use.
    pub(crate) fn bytes(&self) -> u64 {
        self.pending.len() as u64 * SLOT_BYTES
    }

    /// Hands every pending check to a readback (which copies and clears their slots).
    pub(crate) fn take(&mut self) -> Option<TakenChecks> {
        if self.pending.is_empty() {
            return None;
        }
        self.slot_of.clear();
        let pending = std::mem::take(&mut self.pending);
        let through = pending.iter().map(|p| p.seq).max().unwrap_or(0);
        Some(TakenChecks { pending, through })
    }
}

/// Records the range check of the index view `il` of `index` against
/// `0..desc.dim`, unless the values are already known to be in range or a
/// pending check of the same values covers it. `storage` is the index
/// tensor's storage (remembered when the view covers all of it).
pub(crate) fn check_indices(desc: IndexCheck, storage: &Storage, index: &GpuBuffer, il: &Layout) -> Result<()> {
    let n = il.numel();
    if n == 0 || storage.index_bound().is_some_and(|b| b <= desc.dim) {
        return Ok(());
    }
    let ctx = index.ctx().clone();
    let whole = il.is_contiguous() && il.offset == 0 && n == index.len;
    if whole {
        let pending = storage.device_check().is_some_and(|(b, seq)| b <= desc.dim && seq > ctx.checks_resolved());
        if pending {
            return Ok(());
        }
    }
    let key = "index:check:i32";
    let pipeline = ctx.pipeline(key, || super::index::kernel_source(super::index::INDEX, "check", DType::I32))?;
    let mut params = elementwise_params(desc.op, &il.shape, &[il], &[desc.dim as u32, 0])?;
    let slot_at = params.len() - 1;
    let dim = desc.dim;
    let cover = whole.then(|| (std::sync::Arc::downgrade(storage), storage.version(), dim));
    let seq = ctx.record_check(&pipeline, &mut params, slot_at, index.raw(), workgroups(n), |checks| {
        checks.assign(desc, cover)
    })?;
    if whole {
        storage.set_device_check(dim, seq);
    }
    Ok(())
}

impl GpuContext {
    /// Records the range check of an index buffer (`pipeline` binds it and
    /// the flag buffer): `assign` picks its flag slot, whose number goes into
    /// `params[slot_at]`, under the same lock as the dispatch, so a readback
    /// takes a slot together with the work that sets it. Returns the check's
    /// sequence number.
    pub(crate) fn record_check(
        &self,
        pipeline: &wgpu::ComputePipeline,
        params: &mut [u32],
        slot_at: usize,
        index: &wgpu::Buffer,
        workgroups: u32,
        assign: impl FnOnce(&mut IndexChecks) -> Result<(usize, u64)>,
    ) -> Result<u64> {
        super::context::open_batch_scopes(self.id, &self.device);
        let bind_group = self.bind_group(pipeline, &[index, &self.check_flags]);
        let (x, y) = super::runtime::grid(workgroups, self.limits.max_compute_workgroups_per_dimension);
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        let (slot, seq) = assign(&mut batch.checks)?;
        params[slot_at] = slot as u32;
        self.record_locked(&mut batch, pipeline, &bind_group, params, [x, y, 1]);
        Ok(seq)
    }

    /// The highest check sequence number whose result a readback has read.
    pub(crate) fn checks_resolved(&self) -> u64 {
        self.checks_resolved.load(Ordering::Acquire)
    }

    pub(crate) fn note_checks_resolved(&self, through: u64) {
        self.checks_resolved.fetch_max(through, Ordering::AcqRel);
    }

    pub(crate) fn check_flags(&self) -> &wgpu::Buffer {
        &self.check_flags
    }

    /// Whether range checks wait for a readback.
    pub(crate) fn checks_pending(&self) -> bool {
        !self.batch.lock().unwrap_or_else(|e| e.into_inner()).checks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{CheckWhat, Effect};

    fn desc(op: &'static str, dim: usize) -> IndexCheck {
        let what =
            CheckWhat::Index { axis: 0, data_shape: vec![dim, 2], index_shape: vec![3], effect: Effect::ReadsZero };
        IndexCheck { op, dim, what }
    }

    /// Flag words for slots: (negative count, smallest, too-large count, largest).
    fn flags(slots: &[[i32; 4]]) -> Vec<u8> {
        slots.iter().flatten().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn identical_checks_share_a_slot_and_running_out_of_slots_is_an_error_naming_the_op() {
        let mut checks = IndexChecks::default();
        let (a, _) = checks.assign(desc("gather", 5), None).unwrap();
        let (b, _) = checks.assign(desc("gather", 5), None).unwrap();
        assert_eq!(a, b);
        for dim in 6..CHECK_SLOTS + 5 {
            checks.assign(desc("gather", dim), None).unwrap();
        }
        // Every slot is taken: an identical check still fits, a new one does not.
        assert!(checks.assign(desc("gather", 5), None).is_ok());
        let e = checks.assign(desc("index_select", 1), None).unwrap_err().to_string();
        assert!(e.starts_with("index_select: 4096 different index range checks are pending"), "{e}");
        // A readback takes them all; the slots are free again.
        let taken = checks.take().unwrap();
        assert_eq!(taken.pending.len(), CHECK_SLOTS);
        assert!(checks.assign(desc("index_select", 1), None).is_ok());
    }

    #[test]
    fn a_flagged_slot_is_its_ops_error_with_the_value_and_the_others_are_counted() {
        let mut checks = IndexChecks::default();
        checks.assign(desc("gather", 5), None).unwrap();
        checks.assign(desc("scatter_add", 4), None).unwrap();
        let label = IndexCheck { op: "cross_entropy", dim: 3, what: CheckWhat::Label { scores_shape: vec![2, 3] } };
        checks.assign(label, None).unwrap();
        let taken = checks.take().unwrap();
        // gather clean; scatter_add: 2 negatives (smallest -7) and 1 too large (9); the labels: one -1.
        let e = taken.resolve(&flags(&[[0; 4], [2, -7, 1, 9], [1, -1, 0, 0]])).unwrap_err().to_string();
        assert!(e.starts_with("scatter_add: index 9 is out of range for axis 0 of size 4"), "{e}");
        assert!(e.contains("3 index value(s) out of range"), "{e}");
        assert!(e.contains("1 more range check(s) failed since the previous readback: cross_entropy: label -1"), "{e}");
        let mut checks = IndexChecks::default();
        checks.assign(desc("gather", 5), None).unwrap();
        assert!(checks.take().unwrap().resolve(&flags(&[[0; 4]])).is_ok());
    }
}
