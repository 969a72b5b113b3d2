//! `KernelSpec::Custom` on the cpu: the user's host function over the inputs
//! widened to f64, its values rounded once to the output's dtype.

use super::{gather_strided, CpuBuffer};
use crate::backend::api::mismatch;
use crate::backend::View;
use crate::error::{Error, Result};
use crate::kernel::custom::{CpuCall, CpuInput};
use crate::kernel::{CustomKernel, KernelSpec, Scalar};

pub fn run(
    op: &'static str,
    spec: &KernelSpec,
    kernel: &CustomKernel,
    scalars: &[Scalar],
    inputs: &[View],
    out_shape: &[usize],
) -> Result<CpuBuffer> {
    let name = kernel.name;
    let mut ins = Vec::with_capacity(inputs.len());
    for v in inputs {
        let data: Vec<f64> = match v.buffer.as_cpu() {
            Some(CpuBuffer::F32(b)) => gather_strided(b, v.layout).iter().map(|&x| f64::from(x)).collect(),
            Some(CpuBuffer::F64(b)) => gather_strided(b, v.layout),
            _ => return Err(mismatch(op, spec)),
        };
        ins.push(CpuInput { data, shape: v.layout.shape.to_vec() });
    }
    let f64_out = matches!(inputs[0].buffer.as_cpu(), Some(CpuBuffer::F64(_)));
    // An f32 call sees its scalars as a GPU does: rounded to f32.
    let s: Vec<f64> = scalars.iter().map(|s| if f64_out { s.0 } else { f64::from(s.0 as f32) }).collect();
    let call = CpuCall { inputs: &ins, scalars: &s, out_shape };
    let out = (kernel.cpu)(&call)
        .map_err(|m| Error::value(op, format!("custom op '{name}': its cpu function failed: {m}")))?;
    let n: usize = out_shape.iter().product();
    if out.len() != n {
        return Err(Error::value(
            op,
            format!(
                "custom op '{name}': its cpu function returned {} values for an output of shape {out_shape:?} ({n} elements)",
                out.len()
            ),
        ));
    }
    Ok(if f64_out { CpuBuffer::F64(out) } else { CpuBuffer::F32(out.iter().map(|&x| x as f32).collect()) })
}
