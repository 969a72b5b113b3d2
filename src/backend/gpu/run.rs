//! The GPU backend's `run`: a `KernelSpec` over views, to the WGSL kernels.

use super::{elementwise as g, matmul, reduce, GpuBuffer};
use crate::backend::{Buffer, View};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::shape::Layout;

fn mismatch(op: &'static str, spec: &KernelSpec) -> Error {
    Error::dtype(op, format!("internal dtype or device mismatch in {}", spec.name()))
}

/// The GPU buffers of `inputs`, or an error if one lives elsewhere (no
/// allocation: this runs for every op).
fn gpu_inputs<'a, const N: usize>(
    op: &'static str,
    spec: &KernelSpec,
    inputs: &[View<'a>],
) -> Result<[(&'a GpuBuffer, &'a Layout); N]> {
    let here = |v: &View<'a>| -> Option<&'a GpuBuffer> {
        if let Buffer::Gpu(b) = v.buffer {
            Some(b)
        } else {
            None
        }
    };
    if inputs.len() != N || !inputs.iter().all(|v| here(v).is_some()) {
        return Err(mismatch(op, spec));
    }
    Ok(std::array::from_fn(|i| (here(&inputs[i]).expect("checked above"), inputs[i].layout)))
}

pub fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<GpuBuffer> {
    let float_only = |b: &GpuBuffer| -> Result<()> {
        if b.dtype == DType::F32 {
            Ok(())
        } else {
            Err(Error::dtype(op, format!("expected a float tensor, got {}", b.dtype)))
        }
    };
    match spec {
        KernelSpec::Unary { row, params: [p0, p1] } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            g::unary(op, x, l, row.wgsl, [p0.0, p1.0])
        }
        KernelSpec::Binary { row } => {
            let [(x, la), (y, lb)] = gpu_inputs::<2>(op, spec, inputs)?;
            g::binary(op, x, la, y, lb, out_shape, row.wgsl, DType::F32)
        }
        KernelSpec::Compare { row } => {
            let [(x, la), (y, lb)] = gpu_inputs::<2>(op, spec, inputs)?;
            g::binary(op, x, la, y, lb, out_shape, row.wgsl, DType::Bool)
        }
        KernelSpec::Where => {
            let [c, a, b] = gpu_inputs::<3>(op, spec, inputs)?;
            g::where_(c, a, b, out_shape)
        }
        KernelSpec::Cast { to } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            g::cast(op, x, l, *to)
        }
        KernelSpec::Copy => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            g::cast(op, x, l, x.dtype)
        }
        KernelSpec::Reduce { kind, axes } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            float_only(x)?;
            reduce::reduce(op, x, l, axes, *kind)
        }
        KernelSpec::ArgReduce { axis, max } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            float_only(x)?;
            reduce::arg_reduce(op, x, l, *axis, *max)
        }
        KernelSpec::Matmul { batch } => {
            let [(x, la), (y, lb)] = gpu_inputs::<2>(op, spec, inputs)?;
            matmul::matmul(x, la, y, lb, batch)
        }
        KernelSpec::CopyInto => Err(Error::value(op, "internal: copy_into writes in place (run_into)")),
    }
}

pub fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], out: &mut GpuBuffer, ld: &Layout) -> Result<()> {
    let KernelSpec::CopyInto = spec else {
        return Err(Error::value(op, format!("internal: {} makes a new buffer (run)", spec.name())));
    };
    let [(s, ls)] = gpu_inputs::<1>(op, spec, inputs)?;
    g::copy_into(s, ls, out, ld)
}
