//! Batched f32 matrix products on the GPU (`shaders/matmul.wgsl`): 64x64
//! output tiles per 8x8 workgroup, 8x8 register blocks per invocation, K
//! staged through workgroup memory in slices of 16 (see the shader's notes).
//! Operands are read through their strides, so transposed views from
//! backward rules cost no copy; broadcast batch dims read with stride 0.

use super::kernels::PRELUDE;
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{coalesce, contiguous_strides, Layout};

pub const MATMUL: &str = include_str!("../../../shaders/matmul.wgsl");

/// Output tile edge (rows and columns) of one workgroup.
pub const TILE: usize = 64;
/// Batch dims the kernel indexes (after merging contiguous ones).
pub const MAX_BATCH_RANK: usize = 8;

/// The full WGSL source of the kernel (prelude included).
pub fn source() -> String {
    format!("{PRELUDE}\n{MATMUL}")
}

/// `a` [..., m, k] times `b` [..., k, n] (same rank, batch dims broadcast to
/// `batch`); returns the contiguous [batch..., m, n] product.
pub fn matmul(a: &GpuBuffer, la: &Layout, b: &GpuBuffer, lb: &Layout, batch: &[usize]) -> Result<GpuBuffer> {
    if a.dtype != DType::F32 || b.dtype != DType::F32 {
        return Err(Error::dtype(
            "matmul",
            format!("the GPU matmul takes f32 operands, got {} and {}", a.dtype, b.dtype),
        ));
    }
    if a.ctx().id != b.ctx().id {
        return Err(Error::value("matmul", "operands live on different GPU devices"));
    }
    let r = la.shape.len();
    if r < 2 || lb.shape.len() != r || batch.len() != r - 2 {
        return Err(Error::shape(
            "matmul",
            format!("internal: operands {:?} x {:?} with batch {batch:?}", la.shape, lb.shape),
        ));
    }
    let (m, k, n) = (la.shape[r - 2], la.shape[r - 1], lb.shape[r - 1]);
    let nb: usize = batch.iter().product();
    let ctx = a.ctx().clone();
    let out = GpuBuffer::new(&ctx, "matmul", DType::F32, nb * m * n)?;
    if nb * m * n == 0 {
        return Ok(out);
    }
    let params = params(la, lb, batch, [m, k, n])?;
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    let tiles = [n.div_ceil(TILE), m.div_ceil(TILE), nb];
    let grid = grid3(tiles, max as u64).ok_or_else(|| {
        Error::shape("matmul", format!("{nb} products of [{m}, {k}] x [{k}, {n}] exceed the GPU's dispatch limits"))
    })?;
    let pipeline = ctx.pipeline("matmul:f32", source)?;
    ctx.dispatch_grid(&pipeline, &params, &[a.raw(), b.raw(), out.raw()], grid);
    Ok(out)
}

/// Strides of the batch dims of `l` broadcast to `batch` (0 where broadcast).
fn batch_strides(l: &Layout, batch: &[usize]) -> Vec<usize> {
    (0..batch.len()).map(|i| if l.shape[i] == 1 && batch[i] != 1 { 0 } else { l.strides[i] }).collect()
}

fn to_u32(what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::shape("matmul", format!("{what} {v} exceeds the GPU's 32-bit indexing")))
}

/// The uniform block described at the top of `shaders/matmul.wgsl`.
fn params(la: &Layout, lb: &Layout, batch: &[usize], [m, k, n]: [usize; 3]) -> Result<Vec<u32>> {
    let r = la.shape.len();
    let out_strides = contiguous_strides(batch);
    let (sa, sb) = (batch_strides(la, batch), batch_strides(lb, batch));
    let (cshape, cstrides) = coalesce(batch, &[&out_strides, &sa, &sb]);
    if cshape.len() > MAX_BATCH_RANK {
        return Err(Error::shape(
            "matmul",
            format!("the GPU matmul indexes at most {MAX_BATCH_RANK} non-mergeable batch dims, got {batch:?}"),
        ));
    }
    let nb: usize = batch.iter().product();
    // Every index the kernel forms must fit in u32: the largest is the last
    // element of each operand and of the output.
    let last =
        |l: &Layout| l.offset + l.shape.iter().zip(&l.strides).map(|(d, s)| d.saturating_sub(1) * s).sum::<usize>();
    to_u32("element index", last(la).max(last(lb)).max(nb * m * n))?;
    let mut p = vec![0u32; 40];
    let head = [
        m,
        k,
        n,
        nb,
        n.div_ceil(TILE),
        m.div_ceil(TILE),
        la.offset,
        lb.offset,
        la.strides[r - 2],
        la.strides[r - 1],
        lb.strides[r - 2],
        lb.strides[r - 1],
        cshape.len(),
    ];
    for (i, &v) in head.iter().enumerate() {
        p[i] = to_u32("size", v)?;
    }
    for d in 0..cshape.len() {
        p[16 + d] = cshape[d] as u32;
        p[24 + d] = cstrides[1][d] as u32;
        p[32 + d] = cstrides[2][d] as u32;
    }
    Ok(p)
}

/// A grid of at most `max` workgroups per dimension: `(x, y, z)` itself when
/// each fits, else the `x * y * z` workgroups folded into one covering them
/// (the kernel decodes its linear workgroup id and skips the excess). None
/// when even the folded grid does not fit.
pub fn grid3([x, y, z]: [usize; 3], max: u64) -> Option<[u32; 3]> {
    let (x, y, z) = (x.max(1) as u64, y.max(1) as u64, z.max(1) as u64);
    if x <= max && y <= max && z <= max {
        return Some([x as u32, y as u32, z as u32]);
    }
    let total = x.checked_mul(y)?.checked_mul(z)?;
    let gx = total.min(max);
    let gy = total.div_ceil(gx).min(max);
    let gz = total.div_ceil(gx * gy);
    (gz <= max && total <= u32::MAX as u64).then_some([gx as u32, gy as u32, gz as u32])
}

#[cfg(test)]
mod tests {
    use super::grid3;

    #[test]
    fn grids_fit_the_limit_and_cover_every_tile() {
        assert_eq!(grid3([3, 2, 5], 65535), Some([3, 2, 5]));
        assert_eq!(grid3([0, 0, 0], 65535), Some([1, 1, 1]));
        let g = grid3([2, 3, 100_000], 65535).unwrap();
        assert!(g.iter().all(|&d| d <= 65535));
        assert!(g.iter().map(|&d| d as u64).product::<u64>() >= 600_000);
        assert_eq!(grid3([65535, 65535, 65535], 65535), Some([65535; 3]));
        assert_eq!(grid3([1 << 20, 1 << 20, 1], 65535), None);
    }
}
