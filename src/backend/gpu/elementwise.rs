//! Elementwise families, casts, fills, copies, uploads and readback on the GPU.

use super::kernels::{compute_type, launch_template, Input, Template};
use super::{GpuBuffer, GpuContext};
use crate::backend::cpu::{gather_strided, CpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Layout;
use std::sync::Arc;

fn f32_bits(v: f64) -> u32 {
    (v as f32).to_bits()
}

fn scalar_bits(v: f64, dtype: DType) -> u32 {
    match dtype {
        DType::F32 | DType::F64 | DType::F16 => f32_bits(v),
        DType::I32 => (v as i32) as u32,
        DType::Bool => (v != 0.0) as u32,
    }
}

/// `out = expr(x)` for a unary row (`x`, `p0`, `p1` in scope), in x's float
/// dtype (f16 computes in f32 and rounds once).
pub fn unary(op: &'static str, x: &GpuBuffer, lx: &Layout, expr: &str, p: [f64; 2]) -> Result<GpuBuffer> {
    let ctx = x.ctx().clone();
    let dt = x.dtype;
    let out = GpuBuffer::new(&ctx, op, dt, lx.numel())?;
    let scalars = [f32_bits(p[0]), f32_bits(p[1])];
    let key = if dt == DType::F32 { format!("unary:{op}") } else { format!("unary:{op}:{}", dt.name()) };
    launch_template(&ctx, op, &key, || unary_template(dt, expr), &lx.shape, &[lx], &scalars, &[x], &out)?;
    Ok(out)
}

/// `out = expr(a, b)` with broadcasting; `out_dtype` is the operands' float
/// dtype for arithmetic, Bool for comparisons.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    op: &'static str,
    a: &GpuBuffer,
    la: &Layout,
    b: &GpuBuffer,
    lb: &Layout,
    shape: &[usize],
    expr: &str,
    out_dtype: DType,
) -> Result<GpuBuffer> {
    let ctx = a.ctx().clone();
    let n: usize = shape.iter().product();
    let out = GpuBuffer::new(&ctx, op, out_dtype, n)?;
    let key = format!("binary:{op}:{}", a.dtype.name());
    let template = || binary_template(a.dtype, out_dtype, expr);
    launch_template(&ctx, op, &key, template, shape, &[la, lb], &[0, 0], &[a, b], &out)?;
    Ok(out)
}

/// `out = c ? a : b` with broadcasting of all three.
pub fn where_(
    c: (&GpuBuffer, &Layout),
    a: (&GpuBuffer, &Layout),
    b: (&GpuBuffer, &Layout),
    shape: &[usize],
) -> Result<GpuBuffer> {
    let ctx = a.0.ctx().clone();
    let n: usize = shape.iter().product();
    let dt = a.0.dtype;
    let out = GpuBuffer::new(&ctx, "where", dt, n)?;
    let key = format!("where:{}", dt.name());
    let template = || where_template(dt);
    launch_template(&ctx, "where", &key, template, shape, &[c.1, a.1, b.1], &[0, 0], &[c.0, a.0, b.0], &out)?;
    Ok(out)
}

/// A contiguous copy of the view `lx` of `x`, converted to `dtype`.
pub fn cast(op: &'static str, x: &GpuBuffer, lx: &Layout, dtype: DType) -> Result<GpuBuffer> {
    let ctx = x.ctx().clone();
    let n = lx.numel();
    let out = GpuBuffer::new(&ctx, op, dtype, n)?;
    let key = format!("cast:{}:{}", x.dtype.name(), dtype.name());
    let template = || cast_template(x.dtype, dtype);
    launch_template(&ctx, op, &key, template, &lx.shape, &[lx], &[0, 0], &[x], &out)?;
    Ok(out)
}

/// Writes every element of `value` into `out`'s first `n` elements.
pub fn fill_into(out: &GpuBuffer, n: usize, value: f64) -> Result<()> {
    let ctx = out.ctx().clone();
    let dt = out.dtype;
    let key = format!("fill:{}", dt.name());
    launch_template(&ctx, "fill", &key, || fill_template(dt), &[n], &[], &[scalar_bits(value, dt), 0], &[], out)?;
    Ok(())
}

/// A new buffer of `n` elements of `dtype`, all equal to `value`.
pub fn full(ctx: &Arc<GpuContext>, dtype: DType, n: usize, value: f64) -> Result<GpuBuffer> {
    let out = GpuBuffer::new(ctx, "full", dtype, n)?;
    fill_into(&out, n, value)?;
    Ok(out)
}

/// Copies the view `ls` of `src` into the view `ld` of `dst` (same shape and dtype).
pub fn copy_into(src: &GpuBuffer, ls: &Layout, dst: &GpuBuffer, ld: &Layout) -> Result<()> {
    let ctx = src.ctx().clone();
    // Operand 0 is the source; operand 1 describes the destination region.
    let key = format!("copy_into:{}", src.dtype.name());
    let dt = src.dtype;
    launch_template(&ctx, "copy_", &key, || copy_into_template(dt), &ls.shape, &[ls, ld], &[0, 0], &[src], dst)?;
    Ok(())
}

/// The bytes of a host buffer's view in the GPU's element format (bool as u32).
fn device_bytes(src: &CpuBuffer, layout: &Layout) -> Result<(DType, Vec<u8>)> {
    Ok(match src {
        CpuBuffer::F32(v) => (DType::F32, bytemuck::cast_slice(&gather_strided(v, layout)).to_vec()),
        CpuBuffer::I32(v) => (DType::I32, bytemuck::cast_slice(&gather_strided(v, layout)).to_vec()),
        CpuBuffer::Bool(v) => {
            let w: Vec<u32> = gather_strided(v, layout).into_iter().map(u32::from).collect();
            (DType::Bool, bytemuck::cast_slice(&w).to_vec())
        }
        CpuBuffer::F16(v) => (DType::F16, bytemuck::cast_slice(&gather_strided(v, layout)).to_vec()),
        CpuBuffer::F64(_) => {
            return Err(Error::dtype("to", "f64 tensors live on the cpu only; convert with to_dtype(F32) first"))
        }
    })
}

/// Uploads a host buffer's view to a new contiguous GPU buffer.
pub fn upload(ctx: &Arc<GpuContext>, src: &CpuBuffer, layout: &Layout) -> Result<GpuBuffer> {
    let (dtype, bytes) = device_bytes(src, layout)?;
    let out = GpuBuffer::new(ctx, "to", dtype, layout.numel())?;
    ctx.upload(out.raw(), &bytes)?;
    Ok(out)
}

/// Writes a contiguous host buffer of `out`'s dtype and length into `out`, for `op`.
pub fn write_host(op: &'static str, out: &GpuBuffer, src: &CpuBuffer) -> Result<()> {
    let (dtype, bytes) = device_bytes(src, &Layout::contiguous(&[src.len()]))?;
    if dtype != out.dtype || src.len() != out.len {
        return Err(Error::value(
            op,
            format!("internal: {} {dtype} values for a {} buffer of {}", src.len(), out.dtype, out.len),
        ));
    }
    out.ctx().upload_for(op, out.raw(), &bytes)
}

/// Starts reading the view `layout` of `x` back (copies it contiguous first if needed).
pub fn start_download(x: &GpuBuffer, layout: &Layout) -> Result<super::readback::Readback> {
    let contiguous;
    let buf = if layout.is_contiguous() && layout.offset == 0 {
        x
    } else {
        contiguous = cast("to_vec", x, layout, x.dtype)?;
        &contiguous
    };
    super::readback::Readback::start(x.ctx(), buf.raw(), (layout.numel() * super::element_bytes(x.dtype)) as u64)
}

/// Host elements of `dtype` from the bytes of a readback.
pub fn decode(bytes: &[u8], dtype: DType) -> CpuBuffer {
    match dtype {
        DType::F32 | DType::F64 => CpuBuffer::F32(bytemuck::pod_collect_to_vec(bytes)),
        DType::F16 => CpuBuffer::F16(bytemuck::pod_collect_to_vec(bytes)),
        DType::I32 => CpuBuffer::I32(bytemuck::pod_collect_to_vec(bytes)),
        DType::Bool => {
            CpuBuffer::Bool(bytemuck::pod_collect_to_vec::<u8, u32>(bytes).into_iter().map(|v| v as u8).collect())
        }
    }
}

/// Reads the view `layout` of `x` back to the host (blocking natively).
pub fn download(x: &GpuBuffer, layout: &Layout) -> Result<CpuBuffer> {
    let bytes = super::context::block_on_readback(start_download(x, layout)?)?;
    Ok(decode(&bytes, x.dtype))
}

// ---- kernel sources: one builder per template instantiation, shared by the
// launches below and by `catalog` (which validates every source with naga).

fn input(name: &'static str, var: &'static str, dtype: DType) -> Input {
    Input { name, var, dtype }
}

fn template(inputs: Vec<Input>, out: DType, expr: impl Into<String>) -> Template {
    Template { inputs, out, expr: expr.into(), strided_out: false }
}

pub(crate) fn unary_template(dt: DType, expr: &str) -> Template {
    template(vec![input("A", "x", dt)], dt, expr)
}

/// Arithmetic (`out` = F32) or comparison (`out` = Bool: the bool expression becomes a u32 mask).
pub(crate) fn binary_template(dtype: DType, out: DType, expr: &str) -> Template {
    let wrapped = if out == DType::Bool { format!("select(0u, 1u, {expr})") } else { expr.to_string() };
    template(vec![input("A", "a", dtype), input("B", "b", dtype)], out, wrapped)
}

pub(crate) fn where_template(dt: DType) -> Template {
    template(vec![input("C", "c", DType::Bool), input("A", "a", dt), input("B", "b", dt)], dt, "select(b, a, c != 0u)")
}

/// The conversion of `x` (loaded in `from`'s compute type) to `to`'s compute
/// type; an f16 result is rounded by the template's store.
pub(crate) fn convert(from: DType, to: DType) -> String {
    let (f, t) = (compute_type(from), compute_type(to));
    match (from, to) {
        _ if f == t => "x".into(),
        // `!(x == 0)`, not `x != 0`: NaN is true (as on the cpu and in
        // PyTorch), and drivers may fold `!=` on floats as an ordered compare.
        (_, DType::Bool) => format!("select(0u, 1u, !(x == {f}(0)))"),
        (DType::F32 | DType::F64 | DType::F16, DType::I32) => "to_i32_(x)".into(),
        _ => format!("{t}(x)"),
    }
}

pub(crate) fn cast_template(from: DType, to: DType) -> Template {
    template(vec![input("A", "x", from)], to, convert(from, to))
}

pub(crate) fn fill_template(dt: DType) -> Template {
    let expr = match dt {
        DType::F32 | DType::F64 | DType::F16 => "pf(10u)",
        DType::I32 => "pi(10u)",
        DType::Bool => "pm(10u)",
    };
    template(vec![], dt, expr)
}

pub(crate) fn copy_into_template(dt: DType) -> Template {
    Template { strided_out: true, ..template(vec![input("A", "x", dt)], dt, "x") }
}
