//! Capture: while `jit::trace` runs a function, every kernel this module's
//! families dispatch is appended to a `Program` (its spec, the slots and
//! views it read, the slot it made or the views it wrote). Storages are told
//! apart by identity: the function's inputs are registered first, a storage
//! an instruction reads that no instruction made is captured (a parameter, a
//! constant), and every storage seen is held by a weak reference until the
//! capture ends: its allocation (the address the slot is keyed by) cannot be
//! reused for another value meanwhile, while its buffer is freed as eagerly
//! as without a capture.
//!
//! What a program cannot repeat is a capture error naming the op: a host
//! readback (`to_vec`, `item`) or a transfer between devices inside the
//! function, whose result would be baked in, or a callback (a tensor hook).
//!
//! Host state the program does not hold is tracked too:
//! - host numbers: optimizers do their arithmetic on `Sym`s over host
//!   cells; `host` records a cell update and `bind` ties a kernel scalar to
//!   the expression it was computed by (checked against the recorded spec);
//! - `.grad` fields: a gradient that existed before the capture and is read
//!   in it (accumulation across calls) becomes an extra program input, bound
//!   to the parameter's `.grad` at every run; the last `.grad` each tensor
//!   was given becomes an extra output, which the run assigns back;
//! - everything else a program assumed (which tensor a module's parameter
//!   cell holds, a layer's training flag, which state tensors an optimizer
//!   has and which options it has on) is a `Stamp`, a version counter its
//!   holder bumps on change: the capture notes the version of every stamp
//!   the function read, and a program runs only while they all hold.

use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::program::{Arg, Bind, Expr, HostRef, Instr, Program, Source, Sym, Value, ValueId};
use crate::shape::Layout;
use crate::tensor::Tensor;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

struct Recorder {
    program: Program,
    ids: FxHashMap<usize, ValueId>,
    /// Weak references to every storage seen (see the module docs).
    keep: Vec<std::sync::Weak<crate::backend::StorageInner>>,
    /// The first thing that could not be captured.
    error: Option<Error>,
    /// How many inputs the function has (gradient inputs are numbered after them).
    inputs: usize,
    /// Tensors whose `.grad` (made before the capture) the function read, and that gradient.
    grad_inputs: Vec<(Tensor, Tensor)>,
    /// Tensors the function found without a `.grad`.
    grad_absent: Vec<Tensor>,
    /// The last `.grad` each tensor was given in the capture.
    grad_outputs: Vec<(Tensor, Option<Tensor>)>,
    /// The host state the function read, at the version it read.
    assumptions: Vec<(Stamp, u64)>,
}

/// What a capture made: the program (its outputs are the function's, then
/// the assigned gradients), the tensors whose `.grad` the extra inputs
/// read, in input order (with the gradient read), those found without
/// one, the tensors whose `.grad` a run assigns (with the output index, or None to clear it), and the host
/// state it assumed.
pub(crate) struct Capture {
    pub program: Program,
    pub grad_inputs: Vec<(Tensor, Tensor)>,
    pub grad_absent: Vec<Tensor>,
    pub grad_outputs: Vec<(Tensor, Option<usize>)>,
    pub assumptions: Vec<(Stamp, u64)>,
}

/// The version of one piece of host state captured programs depend on (a
/// parameter cell, a layer's training flag, an optimizer's state): its
/// holder calls `read` where code branches on it or takes a tensor from it,
/// and `changed` when it changes.
#[derive(Clone)]
pub struct Stamp(Arc<StampInner>);

struct StampInner {
    version: AtomicU64,
    what: String,
    last_change: Mutex<String>,
}

impl Stamp {
    pub fn new(what: impl Into<String>) -> Stamp {
        let inner =
            StampInner { version: AtomicU64::new(0), what: what.into(), last_change: Mutex::new(String::new()) };
        Stamp(Arc::new(inner))
    }
    /// While capturing: the program assumes the state as it is now.
    #[inline]
    pub fn read(&self) {
        if active() {
            with(|r| {
                if !r.assumptions.iter().any(|(s, _)| Arc::ptr_eq(&s.0, &self.0)) {
                    r.assumptions.push((self.clone(), self.version()));
                }
            })
        }
    }
    /// The state changed (`why` is kept for the capture log).
    pub fn changed(&self, why: &str) {
        self.0.version.fetch_add(1, Ordering::Relaxed);
        *self.0.last_change.lock().unwrap_or_else(|e| e.into_inner()) = why.to_string();
    }
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Relaxed)
    }
    /// What changed, when the version is no longer `seen`.
    pub fn moved_since(&self, seen: u64) -> Option<String> {
        (self.version() != seen).then(|| {
            let why = self.0.last_change.lock().unwrap_or_else(|e| e.into_inner()).clone();
            format!("{}: {why}", self.0.what)
        })
    }
}

impl std::fmt::Debug for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stamp({} at {})", self.0.what, self.version())
    }
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
        self.keep.push(std::sync::Arc::downgrade(s));
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
    let mut rec = Recorder {
        program: Program::default(),
        ids: FxHashMap::default(),
        keep: Vec::new(),
        error: None,
        inputs: inputs.len(),
        grad_inputs: Vec::new(),
        grad_absent: Vec::new(),
        grad_outputs: Vec::new(),
        assumptions: Vec::new(),
    };
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

/// Ends the capture: the program with `outputs` (then the gradients the
/// function assigned) as its results, or the first capture error.
pub(crate) fn finish(outputs: &[Tensor]) -> Result<Capture> {
    let mut rec = take().ok_or_else(|| Error::value("trace", "no capture is running"))?;
    if let Some(e) = rec.error.take() {
        return Err(e);
    }
    rec.program.outputs = outputs.iter().map(|t| rec.arg(t.storage(), t.layout())).collect();
    let mut grad_outputs = Vec::new();
    for (t, g) in std::mem::take(&mut rec.grad_outputs) {
        let index = g.map(|g| {
            let arg = rec.arg(g.storage(), g.layout());
            rec.program.outputs.push(arg);
            rec.program.outputs.len() - 1
        });
        grad_outputs.push((t, index));
    }
    Ok(Capture {
        program: rec.program,
        grad_inputs: rec.grad_inputs,
        grad_absent: rec.grad_absent,
        grad_outputs,
        assumptions: rec.assumptions,
    })
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
        let shape = out.dims();
        r.program.instrs.push(Instr::Run { op, spec: spec.clone(), binds: Vec::new(), inputs, out: id, shape });
    })
}

/// A kernel without inputs that made `out`.
pub(crate) fn create(op: &'static str, spec: &KernelSpec, out: &Tensor) {
    with(|r| {
        let id = r.add(out.storage(), Source::Computed);
        let shape = out.dims();
        r.program.instrs.push(Instr::Create { op, spec: spec.clone(), binds: Vec::new(), out: id, shape });
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
        r.program.instrs.push(Instr::Into { op, spec: spec.clone(), binds: Vec::new(), inputs, targets });
    })
}

/// Whether `s` was made by a kernel this capture recorded (not an input, nor
/// a storage captured from outside): every run of the program makes it again
/// with the same kernels.
pub(crate) fn computed(s: &Storage) -> bool {
    let mut made = false;
    with(|r| made = r.ids.get(&key(s)).is_some_and(|&id| matches!(r.program.values[id].source, Source::Computed)));
    made
}

/// A range check of an index view.
pub(crate) fn check(spec: &KernelSpec, index: &Storage, layout: &Layout) {
    with(|r| {
        let index = r.arg(index, layout);
        r.program.instrs.push(Instr::Check { spec: spec.clone(), index });
    })
}

/// Something a program could not repeat happened in the captured function:
/// the error to return from there (also kept, in case the function drops it).
pub(crate) fn refuse(op: &'static str, what: &str) -> Error {
    let error = || {
        Error::value(
            op,
            format!("{what} inside a traced function cannot be captured (its result would be baked into the program)"),
        )
    };
    with(|r| {
        if r.error.is_none() {
            r.error = Some(error());
        }
    });
    error()
}

/// A host update: `cell = expr` at this point of every run.
pub(crate) fn host(op: &'static str, cell: &HostRef, expr: Arc<Expr>) {
    with(|r| r.program.instrs.push(Instr::Host { op, cell: cell.clone(), expr }))
}

/// How many instructions the capture holds (a mark for `bind`).
pub(crate) fn mark() -> usize {
    let mut n = 0;
    with(|r| n = r.program.instrs.len());
    n
}

/// Ties scalar `at` of the one kernel recorded since `mark` whose scalar
/// there is `sym`'s value to `sym`'s expression. A symbol without one (a
/// constant) binds nothing; none or several candidates is a capture error
/// (the run could not tell which number to recompute).
pub(crate) fn bind(op: &'static str, mark: usize, at: usize, sym: &Sym) {
    let Some(expr) = &sym.expr else { return };
    with(|r| {
        let bits = sym.value.to_bits();
        let from = mark.min(r.program.instrs.len());
        let mut found = r.program.instrs[from..]
            .iter_mut()
            .filter(|i| i.spec().and_then(|s| s.scalars().get(at).copied()).is_some_and(|s| s.0.to_bits() == bits));
        match (found.next(), found.next()) {
            (Some(instr), None) => {
                if let Instr::Run { binds, .. } | Instr::Create { binds, .. } | Instr::Into { binds, .. } = instr {
                    binds.retain(|b| b.at != at);
                    binds.push(Bind { at, expr: expr.clone() });
                }
            }
            (first, _) => {
                if r.error.is_none() {
                    let how = if first.is_none() { "no kernel" } else { "several kernels" };
                    r.error = Some(Error::value(
                        op,
                        format!("capture: {how} read the host number {expr} = {} as scalar {at}", sym.value),
                    ));
                }
            }
        }
    })
}

/// `t.grad()` returned `g` while capturing. Unless the function gave `t`
/// a gradient earlier, `g` is what the call found: a gradient made before
/// the capture becomes an input bound to `t`'s `.grad` at every run, and
/// no gradient is an assumption (a run with one would drop it).
pub(crate) fn grad_read(t: &Tensor, g: Option<&Tensor>) {
    with(|r| {
        let seen = |list: &[Tensor]| list.iter().any(|p| p.same_tensor(t));
        if r.grad_outputs.iter().any(|(p, _)| p.same_tensor(t))
            || r.grad_inputs.iter().any(|(p, _)| p.same_tensor(t))
            || seen(&r.grad_absent)
        {
            return;
        }
        let Some(g) = g else {
            r.grad_absent.push(t.clone());
            return;
        };
        let id = r.ids.get(&key(g.storage())).copied();
        if id.is_some_and(|id| !matches!(r.program.values[id].source, Source::Captured(_))) {
            return;
        }
        let input = r.inputs + r.grad_inputs.len();
        match id {
            Some(id) => r.program.values[id].source = Source::Input(input),
            None => {
                r.add(g.storage(), Source::Input(input));
            }
        }
        r.grad_inputs.push((t.clone(), g.clone()));
    })
}

/// `t`'s `.grad` was set to `g` (or cleared) while capturing.
pub(crate) fn grad_written(t: &Tensor, g: Option<&Tensor>) {
    with(|r| {
        r.grad_outputs.retain(|(p, _)| !p.same_tensor(t));
        r.grad_outputs.push((t.clone(), g.cloned()));
    })
}
