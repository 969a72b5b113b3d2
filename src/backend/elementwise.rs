//! Device dispatch for the elementwise families, casts and copies.

use super::cpu::elementwise::{self as k, BinarySlices, UnarySlice};
use super::cpu::{self, CpuBuffer, Elem};
#[cfg(feature = "gpu")]
use super::gpu::elementwise as g;
use super::Buffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// A unary row's kernels: one per float dtype on the cpu, and a WGSL
/// expression over `x` (with scalars `p0`, `p1`) for the GPU template.
pub struct UnaryKernel {
    pub f32: UnarySlice<f32>,
    pub f64: UnarySlice<f64>,
    pub wgsl: &'static str,
}

/// A binary row's kernels, one per float dtype, and a WGSL expression over `a`, `b`.
pub struct BinaryKernel {
    pub f32: BinarySlices<f32, f32>,
    pub f64: BinarySlices<f64, f64>,
    pub wgsl: &'static str,
}

/// A comparison's kernels, one per dtype, producing masks, and a WGSL bool expression.
pub struct CompareKernel {
    pub f32: BinarySlices<f32, u8>,
    pub f64: BinarySlices<f64, u8>,
    pub i32: BinarySlices<i32, u8>,
    pub bool: BinarySlices<u8, u8>,
    pub wgsl: &'static str,
}

pub(crate) fn internal(op: &'static str, what: &str) -> Error {
    Error::dtype(op, format!("internal dtype or device mismatch in {what}"))
}

pub fn unary(op: &'static str, x: &Tensor, kern: &UnaryKernel, p: [f64; 2]) -> Result<Tensor> {
    super::room_for(op, x, x.shape(), x.dtype())?;
    let gx = x.storage().read();
    let out = match &*gx {
        Buffer::Cpu(CpuBuffer::F32(v)) => {
            Buffer::Cpu(CpuBuffer::F32(k::unary_map(v, x.layout(), kern.f32, [p[0] as f32, p[1] as f32])))
        }
        Buffer::Cpu(CpuBuffer::F64(v)) => Buffer::Cpu(CpuBuffer::F64(k::unary_map(v, x.layout(), kern.f64, p))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Buffer::Gpu(g::unary(op, b, x.layout(), kern.wgsl, p)?),
        _ => return Err(internal(op, "unary")),
    };
    Ok(Tensor::from_buffer(out, x.shape()))
}

pub fn binary(op: &'static str, a: &Tensor, b: &Tensor, out_shape: &[usize], kern: &BinaryKernel) -> Result<Tensor> {
    super::room_for(op, a, out_shape, a.dtype())?;
    let ga = a.storage().read();
    let gb = b.storage().read();
    let (la, lb) = (a.layout(), b.layout());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(CpuBuffer::F32(x)), Buffer::Cpu(CpuBuffer::F32(y))) => {
            Buffer::Cpu(CpuBuffer::F32(k::binary_map(x, la, y, lb, out_shape, kern.f32)))
        }
        (Buffer::Cpu(CpuBuffer::F64(x)), Buffer::Cpu(CpuBuffer::F64(y))) => {
            Buffer::Cpu(CpuBuffer::F64(k::binary_map(x, la, y, lb, out_shape, kern.f64)))
        }
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(x), Buffer::Gpu(y)) => Buffer::Gpu(g::binary(op, x, la, y, lb, out_shape, kern.wgsl, DType::F32)?),
        _ => return Err(internal(op, "binary")),
    };
    Ok(Tensor::from_buffer(out, out_shape))
}

pub fn compare(op: &'static str, a: &Tensor, b: &Tensor, out_shape: &[usize], kern: &CompareKernel) -> Result<Tensor> {
    super::room_for(op, a, out_shape, DType::Bool)?;
    let ga = a.storage().read();
    let gb = b.storage().read();
    let (la, lb) = (a.layout(), b.layout());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(CpuBuffer::Bool(match (x, y) {
            (CpuBuffer::F32(x), CpuBuffer::F32(y)) => k::binary_map(x, la, y, lb, out_shape, kern.f32),
            (CpuBuffer::F64(x), CpuBuffer::F64(y)) => k::binary_map(x, la, y, lb, out_shape, kern.f64),
            (CpuBuffer::I32(x), CpuBuffer::I32(y)) => k::binary_map(x, la, y, lb, out_shape, kern.i32),
            (CpuBuffer::Bool(x), CpuBuffer::Bool(y)) => k::binary_map(x, la, y, lb, out_shape, kern.bool),
            _ => return Err(internal(op, "compare")),
        })),
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(x), Buffer::Gpu(y)) => {
            Buffer::Gpu(g::binary(op, x, la, y, lb, out_shape, kern.wgsl, DType::Bool)?)
        }
        #[cfg(feature = "gpu")]
        _ => return Err(internal(op, "compare")),
    };
    Ok(Tensor::from_buffer(out, out_shape))
}

pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for("where", a, out_shape, a.dtype())?;
    let gc = cond.storage().read();
    let ga = a.storage().read();
    let gb = b.storage().read();
    let (lc, la, lb) = (cond.layout(), a.layout(), b.layout());
    let out = match (&*gc, &*ga, &*gb) {
        (Buffer::Cpu(CpuBuffer::Bool(c)), Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(match (x, y) {
            (CpuBuffer::F32(x), CpuBuffer::F32(y)) => CpuBuffer::F32(k::where_map(c, lc, x, la, y, lb, out_shape)),
            (CpuBuffer::F64(x), CpuBuffer::F64(y)) => CpuBuffer::F64(k::where_map(c, lc, x, la, y, lb, out_shape)),
            (CpuBuffer::I32(x), CpuBuffer::I32(y)) => CpuBuffer::I32(k::where_map(c, lc, x, la, y, lb, out_shape)),
            (CpuBuffer::Bool(x), CpuBuffer::Bool(y)) => CpuBuffer::Bool(k::where_map(c, lc, x, la, y, lb, out_shape)),
            _ => return Err(internal("where", "operands")),
        }),
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(c), Buffer::Gpu(x), Buffer::Gpu(y)) => {
            Buffer::Gpu(g::where_((c, lc), (x, la), (y, lb), out_shape)?)
        }
        _ => return Err(internal("where", "operands")),
    };
    Ok(Tensor::from_buffer(out, out_shape))
}

fn cast_to<T: Elem>(v: &[T], l: &Layout, dtype: DType) -> CpuBuffer {
    match dtype {
        DType::F32 => CpuBuffer::F32(k::cast(v, l)),
        DType::F64 => CpuBuffer::F64(k::cast(v, l)),
        DType::I32 => CpuBuffer::I32(k::cast(v, l)),
        DType::Bool => CpuBuffer::Bool(k::cast(v, l)),
    }
}

/// A contiguous copy in `dtype`.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    super::room_for("to_dtype", x, x.shape(), dtype)?;
    let gx = x.storage().read();
    let out = match &*gx {
        Buffer::Cpu(b) => Buffer::Cpu(crate::with_cpu_buffer!(b, v, T => cast_to(v, x.layout(), dtype))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Buffer::Gpu(g::cast("to_dtype", b, x.layout(), dtype)?),
    };
    Ok(Tensor::from_buffer(out, x.shape()))
}

/// A contiguous copy with the same dtype.
pub fn copy(x: &Tensor) -> Result<Tensor> {
    super::room_for("contiguous", x, x.shape(), x.dtype())?;
    let gx = x.storage().read();
    let out = match &*gx {
        Buffer::Cpu(b) => Buffer::Cpu(crate::with_cpu_buffer!(b, v, T => T::wrap(cpu::gather_strided(v, x.layout())))),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Buffer::Gpu(g::cast("contiguous", b, x.layout(), b.dtype)?),
    };
    let out = Tensor::from_buffer(out, x.shape());
    x.storage().carry_facts_to(x.layout(), out.storage());
    Ok(out)
}

/// Writes `src` (same shape and dtype, contiguous or not) into `dst`'s view of its storage.
pub fn write_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    // Reading and writing one storage at once would need both locks: copy first then.
    let src = if std::sync::Arc::ptr_eq(dst.storage(), src.storage()) || !src.is_contiguous() {
        copy(src)?
    } else {
        src.clone()
    };
    let gs = src.storage().read();
    let mut gd = dst.storage().write();
    let off = src.layout().offset;
    let n = src.numel();
    match (&mut *gd, &*gs) {
        (Buffer::Cpu(d), Buffer::Cpu(s)) => match (d, s) {
            (CpuBuffer::F32(d), CpuBuffer::F32(s)) => cpu::scatter_strided(d, dst.layout(), &s[off..off + n]),
            (CpuBuffer::F64(d), CpuBuffer::F64(s)) => cpu::scatter_strided(d, dst.layout(), &s[off..off + n]),
            (CpuBuffer::I32(d), CpuBuffer::I32(s)) => cpu::scatter_strided(d, dst.layout(), &s[off..off + n]),
            (CpuBuffer::Bool(d), CpuBuffer::Bool(s)) => cpu::scatter_strided(d, dst.layout(), &s[off..off + n]),
            _ => return Err(internal("copy_", "in-place write")),
        },
        #[cfg(feature = "gpu")]
        (Buffer::Gpu(d), Buffer::Gpu(s)) => g::copy_into(s, src.layout(), d, dst.layout())?,
        #[cfg(feature = "gpu")]
        _ => return Err(internal("copy_", "in-place write")),
    }
    Ok(())
}
