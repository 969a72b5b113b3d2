//! Passes over a program: each takes a program and gives an equivalent one
//! (the same results and the same writes to captured storages).
//!
//! - `eliminate_common_subexpressions`: a `Run` or `Create` that repeats an
//!   earlier one (the same spec and host bindings over the same views of the
//!   same slots, none of them written in between) reuses the earlier result. Random fills
//!   are never merged: each draws its own numbers.
//! - `eliminate_dead_code`: instructions whose results nothing reads (no
//!   later instruction, no output) are dropped. Writes into storages the
//!   program does not own (inputs, captured storages) and range checks are
//!   always kept, and so are host updates: they are the program's effects.
//!
//! - `fuse_elementwise` (fuse.rs): maximal groups of elementwise
//!   instructions become one fused kernel.
//! - `fuse_epilogues` (epilogue.rs): a matmul or reduction and the one
//!   elementwise kernel reading its result become one kernel.
//!
//! and, in simplify.rs and rewrite.rs, constant folding, copy forwarding,
//! repeated range checks, transposed products and negations moved after
//! sums. `optimize` runs them in this order: constant folding, CSE, copy
//! forwarding, repeated checks, transposed products, dead-code elimination
//! (after CSE and the rewrites, which leave instructions dead; before
//! fusion, so a dead reader keeps no value out of a group), negations,
//! elementwise fusion, and epilogues last (they take in whole fused groups).

use super::{Arg, Bind, Instr, Program, Source, ValueId};
use crate::kernel::KernelSpec;
use crate::shape::Layout;
use rustc_hash::{FxHashMap, FxHashSet};

/// What the passes removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    pub merged: usize,
    pub dead: usize,
    /// Instructions fusion removed (a group of n becomes one: n - 1).
    pub fused: usize,
    /// Constant instructions run once at optimisation (`fold_constants`).
    pub folded: usize,
    /// Whole-buffer copies read through (`forward_copies`).
    pub forwarded: usize,
    /// Repeated range checks dropped (`drop_repeated_checks`).
    pub checks: usize,
    /// Transposing copies of products removed (`transpose_products`).
    pub transposed: usize,
    /// Matmuls and reductions fused with their readers (`fuse_epilogues`).
    pub epilogues: usize,
    /// Negations moved after the sums they fed (`negate_after_sums`): each
    /// adds an instruction (its `+ 0`), which fusion then takes in.
    pub negated: usize,
}

impl PassStats {
    /// Instructions the passes removed in all.
    /// (Net of those they added: each negation moved after a sum adds one.)
    pub fn removed(&self) -> usize {
        let gone = self.merged
            + self.dead
            + self.fused
            + self.folded
            + self.forwarded
            + self.checks
            + self.transposed
            + self.epilogues;
        gone - self.negated
    }
}

/// An operand as CSE compares it: the slot, the view and how many times the
/// slot had been written in place before the read.
type Key = (KernelSpec, Vec<Bind>, Vec<(ValueId, Layout, u32)>, Vec<usize>);

impl Program {
    /// The passes in order; returns what they removed.
    pub fn optimize(&mut self) -> PassStats {
        let folded = self.fold_constants();
        let merged = self.eliminate_common_subexpressions();
        let forwarded = self.forward_copies();
        let checks = self.drop_repeated_checks();
        let transposed = self.transpose_products();
        let dead = self.eliminate_dead_code();
        let negated = self.negate_after_sums();
        let fused = self.fuse_elementwise();
        let epilogues = self.fuse_epilogues();
        PassStats { merged, dead, fused, folded, forwarded, checks, transposed, epilogues, negated }
    }

    /// Reuses the result of an earlier identical `Run` / `Create`; returns
    /// how many instructions it removed.
    pub fn eliminate_common_subexpressions(&mut self) -> usize {
        // A result written in place later is no common value: merging it
        // would let one reader see the other's writes.
        let written: FxHashSet<ValueId> = self
            .instrs
            .iter()
            .flat_map(|i| match i {
                Instr::Into { targets, .. } => targets.iter().map(|t| t.value).collect(),
                _ => Vec::new(),
            })
            .collect();
        let mut writes: FxHashMap<ValueId, u32> = FxHashMap::default();
        let mut seen: FxHashMap<Key, ValueId> = FxHashMap::default();
        let mut renamed: FxHashMap<ValueId, ValueId> = FxHashMap::default();
        let rename = |renamed: &FxHashMap<ValueId, ValueId>, a: &mut Arg| {
            if let Some(&to) = renamed.get(&a.value) {
                a.value = to;
            }
        };
        let mut kept = Vec::with_capacity(self.instrs.len());
        let mut merged = 0;
        for mut instr in std::mem::take(&mut self.instrs) {
            match &mut instr {
                Instr::Run { inputs, .. } => inputs.iter_mut().for_each(|a| rename(&renamed, a)),
                Instr::Into { inputs, targets, .. } => {
                    inputs.iter_mut().chain(targets.iter_mut()).for_each(|a| rename(&renamed, a))
                }
                Instr::Check { index, .. } => rename(&renamed, index),
                Instr::Create { .. } | Instr::Host { .. } => {}
            }
            let key = match &instr {
                Instr::Run { spec, binds, inputs, shape, .. } => Some((
                    spec.clone(),
                    binds.clone(),
                    inputs
                        .iter()
                        .map(|a| (a.value, a.layout.clone(), writes.get(&a.value).copied().unwrap_or(0)))
                        .collect(),
                    shape.to_vec(),
                )),
                Instr::Create { spec, binds, shape, .. } if !matches!(spec, KernelSpec::Random { .. }) => {
                    Some((spec.clone(), binds.clone(), Vec::new(), shape.to_vec()))
                }
                _ => None,
            };
            let out = match &instr {
                Instr::Run { out, .. } | Instr::Create { out, .. } => Some(*out),
                _ => None,
            };
            if let (Some(key), Some(out)) = (key, out.filter(|o| !written.contains(o))) {
                // Same device too: a fill on the cpu is no fill on the GPU.
                let device = &self.values[out].device;
                if let Some(&earlier) = seen.get(&key).filter(|&&e| self.values[e].device == *device) {
                    renamed.insert(out, earlier);
                    merged += 1;
                    continue;
                }
                seen.insert(key, out);
            }
            if let Instr::Into { targets, .. } = &instr {
                for t in targets {
                    *writes.entry(t.value).or_insert(0) += 1;
                }
            }
            kept.push(instr);
        }
        self.instrs = kept;
        for a in &mut self.outputs {
            rename(&renamed, a);
        }
        merged
    }

    /// Drops instructions whose results are never read; returns how many.
    pub fn eliminate_dead_code(&mut self) -> usize {
        let mut live: FxHashSet<ValueId> = self.outputs.iter().map(|a| a.value).collect();
        let owned = |v: ValueId| matches!(self.values[v].source, Source::Computed);
        let mut keep = vec![false; self.instrs.len()];
        for (i, instr) in self.instrs.iter().enumerate().rev() {
            let needed = match instr {
                Instr::Run { out, .. } | Instr::Create { out, .. } => live.contains(out),
                // A write into a storage the program does not own is an effect;
                // into its own buffer, it matters only if that buffer is read later.
                Instr::Into { targets, .. } => targets.iter().any(|t| !owned(t.value) || live.contains(&t.value)),
                Instr::Check { .. } | Instr::Host { .. } => true,
            };
            if !needed {
                continue;
            }
            keep[i] = true;
            match instr {
                Instr::Run { inputs, .. } => live.extend(inputs.iter().map(|a| a.value)),
                // An in-place write reads its inputs and the rest of its targets' buffers.
                Instr::Into { inputs, targets, .. } => live.extend(inputs.iter().chain(targets).map(|a| a.value)),
                Instr::Check { index, .. } => {
                    live.insert(index.value);
                }
                Instr::Create { .. } | Instr::Host { .. } => {}
            }
        }
        let before = self.instrs.len();
        let mut flags = keep.into_iter();
        self.instrs.retain(|_| flags.next().unwrap_or(true));
        before - self.instrs.len()
    }
}
