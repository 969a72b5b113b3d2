//! The 2-D sliding-window kernels on the GPU (`shaders/conv.wgsl`): unfold
//! (im2col), fold (col2im, deterministic: each pixel gathers the taps that
//! cover it, no atomics) and the per-window argmax of max pooling. Inputs are
//! read through their strides, so permuted or sliced views need no copy.
//! Each kernel runs one invocation per output element (real GPUs) or per
//! output row (software adapters: `GpuContext::row_kernels`); both modes
//! compute the same bits. f16 data (devices with `shader-f16`) is moved as
//! is, summed in f32 and rounded once (fold), compared as f32 (argmax): the
//! bits of `backend::half`'s widen, f32 kernel, round, in one dispatch.

use super::index::kernel_source;
use super::kernels::launch;
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::kernel::Window2d;
use crate::shape::Layout;

pub const CONV: &str = wgsl_file!(include_str!("../../../shaders/conv.wgsl"));

/// The data types the kernels take.
const DTYPES: [DType; 2] = [DType::F32, DType::F16];

/// The source of `kernel` over `dt` data, one invocation per output row or per element.
fn source(kernel: &str, dt: DType, rows: bool) -> String {
    kernel_source(CONV, kernel, dt).replace("{ROWS}", if rows { "true" } else { "false" })
}

/// The pipeline key of `kernel` over `dt` data in either mode.
fn key(kernel: &str, dt: DType, rows: bool) -> String {
    let mode = if rows { "rows" } else { "elements" };
    if dt == DType::F32 {
        format!("conv:{kernel}:{mode}")
    } else {
        format!("conv:{kernel}:{mode}:{}", dt.name())
    }
}

/// Every source this module can build, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for kernel in ["unfold", "fold", "window_argmax"] {
        for dt in DTYPES {
            all.extend([false, true].map(|rows| (key(kernel, dt, rows), source(kernel, dt, rows))));
        }
    }
    all
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

fn expect_float(op: &'static str, x: &GpuBuffer) -> Result<()> {
    if !DTYPES.contains(&x.dtype) {
        return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype)));
    }
    Ok(())
}

/// Runs `kernel` over an output of `n` elements in rows of `width`
/// (`out`: None for x's dtype).
#[allow(clippy::too_many_arguments)]
fn run(
    op: &'static str,
    kernel: &str,
    x: &GpuBuffer,
    l: &Layout,
    g: &Window2d,
    out: Option<DType>,
    n: usize,
    width: usize,
) -> Result<GpuBuffer> {
    expect_float(op, x)?;
    let (ctx, dt) = (x.ctx().clone(), x.dtype);
    let y = GpuBuffer::new(&ctx, op, out.unwrap_or(dt), n)?;
    let rows = ctx.tuning.row_kernels() && width > 0;
    let invocations = if rows { n / width } else { n };
    let m = params(op, g, invocations, l)?;
    launch(&ctx, &key(kernel, dt, rows), || source(kernel, dt, rows), &m, &[x], &y, invocations)?;
    Ok(y)
}

/// [n, c, h, w] (any strides) -> contiguous [n, c * kh * kw, out_h * out_w].
pub fn unfold(op: &'static str, x: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "unfold", x, l, g, None, g.n * g.col_rows() * g.windows(), g.out_w)
}

/// [n, c * kh * kw, out_h * out_w] (any strides) -> contiguous [n, c, h, w], summing overlaps.
pub fn fold(op: &'static str, cols: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "fold", cols, l, g, None, g.n * g.c * g.h * g.w, g.w)
}

/// [n, c, h, w] (any strides) -> i32 [n, c, out_h, out_w]: the flat index in
/// its [h, w] plane of each window's maximum (cpu: `conv::window_argmax`).
pub fn window_argmax(op: &'static str, x: &GpuBuffer, l: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    run(op, "window_argmax", x, l, g, Some(DType::I32), g.n * g.c * g.windows(), g.out_w)
}
