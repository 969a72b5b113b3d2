//! Dispatch for the 2-D sliding-window kernels: im2col / col2im and the
//! per-window argmax that max pooling gathers through.

use crate::backend::{self, View};
use crate::error::{Error, Result};
use crate::kernel::{KernelSpec, Window2d};
use crate::tensor::Tensor;

fn run(op: &'static str, spec: KernelSpec, x: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    let out = backend::run(op, &spec, &[View::new(&x.storage().read(), x.layout())], out_shape)?;
    let out = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        super::record::run(op, &spec, &[x], &out);
    }
    Ok(out)
}

/// [n, c, h, w] -> [n, c * kh * kw, out_h * out_w].
pub fn unfold2d(op: &'static str, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    let shape = [g.n, g.col_rows(), g.windows()];
    super::room_for(op, x, &shape, x.dtype())?;
    run(op, KernelSpec::Unfold(*g), x, &shape)
}

/// [n, c * kh * kw, out_h * out_w] -> [n, c, h, w], summing overlaps.
pub fn fold2d(op: &'static str, cols: &Tensor, g: &Window2d) -> Result<Tensor> {
    let shape = [g.n, g.c, g.h, g.w];
    super::room_for(op, cols, &shape, cols.dtype())?;
    run(op, KernelSpec::Fold(*g), cols, &shape)
}

/// `w` [o, c * kh * kw] times the im2col columns of `x` [n, c, h, w], without
/// making them (implicit GEMM on a GPU): [n, o, out_h * out_w].
pub fn conv_gemm(op: &'static str, w: &Tensor, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    let fits = w.ndim() == 2 && w.shape()[1] == g.col_rows();
    check_product(op, ("weight", w, fits, format!("[O, {}]", g.col_rows())), x, g)?;
    product(op, KernelSpec::ConvGemm(*g), w, x, [g.n, w.shape()[0], g.windows()])
}

/// Each image's weight gradient, `gy` [n, o, out_h * out_w] times the
/// transposed columns of `x`, without making them: [n, o, c * kh * kw].
pub fn conv_weight_gemm(op: &'static str, gy: &Tensor, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    let s = gy.shape();
    let fits = gy.ndim() == 3 && s[0] == g.n && s[2] == g.windows();
    check_product(op, ("gradient", gy, fits, format!("[{}, O, {}]", g.n, g.windows())), x, g)?;
    product(op, KernelSpec::ConvWeightGemm(*g), gy, x, [g.n, s[1], g.col_rows()])
}

/// The arguments of an implicit GEMM: a consistent window, the other
/// operand (named, whether it `fits`, the shape it should have) and the
/// image in its shapes, one float dtype.
fn check_product(
    op: &'static str,
    (what, a, fits, want): (&str, &Tensor, bool, String),
    x: &Tensor,
    g: &Window2d,
) -> Result<()> {
    let image = [g.n, g.c, g.h, g.w];
    if !g.is_consistent() {
        return Err(Error::shape(op, format!("inconsistent window geometry {g:?}")));
    }
    if !fits || x.shape() != image {
        return Err(Error::shape(
            op,
            format!(
                "{what} {:?} and image {:?} do not fit the window {g:?}: expected {want} and {image:?}",
                a.shape(),
                x.shape()
            ),
        ));
    }
    if a.dtype() != x.dtype() || !a.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("{what} and image must share one float dtype, got {} and {}", a.dtype(), x.dtype()),
        ));
    }
    Ok(())
}

fn product(op: &'static str, spec: KernelSpec, a: &Tensor, x: &Tensor, shape: [usize; 3]) -> Result<Tensor> {
    super::room_for(op, x, &shape, x.dtype())?;
    let (ga, gx) = (a.storage().read(), x.storage().read());
    let out = backend::run(op, &spec, &[View::new(&ga, a.layout()), View::new(&gx, x.layout())], &shape)?;
    drop((ga, gx));
    let out = Tensor::from_buffer(out, &shape);
    if super::record::active() {
        super::record::run(op, &spec, &[a, x], &out);
    }
    Ok(out)
}

/// [n, c, h, w] -> i32 [n, c, out_h, out_w]: where in its [h, w] plane each window's maximum is.
pub fn window_argmax(op: &'static str, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    let shape = [g.n, g.c, g.out_h, g.out_w];
    super::room_for(op, x, &shape, crate::dtype::DType::I32)?;
    let y = run(op, KernelSpec::WindowArgmax(*g), x, &shape)?;
    // Flat positions in each H*W plane: trusted by the gather/scatter that use
    // them, and each inside its own window (padding never wins), which lets
    // max-pool's backward scatter visit only the windows covering a pixel.
    let windows = (g.dilation == [1, 1]).then_some(crate::kernel::PoolWindows {
        h: g.h,
        w: g.w,
        out_h: g.out_h,
        out_w: g.out_w,
        kernel: g.kernel,
        stride: g.stride,
        padding: g.padding,
    });
    y.storage().set_index_facts(crate::backend::IndexBound { bound: g.h * g.w, windows, by_kernel: true });
    Ok(y)
}
