//! Running a program: each instruction's spec over views of its slots,
//! straight to the backends.

use super::{Arg, Bind, Instr, MemoryPlan, Program, Source};
use crate::backend::{self, new_storage, Storage, View, ViewMut};
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::random::with_generator;
use crate::shape::Layout;
use std::borrow::Cow;
use std::sync::Arc;

/// One result of a run: the storage of its slot and the view of it.
pub struct Bound {
    pub storage: Storage,
    pub layout: Layout,
}

const OP: &str = "program";

impl Program {
    /// Runs the program on `inputs` (one storage per input slot, in order:
    /// the caller checked they have the captured dtype, device and length)
    /// and returns its outputs. With a `plan` (`plan_memory` of this
    /// program), each computed slot is released after its last use.
    pub fn run_storages(&self, inputs: &[Storage], plan: Option<&MemoryPlan>) -> Result<Vec<Bound>> {
        let mut slots: Vec<Option<Storage>> = Vec::with_capacity(self.values.len());
        for (id, v) in self.values.iter().enumerate() {
            slots.push(match &v.source {
                Source::Input(k) => {
                    let s = inputs.get(*k).ok_or_else(|| {
                        Error::value(OP, format!("%{id} is input {k}, but the run got {} inputs", inputs.len()))
                    })?;
                    Some(s.clone())
                }
                Source::Captured(s) => Some(s.clone()),
                Source::Computed => None,
            });
        }
        let slot = |slots: &[Option<Storage>], a: &Arg| -> Result<Storage> {
            slots[a.value].clone().ok_or_else(|| Error::value(OP, format!("%{} is read before it is made", a.value)))
        };
        for (i, instr) in self.instrs.iter().enumerate() {
            match instr {
                Instr::Run { op, spec, binds, inputs, out, shape } => {
                    let spec = &bound(spec, binds);
                    let stores = inputs.iter().map(|a| slot(&slots, a)).collect::<Result<Vec<_>>>()?;
                    let guards: Vec<_> = stores.iter().map(|s| s.read()).collect();
                    let views: Vec<View> = guards.iter().zip(inputs).map(|(g, a)| View::new(g, &a.layout)).collect();
                    let buf = backend::run(op, spec, &views, shape)?;
                    drop(guards);
                    slots[*out] = Some(new_storage(buf));
                }
                Instr::Create { op, spec, binds, out, shape } => {
                    let device = &self.values[*out].device;
                    let buf = backend::create(op, &fresh_seed(&bound(spec, binds)), device, shape)?;
                    slots[*out] = Some(new_storage(buf));
                }
                Instr::Into { op, spec, binds, inputs, targets } => {
                    let spec = &bound(spec, binds);
                    let stores = inputs.iter().map(|a| slot(&slots, a)).collect::<Result<Vec<_>>>()?;
                    let dsts = targets.iter().map(|a| slot(&slots, a)).collect::<Result<Vec<_>>>()?;
                    // Reading and writing one storage would take both of its locks.
                    if stores.iter().any(|s| dsts.iter().any(|d| Arc::ptr_eq(s, d))) {
                        return Err(Error::value(
                            op,
                            "an in-place kernel's input is also its target (the run's inputs alias a captured storage)",
                        ));
                    }
                    let guards: Vec<_> = stores.iter().map(|s| s.read()).collect();
                    let views: Vec<View> = guards.iter().zip(inputs).map(|(g, a)| View::new(g, &a.layout)).collect();
                    let mut wguards: Vec<_> = dsts.iter().map(|s| s.write()).collect();
                    let mut outs: Vec<ViewMut> =
                        wguards.iter_mut().zip(targets).map(|(g, a)| ViewMut::new(g, &a.layout)).collect();
                    backend::run_into(op, spec, &views, &mut outs)?;
                    drop(outs);
                    drop(wguards);
                    for d in &dsts {
                        d.bump_version();
                    }
                }
                Instr::Check { spec, index } => {
                    let s = slot(&slots, index)?;
                    backend::check(spec, &s, &index.layout)?;
                }
                Instr::Host { cell, expr, .. } => cell.set(expr.eval()),
            }
            if let Some(done) = plan.and_then(|p| p.last_use.get(i)) {
                for &v in done {
                    slots[v] = None;
                }
            }
        }
        self.outputs.iter().map(|a| Ok(Bound { storage: slot(&slots, a)?, layout: a.layout.clone() })).collect()
    }
}

/// `spec` with its bound scalars computed from the host cells now.
fn bound<'a>(spec: &'a KernelSpec, binds: &[Bind]) -> Cow<'a, KernelSpec> {
    if binds.is_empty() {
        return Cow::Borrowed(spec);
    }
    let mut spec = spec.clone();
    for b in binds {
        spec.set_scalar(b.at, b.expr.eval());
    }
    Cow::Owned(spec)
}

/// `spec`, with a new seed from the global generator when it is a random
/// fill (a run draws fresh numbers, as the eager op would).
fn fresh_seed(spec: &KernelSpec) -> KernelSpec {
    match spec {
        KernelSpec::Random { dist, dtype, .. } => {
            KernelSpec::Random { dist: *dist, dtype: *dtype, seed: with_generator(|g| g.next_u64()) }
        }
        other => other.clone(),
    }
}
