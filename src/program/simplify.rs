//! Three passes that remove work a capture records but a replay need not
//! redo, each leaving every result bit for bit as it was:
//!
//! - `fold_constants`: a fill or sequence without bound scalars, and any
//!   kernel (not a random fill) whose inputs are all such constants, is run
//!   once now; its result becomes a captured buffer the program holds (the
//!   `0.0` of a `relu` backward's comparison, the ones a loss's gradient
//!   starts from). Only values the program itself made are folded: a
//!   captured storage may change between runs (the caller writes it), a
//!   constant cannot.
//! - `forward_copies`: a contiguous copy of a whole buffer that neither it
//!   nor the copy is ever written, and that is no output, is the buffer
//!   itself: readers of the copy read the original (the copies autograd
//!   makes so a `.grad` aliases nothing, when nothing else holds the value).
//! - `drop_repeated_checks`: a range check of an index view already checked
//!   against the same bound, with no write to the index in between, checks
//!   nothing new (cross-entropy, gather and scatter_add each check the same
//!   labels). The first check stays, so an out-of-range index is still an
//!   error, naming the first op that checks it.

use super::{Arg, Instr, Program, Source, ValueId};
use crate::backend::{self, new_storage, View};
use crate::kernel::KernelSpec;
use rustc_hash::FxHashSet;

impl Program {
    /// Slots some `Into` writes.
    fn written(&self) -> FxHashSet<ValueId> {
        let mut w = FxHashSet::default();
        for i in &self.instrs {
            if let Instr::Into { targets, .. } = i {
                w.extend(targets.iter().map(|t| t.value));
            }
        }
        w
    }

    /// Runs constant instructions now (see the module docs); returns how
    /// many it removed.
    pub fn fold_constants(&mut self) -> usize {
        let written = self.written();
        let outputs: FxHashSet<ValueId> = self.outputs.iter().map(|a| a.value).collect();
        let mut constant: FxHashSet<ValueId> = FxHashSet::default();
        let mut kept = Vec::with_capacity(self.instrs.len());
        let mut folded = 0;
        for instr in std::mem::take(&mut self.instrs) {
            let foldable = |out: &ValueId, binds: &[super::Bind]| {
                binds.is_empty() && !written.contains(out) && !outputs.contains(out)
            };
            let value = match &instr {
                Instr::Create { op, spec, binds, out, shape }
                    if foldable(out, binds) && !matches!(spec, KernelSpec::Random { .. }) =>
                {
                    backend::create(op, spec, &self.values[*out].device, shape).ok().map(|b| (*out, b))
                }
                Instr::Run { op, spec, binds, inputs, out, shape }
                    if foldable(out, binds) && inputs.iter().all(|a| constant.contains(&a.value)) =>
                {
                    let stores: Vec<_> = inputs.iter().map(|a| self.storage_of(a)).collect();
                    let guards: Vec<_> = stores.iter().map(|s| s.read()).collect();
                    let views: Vec<View> = guards.iter().zip(inputs).map(|(g, a)| View::new(g, &a.layout)).collect();
                    backend::run(op, spec, &views, shape).ok().map(|b| (*out, b))
                }
                _ => None,
            };
            match value {
                Some((out, buf)) => {
                    self.values[out].source = Source::Captured(new_storage(buf));
                    constant.insert(out);
                    folded += 1;
                }
                None => kept.push(instr),
            }
        }
        self.instrs = kept;
        folded
    }

    /// The captured storage of a constant operand.
    fn storage_of(&self, a: &Arg) -> crate::backend::Storage {
        match &self.values[a.value].source {
            Source::Captured(s) => s.clone(),
            _ => unreachable!("constant operands are captured buffers by construction"),
        }
    }

    /// Reads through whole-buffer copies of values never written (see the
    /// module docs); returns how many copies it removed.
    pub fn forward_copies(&mut self) -> usize {
        let written = self.written();
        let outputs: FxHashSet<ValueId> = self.outputs.iter().map(|a| a.value).collect();
        let mut renamed: Vec<Option<ValueId>> = vec![None; self.values.len()];
        let mut kept = Vec::with_capacity(self.instrs.len());
        let mut removed = 0;
        for mut instr in std::mem::take(&mut self.instrs) {
            let rename = |a: &mut Arg| {
                if let Some(to) = renamed[a.value] {
                    a.value = to;
                }
            };
            match &mut instr {
                Instr::Run { inputs, .. } => inputs.iter_mut().for_each(rename),
                Instr::Into { inputs, targets, .. } => inputs.iter_mut().chain(targets.iter_mut()).for_each(rename),
                Instr::Check { index, .. } => rename(index),
                Instr::Create { .. } | Instr::Host { .. } => {}
            }
            if let Instr::Run { spec: KernelSpec::Copy, inputs, out, .. } = &instr {
                let src = &inputs[0];
                let v = &self.values[src.value];
                let whole = src.layout.offset == 0 && src.layout.is_contiguous() && src.layout.numel() == v.len;
                let same = v.dtype == self.values[*out].dtype && v.device == self.values[*out].device;
                let plain = |id: ValueId| matches!(self.values[id].source, Source::Computed);
                if whole
                    && same
                    && plain(src.value)
                    && !written.contains(&src.value)
                    && !written.contains(out)
                    && !outputs.contains(&src.value)
                {
                    renamed[*out] = Some(src.value);
                    removed += 1;
                    continue;
                }
            }
            kept.push(instr);
        }
        self.instrs = kept;
        for a in &mut self.outputs {
            if let Some(to) = renamed[a.value] {
                a.value = to;
            }
        }
        removed
    }

    /// Drops range checks that repeat an earlier one (see the module docs);
    /// returns how many.
    pub fn drop_repeated_checks(&mut self) -> usize {
        // Views that read every element of their buffer check the same values
        // whatever their shapes (`[N]` labels and their `[N, 1]` view).
        let values = &self.values;
        let covers = |a: &Arg, b: &Arg| {
            let whole =
                |x: &Arg| x.layout.offset == 0 && x.layout.is_contiguous() && x.layout.numel() == values[x.value].len;
            a.value == b.value && (a == b || (whole(a) && whole(b)))
        };
        let mut checked: Vec<(Arg, usize)> = Vec::new();
        let before = self.instrs.len();
        self.instrs.retain(|i| match i {
            Instr::Check { spec: KernelSpec::IndexCheck(c), index } => {
                if checked.iter().any(|(a, dim)| covers(a, index) && *dim == c.dim) {
                    return false;
                }
                checked.push((index.clone(), c.dim));
                true
            }
            Instr::Into { targets, .. } => {
                // A write into a buffer the program does not own may be a
                // write into an input (a run may bind a captured storage as one).
                let owned = |v: ValueId| matches!(values[v].source, Source::Computed);
                let outside = targets.iter().any(|t| !owned(t.value));
                let hit = |a: &Arg| targets.iter().any(|t| t.value == a.value) || (outside && !owned(a.value));
                checked.retain(|(a, _)| !hit(a));
                true
            }
            _ => true,
        });
        before - self.instrs.len()
    }
}
