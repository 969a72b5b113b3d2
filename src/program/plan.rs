//! Memory planning: when each computed slot is live, and which slots can
//! share one buffer of an arena because they are never live at once.
//!
//! A computed slot is live from the instruction that makes it to the last
//! instruction that reads or writes it; a program output (or a slot an
//! output views) lives to the end of the run and is never shared, so two
//! calls' outputs never alias. Slots are packed greedily, in the order they
//! are made, into the smallest free arena buffer of their device and dtype
//! that is large enough (else a new one): the arena's bytes, plus the
//! outputs', are the run's peak. A replay releases each slot right after its
//! last use (`last_use`), so its buffer goes back to the backend's pool for
//! the next allocation of its size: the arena is the pool's steady state.

use super::{Instr, Program, Source, ValueId};
use crate::device::Device;
use crate::dtype::DType;

/// The plan of one program (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    /// For each slot, the arena buffer it lives in (None: not computed, or an output).
    pub buffer_of: Vec<Option<usize>>,
    /// Each arena buffer's size in bytes.
    pub buffers: Vec<usize>,
    /// For each instruction, the computed slots whose last use it is.
    pub last_use: Vec<Vec<ValueId>>,
    /// Bytes of the arena (all its buffers).
    pub arena_bytes: usize,
    /// Bytes of the outputs a run makes.
    pub output_bytes: usize,
    /// What a run holds at once beyond its inputs and captured storages:
    /// the arena plus the outputs.
    pub peak_bytes: usize,
    /// What a run held before planning: every computed slot to the end.
    pub unplanned_bytes: usize,
}

impl Program {
    /// Plans the computed slots' memory (see the module docs).
    pub fn plan_memory(&self) -> MemoryPlan {
        let n = self.instrs.len();
        let bytes = |v: ValueId| self.values[v].len * self.values[v].dtype.size_in_bytes();
        let computed = |v: ValueId| matches!(self.values[v].source, Source::Computed);
        // Definition and last use of every computed slot.
        let mut def = vec![usize::MAX; self.values.len()];
        let mut last = vec![0usize; self.values.len()];
        for (i, instr) in self.instrs.iter().enumerate() {
            let mut touch = |v: ValueId| last[v] = last[v].max(i);
            match instr {
                Instr::Run { inputs, out, .. } => {
                    inputs.iter().for_each(|a| touch(a.value));
                    def[*out] = i;
                    touch(*out);
                }
                Instr::Create { out, .. } => {
                    def[*out] = i;
                    touch(*out);
                }
                Instr::Into { inputs, targets, .. } => inputs.iter().chain(targets).for_each(|a| touch(a.value)),
                Instr::Check { index, .. } => touch(index.value),
                Instr::Host { .. } => {}
            }
        }
        let outputs: Vec<ValueId> = self.outputs.iter().map(|a| a.value).collect();
        let mut plan = MemoryPlan {
            buffer_of: vec![None; self.values.len()],
            last_use: vec![Vec::new(); n],
            ..MemoryPlan::default()
        };
        for v in (0..self.values.len()).filter(|&v| computed(v) && def[v] != usize::MAX) {
            plan.unplanned_bytes += bytes(v);
            if outputs.contains(&v) {
                plan.output_bytes += bytes(v);
            } else {
                plan.last_use[last[v]].push(v);
            }
        }
        // Greedy packing in definition order: a buffer frees after its
        // slot's last use, for slots made later.
        let mut order: Vec<ValueId> =
            (0..self.values.len()).filter(|&v| computed(v) && def[v] != usize::MAX && !outputs.contains(&v)).collect();
        order.sort_by_key(|&v| def[v]);
        let mut kinds: Vec<(Device, DType)> = Vec::new();
        let mut busy_until: Vec<usize> = Vec::new();
        for v in order {
            let kind = (self.values[v].device.clone(), self.values[v].dtype);
            let size = bytes(v);
            let free = (0..plan.buffers.len())
                .filter(|&b| kinds[b] == kind && busy_until[b] < def[v] && plan.buffers[b] >= size)
                .min_by_key(|&b| plan.buffers[b]);
            let b = free.unwrap_or_else(|| {
                plan.buffers.push(size);
                kinds.push(kind);
                busy_until.push(0);
                plan.buffers.len() - 1
            });
            busy_until[b] = last[v];
            plan.buffer_of[v] = Some(b);
        }
        plan.arena_bytes = plan.buffers.iter().sum();
        plan.peak_bytes = plan.arena_bytes + plan.output_bytes;
        plan
    }
}
