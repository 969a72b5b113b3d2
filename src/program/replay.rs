//! Running a program: each instruction's spec over views of its slots,
//! straight to the backends.

use super::{Arg, Bind, Instr, MemoryPlan, Program, Source, ValueId};
use crate::backend::{self, new_storage, ReplaySession, ReplayState, SlotInfo, Storage, View, ViewMut};
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
        self.run_kept(inputs, plan, None)
    }

    /// `run_storages` with `state`, what the program keeps on its device
    /// between runs: on a GPU its arena buffers (each planned slot is
    /// written into its arena buffer) and its prebuilt work (see
    /// `backend::replay`); `state` must only ever see this program and `plan`.
    pub fn run_kept(
        &self,
        inputs: &[Storage],
        plan: Option<&MemoryPlan>,
        state: Option<&ReplayState>,
    ) -> Result<Vec<Bound>> {
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
        let mut session = match (plan, state) {
            (Some(plan), Some(state)) => self.session(plan, state, &slots)?,
            _ => None,
        };
        for (i, instr) in self.instrs.iter().enumerate() {
            if let Some(s) = session.as_mut().filter(|_| !matches!(instr, Instr::Host { .. })) {
                let out = match instr {
                    Instr::Run { out, .. } | Instr::Create { out, .. } => Some(*out),
                    _ => None,
                };
                if s.begin(i, out) {
                    // Recorded from what the session kept: the result is its arena slot.
                    if let Some(v) = out {
                        slots[v] = s.arena_storage(v);
                    }
                    if let Instr::Into { targets, .. } = instr {
                        for t in targets {
                            slot(&slots, t)?.bump_version();
                        }
                    }
                    release_after(&mut slots, plan, i);
                    continue;
                }
            }
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
            if let (Some(s), Some(plan)) = (session.as_mut(), plan) {
                if !matches!(instr, Instr::Host { .. }) {
                    s.end(i, self.may_prebuild(instr, plan));
                }
            }
            release_after(&mut slots, plan, i);
        }
        drop(session);
        self.outputs.iter().map(|a| Ok(Bound { storage: slot(&slots, a)?, layout: a.layout.clone() })).collect()
    }
}

impl Program {
    /// Opens the run's session with `state` (None on the cpu).
    fn session<'s>(
        &self,
        plan: &MemoryPlan,
        state: &'s ReplayState,
        slots: &[Option<Storage>],
    ) -> Result<Option<ReplaySession<'s>>> {
        let infos: Vec<SlotInfo> = self
            .values
            .iter()
            .enumerate()
            .map(|(v, value)| SlotInfo {
                arena: plan.buffer_of.get(v).copied().flatten(),
                dtype: value.dtype,
                device: &value.device,
                len: value.len,
                captured: match value.source {
                    Source::Captured(_) => slots[v].as_ref(),
                    _ => None,
                },
            })
            .collect();
        state.start(plan.buffers.len(), &infos, self.instrs.len())
    }

    /// Whether a session may record `instr` once and repeat that record:
    /// it binds no scalar computed per run, is no range check, and every
    /// slot it reads or writes is captured or in the arena (inputs and
    /// outputs are new buffers every run).
    fn may_prebuild(&self, instr: &Instr, plan: &MemoryPlan) -> bool {
        let fixed = |v: ValueId| {
            matches!(self.values[v].source, Source::Captured(_)) || plan.buffer_of.get(v).copied().flatten().is_some()
        };
        instr.binds().is_empty()
            && match instr {
                Instr::Run { inputs, out, .. } => fixed(*out) && inputs.iter().all(|a| fixed(a.value)),
                Instr::Create { spec, out, .. } => fixed(*out) && !matches!(spec, KernelSpec::Random { .. }),
                Instr::Into { inputs, targets, .. } => inputs.iter().chain(targets).all(|a| fixed(a.value)),
                Instr::Check { .. } | Instr::Host { .. } => false,
            }
    }
}

/// Releases the computed slots whose last use is instruction `i`.
fn release_after(slots: &mut [Option<Storage>], plan: Option<&MemoryPlan>, i: usize) {
    if let Some(done) = plan.and_then(|p| p.last_use.get(i)) {
        for &v in done {
            slots[v] = None;
        }
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
