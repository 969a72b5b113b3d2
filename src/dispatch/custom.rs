//! Dispatch for user-written kernels (`skiff::custom`): the call checked
//! against what the op was registered with, its `KernelSpec::Custom` over
//! the inputs' views.

use crate::backend::{self, View};
use crate::error::{Error, Result};
use crate::kernel::{CustomKernel, KernelSpec, Scalar};
use crate::tensor::Tensor;
use std::sync::Arc;

/// An error naming custom op `op` unless `inputs` are on one device.
pub fn same_device(op: &'static str, inputs: &[&Tensor]) -> Result<()> {
    match inputs.iter().find(|t| t.device() != inputs[0].device()) {
        Some(bad) => {
            let found = format!("{} and {} in custom op '{op}'", inputs[0].device(), bad.device());
            Err(Error::Device { op, found })
        }
        None => Ok(()),
    }
}

/// Runs `kernel` over `inputs` with `scalars` into a new tensor.
pub fn run(kernel: &Arc<CustomKernel>, inputs: &[&Tensor], scalars: &[f64]) -> Result<Tensor> {
    let op = kernel.name;
    same_device(op, inputs)?;
    let dtypes: Vec<_> = inputs.iter().map(|t| t.dtype()).collect();
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let (dtype, shape) = kernel.output(&dtypes, &shapes, scalars.len())?;
    super::room_for(op, inputs[0], &shape, dtype)?;
    let spec = KernelSpec::Custom { kernel: kernel.clone(), scalars: scalars.iter().map(|&v| Scalar(v)).collect() };
    let guards: Vec<_> = inputs.iter().map(|t| t.storage().read()).collect();
    let views: Vec<View> = guards.iter().zip(inputs).map(|(g, t)| View::new(g, t.layout())).collect();
    let out = backend::run(op, &spec, &views, &shape)?;
    drop(views);
    drop(guards);
    let out = Tensor::from_buffer(out, &shape);
    if super::record::active() {
        super::record::run(op, &spec, inputs, &out);
    }
    Ok(out)
}
