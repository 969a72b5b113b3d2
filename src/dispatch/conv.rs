//! Device dispatch for the 2-D sliding-window kernels: im2col / col2im and
//! the per-window argmax that max pooling gathers through, on the cpu
//! (contiguous copies first) or the GPU (strided reads, `gpu::conv`).

use crate::backend::cpu::conv as k;
use crate::backend::cpu::{gather_strided, CpuBuffer, Elem};
#[cfg(feature = "gpu")]
use crate::backend::gpu::conv as gk;
use crate::backend::Buffer;
use crate::error::{Error, Result};
use crate::kernel::Window2d;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// The elements of `x` in row-major order, borrowed when already contiguous.
fn contiguous<'a, T: Elem>(v: &'a [T], x: &Tensor) -> Cow<'a, [T]> {
    let l = x.layout();
    if l.is_contiguous() {
        Cow::Borrowed(&v[l.offset..l.offset + l.numel()])
    } else {
        Cow::Owned(gather_strided(v, l))
    }
}

/// [n, c, h, w] -> [n, c * kh * kw, out_h * out_w].
pub fn unfold2d(op: &'static str, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    super::room_for(op, x, &[g.n, g.col_rows(), g.windows()], x.dtype())?;
    let guard = x.storage().read();
    let out = match &*guard {
        Buffer::Cpu(CpuBuffer::F32(v)) => CpuBuffer::F32(k::unfold(&contiguous(v, x), g)),
        Buffer::Cpu(CpuBuffer::F64(v)) => CpuBuffer::F64(k::unfold(&contiguous(v, x), g)),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => {
            let y = gk::unfold(op, b, x.layout(), g)?;
            return Ok(Tensor::from_buffer(Buffer::Gpu(y), &[g.n, g.col_rows(), g.windows()]));
        }
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), &[g.n, g.col_rows(), g.windows()]))
}

/// [n, c * kh * kw, out_h * out_w] -> [n, c, h, w], summing overlaps.
pub fn fold2d(op: &'static str, cols: &Tensor, g: &Window2d) -> Result<Tensor> {
    super::room_for(op, cols, &[g.n, g.c, g.h, g.w], cols.dtype())?;
    let guard = cols.storage().read();
    let out = match &*guard {
        Buffer::Cpu(CpuBuffer::F32(v)) => CpuBuffer::F32(k::fold(&contiguous(v, cols), g)),
        Buffer::Cpu(CpuBuffer::F64(v)) => CpuBuffer::F64(k::fold(&contiguous(v, cols), g)),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => {
            let y = gk::fold(op, b, cols.layout(), g)?;
            return Ok(Tensor::from_buffer(Buffer::Gpu(y), &[g.n, g.c, g.h, g.w]));
        }
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", cols.dtype()))),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), &[g.n, g.c, g.h, g.w]))
}

/// [n, c, h, w] -> i32 [n, c, out_h, out_w]: where in its [h, w] plane each window's maximum is.
pub fn window_argmax(op: &'static str, x: &Tensor, g: &Window2d) -> Result<Tensor> {
    super::room_for(op, x, &[g.n, g.c, g.out_h, g.out_w], crate::dtype::DType::I32)?;
    let guard = x.storage().read();
    let out = match &*guard {
        Buffer::Cpu(CpuBuffer::F32(v)) => Buffer::Cpu(CpuBuffer::I32(k::window_argmax(&contiguous(v, x), g))),
        Buffer::Cpu(CpuBuffer::F64(v)) => Buffer::Cpu(CpuBuffer::I32(k::window_argmax(&contiguous(v, x), g))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Buffer::Gpu(gk::window_argmax(op, b, x.layout(), g)?),
        _ => return Err(Error::dtype(op, format!("expected a float tensor, got {}", x.dtype()))),
    };
    // Flat positions in each H*W plane: trusted by the gather/scatter that use
    // them, and each inside its own window (padding never wins), which lets
    // max-pool's backward scatter visit only the windows covering a pixel.
    let y = Tensor::from_buffer(out, &[g.n, g.c, g.out_h, g.out_w]);
    let windows = (g.dilation == [1, 1]).then_some(crate::backend::PoolWindows {
        h: g.h,
        w: g.w,
        out_h: g.out_h,
        out_w: g.out_w,
        kernel: g.kernel,
        stride: g.stride,
        padding: g.padding,
    });
    y.storage().set_index_facts(crate::backend::IndexBound { bound: g.h * g.w, windows });
    Ok(y)
}
