//! Device dispatch for the index family. The index operand is read back and
//! range-checked here, before any kernel runs, so a bad index is an `Error`
//! naming the op and shapes (never an out-of-bounds panic in a kernel).

use super::cpu::index as k;
use super::cpu::{gather_strided, CpuBuffer, Elem};
use super::Buffer;
use crate::error::{Error, Result};
use crate::shape::Layout;
use crate::tensor::Tensor;
use std::borrow::Cow;

fn cpu_of(buf: &Buffer) -> Result<&CpuBuffer> {
    match buf {
        Buffer::Cpu(b) => Ok(b),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => Err(Error::value("index", "index kernels are not available on the GPU yet")),
    }
}

/// The elements of a layout in row-major order, borrowed when already contiguous.
fn contiguous<'a, T: Elem>(v: &'a [T], l: &Layout) -> Cow<'a, [T]> {
    if l.is_contiguous() {
        Cow::Borrowed(&v[l.offset..l.offset + l.numel()])
    } else {
        Cow::Owned(gather_strided(v, l))
    }
}

/// Reads `index` (I32, checked by the caller) and checks every value is in `0..dim`.
fn checked_indices(
    op: &'static str,
    index: &Tensor,
    dim: usize,
    axis: usize,
    data_shape: &[usize],
) -> Result<Vec<usize>> {
    let g = index.storage().read();
    let CpuBuffer::I32(v) = cpu_of(&g)? else {
        return Err(Error::dtype(op, format!("index must be i32, got {} of shape {:?}", index.dtype(), index.shape())));
    };
    let vals = contiguous(v, index.layout());
    let mut out = Vec::with_capacity(vals.len());
    for &i in vals.iter() {
        if i < 0 || i as usize >= dim {
            return Err(Error::value(
                op,
                format!(
                    "index {i} is out of range for axis {axis} of size {dim} (input shape {data_shape:?}, index shape {:?})",
                    index.shape()
                ),
            ));
        }
        out.push(i as usize);
    }
    Ok(out)
}

/// (outer, dim, inner) of `shape` around `axis`.
fn split3(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

fn internal(op: &'static str, what: &str) -> Error {
    Error::dtype(op, format!("operands must share one float or i32 dtype ({what})"))
}

/// Runs `$body` with `$x`/`$y` bound to the typed slices of two same-dtype
/// buffers of an addable dtype (f32, f64, i32), wrapping the Vec it returns.
macro_rules! addable_pair {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (CpuBuffer::F32($x), CpuBuffer::F32($y)) => CpuBuffer::F32($body),
            (CpuBuffer::F64($x), CpuBuffer::F64($y)) => CpuBuffer::F64($body),
            (CpuBuffer::I32($x), CpuBuffer::I32($y)) => CpuBuffer::I32($body),
            _ => return Err(internal($op, "add")),
        }
    };
}

/// Slices of `x` along `axis` at the positions in 1-D `index`.
pub fn index_select(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    let idx = checked_indices(op, index, x.shape()[axis], axis, x.shape())?;
    let (outer, dim, inner) = split3(x.shape(), axis);
    let g = x.storage().read();
    let out = crate::with_cpu_buffer!(cpu_of(&g)?, v, T => {
        T::wrap(k::index_select(&contiguous(v, x.layout()), outer, dim, inner, &idx))
    });
    let mut shape = x.dims();
    shape[axis] = idx.len();
    Ok(Tensor::from_buffer(Buffer::Cpu(out), &shape))
}

/// A copy of `base` with the slices of `src` along `axis` added at `index`.
pub fn index_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape())?;
    let (outer, dim, inner) = split3(base.shape(), axis);
    let (gb, gs) = (base.storage().read(), src.storage().read());
    let out = addable_pair!(op, cpu_of(&gb)?, cpu_of(&gs)?, |b, s| {
        let mut out = gather_strided(b, base.layout());
        k::index_add(&mut out, outer, dim, inner, &idx, &contiguous(s, src.layout()));
        out
    });
    Ok(Tensor::from_buffer(Buffer::Cpu(out), base.shape()))
}

/// Elements of `x` picked along `axis` by `index` (same rank, PyTorch's gather).
pub fn gather(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    let idx = checked_indices(op, index, x.shape()[axis], axis, x.shape())?;
    let g = x.storage().read();
    let out =
        crate::with_cpu_buffer!(cpu_of(&g)?, v, T => T::wrap(k::gather(v, x.layout(), axis, &idx, index.shape())));
    Ok(Tensor::from_buffer(Buffer::Cpu(out), index.shape()))
}

/// A copy of `base` with `src[p]` added at `p` with `p[axis] = index[p]`.
pub fn scatter_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape())?;
    let (gb, gs) = (base.storage().read(), src.storage().read());
    let out = addable_pair!(op, cpu_of(&gb)?, cpu_of(&gs)?, |b, s| {
        let mut out = gather_strided(b, base.layout());
        k::scatter_add(&mut out, base.shape(), axis, &idx, index.shape(), s, src.layout());
        out
    });
    Ok(Tensor::from_buffer(Buffer::Cpu(out), base.shape()))
}
