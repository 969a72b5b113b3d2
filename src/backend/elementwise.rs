//! Device dispatch for the elementwise families, casts and copies.

use super::cpu::elementwise::{self as k, BinarySlices, UnarySlice};
use super::cpu::{self, CpuBuffer, Elem};
use super::Buffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// A unary row's kernels, one per float dtype.
pub struct UnaryKernel {
    pub f32: UnarySlice<f32>,
    pub f64: UnarySlice<f64>,
}

/// A binary row's kernels, one per float dtype.
pub struct BinaryKernel {
    pub f32: BinarySlices<f32, f32>,
    pub f64: BinarySlices<f64, f64>,
}

/// A comparison's kernels, one per dtype, producing masks.
pub struct CompareKernel {
    pub f32: BinarySlices<f32, u8>,
    pub f64: BinarySlices<f64, u8>,
    pub i32: BinarySlices<i32, u8>,
    pub bool: BinarySlices<u8, u8>,
}

fn cpu_of(buf: &Buffer) -> &CpuBuffer {
    match buf {
        Buffer::Cpu(b) => b,
    }
}

fn internal(op: &'static str, what: &str) -> Error {
    Error::dtype(op, format!("internal dtype mismatch in {what}"))
}

pub fn unary(op: &'static str, x: &Tensor, kern: &UnaryKernel, p: [f64; 2]) -> Result<Tensor> {
    let g = x.storage().read();
    let out = match cpu_of(&g) {
        CpuBuffer::F32(v) => CpuBuffer::F32(k::unary_map(v, x.layout(), kern.f32, [p[0] as f32, p[1] as f32])),
        CpuBuffer::F64(v) => CpuBuffer::F64(k::unary_map(v, x.layout(), kern.f64, p)),
        _ => return Err(internal(op, "unary")),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), x.shape()))
}

pub fn binary(op: &'static str, a: &Tensor, b: &Tensor, out_shape: &[usize], kern: &BinaryKernel) -> Result<Tensor> {
    let ga = a.storage().read();
    let gb = b.storage().read();
    let out = match (cpu_of(&ga), cpu_of(&gb)) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => {
            CpuBuffer::F32(k::binary_map(x, a.layout(), y, b.layout(), out_shape, kern.f32))
        }
        (CpuBuffer::F64(x), CpuBuffer::F64(y)) => {
            CpuBuffer::F64(k::binary_map(x, a.layout(), y, b.layout(), out_shape, kern.f64))
        }
        _ => return Err(internal(op, "binary")),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), out_shape))
}

pub fn compare(op: &'static str, a: &Tensor, b: &Tensor, out_shape: &[usize], kern: &CompareKernel) -> Result<Tensor> {
    let ga = a.storage().read();
    let gb = b.storage().read();
    let (la, lb) = (a.layout(), b.layout());
    let out = match (cpu_of(&ga), cpu_of(&gb)) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => k::binary_map(x, la, y, lb, out_shape, kern.f32),
        (CpuBuffer::F64(x), CpuBuffer::F64(y)) => k::binary_map(x, la, y, lb, out_shape, kern.f64),
        (CpuBuffer::I32(x), CpuBuffer::I32(y)) => k::binary_map(x, la, y, lb, out_shape, kern.i32),
        (CpuBuffer::Bool(x), CpuBuffer::Bool(y)) => k::binary_map(x, la, y, lb, out_shape, kern.bool),
        _ => return Err(internal(op, "compare")),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(CpuBuffer::Bool(out)), out_shape))
}

pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    let gc = cond.storage().read();
    let ga = a.storage().read();
    let gb = b.storage().read();
    let CpuBuffer::Bool(c) = cpu_of(&gc) else { return Err(internal("where", "condition")) };
    let (lc, la, lb) = (cond.layout(), a.layout(), b.layout());
    let out = match (cpu_of(&ga), cpu_of(&gb)) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => CpuBuffer::F32(k::where_map(c, lc, x, la, y, lb, out_shape)),
        (CpuBuffer::F64(x), CpuBuffer::F64(y)) => CpuBuffer::F64(k::where_map(c, lc, x, la, y, lb, out_shape)),
        (CpuBuffer::I32(x), CpuBuffer::I32(y)) => CpuBuffer::I32(k::where_map(c, lc, x, la, y, lb, out_shape)),
        (CpuBuffer::Bool(x), CpuBuffer::Bool(y)) => CpuBuffer::Bool(k::where_map(c, lc, x, la, y, lb, out_shape)),
        _ => return Err(internal("where", "operands")),
    };
    Ok(Tensor::from_buffer(Buffer::Cpu(out), out_shape))
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
    let g = x.storage().read();
    let out = crate::with_cpu_buffer!(cpu_of(&g), v, T => cast_to(v, x.layout(), dtype));
    Ok(Tensor::from_buffer(Buffer::Cpu(out), x.shape()))
}

/// A contiguous copy with the same dtype.
pub fn copy(x: &Tensor) -> Tensor {
    let g = x.storage().read();
    let out = crate::with_cpu_buffer!(cpu_of(&g), v, T => T::wrap(cpu::gather_strided(v, x.layout())));
    Tensor::from_buffer(Buffer::Cpu(out), x.shape())
}

/// Writes `src` (same shape and dtype, contiguous or not) into `dst`'s view of its storage.
pub fn write_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    // Reading and writing one storage at once would need both locks: copy first then.
    let src = if std::sync::Arc::ptr_eq(dst.storage(), src.storage()) || !src.is_contiguous() {
        copy(src)
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
    }
    Ok(())
}
