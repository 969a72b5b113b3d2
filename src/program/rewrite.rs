//! Two exact rewrites that let more of a program fuse, each leaving every
//! result bit for bit as it was:
//!
//! - `transpose_products`: a product that is only copied out transposed is
//!   computed transposed instead, `(a b)^T = b^T a^T`, straight into the
//!   copy's buffer (the weight gradient of every `Linear`: its weight is
//!   `[out, in]`, used transposed, so autograd computes the gradient
//!   `[in, out]` and copies it into the weight's layout). Each element is
//!   the same products summed in the same order along k (the GEMMs
//!   accumulate along k whatever the output's orientation, and a product of
//!   two floats does not depend on their order); one copy fewer.
//! - `negate_after_sums`: `sum(-x)` becomes `-sum(x) + 0`, so the negation
//!   comes after the reduction and fuses into its epilogue. IEEE rounding is
//!   symmetric, so every partial sum of `-x` is the negated partial sum of
//!   `x`, except that an exact zero is `+0` either way (a sum starts from
//!   `+0`); adding `+0` turns the `-0` that negating it gives back into
//!   `+0` and changes no other value. It needs the registry's `add_scalar`
//!   row (`kernel::with_rows`, which `jit` installs while it optimises);
//!   without it nothing is rewritten.
//!
//! Both move an instruction later (to the reader it feeds), so neither
//! applies across an in-place write.

use super::{Arg, Instr, Program, Source, Value, ValueId};
use crate::kernel::{KernelSpec, ReduceKind, Scalar};
use crate::shape::Layout;
use rustc_hash::{FxHashMap, FxHashSet};

/// The view of `a`'s buffer with its last two dims swapped.
fn transposed(a: &Arg) -> Arg {
    let mut layout = a.layout.clone();
    let r = layout.shape.len();
    layout.shape.swap(r - 2, r - 1);
    layout.strides.swap(r - 2, r - 1);
    Arg { value: a.value, layout }
}

/// Reads of each value (instruction operands and outputs alike).
pub(super) fn read_counts(p: &Program) -> FxHashMap<ValueId, usize> {
    let mut n: FxHashMap<ValueId, usize> = FxHashMap::default();
    let mut count = |a: &Arg| *n.entry(a.value).or_insert(0) += 1;
    for instr in &p.instrs {
        match instr {
            Instr::Run { inputs, .. } => inputs.iter().for_each(&mut count),
            Instr::Into { inputs, targets, .. } => inputs.iter().chain(targets).for_each(&mut count),
            Instr::Check { index, .. } => count(index),
            Instr::Create { .. } | Instr::Host { .. } => {}
        }
    }
    p.outputs.iter().for_each(count);
    n
}

impl Program {
    /// Where each `Run`'s result is made.
    pub(super) fn producers(&self) -> FxHashMap<ValueId, usize> {
        self.instrs
            .iter()
            .enumerate()
            .filter_map(|(i, instr)| match instr {
                Instr::Run { out, .. } => Some((*out, i)),
                _ => None,
            })
            .collect()
    }

    /// Removes the instructions at the indices `gone`; returns how many.
    pub(super) fn drop_instrs(&mut self, gone: &FxHashSet<usize>) -> usize {
        let mut at = 0;
        self.instrs.retain(|_| {
            at += 1;
            !gone.contains(&(at - 1))
        });
        gone.len()
    }

    /// Whether an in-place write lies strictly between instructions `p` and `r`.
    pub(super) fn write_between(&self, p: usize, r: usize) -> bool {
        self.instrs[p + 1..r].iter().any(|i| matches!(i, Instr::Into { .. }))
    }

    /// The single-use product `v` feeding instruction `r` through `view`, or None.
    pub(super) fn lone_value(
        &self,
        v: &Arg,
        r: usize,
        reads: &FxHashMap<ValueId, usize>,
        producers: &FxHashMap<ValueId, usize>,
    ) -> Option<usize> {
        let p = *producers.get(&v.value)?;
        let plain = matches!(self.values[v.value].source, Source::Computed);
        (plain && reads.get(&v.value) == Some(&1) && !self.write_between(p, r)).then_some(p)
    }

    /// Computes transposed the products only copied out transposed (see the
    /// module docs); returns how many copies it removed.
    pub fn transpose_products(&mut self) -> usize {
        let (reads, producers) = (read_counts(self), self.producers());
        let mut gone: FxHashSet<usize> = FxHashSet::default();
        for r in 0..self.instrs.len() {
            let Instr::Run { spec: KernelSpec::Copy, inputs, .. } = &self.instrs[r] else { continue };
            let src = &inputs[0];
            let Some(p) = self.lone_value(src, r, &reads, &producers) else { continue };
            let Instr::Run { op, spec: spec @ KernelSpec::Matmul { .. }, inputs: ab, shape, .. } = &self.instrs[p]
            else {
                continue;
            };
            let n = shape.len();
            let mut want = Layout::contiguous(shape);
            want.shape.swap(n - 2, n - 1);
            want.strides.swap(n - 2, n - 1);
            if src.layout != want {
                continue;
            }
            let (op, spec, inputs) = (*op, spec.clone(), vec![transposed(&ab[1]), transposed(&ab[0])]);
            let Instr::Run { op: o, spec: s, inputs: i, .. } = &mut self.instrs[r] else { unreachable!() };
            (*o, *s, *i) = (op, spec, inputs);
            gone.insert(p);
        }
        self.drop_instrs(&gone)
    }

    /// Moves negations after the sums they feed (see the module docs);
    /// returns how many it moved.
    pub fn negate_after_sums(&mut self) -> usize {
        let Some(add_scalar) = crate::kernel::unary_row("add_scalar") else { return 0 };
        let (reads, producers) = (read_counts(self), self.producers());
        // Per sum (its index): the negation it reads (its index).
        let mut moves: FxHashMap<usize, usize> = FxHashMap::default();
        for (r, instr) in self.instrs.iter().enumerate() {
            let Instr::Run { spec: KernelSpec::Reduce { kind: ReduceKind::Sum, .. }, inputs, .. } = instr else {
                continue;
            };
            let Some(p) = self.lone_value(&inputs[0], r, &reads, &producers) else { continue };
            let Instr::Run { spec: KernelSpec::Unary { row, .. }, binds, shape, .. } = &self.instrs[p] else {
                continue;
            };
            let whole = Layout::contiguous(shape);
            if row.name == "neg" && binds.is_empty() && inputs[0].layout == whole {
                moves.insert(r, p);
            }
        }
        if moves.is_empty() {
            return 0;
        }
        let gone: FxHashSet<usize> = moves.values().copied().collect();
        let old = std::mem::take(&mut self.instrs);
        for (i, instr) in old.iter().enumerate() {
            if gone.contains(&i) {
                continue;
            }
            let Some(&p) = moves.get(&i) else {
                self.instrs.push(instr.clone());
                continue;
            };
            let (Instr::Run { op, spec, out, shape, .. }, Instr::Run { op: neg_op, spec: neg, inputs: neg_in, .. }) =
                (instr, &old[p])
            else {
                unreachable!("moves pair runs")
            };
            let like = self.values[*out].clone();
            let mut fresh = || {
                self.values.push(Value { source: Source::Computed, ..like.clone() });
                self.values.len() - 1
            };
            let (sum, negated) = (fresh(), fresh());
            let whole = Layout::contiguous(shape);
            let arg = |value| vec![Arg { value, layout: whole.clone() }];
            // The sum reads what the negation read, through the same view (the sum read the whole negation).
            let sum_in = vec![neg_in[0].clone()];
            self.instrs.push(Instr::Run {
                op,
                spec: spec.clone(),
                binds: Vec::new(),
                inputs: sum_in,
                out: sum,
                shape: shape.clone(),
            });
            self.instrs.push(Instr::Run {
                op: neg_op,
                spec: neg.clone(),
                binds: Vec::new(),
                inputs: arg(sum),
                out: negated,
                shape: shape.clone(),
            });
            let plus_zero = KernelSpec::Unary { row: add_scalar, params: [Scalar(0.0), Scalar(0.0)] };
            self.instrs.push(Instr::Run {
                op,
                spec: plus_zero,
                binds: Vec::new(),
                inputs: arg(negated),
                out: *out,
                shape: shape.clone(),
            });
        }
        moves.len()
    }
}
