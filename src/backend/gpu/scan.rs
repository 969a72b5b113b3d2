//! Scans along one axis on the GPU (`shaders/scan.wgsl`): a parallel prefix
//! scan per row in workgroup memory with a carry across 256-element chunks;
//! rows of at most `SHORT_ROW` elements one per invocation instead.
//! The input is read through its strides (no copy), viewed with the scanned
//! axis last; the output is contiguous in the input's order. f32 only: f16
//! operands are widened and the result rounded once (`backend::half`).

use super::index::kernel_source;
use super::kernels::{elementwise_params, workgroups};
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::ScanKind;
use crate::shape::{contiguous_strides, Layout};

pub const SCAN: &str = include_str!("../../../shaders/scan.wgsl");

/// The longest rows scanned one per invocation: a workgroup per row would
/// leave most of its 256 invocations idle through 8 barrier steps.
const SHORT_ROW: usize = 32;

/// Every source this module builds, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    ["scan", "scan_rows"].iter().map(|k| (format!("{k}:f32"), kernel_source(SCAN, k, DType::F32))).collect()
}

/// `layout` with `axis` moved last (a view: only shape and strides move).
pub(crate) fn axis_last(layout: &Layout, axis: usize) -> Layout {
    let order: Vec<usize> = (0..layout.shape.len()).filter(|&d| d != axis).chain([axis]).collect();
    Layout {
        shape: order.iter().map(|&d| layout.shape[d]).collect(),
        strides: order.iter().map(|&d| layout.strides[d]).collect(),
        offset: layout.offset,
    }
}

/// The contiguous output of `shape`, viewed with `axis` last.
pub(crate) fn output_axis_last(shape: &[usize], axis: usize) -> Layout {
    let out = Layout { shape: shape.into(), strides: contiguous_strides(shape), offset: 0 };
    axis_last(&out, axis)
}

/// Refuses sizes past the kernels' 32-bit indexing.
pub(crate) fn fits_u32(op: &'static str, what: usize, shape: &[usize]) -> Result<()> {
    if what > u32::MAX as usize / 2 {
        return Err(Error::shape(op, format!("shape {shape:?} is too large for the GPU kernels' 32-bit indexing")));
    }
    Ok(())
}

/// The inclusive running sum or product along `axis` of the view `layout` of `x`.
pub fn scan(
    op: &'static str,
    x: &GpuBuffer,
    layout: &Layout,
    axis: usize,
    kind: ScanKind,
    reverse: bool,
) -> Result<GpuBuffer> {
    if x.dtype != DType::F32 {
        return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype)));
    }
    let ctx = x.ctx().clone();
    let numel = layout.numel();
    let out = GpuBuffer::new(&ctx, op, DType::F32, numel)?;
    let n = layout.shape[axis];
    if numel == 0 {
        return Ok(out);
    }
    fits_u32(op, numel, &layout.shape)?;
    let rows = numel / n;
    let view = axis_last(layout, axis);
    let scalars = [n as u32, rows as u32, reverse as u32, (kind == ScanKind::Prod) as u32];
    let params = elementwise_params(op, &view.shape, &[&view, &output_axis_last(&layout.shape, axis)], &scalars)?;
    let (kernel, groups) = if n <= SHORT_ROW { ("scan_rows", workgroups(rows)) } else { ("scan", rows as u32) };
    let pipeline = ctx.pipeline(&format!("{kernel}:f32"), || kernel_source(SCAN, kernel, DType::F32))?;
    ctx.dispatch(&pipeline, &params, &[x.raw(), out.raw()], groups);
    Ok(out)
}
