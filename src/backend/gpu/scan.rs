//! Scans along one axis on the GPU (`shaders/scan.wgsl`): a parallel prefix
//! scan per row in workgroup memory with a carry across 256-element chunks;
//! rows of at most `SHORT_ROW` elements one per invocation instead, and the
//! long rows of a tensor with few rows split into blocks over several
//! workgroups (block scans, a scan of the blocks' totals, the carries).
//! The input is read through its strides (no copy), viewed with the scanned
//! axis last; the output is contiguous in the input's order. f32 only: f16
//! operands are widened and the result rounded once (`backend::half`).

use super::index::kernel_source;
use super::kernels::{elementwise_params, workgroups};
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::kernel::ScanKind;
use crate::shape::{contiguous_strides, Layout};

pub const SCAN: &str = wgsl_file!(include_str!("../../../shaders/scan.wgsl"));

/// The longest rows scanned one per invocation: a workgroup per row would
/// leave most of its 256 invocations idle through 8 barrier steps.
const SHORT_ROW: usize = 32;
/// Below this many rows a GPU has idle cores: rows of at least two blocks
/// are then split over several workgroups.
const FEW_ROWS: usize = 128;
/// The elements one workgroup scans of a split row.
const BLOCK: usize = 2048;

/// The source of the block scan: whole rows, or blocks of split rows that
/// also store their totals.
fn scan_source(split: bool) -> String {
    let (totals, out, store) = if split {
        (
            "@group(0) @binding(2) var<storage, read_write> TOTALS: array<f32>;",
            "3",
            "if (lid == 0u) { TOTALS[group] = carry; }",
        )
    } else {
        ("", "2", "")
    };
    kernel_source(SCAN, "scan", DType::F32)
        .replace("{TOTALS}", totals)
        .replace("{OUT}", out)
        .replace("{STORE_TOTAL}", store)
}

/// Every source this module builds, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    vec![
        ("scan:f32".to_string(), scan_source(false)),
        ("scan:f32:split".to_string(), scan_source(true)),
        ("scan_rows:f32".to_string(), kernel_source(SCAN, "scan_rows", DType::F32)),
        ("scan_carry:f32".to_string(), kernel_source(SCAN, "scan_carry", DType::F32)),
    ]
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
    // The result first: a replayed program offers its arena buffer to a kernel's first allocation.
    let out = GpuBuffer::new(&ctx, op, DType::F32, numel)?;
    let n = layout.shape[axis];
    if numel == 0 {
        return Ok(out);
    }
    fits_u32(op, numel, &layout.shape)?;
    let rows = numel / n;
    let view = axis_last(layout, axis);
    let split = rows < FEW_ROWS && n >= 2 * BLOCK;
    let (block, blocks) = if split { (BLOCK, n.div_ceil(BLOCK)) } else { (n, 1) };
    let scalars = [n, rows, reverse as usize, (kind == ScanKind::Prod) as usize, block, blocks].map(|v| v as u32);
    let params = elementwise_params(op, &view.shape, &[&view, &output_axis_last(&layout.shape, axis)], &scalars)?;
    if n <= SHORT_ROW {
        let pipeline = ctx.pipeline("scan_rows:f32", || kernel_source(SCAN, "scan_rows", DType::F32))?;
        ctx.dispatch(&pipeline, &params, &[x.raw(), out.raw()], workgroups(rows));
    } else if !split {
        let pipeline = ctx.pipeline("scan:f32", || scan_source(false))?;
        ctx.dispatch(&pipeline, &params, &[x.raw(), out.raw()], rows as u32);
    } else {
        // Blocks with their totals, the totals' scan (in scan order: the
        // blocks are numbered that way either direction), then the carries.
        let totals = GpuBuffer::new(&ctx, op, DType::F32, rows * blocks)?;
        let pipeline = ctx.pipeline("scan:f32:split", || scan_source(true))?;
        ctx.dispatch(&pipeline, &params, &[x.raw(), totals.raw(), out.raw()], (rows * blocks) as u32);
        let scanned = scan(op, &totals, &Layout::contiguous(&[rows, blocks]), 1, kind, false)?;
        let carry = ctx.pipeline("scan_carry:f32", || kernel_source(SCAN, "scan_carry", DType::F32))?;
        ctx.dispatch(&carry, &params, &[scanned.raw(), out.raw()], workgroups(numel));
    }
    Ok(out)
}
