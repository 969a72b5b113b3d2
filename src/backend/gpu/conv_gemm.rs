//! Implicit GEMM on the GPU: a convolution's products over the im2col
//! columns of an image `x [n, c, h, w]`, with the columns never made. The
//! matmul kernels (`matmul/`) read B through the window instead of through
//! strides (`matmul/window.rs`): for the forward product `w [o, c * kh * kw]`
//! times the columns, each step of K is one tap (channel, ki, kj) and each
//! column of C one window; for the weight gradient's `gy [n, o, L]` times
//! the columns transposed, each step is a window and each column a tap. A
//! pixel outside the image reads as 0. The sums are the explicit products'
//! (`matmul` over `conv::unfold`'s columns), in the same order, so the bits
//! are too; what goes is the unfold's pass over memory and the columns'
//! buffer (kh * kw times the image). Where no window leaves the image (no
//! padding) the loads skip the padding test (`Loads::Inside`). SwiftShader
//! cannot build the kernels whose loads test for it
//! (`GpuOptions::pad_first`), so there a padded window reads a zero-padded
//! copy of the image instead (two more kernels: a fill and a copy). With
//! `GpuOptions::implicit_gemm` off both make the columns and multiply them.

use super::elementwise::{copy_into, fill_into};
use super::matmul::window::WORDS;
use super::matmul::{self, Loads};
use super::GpuBuffer;
use crate::error::{Error, Result};
use crate::kernel::Window2d;
use crate::shape::Layout;

fn layout(shape: [usize; 3], strides: [usize; 3], offset: usize) -> Layout {
    Layout { shape: shape.as_slice().into(), strides: strides.as_slice().into(), offset }
}

fn check_image(op: &'static str, lx: &Layout, g: &Window2d) -> Result<()> {
    let image = [g.n, g.c, g.h, g.w];
    if lx.shape.as_slice() != image {
        return Err(Error::shape(
            op,
            format!("image {:?} does not fit the window {g:?}: expected {image:?}", lx.shape),
        ));
    }
    if !g.is_consistent() {
        return Err(Error::shape(
            op,
            format!("inconsistent window {g:?}: its output grid does not follow from the rest"),
        ));
    }
    Ok(())
}

/// A zero-padded copy of an image and its window (padding 0).
struct Padded {
    image: GpuBuffer,
    layout: Layout,
    g: Window2d,
}

/// The zero-padded copy of `x` that a product through the padded window `g`
/// reads where the adapter pads first (`GpuContext::pad_first`); `None`
/// where it reads `x` itself.
fn padded(op: &'static str, x: &GpuBuffer, lx: &Layout, g: &Window2d) -> Result<Option<Padded>> {
    if g.padding == [0, 0] || !x.ctx().tuning.pad_first() {
        return Ok(None);
    }
    let [ph, pw] = g.padding;
    let (h, w) = (g.h + 2 * ph, g.w + 2 * pw);
    let layout = Layout::contiguous(&[g.n, g.c, h, w]);
    let image = GpuBuffer::new(x.ctx(), op, x.dtype, layout.numel())?;
    fill_into(&image, layout.numel(), 0.0)?;
    let interior = Layout { shape: lx.shape.clone(), strides: layout.strides.clone(), offset: ph * w + pw };
    copy_into(x, lx, &image, &interior)?;
    Ok(Some(Padded { image, layout, g: Window2d { h, w, padding: [0, 0], ..*g } }))
}

/// How B's loads go through the window `g`: without the padding test where
/// no window leaves the image.
fn window_loads(g: &Window2d, transposed: bool) -> Loads {
    match (g.padding == [0, 0], transposed) {
        (true, false) => Loads::Inside,
        (true, true) => Loads::InsideT,
        (false, false) => Loads::Window,
        (false, true) => Loads::WindowT,
    }
}

/// `w` (2-D `[o, c * kh * kw]`, any strides) times the columns of `x`
/// (4-D, any strides) for the window `g`: a contiguous `[n, o, out_h * out_w]` buffer.
pub fn conv_gemm(w: &GpuBuffer, lw: &Layout, x: &GpuBuffer, lx: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    const OP: &str = "conv_gemm";
    check_image(OP, lx, g)?;
    if lw.shape.len() != 2 || lw.shape[1] != g.col_rows() {
        return Err(Error::shape(
            OP,
            format!("weight {:?} does not fit the window {g:?}: expected [O, {}]", lw.shape, g.col_rows()),
        ));
    }
    let (o, k, l) = (lw.shape[0], g.col_rows(), g.windows());
    // The weight broadcast over the batch.
    let la = layout([1, o, k], [0, lw.strides[0], lw.strides[1]], lw.offset);
    if !x.ctx().tuning.implicit_gemm() {
        let cols = super::conv::unfold(OP, x, lx, g)?;
        return matmul::matmul(w, &la, &cols, &Layout::contiguous(&[g.n, k, l]), &[g.n]);
    }
    let padded = padded(OP, x, lx, g)?;
    let (x, lx, g) = padded.as_ref().map_or((x, lx, g), |p| (&p.image, &p.layout, &p.g));
    // B's shape [n, k, l] with the image's batch stride.
    let lb = layout([g.n, k, l], [lx.strides[0], 0, 0], lx.offset);
    matmul::product(w, &la, x, &lb, &[g.n], None, Some((window_loads(g, false), &window_params(OP, g, lx)?)))
}

/// Each image's weight gradient: `gy` (`[n, o, out_h * out_w]`, any strides)
/// times the transposed columns of `x`: a contiguous `[n, o, c * kh * kw]`
/// buffer (the caller sums it over n).
pub fn conv_weight_gemm(gy: &GpuBuffer, lg: &Layout, x: &GpuBuffer, lx: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    const OP: &str = "conv_weight_gemm";
    check_image(OP, lx, g)?;
    if lg.shape.len() != 3 || lg.shape[0] != g.n || lg.shape[2] != g.windows() {
        return Err(Error::shape(
            OP,
            format!("gradient {:?} does not fit the window {g:?}: expected [{}, O, {}]", lg.shape, g.n, g.windows()),
        ));
    }
    let (k, l) = (g.col_rows(), g.windows());
    if !x.ctx().tuning.implicit_gemm() {
        // The columns [n, k, l], read transposed.
        let cols = super::conv::unfold(OP, x, lx, g)?;
        return matmul::matmul(gy, lg, &cols, &layout([g.n, l, k], [k * l, 1, l], 0), &[g.n]);
    }
    let padded = padded(OP, x, lx, g)?;
    let (x, lx, g) = padded.as_ref().map_or((x, lx, g), |p| (&p.image, &p.layout, &p.g));
    let lb = layout([g.n, l, k], [lx.strides[0], 0, 0], lx.offset);
    matmul::product(gy, lg, x, &lb, &[g.n], None, Some((window_loads(g, true), &window_params(OP, g, lx)?)))
}

/// The window words the kernels read from `WINDOW` on (`matmul/window.rs`).
pub fn window_params(op: &'static str, g: &Window2d, lx: &Layout) -> Result<Vec<u32>> {
    let words = [
        g.out_w,
        g.stride[0],
        g.stride[1],
        g.padding[0],
        g.padding[1],
        g.kernel[0] * g.kernel[1],
        g.kernel[1],
        g.dilation[0],
        g.dilation[1],
        lx.strides[1],
        lx.strides[2],
        lx.strides[3],
        g.h,
        g.w,
    ];
    // Pixel coordinates are formed in i32 (padding makes them negative), and
    // every index of the image must fit the kernels' u32 arithmetic.
    let reach =
        [g.out_h * g.stride[0] + g.kernel[0] * g.dilation[0], g.out_w * g.stride[1] + g.kernel[1] * g.dilation[1]];
    let last = lx.offset + lx.shape.iter().zip(&lx.strides).map(|(d, s)| d.saturating_sub(1) * s).sum::<usize>();
    if words.iter().chain(&reach).any(|&v| v > i32::MAX as usize) || last > u32::MAX as usize {
        return Err(Error::shape(op, format!("sizes too large for the GPU kernels' 32-bit indexing: {g:?}")));
    }
    debug_assert_eq!(words.len(), WORDS);
    Ok(words.iter().map(|&v| v as u32).collect())
}
