//! Capturing eager code into a `Program` and replaying it.
//!
//! - `compile(f)` is the everyday form (PaddlePaddle's `to_static`,
//!   `torch.compile`): a callable whose first call runs `f` eagerly while
//!   recording, and whose later calls replay the program when nothing it
//!   assumed changed (see `Compiled`).
//! - `trace(inputs, f)` records one call and hands the program over
//!   (`Traced::run` replays it; `torch.jit.trace`).
//!
//! A replay runs the kernels alone, straight to the backends. Parameters and
//! optimizer state the function read or updated are held by the program and
//! updated in place by every run, so a captured training step (forward,
//! `backward()`, gradient clipping, `optimizer.step()`) trains when replayed.
//!
//! The rules:
//! - host numbers an optimizer computes from its hyperparameters and step
//!   counts (a learning rate a schedule changes, Adam's bias corrections)
//!   are recomputed at every run from the optimizer's cells, and the step
//!   counts go up as in eager mode; other numbers the function computed on
//!   the host (a scalar operand, `x.mul_scalar(0.5)`) are part of the program;
//! - a host readback (`to_vec`, `item`) or a transfer between devices inside
//!   `f` is an error naming the op, at capture time;
//! - a replay records no autograd history; the `.grad` each tensor was left
//!   with is assigned again by every run (a gradient read before it was
//!   assigned, accumulation across calls, is an input bound at every run);
//! - random fills draw fresh numbers at every run.
//!
//! ```
//! use skiff::{jit, DType, Tensor};
//! # fn main() -> skiff::Result<()> {
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let x = Tensor::ones(&[3, 2], DType::F32)?;
//! let (out, traced) = jit::trace(&[x], |xs| Ok(vec![xs[0].matmul(&w)?.relu()?]))?;
//! println!("{}", traced.program());
//! let again = traced.run(&[Tensor::full(&[3, 2], 2.0, DType::F32)?])?;
//! assert_eq!(again[0].to_f32_vec()?, out[0].mul_scalar(2.0)?.to_f32_vec()?);
//! # Ok(())
//! # }
//! ```

mod compile;
mod export;

pub use compile::{compile, Compiled};
pub use export::{inference_bytes, load, load_inference_model, save_inference_model};

use crate::backend::ReplayState;
use crate::device::Device;
use crate::dispatch::record::{self, Stamp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::program::{MemoryPlan, PassStats, Program};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// What a traced program assumed of one input.
#[derive(Clone, Debug, PartialEq)]
struct InputSpec {
    layout: Layout,
    dtype: DType,
    device: Device,
    len: usize,
}

impl InputSpec {
    fn of(t: &Tensor) -> InputSpec {
        InputSpec { layout: t.layout().clone(), dtype: t.dtype(), device: t.device(), len: t.storage().read().len() }
    }
    fn describe(&self) -> String {
        let l = &self.layout;
        format!(
            "{} {:?} (strides {:?}, offset {} in a storage of {} elements) on {}",
            self.dtype, l.shape, l.strides, l.offset, self.len, self.device
        )
    }
}

/// A traced function: its program, what its inputs were, and the `.grad`
/// fields it reads and assigns.
pub struct Traced {
    program: Program,
    /// The program's memory plan (kept in step with `program`).
    plan: MemoryPlan,
    /// What runs keep on the program's device (its GPU arena and prebuilt
    /// work); made anew whenever the program or plan changes.
    kept: ReplayState,
    inputs: Vec<InputSpec>,
    /// Tensors whose `.grad` the program reads as extra inputs (after the
    /// function's), with what those gradients were.
    grad_inputs: Vec<(Tensor, InputSpec)>,
    /// Tensors the program assumes have no `.grad` when it starts.
    grad_absent: Vec<Tensor>,
    /// Tensors whose `.grad` a run assigns: from this output, or cleared.
    grad_outputs: Vec<(Tensor, Option<usize>)>,
    /// The host state the program assumed (parameter cells, training
    /// flags, optimizer state), at the versions it read.
    assumptions: Vec<(Stamp, u64)>,
}

/// Runs `f(inputs)` eagerly while recording every kernel it dispatches;
/// returns its results and the traced program. An error of `f`, or anything
/// a program cannot repeat, ends the trace with that error.
pub fn trace(inputs: &[Tensor], f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>) -> Result<(Vec<Tensor>, Traced)> {
    record::start(inputs)?;
    let outputs = match f(inputs) {
        Ok(o) => o,
        Err(e) => {
            record::stop();
            return Err(e);
        }
    };
    let capture = record::finish(&outputs)?;
    let grad_inputs = capture.grad_inputs.into_iter().map(|(t, g)| (t, InputSpec::of(&g))).collect();
    let plan = capture.program.plan_memory();
    let traced = Traced {
        plan,
        kept: ReplayState::default(),
        program: capture.program,
        inputs: inputs.iter().map(InputSpec::of).collect(),
        grad_inputs,
        grad_absent: capture.grad_absent,
        grad_outputs: capture.grad_outputs,
        assumptions: capture.assumptions,
    };
    Ok((outputs, traced))
}

impl Traced {
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// What each input must be: its dtype and shape.
    pub fn input_specs(&self) -> impl Iterator<Item = (DType, &[usize])> + '_ {
        self.inputs.iter().map(|i| (i.dtype, i.layout.shape.as_slice()))
    }

    /// Runs the program's passes (common subexpressions, dead code; see
    /// `Program::optimize`) before later runs; returns what they removed.
    pub fn optimize(&mut self) -> PassStats {
        // With the registry's rows: a rewrite may write a kernel of its own.
        let stats = crate::kernel::with_rows(crate::ops::row_table(), || self.program.optimize());
        self.plan = self.program.plan_memory();
        self.kept = ReplayState::default();
        stats
    }

    /// How a run uses memory: the arena its intermediate results share,
    /// its outputs, and the peak (see `program::MemoryPlan`).
    pub fn memory_plan(&self) -> &MemoryPlan {
        &self.plan
    }

    /// What host state the program assumed has changed since (None while all holds).
    fn stale(&self) -> Option<String> {
        self.assumptions.iter().find_map(|(stamp, seen)| stamp.moved_since(*seen))
    }

    /// Why `inputs` (and the `.grad` fields the program reads) do not fit
    /// the program; None when they do.
    fn mismatch(&self, inputs: &[Tensor]) -> Option<String> {
        if inputs.len() != self.inputs.len() {
            return Some(format!("expects {} inputs, got {}", self.inputs.len(), inputs.len()));
        }
        for (k, (t, want)) in inputs.iter().zip(&self.inputs).enumerate() {
            let got = InputSpec::of(t);
            if got != *want {
                return Some(format!(
                    "input {k} is {}, but the program was traced with {}",
                    got.describe(),
                    want.describe()
                ));
            }
        }
        if let Some(what) = self.stale() {
            return Some(format!("host state changed since the capture ({what})"));
        }
        if let Some(t) = self.grad_absent.iter().find(|t| t.grad().is_some()) {
            return Some(format!(
                "a tensor of shape {:?} has a .grad now, but the program was traced without one",
                t.shape()
            ));
        }
        for (t, want) in &self.grad_inputs {
            match t.grad().map(|g| InputSpec::of(&g)) {
                None => {
                    return Some(format!(
                        "the program adds to the .grad of a tensor of shape {:?}, which has none now",
                        t.shape()
                    ))
                }
                Some(got) if got != *want => {
                    return Some(format!(
                        "the .grad of a tensor of shape {:?} is {}, but the program was traced with {}",
                        t.shape(),
                        got.describe(),
                        want.describe()
                    ))
                }
                Some(_) => {}
            }
        }
        None
    }

    /// Replays the program on `inputs`, which must match the traced ones in
    /// shape, strides, dtype and device (an error says which differs).
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        if let Some(why) = self.mismatch(inputs) {
            return Err(Error::value("traced run", why));
        }
        self.replay(inputs)
    }

    /// `run` without the input checks (`Compiled` matched them already).
    fn replay(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut storages: Vec<_> = inputs.iter().map(|t| t.storage().clone()).collect();
        for (t, _) in &self.grad_inputs {
            let g = t.grad().ok_or_else(|| Error::value("traced run", "a .grad the program reads is gone"))?;
            storages.push(g.storage().clone());
        }
        let mut outs: Vec<Option<Tensor>> = self
            .program
            .run_kept(&storages, Some(&self.plan), Some(&self.kept))?
            .into_iter()
            .map(|b| {
                let dtype = b.storage.read().dtype();
                Some(Tensor::from_storage(b.storage, b.layout, dtype))
            })
            .collect();
        for (t, index) in &self.grad_outputs {
            t.store_grad(index.and_then(|i| outs[i].clone()));
        }
        let user = outs.len() - self.grad_outputs.iter().filter(|(_, i)| i.is_some()).count();
        Ok(outs.drain(..user).map(|t| t.expect("every output is made")).collect())
    }
}
