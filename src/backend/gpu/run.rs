//! The GPU backend's `run`: a `KernelSpec` over views, to the WGSL kernels.

use super::{conv, elementwise as g, matmul, optim, reduce, GpuBuffer, GpuContext};
use crate::backend::api::{mismatch, typed_inputs, wrong_entry, Backend};
use crate::backend::{Buffer, CpuBuffer, Storage, View, ViewMut};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{IndexCheck, KernelSpec};
use crate::shape::Layout;
use std::sync::Arc;

/// The GPU backend: WGSL kernels through wgpu, natively and on WebGPU.
pub struct Gpu;

impl Backend for Gpu {
    type Buffer = GpuBuffer;
    type Place = Arc<GpuContext>;

    fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<GpuBuffer> {
        run(op, spec, inputs, out_shape)
    }
    fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
        run_into(op, spec, inputs, outputs)
    }
    fn create(op: &'static str, spec: &KernelSpec, ctx: &Arc<GpuContext>, out_shape: &[usize]) -> Result<GpuBuffer> {
        create(op, spec, ctx, out_shape)
    }
    fn check(check: &IndexCheck, storage: &Storage, index: &GpuBuffer, layout: &Layout) -> Result<()> {
        self::check(check, storage, index, layout)
    }
    fn download(buffer: &GpuBuffer, layout: &Layout) -> Result<CpuBuffer> {
        g::download(buffer, layout)
    }
    fn upload(ctx: &Arc<GpuContext>, host: &CpuBuffer, layout: &Layout) -> Result<GpuBuffer> {
        g::upload(ctx, host, layout)
    }
}

/// The GPU buffers of `inputs` (see `typed_inputs`).
fn gpu_inputs<'a, const N: usize>(
    op: &'static str,
    spec: &KernelSpec,
    inputs: &[View<'a>],
) -> Result<[(&'a GpuBuffer, &'a Layout); N]> {
    typed_inputs(op, spec, inputs, Buffer::as_gpu)
}

fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<GpuBuffer> {
    let float_only = |b: &GpuBuffer| -> Result<()> {
        if matches!(b.dtype, DType::F32 | DType::F16) {
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
            g::binary(op, x, la, y, lb, out_shape, row.wgsl, x.dtype)
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
        KernelSpec::Scan { axis, kind, reverse } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            super::scan::scan(op, x, l, *axis, *kind, *reverse)
        }
        KernelSpec::Argsort { axis, descending } => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            super::sort::argsort(op, x, l, *axis, *descending)
        }
        KernelSpec::Matmul { batch } => {
            let [(x, la), (y, lb)] = gpu_inputs::<2>(op, spec, inputs)?;
            matmul::matmul(x, la, y, lb, batch)
        }
        KernelSpec::Unfold(w) => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            conv::unfold(op, x, l, w)
        }
        KernelSpec::Fold(w) => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            conv::fold(op, x, l, w)
        }
        KernelSpec::WindowArgmax(w) => {
            let [(x, l)] = gpu_inputs::<1>(op, spec, inputs)?;
            conv::window_argmax(op, x, l, w)
        }
        KernelSpec::ConvGemm(g) => {
            let [(w, lw), (x, lx)] = gpu_inputs::<2>(op, spec, inputs)?;
            super::conv_gemm::conv_gemm(w, lw, x, lx, g)
        }
        KernelSpec::ConvWeightGemm(g) => {
            let [(gy, lg), (x, lx)] = gpu_inputs::<2>(op, spec, inputs)?;
            super::conv_gemm::conv_weight_gemm(gy, lg, x, lx, g)
        }
        KernelSpec::IndexSelect { .. }
        | KernelSpec::Gather { .. }
        | KernelSpec::IndexAdd { .. }
        | KernelSpec::ScatterAdd { .. } => super::run_index::run(op, spec, inputs, out_shape),
        KernelSpec::Fused(f) => {
            let views = inputs
                .iter()
                .map(|v| v.buffer.as_gpu().map(|b| (b, v.layout)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| mismatch(op, spec))?;
            super::fused::run(op, f, &views, out_shape)
        }
        KernelSpec::Epilogue(e) => {
            let views = inputs
                .iter()
                .map(|v| v.buffer.as_gpu().map(|b| (b, v.layout)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| mismatch(op, spec))?;
            super::epilogue::run(op, e, &views, out_shape)
        }
        KernelSpec::Custom { kernel, scalars } => {
            let views = inputs
                .iter()
                .map(|v| v.buffer.as_gpu().map(|b| (b, v.layout)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| mismatch(op, spec))?;
            super::custom::run(op, kernel, scalars, &views, out_shape)
        }
        KernelSpec::Fill { .. }
        | KernelSpec::Sequence { .. }
        | KernelSpec::Random { .. }
        | KernelSpec::IndexCheck(_)
        | KernelSpec::CopyInto
        | KernelSpec::Adam { .. } => Err(wrong_entry(op, spec)),
    }
}

/// A kernel without inputs: a new buffer of `out_shape` on `ctx`'s device.
///
/// Note (sequences and random draws on the host): their values are computed
/// in f64 and, for normal samples, through a logarithm and a cosine; WGSL
/// has no f64 and its f32 transcendentals differ between drivers, so a
/// shader could not match the cpu bit for bit. The cpu backend's kernel
/// fills a host buffer (from the pool) and the upload is recorded in order
/// with the queued work, as `to(gpu)` is: one upload per call, as when
/// these were made on the cpu and moved.
fn create(op: &'static str, spec: &KernelSpec, ctx: &Arc<GpuContext>, out_shape: &[usize]) -> Result<GpuBuffer> {
    match spec {
        KernelSpec::Fill { dtype, value } => g::full(ctx, *dtype, out_shape.iter().product(), value.0),
        KernelSpec::Sequence { dtype, .. } | KernelSpec::Random { dtype, .. } => {
            let n = out_shape.iter().product();
            // The device buffer first: f64 and sizes past the device's limits
            // fail before anything is computed.
            let out = GpuBuffer::new(ctx, op, *dtype, n)?;
            crate::backend::cpu::room::ensure(op, n, *dtype)?;
            let host = crate::backend::cpu::Cpu::create(op, spec, &(), out_shape)?;
            g::write_host(op, &out, &host)?;
            Ok(out)
        }
        _ => Err(wrong_entry(op, spec)),
    }
}

/// The range check of the GPU index view `layout` of `index` (`storage`'s
/// buffer), recorded with the queued work (see `checks.rs`).
fn check(check: &IndexCheck, storage: &Storage, index: &GpuBuffer, layout: &Layout) -> Result<()> {
    if index.dtype != DType::I32 {
        return Err(Error::dtype(
            check.op,
            format!("index must be i32, got {} of shape {:?}", index.dtype, layout.shape),
        ));
    }
    super::checks::check_indices(check.clone(), storage, index, layout)
}

/// The GPU buffer an in-place kernel writes, or an error if it lives elsewhere.
fn gpu_out<'v>(op: &'static str, spec: &KernelSpec, o: &'v ViewMut<'_>) -> Result<(&'v GpuBuffer, &'v Layout)> {
    let Buffer::Gpu(b) = &*o.buffer else { return Err(mismatch(op, spec)) };
    Ok((b, o.layout))
}

fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
    match spec {
        KernelSpec::CopyInto => {
            let [(s, ls)] = gpu_inputs::<1>(op, spec, inputs)?;
            let [out] = outputs else { return Err(mismatch(op, spec)) };
            let (d, ld) = gpu_out(op, spec, out)?;
            g::copy_into(s, ls, d, ld)
        }
        KernelSpec::Adam { hyper } => {
            let [(gr, lg)] = gpu_inputs::<1>(op, spec, inputs)?;
            let [p, m, v] = outputs else { return Err(mismatch(op, spec)) };
            let ((p, _), (m, _), (v, _)) = (gpu_out(op, spec, p)?, gpu_out(op, spec, m)?, gpu_out(op, spec, v)?);
            if gr.dtype != DType::F32 {
                return Err(Error::dtype(op, format!("unsupported dtype {} for the fused update", gr.dtype)));
            }
            optim::adam_step(gr, p, m, v, lg.numel(), hyper.map(|s| s.0))
        }
        _ => Err(wrong_entry(op, spec)),
    }
}
