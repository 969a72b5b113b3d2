//! f16 storage with f32 arithmetic, the same on both backends.
//!
//! An f16 tensor is stored in half the bytes (`CpuBuffer::F16`, an
//! `array<f16>` on a GPU with `shader-f16`). The cpu kernels have no f16
//! variants: a kernel given an f16 operand reads it widened to f32 (the
//! whole buffer converted, so every view keeps its layout), runs as the f32
//! kernel does (reductions and products accumulate in f32), and its float
//! result is rounded to f16 once. An in-place kernel writing f16 views
//! writes a widened copy, which is rounded back into the same buffer
//! (untouched elements round-trip exactly). Casts, copies, uploads and
//! downloads move f16 natively.
//!
//! On a GPU the kernel families (elementwise, matmul, reductions,
//! unfold/fold/window argmax, gather and the scatters; all but Adam's fused
//! update, the scans and the argsort, which take this module's path) do the
//! same inside one kernel: they load f16 elements as f32,
//! accumulate in f32 and round at the store, giving the bits this module's
//! path would. So one rounding per op, and the cpu and the GPU agree up to
//! the f32 kernels' own differences.
//!
//! What the widened path costs: two more passes per op over its f16 operands
//! (the conversions). On the cpu the halved storage does not repay them; it
//! is there for parity with the GPU and for the wasm fallback.

use super::api::{View, ViewMut};
use super::{pick, Buffer};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::KernelSpec;
use crate::shape::Layout;

/// Whether `spec` over `inputs` (and `outputs`) goes through the widened path.
pub(crate) fn involved(spec: &KernelSpec, inputs: &[View], outputs: &[ViewMut]) -> bool {
    // Casts and copies move f16 elements natively; on a GPU so do the kernel
    // families but Adam (they load f16 as f32 and round at the store: the
    // same values, without the conversion passes).
    let native = match spec {
        KernelSpec::Cast { .. } | KernelSpec::Copy | KernelSpec::CopyInto => true,
        KernelSpec::Unary { .. }
        | KernelSpec::Binary { .. }
        | KernelSpec::Compare { .. }
        | KernelSpec::Where
        | KernelSpec::Matmul { .. }
        | KernelSpec::Reduce { .. }
        | KernelSpec::ArgReduce { .. }
        | KernelSpec::Unfold(_)
        | KernelSpec::Fold(_)
        | KernelSpec::WindowArgmax(_)
        | KernelSpec::ConvGemm(_)
        | KernelSpec::ConvWeightGemm(_)
        | KernelSpec::IndexSelect { .. }
        | KernelSpec::Gather { .. }
        | KernelSpec::IndexAdd { .. }
        | KernelSpec::ScatterAdd { .. } => on_gpu(inputs),
        _ => false,
    };
    !native
        && (inputs.iter().any(|v| v.buffer.dtype() == DType::F16)
            || outputs.iter().any(|v| v.buffer.dtype() == DType::F16))
}

#[cfg(feature = "gpu")]
fn on_gpu(inputs: &[View]) -> bool {
    inputs.first().is_some_and(|v| v.buffer.as_gpu().is_some())
}

#[cfg(not(feature = "gpu"))]
fn on_gpu(_: &[View]) -> bool {
    false
}

/// The f32 version of a creation spec (fill, sequence, random draw) of f16.
pub(crate) fn widened_creation(spec: &KernelSpec) -> Option<KernelSpec> {
    let mut wide = spec.clone();
    match &mut wide {
        KernelSpec::Fill { dtype, .. } | KernelSpec::Sequence { dtype, .. } | KernelSpec::Random { dtype, .. }
            if *dtype == DType::F16 =>
        {
            *dtype = DType::F32
        }
        _ => return None,
    }
    Some(wide)
}

/// The whole of `buffer` converted between f16 and f32 (element i to element i).
fn convert(op: &'static str, buffer: &Buffer, to: DType) -> Result<Buffer> {
    let all = Layout::contiguous(&[buffer.len()]);
    pick::run(op, &KernelSpec::Cast { to }, &[View::new(buffer, &all)], &all.shape)
}

/// Runs `kernel` with every f16 input widened to f32, and rounds its f32
/// result to f16 (other results, i32 positions and bool masks, stay).
pub(crate) fn run(op: &'static str, inputs: &[View], kernel: impl FnOnce(&[View]) -> Result<Buffer>) -> Result<Buffer> {
    let wide = without_arena_output(|| {
        let widened = widen_all(op, inputs.iter().map(|v| v.buffer))?;
        let views: Vec<View> =
            inputs.iter().zip(&widened).map(|(v, w)| View::new(w.as_ref().unwrap_or(v.buffer), v.layout)).collect();
        kernel(&views)
    })?;
    match wide.dtype() {
        DType::F32 => convert(op, &wide, DType::F16),
        _ => Ok(wide),
    }
}

/// Runs the in-place `kernel` with f16 inputs and outputs widened; each
/// widened output is then rounded to f16 and copied back over its own
/// buffer (whole: elements the kernel left alone round-trip exactly).
pub(crate) fn run_into(
    op: &'static str,
    inputs: &[View],
    outputs: &mut [ViewMut],
    kernel: impl FnOnce(&[View], &mut [ViewMut]) -> Result<()>,
) -> Result<()> {
    without_arena_output(|| {
        let widened_in = widen_all(op, inputs.iter().map(|v| v.buffer))?;
        let views: Vec<View> =
            inputs.iter().zip(&widened_in).map(|(v, w)| View::new(w.as_ref().unwrap_or(v.buffer), v.layout)).collect();
        let mut widened_out = widen_all(op, outputs.iter().map(|v| &*v.buffer))?;
        let mut outs: Vec<ViewMut> = outputs
            .iter_mut()
            .zip(widened_out.iter_mut())
            .map(|(o, w)| ViewMut::new(w.as_mut().unwrap_or(&mut *o.buffer), o.layout))
            .collect();
        kernel(&views, &mut outs)?;
        drop(outs);
        for (o, wide) in outputs.iter_mut().zip(widened_out) {
            let Some(wide) = wide else { continue };
            let narrow = convert(op, &wide, DType::F16)?;
            let all = Layout::contiguous(&[narrow.len()]);
            let copy = KernelSpec::CopyInto;
            pick::run_into(op, &copy, &[View::new(&narrow, &all)], &mut [ViewMut::new(o.buffer, &all)])?;
        }
        Ok(())
    })
}

/// Each f16 buffer of `buffers` widened to f32 (None for the others).
fn widen_all<'a>(op: &'static str, buffers: impl Iterator<Item = &'a Buffer>) -> Result<Vec<Option<Buffer>>> {
    buffers.map(|b| (b.dtype() == DType::F16).then(|| convert(op, b, DType::F32)).transpose()).collect()
}

/// Runs `f` with the arena buffer a GPU program replay offers the current
/// kernel's result set aside: the conversions' temporaries must not take it
/// (the rounded result, allocated after `f`, does).
fn without_arena_output<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "gpu")]
    {
        super::gpu::replay::without_output(f)
    }
    #[cfg(not(feature = "gpu"))]
    {
        f()
    }
}
