//! Running a product: the checks on its operands, the choice of kernel,
//! block and tiles for its shape and device, its parameter block
//! (`shaders/matmul.wgsl` lists the words) and its grid of workgroups.

use super::block::{Block, Loads, Tiles, WIDE_TILE};
use super::{blocked_key, blocked_source, source_with, staged_key, tiled, window_key, window_source};
use super::{write, Kernel, DTYPES, TAIL_BINDING};
use crate::backend::gpu::epilogue::{plain_store, Tail};
use crate::backend::gpu::{GpuBuffer, GpuContext};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{coalesce, contiguous_strides, Layout};

/// Batch dims the kernel indexes (after merging contiguous ones).
pub const MAX_BATCH_RANK: usize = 8;

/// `a` [..., m, k] times `b` [..., k, n] (same rank, batch dims broadcast to
/// `batch`); returns the contiguous [batch..., m, n] product.
pub fn matmul(a: &GpuBuffer, la: &Layout, b: &GpuBuffer, lb: &Layout, batch: &[usize]) -> Result<GpuBuffer> {
    matmul_with(a, la, b, lb, batch, None)
}

/// `matmul`, each element of the product going through `tail` (a fused
/// epilogue, `backend/gpu/epilogue.rs`) before it is stored.
pub fn matmul_with(
    a: &GpuBuffer,
    la: &Layout,
    b: &GpuBuffer,
    lb: &Layout,
    batch: &[usize],
    tail: Option<&Tail>,
) -> Result<GpuBuffer> {
    product(a, la, b, lb, batch, tail, None)
}

/// The product behind `matmul_with` and the implicit GEMM (`conv_gemm.rs`):
/// with `window` (a window load mode and its parameter words, from
/// `window::WINDOW` on), B is an image read as its im2col columns or
/// their transpose, and `lb` gives B's shape [batch..., k, n] and the
/// image's batch strides.
pub(in crate::backend::gpu) fn product(
    a: &GpuBuffer,
    la: &Layout,
    b: &GpuBuffer,
    lb: &Layout,
    batch: &[usize],
    tail: Option<&Tail>,
    window: Option<(Loads, &[u32])>,
) -> Result<GpuBuffer> {
    let dt = a.dtype;
    if !DTYPES.contains(&dt) || b.dtype != dt {
        return Err(Error::dtype(
            "matmul",
            format!("the GPU matmul takes two f32 or two f16 operands, got {} and {}", a.dtype, b.dtype),
        ));
    }
    if tail.is_some() && (dt != DType::F32 || window.is_some()) {
        return Err(Error::dtype("matmul", format!("internal: a fused epilogue on a {dt} product")));
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
    let out = GpuBuffer::new(&ctx, "matmul", dt, nb * m * n)?;
    if nb * m * n == 0 {
        return Ok(out);
    }
    // Each operand's elements inside its buffer: the kernels' loads rely on
    // it (the tiled one is built without runtime bounds checks). Through a
    // window, B's layout gives the image's batch strides, not its extent.
    let operands = [("A", a, la), ("B", b, lb)];
    for (name, buf, l) in operands.into_iter().take(if window.is_some() { 1 } else { 2 }) {
        if !l.fits_in(buf.len) {
            return Err(Error::shape(
                "matmul",
                format!(
                    "internal: operand {name} {:?} (strides {:?}, offset {}) reaches past its {}-element buffer",
                    l.shape, l.strides, l.offset, buf.len
                ),
            ));
        }
    }
    let tuning = &ctx.tuning;
    let kernel = if tuning.matmul_tiled() { Kernel::Tiled } else { Kernel::Blocked };
    let mut block = Block::for_product(m, n, ctx.matmul_cols16_to()).unrolled(unroll_for(&ctx, kernel, m, k, n)?);
    if kernel == Kernel::Blocked && tuning.matmul_vec4() {
        block = block.loads_for(la, lb, batch);
        // Shared loads of B take K four steps at a time: on lavapipe (whose
        // own choice is 1) that ran about twice as fast as one step at a
        // time. (B read through a window never broadcasts.)
        let size = tuning.matmul_broadcast();
        if size > 0 && window.is_none() {
            let shared = block.unrolled(4).loads_for(la, lb, batch).broadcasting(size, m, k);
            if shared.broadcast > 0 {
                block = shared;
            }
        }
    }
    if let Some((loads, _)) = window {
        block = block.loading(block.a, loads);
    } else if kernel == Kernel::Tiled && tuning.matmul_vec4() {
        // Stage an aligned B as vec4s (`tiled::stage_b`).
        block = block.loading(Loads::Scalar, Block::FULL.loads_for(la, lb, batch).b);
    }
    // The wide tile where the product has enough of them (never through a
    // window: the convolutions' products are small).
    let wide = m.div_ceil(WIDE_TILE) * n.div_ceil(WIDE_TILE) * nb >= tuning.matmul_wide_from();
    let tiling = if kernel == Kernel::Tiled && window.is_none() && wide { Tiles::WIDE } else { Tiles::SMALL };
    let [tm, tn] = match kernel {
        Kernel::Tiled => [tiling.edge, tiling.edge],
        Kernel::Blocked => block.tile(),
    };
    let mut params = params(la, lb, batch, [m, k, n], [tm, tn])?;
    params.extend_from_slice(window.map_or(&[], |(_, words)| words));
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    let tiles = [n.div_ceil(tn), m.div_ceil(tm), nb];
    let grid = grid3(tiles, max as u64).ok_or_else(|| {
        Error::shape("matmul", format!("{nb} products of [{m}, {k}] x [{k}, {n}] exceed the GPU's dispatch limits"))
    })?;
    let mut buffers = vec![a.raw(), b.raw(), out.raw()];
    let pipeline = match (kernel, tail) {
        (Kernel::Tiled, None) if block.b.is_window() => {
            let key = format!("matmul:{}:{}", dt.name(), window_key(block.b));
            ctx.pipeline(&key, || window_source(Kernel::Tiled, block, dt))?
        }
        (Kernel::Tiled, None) => {
            let key = staged_key(tiling, dt, block.b);
            let source = || source_with(Kernel::Tiled, block, tiling, dt, &plain_store(write(dt)));
            if tuning.matmul_runtime_checks() {
                ctx.pipeline(&key, source)?
            } else {
                // SAFETY: the kernel's loads are operand elements (their
                // layouts fit their buffers, checked above), staged only
                // inside the product's M, K and N, or vec4s starting there,
                // which end inside the buffer (`tiled::stage_b`); its stores
                // are elements of C inside M and N; its workgroup-memory
                // indices are bounded by its constants; its loops end (K and
                // the batch rank are finite) and its divisors are tile
                // counts and batch sizes, never 0 for a non-empty product.
                unsafe { ctx.pipeline_unchecked(&key, source)? }
            }
        }
        (Kernel::Blocked, None) => ctx.pipeline(&blocked_key(block, dt), || blocked_source(block, dt))?,
        (kernel, Some(t)) => {
            params.extend_from_slice(&t.params);
            buffers.extend(t.buffers.iter().map(|b| b.raw()));
            let shape = match kernel {
                Kernel::Blocked => block.key(),
                Kernel::Tiled => format!("{}{}", tiling.key(), tiled::stage_key(block.b)),
            };
            ctx.pipeline(&format!("matmul:f32:{kernel:?}{shape}:{}", t.key), || {
                source_with(kernel, block, tiling, dt, &t.code(TAIL_BINDING, write(dt)))
            })?
        }
    };
    ctx.dispatch_grid(&pipeline, &params, &buffers, grid);
    Ok(out)
}

/// Loop iterations the blocked kernel needs besides its K loop (the row
/// stores; the budget below is for the whole invocation).
const OTHER_ITERATIONS: usize = 64;

/// The K unrolling of the blocked kernel for an [m, k] x [k, n] product: the
/// adapter's (`GpuContext::matmul_unroll`), or 4 where that keeps an
/// invocation within the adapter's loop budget. lavapipe runs at most 65,535
/// loop iterations per invocation, all loops together (llvmpipe's guard
/// against endless loops), and then silently moves on: K = 70,000 gave
/// 65,533 instead of 70,000. A product even 4x unrolling cannot fit is an
/// error naming the adapter, not a wrong result.
fn unroll_for(ctx: &GpuContext, kernel: Kernel, m: usize, k: usize, n: usize) -> Result<usize> {
    let unroll = ctx.tuning.matmul_unroll();
    let (Kernel::Blocked, Some(budget)) = (kernel, ctx.loop_budget()) else { return Ok(unroll) };
    let fits = |steps: usize| k / steps + OTHER_ITERATIONS <= budget;
    match [unroll, 4].into_iter().find(|&steps| fits(steps)) {
        Some(steps) => Ok(steps),
        None => Err(Error::shape(
            "matmul",
            format!(
                "[{m}, {k}] x [{k}, {n}]: an inner dimension of {k} needs more loop iterations than the adapter '{}' runs per invocation ({budget}); at most {} on this adapter",
                ctx.info.name,
                4 * (budget - OTHER_ITERATIONS)
            ),
        )),
    }
}

/// Strides of the batch dims of `l` broadcast to `batch` (0 where broadcast).
pub(super) fn batch_strides(l: &Layout, batch: &[usize]) -> Vec<usize> {
    (0..batch.len()).map(|i| if l.shape[i] == 1 && batch[i] != 1 { 0 } else { l.strides[i] }).collect()
}

fn to_u32(what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::shape("matmul", format!("{what} {v} exceeds the GPU's 32-bit indexing")))
}

/// The uniform block described at the top of `shaders/matmul.wgsl`.
fn params(la: &Layout, lb: &Layout, batch: &[usize], [m, k, n]: [usize; 3], [tm, tn]: [usize; 2]) -> Result<Vec<u32>> {
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
        n.div_ceil(tn),
        m.div_ceil(tm),
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
