//! The cpu backend's kernels without inputs (fills, sequences, random
//! draws) and its index range check. The GPU backend builds sequences and
//! random draws with these too (on the host, then uploads), so every
//! backend produces the same bits for a spec.

use super::{pool, CpuBuffer, Elem};
use crate::backend::api::{mismatch, wrong_entry};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::random::Stream;
use crate::kernel::{IndexCheck, KernelSpec};
use crate::shape::Layout;

/// `n` elements `T::from_f64(f(i))` in a buffer from the pool.
fn filled_with<T: Elem>(n: usize, f: impl Fn(usize) -> T) -> Vec<T> {
    let mut v = pool::take::<T>(n);
    for (i, x) in v.iter_mut().enumerate() {
        *x = f(i);
    }
    v
}

/// `n` values `f(i)` converted to `dtype` as a cast would (f32 rounds, i32
/// truncates, bool is `!= 0`).
fn generated(dtype: DType, n: usize, f: impl Fn(usize) -> f64) -> CpuBuffer {
    match dtype {
        DType::F32 => CpuBuffer::F32(filled_with(n, |i| f32::from_f64(f(i)))),
        DType::F64 => CpuBuffer::F64(filled_with(n, f)),
        DType::F16 => CpuBuffer::F16(filled_with(n, |i| super::buffer::f16_from_f64(f(i)))),
        DType::I32 => CpuBuffer::I32(filled_with(n, |i| i32::from_f64(f(i)))),
        DType::Bool => CpuBuffer::Bool(filled_with(n, |i| u8::from_f64(f(i)))),
    }
}

/// A kernel without inputs: a new buffer of `out_shape`.
pub fn create(op: &'static str, spec: &KernelSpec, out_shape: &[usize]) -> Result<CpuBuffer> {
    let n = out_shape.iter().product();
    Ok(match spec {
        KernelSpec::Fill { dtype, value } => CpuBuffer::filled(*dtype, n, value.0),
        KernelSpec::Sequence { seq, dtype } => {
            if !seq.fits(out_shape) {
                return Err(Error::shape(op, format!("{} cannot fill shape {out_shape:?}", spec.name())));
            }
            generated(*dtype, n, seq.values(out_shape))
        }
        KernelSpec::Random { dist, dtype, seed } => {
            if !dist.produces(*dtype) {
                return Err(mismatch(op, spec));
            }
            let s = Stream::new(*seed);
            match dtype {
                DType::F32 => CpuBuffer::F32(filled_with(n, |i| dist.sample_f32(&s, i as u64))),
                _ => generated(*dtype, n, |i| dist.sample_f64(&s, i as u64)),
            }
        }
        _ => return Err(wrong_entry(op, spec)),
    })
}

/// The range check of the cpu index view `layout` of `index`: an error
/// naming `check.op` for the first value outside `0..check.dim`.
pub fn check(check: &IndexCheck, index: &CpuBuffer, layout: &Layout) -> Result<()> {
    let CpuBuffer::I32(v) = index else {
        return Err(Error::dtype(
            check.op,
            format!("index must be i32, got {} of shape {:?}", index.dtype(), layout.shape),
        ));
    };
    check.verify(&super::contiguous(v, layout))
}
