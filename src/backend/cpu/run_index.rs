//! The cpu backend's index kernels as `KernelSpec`s. Dispatch has checked
//! every index value to lie in range before any of these runs.

use super::index as k;
use super::{contiguous, gather_strided, CpuBuffer, Elem};
use crate::backend::View;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;

fn internal(op: &'static str, what: &str) -> Error {
    Error::dtype(op, format!("operands must share one float or i32 dtype ({what})"))
}

/// The (checked, so non-negative) index values of an i32 view, contiguous:
/// borrowed when they already are (the kernels cast each one as they use it;
/// a converted copy cost an eighth of a max-pool's gather).
fn indices<'a>(op: &'static str, index: &View<'a>) -> Result<super::Contiguous<'a, i32>> {
    let CpuBuffer::I32(v) = buffer(op, index)? else {
        return Err(Error::dtype(op, format!("index must be i32, got {}", index.buffer.dtype())));
    };
    Ok(contiguous(v, index.layout))
}

/// (outer, dim, inner) of `shape` around `axis`.
fn split3(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
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

/// The cpu buffer of a view (never a device one: dispatch keeps them apart).
fn buffer<'a>(op: &'static str, v: &View<'a>) -> Result<&'a CpuBuffer> {
    v.buffer.as_cpu().ok_or_else(|| Error::value(op, "internal: a GPU buffer reached a cpu index kernel"))
}

pub fn run(op: &'static str, spec: &KernelSpec, inputs: &[View]) -> Result<CpuBuffer> {
    Ok(match (spec, inputs) {
        (KernelSpec::IndexSelect { axis }, [x, index]) => {
            let idx = indices(op, index)?;
            let (outer, dim, inner) = split3(&x.layout.shape, *axis);
            crate::with_cpu_buffer!(buffer(op, x)?, v, T => {
                T::wrap(k::index_select(&contiguous(v, x.layout), outer, dim, inner, &idx))
            })
        }
        (KernelSpec::Gather { axis }, [x, index]) => {
            let idx = indices(op, index)?;
            let shape = &index.layout.shape;
            crate::with_cpu_buffer!(buffer(op, x)?, v, T => T::wrap(k::gather(v, x.layout, *axis, &idx, shape)))
        }
        (KernelSpec::IndexAdd { axis }, [base, index, src]) => {
            let idx = indices(op, index)?;
            let (outer, dim, inner) = split3(&base.layout.shape, *axis);
            addable_pair!(op, buffer(op, base)?, buffer(op, src)?, |b, s| {
                let mut out = gather_strided(b, base.layout);
                k::index_add(&mut out, outer, dim, inner, &idx, &contiguous(s, src.layout));
                out
            })
        }
        (KernelSpec::ScatterAdd { axis, .. }, [base, index, src]) => {
            let idx = indices(op, index)?;
            addable_pair!(op, buffer(op, base)?, buffer(op, src)?, |b, s| {
                let mut out = gather_strided(b, base.layout);
                k::scatter_add(&mut out, &base.layout.shape, *axis, &idx, &index.layout.shape, s, src.layout);
                out
            })
        }
        _ => return Err(Error::value(op, format!("internal: {} is not an index kernel", spec.name()))),
    })
}
