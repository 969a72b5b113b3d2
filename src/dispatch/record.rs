//! Capture: while `jit::trace` runs a function, every kernel this module's
//! families dispatch is appended to a `Program` (its spec, the slots and
//! views it read, the slot it made or the views it wrote). Storages are told
//! apart by identity: the function's inputs are registered first, a storage
//! an instruction reads that no instruction made is captured (a parameter, a
//! constant), and every storage seen is kept alive until the capture ends,
//! so no address is reused for another value meanwhile.
//!
//! What a program cannot repeat is a capture error naming the op: a host
//! readback (`to_vec`, `item`) or a transfer between devices inside the
//! function, whose result would be baked in.

use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::program::{Arg, Instr, Program, Source, Value, ValueId};
use crate::shape::Layout;
use crate::tensor::Tensor;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};

struct Recorder {
    program: Program,
    ids: FxHashMap<usize, ValueId>,
    keep: Vec<Storage>,
    /// The first thing that could not be captured.
    error: Option<Error>,
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Whether a capture is running on this thread (checked by every dispatch).
#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.with(|a| a.get())
}

fn key(s: &Storage) -> usize {
    std::sync::Arc::as_ptr(s) as usize
}

impl Recorder {
    fn add(&mut self, s: &Storage, source: Source) -> ValueId {
        let (dtype, len) = {
            let g = s.read();
            (g.dtype(), g.len())
        };
        let id = self.program.values.len();
        self.program.values.push(Value { dtype, device: s.device().clone(), len, source });
        self.ids.insert(key(s), id);
        self.keep.push(s.clone());
        id
    }
    /// The slot of a storage an instruction reads or writes: captured when new.
    fn slot(&mut self, s: &Storage) -> ValueId {
        match self.ids.get(&key(s)) {
            Some(&id) => id,
            None => self.add(s, Source::Captured(s.clone())),
        }
    }
    fn arg(&mut self, s: &Storage, layout: &Layout) -> Arg {
        Arg { value: self.slot(s), layout: layout.clone() }
    }
}

fn with(f: impl FnOnce(&mut Recorder)) {
    RECORDER.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            f(rec)
        }
    })
}

/// Starts a capture with `inputs` as the function's inputs (distinct storages).
pub(crate) fn start(inputs: &[Tensor]) -> Result<()> {
    if active() {
        return Err(Error::value("trace", "a capture is already running (traces do not nest)"));
    }
    let mut rec = Recorder { program: Program::default(), ids: FxHashMap::default(), keep: Vec::new(), error: None };
    for (k, t) in inputs.iter().enumerate() {
        if rec.ids.contains_key(&key(t.storage())) {
            return Err(Error::value(
                "trace",
                format!("input {k} shares its storage with an earlier input (pass separate tensors)"),
            ));
        }
        rec.add(t.storage(), Source::Input(k));
    }
    RECORDER.with(|r| *r.borrow_mut() = Some(rec));
    ACTIVE.with(|a| a.set(true));
    Ok(())
}

/// Ends the capture: the program with `outputs` as its results, or the
/// first capture error.
pub(crate) fn finish(outputs: &[Tensor]) -> Result<Program> {
    let mut rec = take().ok_or_else(|| Error::value("trace", "no capture is running"))?;
    if let Some(e) = rec.error.take() {
        return Err(e);
    }
    rec.program.outputs = outputs.iter().map(|t| rec.arg(t.storage(), t.layout())).collect();
    Ok(rec.program)
}

fn take() -> Option<Recorder> {
    ACTIVE.with(|a| a.set(false));
    RECORDER.with(|r| r.borrow_mut().take())
}

/// Ends the capture, dropping what it recorded (the function failed).
pub(crate) fn stop() {
    drop(take());
}

/// A kernel that made `out` (a new storage) from `inputs`.
pub(crate) fn run(op: &'static str, spec: &KernelSpec, inputs: &[&Tensor], out: &Tensor) {
    let views: Vec<(&Storage, &Layout)> = inputs.iter().map(|t| (t.storage(), t.layout())).collect();
    run_views(op, spec, &views, out)
}

/// `run` with operands given as (storage, view) pairs.
pub(crate) fn run_views(op: &'static str, spec: &KernelSpec, inputs: &[(&Storage, &Layout)], out: &Tensor) {
    with(|r| {
        let inputs = inputs.iter().map(|(s, l)| r.arg(s, l)).collect();
        let id = r.add(out.storage(), Source::Computed);
        r.program.instrs.push(Instr::Run { op, spec: spec.clone(), inputs, out: id, shape: out.dims() });
    })
}

/// A kernel without inputs that made `out`.
pub(crate) fn create(op: &'static str, spec: &KernelSpec, out: &Tensor) {
    with(|r| {
        let id = r.add(out.storage(), Source::Computed);
        r.program.instrs.push(Instr::Create { op, spec: spec.clone(), out: id, shape: out.dims() });
    })
}

/// An in-place kernel that wrote `targets` from `inputs`.
pub(crate) fn into(
    op: &'static str,
    spec: &KernelSpec,
    inputs: &[(&Storage, &Layout)],
    targets: &[(&Storage, &Layout)],
) {
    with(|r| {
        let inputs = inputs.iter().map(|(s, l)| r.arg(s, l)).collect();
        let targets = targets.iter().map(|(s, l)| r.arg(s, l)).collect();
        r.program.instrs.push(Instr::Into { op, spec: spec.clone(), inputs, targets });
    })
}

/// A range check of an index view.
pub(crate) fn check(spec: &KernelSpec, index: &Storage, layout: &Layout) {
    with(|r| {
        let index = r.arg(index, layout);
        r.program.instrs.push(Instr::Check { spec: spec.clone(), index });
    })
}

/// Something a program could not repeat happened in the captured function.
pub(crate) fn refuse(op: &'static str, what: &str) {
    with(|r| {
        if r.error.is_none() {
            r.error = Some(Error::value(
                op,
                format!(
                    "{what} inside a traced function cannot be captured (its result would be baked into the program)"
                ),
            ));
        }
    })
}
