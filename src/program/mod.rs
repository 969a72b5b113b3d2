//! A captured computation as data: the kernel specs a run of eager code
//! dispatched, over numbered value slots (`%0`, `%1`, ...), each read
//! through the view (layout) the eager op read. `dispatch::record` builds a
//! `Program` while `jit::trace` runs a function; `Program::run` replays it
//! straight to the backends (no tensors, no autograd, no argument checks:
//! those ran at capture).
//!
//! A slot is an input of the traced function (bound anew at every run), a
//! storage that existed before the capture (a parameter, optimizer state, a
//! constant: read and written in place by every run, as eager code would),
//! or the result of an instruction. As in `torch.jit.trace`, numbers the
//! traced code computed on the host (a learning rate, Adam's bias
//! corrections, a scalar operand) are part of the specs: a run repeats them.
//! Random fills draw a fresh seed at every run. Host numbers that change
//! between runs (an optimizer's learning rate and step count) are not
//! baked: they live in `host` cells, which `Instr::Host` updates and an
//! instruction's `binds` read into its spec's scalars at every run.
//!
//! Below `dispatch` and above `backend`: this module never sees a tensor.

mod epilogue;
mod fuse;
pub mod host;
mod passes;
mod plan;
mod replay;
mod rewrite;
mod serial;
mod simplify;
mod text;
mod validate;

use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::DType;
use crate::kernel::KernelSpec;
use crate::shape::{Dims, Layout};
use std::sync::Arc;

pub use epilogue::MIN_PRODUCT_OUTPUTS;
pub use fuse::FUSED_OP;
pub use host::{Expr, HostRef, HostScalar, Sym};
pub use passes::PassStats;
pub use plan::MemoryPlan;
pub use replay::Bound;

/// A value slot's number (`%n` in the text form).
pub type ValueId = usize;

/// Where a slot's buffer comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// The k-th input of the traced function: bound at every run.
    Input(usize),
    /// A storage that existed before the capture (parameters, optimizer
    /// state, constants): the program holds it and every run uses it.
    Captured(Storage),
    /// Made by an instruction of the program.
    Computed,
}

/// One value slot: a whole buffer (instructions read views of it).
#[derive(Clone, Debug)]
pub struct Value {
    pub dtype: DType,
    pub device: Device,
    /// Elements in the buffer.
    pub len: usize,
    pub source: Source,
}

/// An operand: a slot and the view of it an instruction reads or writes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Arg {
    pub value: ValueId,
    pub layout: Layout,
}

/// A scalar of an instruction's spec (`KernelSpec::scalar(at)`) that a run
/// computes from host cells instead of repeating the captured number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bind {
    pub at: usize,
    pub expr: Arc<Expr>,
}

/// One step of a program.
#[derive(Clone, Debug)]
pub enum Instr {
    /// `out = spec(inputs)`: a new contiguous buffer of `shape`.
    Run { op: &'static str, spec: KernelSpec, binds: Vec<Bind>, inputs: Vec<Arg>, out: ValueId, shape: Dims },
    /// A kernel without inputs (fill, sequence, random fill) into a new
    /// buffer of `shape` on the out slot's device.
    Create { op: &'static str, spec: KernelSpec, binds: Vec<Bind>, out: ValueId, shape: Dims },
    /// In place: `spec(inputs)` written into the views `targets` (a copy
    /// into a view, the fused Adam update).
    Into { op: &'static str, spec: KernelSpec, binds: Vec<Bind>, inputs: Vec<Arg>, targets: Vec<Arg> },
    /// The range check of an index view (`KernelSpec::IndexCheck`).
    Check { spec: KernelSpec, index: Arg },
    /// On the host: `cell = expr` (an optimizer's step count going up).
    Host { op: &'static str, cell: HostRef, expr: Arc<Expr> },
}

impl Instr {
    /// The kernel it runs (None for a host update).
    pub fn spec(&self) -> Option<&KernelSpec> {
        match self {
            Instr::Run { spec, .. }
            | Instr::Create { spec, .. }
            | Instr::Into { spec, .. }
            | Instr::Check { spec, .. } => Some(spec),
            Instr::Host { .. } => None,
        }
    }
    /// Its spec's scalars that runs compute from host cells.
    pub fn binds(&self) -> &[Bind] {
        match self {
            Instr::Run { binds, .. } | Instr::Create { binds, .. } | Instr::Into { binds, .. } => binds,
            Instr::Check { .. } | Instr::Host { .. } => &[],
        }
    }
}

/// A captured computation: its slots, its instructions in order, and the
/// views its results are.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub values: Vec<Value>,
    pub instrs: Vec<Instr>,
    pub outputs: Vec<Arg>,
}

impl Program {
    /// How many inputs a run binds.
    pub fn inputs(&self) -> usize {
        self.values.iter().filter(|v| matches!(v.source, Source::Input(_))).count()
    }
    /// How many kernels a run dispatches (range checks included, host updates not).
    pub fn kernels(&self) -> usize {
        self.instrs.iter().filter(|i| !matches!(i, Instr::Host { .. })).count()
    }
    /// The host cells the program reads or updates, each once, in order of first use.
    pub fn cells(&self) -> Vec<HostRef> {
        let mut all = Vec::new();
        for instr in &self.instrs {
            if let Instr::Host { cell, expr, .. } = instr {
                expr.cells(&mut all);
                all.push(cell.clone());
            }
            for b in instr.binds() {
                b.expr.cells(&mut all);
            }
        }
        let mut seen = rustc_hash::FxHashSet::default();
        all.retain(|c| seen.insert(c.clone()));
        all
    }
}
