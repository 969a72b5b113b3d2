//! Elementwise fusion: maximal groups of elementwise `Run` instructions
//! become one `KernelSpec::Fused` instruction (one cpu loop, one generated
//! WGSL kernel; `kernel::fused`).
//!
//! A group has one result, its root's (the group's last instruction), and
//! every other member's result is an intermediate the fused kernel keeps to
//! itself. So a member joins only if its result
//! - has the group's shape and device,
//! - is read by members only, each reading the whole buffer row-major (the
//!   fused kernel hands values from step to step element by element; any
//!   other view of them needs the buffer),
//! - is no output of the program and no target of an in-place write.
//!
//! A value read by two members is fine: groups are DAGs, not only chains.
//! Values from outside the group are read through any view that broadcasts
//! to the group's shape, as the eager kernels read them.
//!
//! Order: the fused instruction runs where the root was, so each member's
//! reads move later, past the instructions between it and the root. That
//! is valid unless one of those is an in-place write (`Into`) into a storage
//! the member reads: such a member stays out (it and everything it feeds
//! outside the group keep their order). Inputs of the run may alias one
//! another or a captured storage, so a write into any storage the program
//! does not own counts as a write into each input.
//!
//! Random fills, creations, range checks, in-place kernels, matmuls and
//! reductions are never members.

use super::{Arg, Bind, Instr, Program, Source, ValueId};
use crate::kernel::fused::{MAX_INPUTS, MAX_STEPS};
use crate::kernel::{FusedElementwise, FusedOp, FusedStep, KernelSpec, Operand};
use crate::shape::Layout;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The op name fused instructions carry (errors and the text form name it).
pub const FUSED_OP: &str = "fused";

/// The step an elementwise spec is, or None for every other kernel.
pub(super) fn step_op(spec: &KernelSpec) -> Option<FusedOp> {
    Some(match spec {
        KernelSpec::Unary { row, params } => FusedOp::Unary { row, params: *params },
        KernelSpec::Binary { row } => FusedOp::Binary { row },
        KernelSpec::Compare { row } => FusedOp::Compare { row },
        KernelSpec::Where => FusedOp::Where,
        KernelSpec::Cast { to } => FusedOp::Cast { to: *to },
        KernelSpec::Copy => FusedOp::Copy,
        _ => return None,
    })
}

/// What the pass needs to know about the program, computed once.
struct Facts<'p> {
    program: &'p Program,
    /// The instruction that makes each value (`Run`s only).
    producer: FxHashMap<ValueId, usize>,
    /// Every read of each value: (instruction, view); `None` for an
    /// instruction that is no `Run` (it reads the whole buffer its way).
    readers: FxHashMap<ValueId, Vec<(usize, Option<&'p Layout>)>>,
    /// Values the program returns or writes in place.
    pinned: FxHashSet<ValueId>,
    /// In-place writes: (instruction, target values).
    writes: Vec<(usize, Vec<ValueId>)>,
}

impl<'p> Facts<'p> {
    fn of(program: &'p Program) -> Facts<'p> {
        let mut f = Facts {
            program,
            producer: FxHashMap::default(),
            readers: FxHashMap::default(),
            pinned: program.outputs.iter().map(|a| a.value).collect(),
            writes: Vec::new(),
        };
        for (i, instr) in program.instrs.iter().enumerate() {
            match instr {
                Instr::Run { inputs, out, .. } => {
                    f.producer.insert(*out, i);
                    for a in inputs {
                        f.readers.entry(a.value).or_default().push((i, Some(&a.layout)));
                    }
                }
                Instr::Into { inputs, targets, .. } => {
                    for a in inputs.iter().chain(targets) {
                        f.readers.entry(a.value).or_default().push((i, None));
                    }
                    f.pinned.extend(targets.iter().map(|t| t.value));
                    f.writes.push((i, targets.iter().map(|t| t.value).collect()));
                }
                Instr::Check { index, .. } => f.readers.entry(index.value).or_default().push((i, None)),
                Instr::Create { .. } | Instr::Host { .. } => {}
            }
        }
        f
    }

    /// The parts of a `Run` instruction (None for other instructions).
    fn run(&self, i: usize) -> Option<(&'p KernelSpec, &'p [Arg], ValueId, &'p [usize])> {
        match &self.program.instrs[i] {
            Instr::Run { spec, inputs, out, shape, .. } => Some((spec, inputs, *out, shape)),
            _ => None,
        }
    }

    /// An elementwise kernel without f16 values: eager rounds an f16 result
    /// after every op (`backend::half`), which a fused kernel would not.
    fn fusable(&self, i: usize) -> bool {
        let f16 = |v: ValueId| self.program.values[v].dtype == crate::dtype::DType::F16;
        self.run(i).is_some_and(|(spec, inputs, out, _)| {
            step_op(spec).is_some() && !f16(out) && !inputs.iter().any(|a| f16(a.value))
        })
    }

    /// Whether writing `w` in place may change what reading `r` sees.
    fn may_alias(&self, w: ValueId, r: ValueId) -> bool {
        let source = |v: ValueId| &self.program.values[v].source;
        let outside = |v: ValueId| !matches!(source(v), Source::Computed);
        let input = |v: ValueId| matches!(source(v), Source::Input(_));
        w == r || (outside(w) && outside(r) && (input(w) || input(r)))
    }

    /// Whether member `p` may run at `root` instead: no in-place write in
    /// between touches what it reads.
    fn can_move(&self, p: usize, root: usize) -> bool {
        let Some((_, inputs, ..)) = self.run(p) else { return false };
        self.writes
            .iter()
            .filter(|(j, _)| p < *j && *j < root)
            .all(|(_, targets)| targets.iter().all(|&w| inputs.iter().all(|a| !self.may_alias(w, a.value))))
    }

    /// The views from outside the group its members read, in first-read order.
    fn group_inputs(&self, members: &BTreeSet<usize>) -> Vec<&'p Arg> {
        let mut seen: Vec<&Arg> = Vec::new();
        for &m in members {
            let (_, inputs, ..) = self.run(m).expect("members are Run instructions");
            for a in inputs {
                let inside = self.producer.get(&a.value).is_some_and(|p| members.contains(p));
                if !inside && !seen.contains(&a) {
                    seen.push(a);
                }
            }
        }
        seen
    }

    /// Whether `p` may join the group `members` rooted at `root`.
    fn joins(&self, p: usize, members: &BTreeSet<usize>, root: usize) -> bool {
        let Some((_, _, out, shape)) = self.run(p) else { return false };
        let (_, _, root_out, root_shape) = self.run(root).expect("the root is a Run");
        let values = &self.program.values;
        if shape != root_shape || values[out].device != values[root_out].device || self.pinned.contains(&out) {
            return false;
        }
        let whole = |l: &Layout| l.shape.as_slice() == shape && l.offset == 0 && l.is_contiguous();
        let read_inside = self
            .readers
            .get(&out)
            .is_some_and(|rs| rs.iter().all(|(r, l)| members.contains(r) && l.is_some_and(whole)));
        if !read_inside || !self.can_move(p, root) || members.len() >= MAX_STEPS {
            return false;
        }
        let mut with = members.clone();
        with.insert(p);
        self.group_inputs(&with).len() <= MAX_INPUTS
    }

    /// The largest group rooted at `root` among instructions not yet taken.
    fn grow(&self, root: usize, taken: &[bool]) -> BTreeSet<usize> {
        let mut members = BTreeSet::from([root]);
        loop {
            let mut grew = false;
            for m in members.clone() {
                let (_, inputs, ..) = self.run(m).expect("members are Run instructions");
                for a in inputs {
                    let Some(&p) = self.producer.get(&a.value) else { continue };
                    if !taken[p] && !members.contains(&p) && self.fusable(p) && self.joins(p, &members, root) {
                        members.insert(p);
                        grew = true;
                    }
                }
            }
            if !grew {
                return members;
            }
        }
    }

    /// The fused instruction for a group (members in program order).
    fn fuse(&self, members: &BTreeSet<usize>) -> Instr {
        let inputs: Vec<Arg> = self.group_inputs(members).into_iter().cloned().collect();
        let values = &self.program.values;
        let step_of: FxHashMap<usize, usize> = members.iter().enumerate().map(|(s, &m)| (m, s)).collect();
        let steps = members
            .iter()
            .map(|&m| {
                let (spec, args, out, _) = self.run(m).expect("members are Run instructions");
                let args = args
                    .iter()
                    .map(|a| match self.producer.get(&a.value).and_then(|p| step_of.get(p)) {
                        Some(&s) => Operand::Step(s),
                        None => Operand::Input(inputs.iter().position(|i| i == a).expect("an input of the group")),
                    })
                    .collect();
                FusedStep { op: step_op(spec).expect("members are elementwise"), args, dtype: values[out].dtype }
            })
            .collect();
        let fused = FusedElementwise { inputs: inputs.iter().map(|a| values[a.value].dtype).collect(), steps };
        // Scalars bound to host cells move with their step: a fused kernel's
        // scalars are its steps', in step order.
        let mut binds = Vec::new();
        let mut offset = 0;
        for (&m, step) in members.iter().zip(&fused.steps) {
            binds.extend(
                self.program.instrs[m].binds().iter().map(|b| Bind { at: offset + b.at, expr: b.expr.clone() }),
            );
            offset += step.op.scalars().len();
        }
        let root = *members.last().expect("a group has members");
        let (_, _, out, shape) = self.run(root).expect("the root is a Run");
        let spec = KernelSpec::Fused(Arc::new(fused));
        Instr::Run { op: FUSED_OP, spec, binds, inputs, out, shape: shape.into() }
    }
}

impl Program {
    /// Fuses maximal groups of elementwise instructions (see the module
    /// docs); returns how many instructions it removed.
    pub fn fuse_elementwise(&mut self) -> usize {
        let n = self.instrs.len();
        let facts = Facts::of(self);
        let mut taken = vec![false; n];
        // The fused instruction of each group, at its root's index.
        let mut fused: FxHashMap<usize, Instr> = FxHashMap::default();
        for root in (0..n).rev() {
            if taken[root] || !facts.fusable(root) {
                continue;
            }
            let members = facts.grow(root, &taken);
            if members.len() < 2 {
                continue;
            }
            for &m in &members {
                taken[m] = true;
            }
            fused.insert(root, facts.fuse(&members));
        }
        let before = n;
        let old = std::mem::take(&mut self.instrs);
        self.instrs = old
            .into_iter()
            .enumerate()
            .filter_map(|(i, instr)| match fused.remove(&i) {
                Some(f) => Some(f),
                None if taken[i] => None,
                None => Some(instr),
            })
            .collect();
        before - self.instrs.len()
    }
}
