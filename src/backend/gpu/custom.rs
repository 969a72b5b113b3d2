//! `KernelSpec::Custom` on the GPU: the user's `compute(i)` wrapped in a
//! kernel (`kernel::custom`), one invocation per output element, over
//! contiguous f32 copies of inputs that are not already.

use super::elementwise as g;
use super::kernels::launch;
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{CustomKernel, Scalar};
use crate::shape::Layout;

pub fn run(
    op: &'static str,
    kernel: &CustomKernel,
    scalars: &[Scalar],
    inputs: &[(&GpuBuffer, &Layout)],
    out_shape: &[usize],
) -> Result<GpuBuffer> {
    let Some(&(first, _)) = inputs.first() else {
        return Err(Error::value(op, format!("internal: custom op '{}' without inputs", kernel.name)));
    };
    let ctx = first.ctx().clone();
    // The kernel reads X{k}[j] as element j of input k in row-major order.
    let readable = |b: &GpuBuffer, l: &Layout| b.dtype == DType::F32 && l.is_contiguous() && l.offset == 0;
    let mut copies = Vec::new();
    for (b, l) in inputs {
        if !readable(b, l) {
            copies.push(g::cast(op, b, l, DType::F32)?);
        }
    }
    let mut copied = copies.iter();
    let bufs: Vec<&GpuBuffer> = inputs
        .iter()
        .map(|&(b, l)| if readable(b, l) { b } else { copied.next().expect("one copy per such input") })
        .collect();
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, l)| l.shape.as_slice()).collect();
    let values: Vec<f64> = scalars.iter().map(|s| s.0).collect();
    let m = kernel.params(&shapes, out_shape, &values);
    let n: usize = out_shape.iter().product();
    let out = GpuBuffer::new(&ctx, op, DType::F32, n)?;
    // A kernel that does not compile (registered without a check) fails as its op.
    launch(&ctx, &format!("custom:{}", kernel.name), || kernel.source(), &m, &bufs, &out, n).map_err(|e| match e {
        Error::Gpu { msg, .. } => Error::gpu(op, msg),
        e => e,
    })?;
    Ok(out)
}

/// Compiles `source` with the device's own WGSL compiler (the browser's in
/// a browser, naga natively) and returns its error messages, each with the
/// (line, column) it points at. Nothing is cached: this only checks.
pub async fn compile_errors(ctx: &super::GpuContext, source: &str) -> Vec<(Option<(usize, usize)>, String)> {
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("custom op check"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let info = module.get_compilation_info().await;
    let scope_error = scope.pop().await;
    let mut errors: Vec<_> = info
        .messages
        .into_iter()
        .filter(|m| m.message_type == wgpu::CompilationMessageType::Error)
        .map(|m| (m.location.map(|l| (l.line_number as usize, l.line_position as usize)), m.message))
        .collect();
    if let (true, Some(e)) = (errors.is_empty(), scope_error) {
        errors.push((None, e.to_string()));
    }
    errors
}
