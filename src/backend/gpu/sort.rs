//! The stable argsort on the GPU (`shaders/sort.wgsl`): each row, padded to a
//! power of two P, is sorted as (key, position) pairs by a bitonic network,
//! all of it recorded in one batch with the op (no readback): one dispatch
//! fills the pairs, one sorts every block of 512 in workgroup memory, then
//! each later merge stage k (1024 .. P) takes one dispatch per distance of
//! 512 or more and one local dispatch for the distances below; a last
//! dispatch writes the positions. A 2^20-element row takes about 80
//! dispatches. f32 and i32 (the fill kernel maps either to ordered keys);
//! f16 operands are widened first (`backend::half`), which keeps the order
//! (every f16 is an f32).

use super::index::kernel_source;
use super::kernels::{elementwise_params, workgroups};
use super::scan::{axis_last, fits_u32, output_axis_last};
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::shape::Layout;

pub const SORT: &str = wgsl_file!(include_str!("../../../shaders/sort.wgsl"));

/// The kernels of sort.wgsl.
const KERNELS: [&str; 4] = ["init", "merge", "local", "finish"];

/// Pairs one local dispatch sorts in workgroup memory.
const BLOCK: usize = 512;

/// Every source this module builds, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    let mut all: Vec<_> = KERNELS.iter().map(|k| (format!("sort:{k}"), kernel_source(SORT, k, DType::F32))).collect();
    all.push(("sort:init:i32".to_string(), kernel_source(SORT, "init", DType::I32)));
    all
}

/// The i32 positions that sort each line along `axis` of the view `layout`
/// of `x` (stable; NaN largest), contiguous in x's shape.
pub fn argsort(op: &'static str, x: &GpuBuffer, layout: &Layout, axis: usize, descending: bool) -> Result<GpuBuffer> {
    if !matches!(x.dtype, DType::F32 | DType::I32) {
        return Err(Error::dtype(op, format!("expected a float or int32 tensor, got {}", x.dtype)));
    }
    let ctx = x.ctx().clone();
    let numel = layout.numel();
    // The result first: a replayed program offers its arena buffer to a kernel's first allocation.
    let out = GpuBuffer::new(&ctx, op, DType::I32, numel)?;
    if numel == 0 {
        return Ok(out);
    }
    let n = layout.shape[axis];
    let rows = numel / n;
    let p = n.next_power_of_two();
    let slots = rows.checked_mul(p).filter(|&s| s <= u32::MAX as usize / 2);
    let Some(slots) = slots else {
        return Err(Error::shape(op, format!("shape {:?} is too large for the GPU sort", layout.shape)));
    };
    fits_u32(op, numel, &layout.shape)?;
    // Two u32 per pair, allocated as i32 elements.
    let pairs = GpuBuffer::new(&ctx, op, DType::I32, 2 * slots)?;
    let pipeline = |k: &'static str| ctx.pipeline(&format!("sort:{k}"), || kernel_source(SORT, k, DType::F32));
    let params = |view: &Layout, k: usize, j: usize, first: usize| {
        let scalars = [n, p, rows, descending as usize, k, j, first].map(|v| v as u32);
        elementwise_params(op, &view.shape, &[view], &scalars)
    };
    let input = axis_last(layout, axis);
    // The fill kernel reads the values, so it is built per element type.
    let init = match x.dtype {
        DType::I32 => ctx.pipeline("sort:init:i32", || kernel_source(SORT, "init", DType::I32))?,
        _ => pipeline("init")?,
    };
    ctx.dispatch(&init, &params(&input, 0, 0, 0)?, &[x.raw(), pairs.raw()], workgroups(slots));
    if p > 1 {
        let local = pipeline("local")?;
        let blocks = slots.div_ceil(BLOCK) as u32;
        let half = BLOCK / 2;
        // Every stage up to sequences of 512 (or the whole row) in workgroup memory.
        ctx.dispatch(&local, &params(&input, p.min(BLOCK), half, 2)?, &[pairs.raw()], blocks);
        let merge = pipeline("merge")?;
        let mut k = 2 * BLOCK;
        while k <= p {
            let mut j = k / 2;
            while j >= BLOCK {
                ctx.dispatch(&merge, &params(&input, k, j, 0)?, &[pairs.raw()], workgroups(slots / 2));
                j /= 2;
            }
            ctx.dispatch(&local, &params(&input, k, half, k)?, &[pairs.raw()], blocks);
            k *= 2;
        }
    }
    let out_view = output_axis_last(&layout.shape, axis);
    let finish = pipeline("finish")?;
    ctx.dispatch(&finish, &params(&out_view, 0, 0, 0)?, &[pairs.raw(), out.raw()], workgroups(numel));
    Ok(out)
}
