//! Ops written by their users: a WGSL function for the GPU, a host function
//! for the cpu, a shape rule, and a backward written with skiff ops (so
//! gradients of gradients work) or with further custom ops.
//!
//! The WGSL defines `fn compute(i: u32) -> f32`, the value of output element
//! `i` in row-major order. It reads input `k` as `Xk` (`X0`, `X1`, ...), a
//! contiguous `array<f32>`, and may call `numel()`, `out_rank()`,
//! `out_dim(d)`, `in_rank(k)`, `in_dim(k, d)`, `in_numel(k)`, `scalar(j)`
//! (the call's numbers, as f32) and `bcast(k, i)` (the element of input `k`
//! that output element `i` reads under broadcasting). Natively the source is
//! validated with naga at registration; errors name the line of the user's
//! source. The host function gets the inputs widened to f64 (and the same
//! helpers on [`CpuCall`]); its values are rounded to the inputs' dtype.
//!
//! ```
//! use skiff::custom::{CpuCall, CustomOp};
//! use skiff::Tensor;
//!
//! # fn main() -> skiff::Result<()> {
//! // x * sigmoid(x) in one kernel, differentiable twice.
//! let silu = CustomOp::builder("doc_silu", 1)
//!     .wgsl("fn compute(i: u32) -> f32 { let x = X0[i]; return x / (1.0 + exp(-x)); }")
//!     .cpu(|c: &CpuCall| Ok(c.inputs[0].data.iter().map(|x| x / (1.0 + (-x).exp())).collect()))
//!     .backward(|b| {
//!         let s = b.inputs[0].sigmoid()?;
//!         // d/dx x s(x) = s + x s (1 - s)
//!         let ds = s.add(&b.inputs[0].mul(&s)?.mul(&s.neg()?.add_scalar(1.0)?)?)?;
//!         Ok(vec![Some(b.grad.mul(&ds)?)])
//!     })
//!     .register()?;
//! let x = Tensor::from_vec(vec![-1.0f32, 0.0, 2.0], &[3])?.requires_grad_(true)?;
//! let y = silu.call(&[&x])?;
//! y.sum_all()?.backward()?;
//! assert!((y.to_vec::<f32>()?[2] - 2.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-6);
//! # Ok(())
//! # }
//! ```

use crate::autograd::{apply_function, Function, FunctionCtx};
use crate::error::{Error, Result};
use crate::kernel::custom::{self as kernel, CpuFn, ShapeFn};
use crate::kernel::CustomKernel;
use crate::tensor::Tensor;
use std::sync::Arc;

pub use crate::kernel::custom::{CpuCall, CpuInput, CUSTOM_MAX_INPUTS, CUSTOM_MAX_RANK};

/// What a custom op's backward gets: the call's inputs and output, the
/// gradient of the output, and the call's scalars. It returns one gradient
/// per input (None where there is none), made with skiff ops: they are
/// recorded when the caller asked for `create_graph`.
pub struct BackwardCall<'a> {
    pub inputs: &'a [Tensor],
    pub output: &'a Tensor,
    pub grad: &'a Tensor,
    pub scalars: &'a [f64],
}

/// A custom op's backward.
pub type BackwardFn = dyn Fn(&BackwardCall) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// A registered custom op: call it on tensors like any op.
#[derive(Clone)]
pub struct CustomOp {
    kernel: Arc<CustomKernel>,
    backward: Option<Arc<BackwardFn>>,
}

/// Collects a custom op's parts; [`CustomOpBuilder::register`] checks and registers it.
pub struct CustomOpBuilder {
    name: String,
    inputs: usize,
    scalars: usize,
    wgsl: Option<String>,
    cpu: Option<Box<CpuFn>>,
    shape: Option<Box<ShapeFn>>,
    backward: Option<Arc<BackwardFn>>,
}

impl CustomOpBuilder {
    /// The GPU kernel: WGSL defining `fn compute(i: u32) -> f32` (see the module docs).
    pub fn wgsl(mut self, source: impl Into<String>) -> Self {
        self.wgsl = Some(source.into());
        self
    }
    /// The cpu kernel: the output's elements, row-major, from the inputs in f64.
    pub fn cpu(
        mut self,
        f: impl Fn(&CpuCall) -> std::result::Result<Vec<f64>, String> + Send + Sync + 'static,
    ) -> Self {
        self.cpu = Some(Box::new(f));
        self
    }
    /// The output's shape from the inputs' shapes (default: they broadcast).
    pub fn shape(
        mut self,
        f: impl Fn(&[&[usize]]) -> std::result::Result<Vec<usize>, String> + Send + Sync + 'static,
    ) -> Self {
        self.shape = Some(Box::new(f));
        self
    }
    /// How many numbers each call passes (`call_with`); default none.
    pub fn scalars(mut self, n: usize) -> Self {
        self.scalars = n;
        self
    }
    /// The gradients of the inputs. Without one, a backward through the op is an error.
    pub fn backward(
        mut self,
        f: impl Fn(&BackwardCall) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    ) -> Self {
        self.backward = Some(Arc::new(f));
        self
    }

    /// Checks the parts (natively compiling the WGSL with naga) and registers
    /// the kernel under the op's name for the life of the process.
    pub fn register(self) -> Result<CustomOp> {
        let name = crate::kernel::intern(&self.name);
        let missing = |what: &str| Error::value(name, format!("custom op '{name}' needs {what}"));
        let kernel = CustomKernel {
            name,
            inputs: self.inputs,
            scalars: self.scalars,
            wgsl: self.wgsl.ok_or_else(|| missing("its WGSL (.wgsl(...))"))?,
            cpu: self.cpu.ok_or_else(|| missing("a cpu function (.cpu(...))"))?,
            shape: self.shape,
        };
        kernel.check()?;
        #[cfg(not(target_arch = "wasm32"))]
        kernel.validate()?;
        Ok(CustomOp { kernel: kernel::register(kernel)?, backward: self.backward })
    }
}

impl CustomOp {
    /// A new op named `name` (letters, digits, `_`, `.`, `-`) reading `inputs` tensors.
    pub fn builder(name: &str, inputs: usize) -> CustomOpBuilder {
        CustomOpBuilder {
            name: name.to_string(),
            inputs,
            scalars: 0,
            wgsl: None,
            cpu: None,
            shape: None,
            backward: None,
        }
    }

    /// The op's name.
    pub fn name(&self) -> &'static str {
        self.kernel.name
    }

    /// The whole WGSL kernel a GPU compiles (skiff's prelude, the bindings,
    /// the user's source and `main`), and the line the user's source starts on.
    pub fn kernel_source(&self) -> (String, usize) {
        (self.kernel.source(), self.kernel.first_line())
    }

    /// Compiles the op's kernel with `device`'s own WGSL compiler (the
    /// browser's, where registration could not use naga; natively naga
    /// already checked it): an error pointing at the user's line. On the
    /// cpu there is nothing to compile.
    pub async fn compile(&self, device: &crate::device::Device) -> Result<()> {
        let errors = crate::backend::compile_errors(device, &self.kernel.source()).await;
        match errors.into_iter().next() {
            Some((at, message)) => Err(self.kernel.compile_error(at, &message)),
            None => Ok(()),
        }
    }

    /// Runs the op (recorded for backward when an input requires grad).
    pub fn call(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.call_with(inputs, &[])
    }

    /// Runs the op with the call's scalars.
    pub fn call_with(&self, inputs: &[&Tensor], scalars: &[f64]) -> Result<Tensor> {
        crate::dispatch::custom::same_device(self.kernel.name, inputs)?;
        let f = Arc::new(Apply { op: self.clone(), scalars: scalars.to_vec() });
        let owned: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
        Ok(apply_function(f, &owned)?.remove(0))
    }

    /// The op registered as `name` (here or from JS), without a backward:
    /// differentiating through it is an error.
    pub fn find(name: &str) -> Option<CustomOp> {
        kernel::find(name).map(|kernel| CustomOp { kernel, backward: None })
    }
}

/// One call of a custom op as an autograd function: the kernel forward, the
/// user's backward.
struct Apply {
    op: CustomOp,
    scalars: Vec<f64>,
}

impl Function for Apply {
    fn name(&self) -> String {
        self.op.kernel.name.to_string()
    }

    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let y = crate::dispatch::custom::run(&self.op.kernel, &refs, &self.scalars)?;
        if self.op.backward.is_some() {
            let mut saved = refs.clone();
            saved.push(&y);
            ctx.save_for_backward(&saved);
        }
        Ok(vec![y])
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let op = self.op.kernel.name;
        let Some(backward) = &self.op.backward else {
            let m = format!("custom op '{op}' has no backward: register one with .backward(...) to differentiate it");
            return Err(Error::autograd(op, m));
        };
        let saved = ctx.saved_tensors();
        let (inputs, output) = saved.split_at(saved.len() - 1);
        let call = BackwardCall { inputs, output: &output[0], grad: &grads[0], scalars: &self.scalars };
        let gs = backward(&call)?;
        if gs.len() != inputs.len() {
            let m = format!("custom op '{op}': backward returned {} gradients for {} inputs", gs.len(), inputs.len());
            return Err(Error::autograd(op, m));
        }
        for (k, (g, x)) in gs.iter().zip(inputs).enumerate() {
            if let Some(g) = g.as_ref().filter(|g| g.shape() != x.shape()) {
                let m = format!(
                    "custom op '{op}': backward returned a gradient of shape {:?} for input {k} of shape {:?}",
                    g.shape(),
                    x.shape()
                );
                return Err(Error::autograd(op, m));
            }
        }
        Ok(gs)
    }
}
