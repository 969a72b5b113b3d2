//! The 2-D sliding-window kernels on the GPU (`shaders/conv.wgsl`): unfold
//! (im2col), fold (col2im, deterministic: each pixel gathers the taps that
//! cover it, no atomics) and the per-window argmax of max pooling. Inputs are
//! read through their strides, so permuted or sliced views need no copy.
//! Each kernel runs one invocation per output element (real GPUs) or per
//! output row (software adapters: `GpuContext::row_kernels`); both modes
//! compute the same bits.

use super::index::kernel_source;
use super::kernels::launch;
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::Window2d;
use crate::shape::Layout;

pub const CONV: &str = include_str!("../../../shaders/conv.wgsl");

/// The source of `kernel`, one invocation per output row or per element.
fn source(kernel: &str, rows: bool) -> String {
    kernel_source(CONV, kernel, DType::F32).replace("{ROWS}", if rows { "true" } else { "false" })
}

/// The pipeline key of `kernel` in either mode.
fn key(kernel: &str, rows: bool) -> String {
    format!("conv:{kernel}:{}", if rows { "rows" } else { "elements" })
}

/// Every source this module can build, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    let kernels = ["unfold", "fold", "window_argmax"];
    kernels.into_iter().flat_map(|k| [false, true].map(|rows| (key(k, rows), source(k, rows)))).collect()
}

/// The parameter block shared by the three kernels (see conv.wgsl), for
/// `threads` invocations over an input viewed as `l`.
fn params(op: &'static str, g: &Window2d, threads: usize, l: &Layout) -> Result<Vec<u32>> {
    let geometry = [
        threads,
        g.c,
        g.h,
        g.w,
        g.kernel[0],
        g.kernel[1],
        g.stride[0],
        g.stride[1],
        g.padding[0],
        g.padding[1],
        g.dilation[0],
        g.dilation[1],
        g.out_h,
        g.out_w,
        l.offset,
    ];
    // The kernels compute tap coordinates in the padded image in u32.
    let padded = [g.h + 2 * g.padding[0], g.w + 2 * g.padding[1]];
    if geometry.iter().chain(&l.strides).chain(&padded).any(|&v| v > u32::MAX as usize / 2) {
        return Err(Error::shape(op, format!("sizes too large for the GPU kernels' 32-bit indexing: {g:?}")));
    }
    Ok(geometry.iter().chain(&l.strides).map(|&v| v as u32).collect())
}

fn expect_f32(op: &'static str, x: &GpuBuffer) -> Result<()> {
    if x.dtype != DType::F32 {
        return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype)));
    }
    Ok(())
}

/// Runs `kernel` over an output of `n` elements in rows of `width`.
#[allow(clippy::too_many_arguments)]
fn run(
    op: &'static str,
    kernel: &str,
    x: &GpuBuffer,
    l: &Layout,
    g: &Window2d,
    out: DType,
    n: usize,
    width: usize,
) -> Result<GpuBuffer> {
    expect_f32(op, x)?;
    let ctx = x.ctx().clone();
    let y = GpuBuffer::new(&ctx, op, out, n)?;
    let rows = ctx.row_kernels() && width > 0;
    let invocations = if rows { n / width } else { n };
    let m = params(op, g, invocations, l)?;
    launch(&ctx, &key(kernel, rows), || source(kernel, rows), &m, &[x], &y, invocations)?;
    Ok(y)
}

/// [n, c, h, w] (any strides) -> contiguous [n, c * kh * kw, out_h * out_w].
pub fn unfold(op: &'static str, x: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "unfold", x, l, g, DType::F32, g.n * g.col_rows() * g.windows(), g.out_w)
}

/// [n, c * kh * kw, out_h * out_w] (any strides) -> contiguous [n, c, h, w], summing overlaps.
pub fn fold(op: &'static str, cols: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "fold", cols, l, g, DType::F32, g.n * g.c * g.h * g.w, g.w)
}

/// [n, c, h, w] (any strides) -> i32 [n, c, out_h, out_w]: the flat index in
/// its [h, w] plane of each window's maximum (cpu: `conv::window_argmax`).
pub fn window_argmax(op: &'static str, x: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "window_argmax", x, l, g, DType::I32, g.n * g.c * g.windows(), g.out_w)
}
