//! Epilogue fusion: a matmul or a reduction whose result only an
//! elementwise kernel reads (a fused group or a single kernel: a bias add
//! and its activation, a loss's scaling) becomes one `KernelSpec::Epilogue`
//! kernel: the head computes each result and the tail's steps run on it
//! before it is stored (`backend/gpu/epilogue.rs`; on the cpu the tail runs
//! over the head's result while it is in cache, with eager's kernels).
//!
//! The head's result must be read by that one instruction only, element by
//! element (the whole buffer, row-major, in the reader's shape), be no
//! output and never written in place; the head moves to its reader, so no
//! in-place write may lie between them. The tail's other inputs keep the
//! bindable total of a fused kernel (`kernel::fused::MAX_INPUTS`, the head's
//! inputs included), and it must give the head's dtype. A product takes a
//! tail only from `MIN_PRODUCT_OUTPUTS` outputs on.

use super::fuse::{step_op, FUSED_OP};
use super::rewrite::read_counts;
use super::{Arg, Instr, Program};
use crate::kernel::fused::MAX_INPUTS;
use crate::kernel::{Epilogue, FusedElementwise, FusedStep, KernelSpec, Operand};
use crate::shape::Layout;
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The reader's kernel as a fused program over `inputs` (None: not elementwise).
fn as_tail(
    spec: &KernelSpec,
    inputs: &[Arg],
    dtype: crate::dtype::DType,
    values: &[super::Value],
) -> Option<(FusedElementwise, Vec<Arg>)> {
    match spec {
        KernelSpec::Fused(f) => Some(((**f).clone(), inputs.to_vec())),
        s => {
            let op = step_op(s)?;
            let mut distinct: Vec<Arg> = Vec::new();
            let args = inputs
                .iter()
                .map(|a| {
                    let k = distinct.iter().position(|d| d == a).unwrap_or_else(|| {
                        distinct.push(a.clone());
                        distinct.len() - 1
                    });
                    Operand::Input(k)
                })
                .collect();
            let dtypes = distinct.iter().map(|a| values[a.value].dtype).collect();
            Some((FusedElementwise { inputs: dtypes, steps: vec![FusedStep { op, args, dtype }] }, distinct))
        }
    }
}

/// `tail` with its input `k` first (the head's result), the others after in order.
fn head_first(mut tail: FusedElementwise, inputs: &[Arg], k: usize) -> (FusedElementwise, Vec<Arg>) {
    let order: Vec<usize> = std::iter::once(k).chain((0..inputs.len()).filter(|&i| i != k)).collect();
    let new_of = |old: usize| order.iter().position(|&o| o == old).expect("every input is ordered");
    for step in &mut tail.steps {
        for a in &mut step.args {
            if let Operand::Input(i) = a {
                *i = new_of(*i);
            }
        }
    }
    tail.inputs = order.iter().map(|&i| tail.inputs[i]).collect();
    (tail, order[1..].iter().map(|&i| inputs[i].clone()).collect())
}

/// The fewest outputs a product fuses its tail at. The product kernels give
/// each invocation a block of outputs to store one by one, so a small product
/// runs its tail on few invocations; on the software adapters that is slower
/// than the product followed by a separate elementwise kernel, which spreads
/// the tail over many invocations. A real GPU's tiled kernel stores
/// a whole tile in parallel, but the program is the same everywhere, so the
/// bound is too.
pub const MIN_PRODUCT_OUTPUTS: usize = 4096;

impl Program {
    /// Fuses each lone reader of a matmul or reduction into it (see the
    /// module docs); returns how many instructions it removed.
    pub fn fuse_epilogues(&mut self) -> usize {
        let (reads, producers) = (read_counts(self), self.producers());
        let mut gone: FxHashSet<usize> = FxHashSet::default();
        for r in 0..self.instrs.len() {
            let Instr::Run { spec, binds, inputs, out, shape, .. } = &self.instrs[r] else { continue };
            let dtype = self.values[*out].dtype;
            // f16 values round after every eager op (`backend::half`): not fused.
            let f16 = |a: &Arg| self.values[a.value].dtype == crate::dtype::DType::F16;
            if dtype == crate::dtype::DType::F16 || inputs.iter().any(f16) {
                continue;
            }
            let Some((tail, tail_inputs)) = as_tail(spec, inputs, dtype, &self.values) else { continue };
            let whole = Layout::contiguous(shape);
            let head = tail_inputs.iter().enumerate().find_map(|(k, a)| {
                // Every read of the head's result is this reader's (`mul(v, v)` reads it twice).
                let p = *producers.get(&a.value)?;
                let here = inputs.iter().filter(|b| b.value == a.value).count();
                if reads.get(&a.value) != Some(&here) || self.write_between(p, r) {
                    return None;
                }
                let Instr::Run { spec: h, inputs: h_in, shape: h_shape, binds: h_binds, .. } = &self.instrs[p] else {
                    return None;
                };
                let worth = match h {
                    KernelSpec::Matmul { .. } => shape.iter().product::<usize>() >= MIN_PRODUCT_OUTPUTS,
                    KernelSpec::Reduce { .. } => true,
                    _ => false,
                };
                let fits = worth
                    && h_binds.is_empty()
                    && h_shape == shape
                    && inputs.iter().filter(|b| b.value == a.value).all(|b| b.layout == whole)
                    && self.values[a.value].dtype == dtype
                    && self.values[a.value].device == self.values[*out].device
                    && h_in.len() + tail_inputs.len() - 1 <= MAX_INPUTS;
                fits.then_some((k, p))
            });
            let Some((k, p)) = head else { continue };
            let Instr::Run { spec: h, inputs: h_in, .. } = &self.instrs[p] else { unreachable!() };
            let (tail, extras) = head_first(tail, &tail_inputs, k);
            let spec = KernelSpec::Epilogue(Arc::new(Epilogue { head: h.clone(), tail }));
            let mut all = h_in.clone();
            all.extend(extras);
            // The head has no scalars: the reader's bound scalars keep their places.
            let (binds, out, shape) = (binds.clone(), *out, shape.clone());
            self.instrs[r] = Instr::Run { op: FUSED_OP, spec, binds, inputs: all, out, shape };
            gone.insert(p);
        }
        self.drop_instrs(&gone)
    }
}
