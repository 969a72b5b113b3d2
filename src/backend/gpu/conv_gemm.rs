//! Implicit GEMM on the GPU: a convolution's product `w [o, c * kh * kw]`
//! times the im2col columns of an image `x [n, c, h, w]`, with the columns
//! never made. The matmul kernels (`matmul.rs`) read B through the window
//! instead of through strides (`Loads::Window`): each step of K is one tap
//! (channel, ki, kj), each column one window, and a pixel outside the image
//! reads as 0. The sums are the same, in the same order, as `matmul` over
//! `conv::unfold`'s columns, so the bits are too; what goes is the unfold's
//! pass over memory and the columns' buffer (kh * kw times the image).

use super::matmul::{self, WINDOW};
use super::GpuBuffer;
use crate::error::{Error, Result};
use crate::kernel::Window2d;
use crate::shape::Layout;

/// `w` (2-D, any strides) times the columns of `x` (4-D, any strides) for
/// the window geometry `g`: a contiguous `[n, o, out_h * out_w]` buffer.
pub fn conv_gemm(w: &GpuBuffer, lw: &Layout, x: &GpuBuffer, lx: &Layout, g: &Window2d) -> Result<GpuBuffer> {
    const OP: &str = "conv_gemm";
    let image = [g.n, g.c, g.h, g.w];
    if lw.shape.len() != 2 || lw.shape[1] != g.col_rows() || lx.shape.as_slice() != image {
        return Err(Error::shape(
            OP,
            format!(
                "weight {:?} and image {:?} do not fit the window {g:?}: expected [O, {}] and {image:?}",
                lw.shape,
                lx.shape,
                g.col_rows()
            ),
        ));
    }
    let (o, k, l) = (lw.shape[0], g.col_rows(), g.windows());
    // The weight broadcast over the batch; the columns [n, k, l] stand for
    // the image (their batch stride is its), read through the window words.
    let la = Layout {
        shape: [1, o, k].as_slice().into(),
        strides: [0, lw.strides[0], lw.strides[1]].as_slice().into(),
        offset: lw.offset,
    };
    let lb = Layout {
        shape: [g.n, k, l].as_slice().into(),
        strides: [lx.strides[0], 0, 0].as_slice().into(),
        offset: lx.offset,
    };
    matmul::product(w, &la, x, &lb, &[g.n], None, Some(&window_params(g, lx)?))
}

/// The window words the kernels read from `WINDOW` on (see `matmul::WINDOW`).
pub fn window_params(g: &Window2d, lx: &Layout) -> Result<Vec<u32>> {
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
        return Err(Error::shape("conv_gemm", format!("sizes too large for the GPU kernels' 32-bit indexing: {g:?}")));
    }
    debug_assert_eq!(WINDOW + words.len(), 54);
    Ok(words.iter().map(|&v| v as u32).collect())
}
