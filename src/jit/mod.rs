//! Capturing eager code into a `Program` (issue 15, first step: trace and
//! replay; guards, caching, passes and export come next).
//!
//! `trace(inputs, f)` runs `f` eagerly once, as usual (autograd, in-place
//! updates and all), while every kernel it dispatches is recorded; it
//! returns `f`'s results and the program. `Traced::run` replays the program
//! on new inputs of the same shapes, dtypes, devices and layouts: the
//! kernels alone, straight to the backends. Parameters and optimizer state
//! the function read or updated are held by the program and updated in place
//! by every run, so a traced training step (forward, `backward()`,
//! `optimizer.step()`) trains when replayed.
//!
//! The rules are `torch.jit.trace`'s:
//! - numbers computed on the host while tracing (a learning rate, Adam's
//!   bias corrections, a scalar operand) are part of the program;
//! - a host readback (`to_vec`, `item`) or a transfer between devices inside
//!   `f` is an error naming the op, at trace time;
//! - a replay records no autograd history and does not update `.grad`
//!   fields: what `f` computes from gradients (an optimizer step) is
//!   replayed, the tensors it leaves in `.grad` are the traced call's;
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

use crate::device::Device;
use crate::dispatch::record;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::program::{PassStats, Program};
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
}

/// A traced function: its program and what its inputs were.
pub struct Traced {
    program: Program,
    inputs: Vec<InputSpec>,
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
    let program = record::finish(&outputs)?;
    Ok((outputs, Traced { program, inputs: inputs.iter().map(InputSpec::of).collect() }))
}

impl Traced {
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Runs the program's passes (common subexpressions, dead code; see
    /// `Program::optimize`) before later runs; returns what they removed.
    pub fn optimize(&mut self) -> PassStats {
        self.program.optimize()
    }

    /// Replays the program on `inputs`, which must match the traced ones in
    /// shape, strides, dtype and device (an error says which differs).
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        const OP: &str = "traced run";
        if inputs.len() != self.inputs.len() {
            return Err(Error::value(OP, format!("expects {} inputs, got {}", self.inputs.len(), inputs.len())));
        }
        for (k, (t, want)) in inputs.iter().zip(&self.inputs).enumerate() {
            let got = InputSpec::of(t);
            if got != *want {
                return Err(Error::value(
                    OP,
                    format!(
                        "input {k} is {} {:?} (strides {:?}) on {}, but the program was traced with {} {:?} (strides {:?}) on {}",
                        got.dtype,
                        got.layout.shape,
                        got.layout.strides,
                        got.device,
                        want.dtype,
                        want.layout.shape,
                        want.layout.strides,
                        want.device
                    ),
                ));
            }
        }
        let storages: Vec<_> = inputs.iter().map(|t| t.storage().clone()).collect();
        let outs = self.program.run_storages(&storages)?;
        Ok(outs
            .into_iter()
            .map(|b| {
                let dtype = b.storage.read().dtype();
                Tensor::from_storage(b.storage, b.layout, dtype)
            })
            .collect())
    }
}
