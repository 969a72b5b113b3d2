//! Batched matrix products on the GPU, in one of two kernels:
//!
//! - the tiled kernel, `shaders/matmul.wgsl` (real GPUs): 64x64 output
//!   tiles per 8x8 workgroup (or 128x128 per 16x16 for big products), 8x8
//!   register blocks per invocation, K staged through workgroup memory in
//!   slices of 16 (8) (see the shader's notes and `tiled.rs`).
//! - the blocked kernel, `shaders/matmul_blocked.wgsl` filled in for each
//!   block shape (software adapters such as lavapipe, `DeviceType::Cpu`):
//!   no workgroup memory and no barriers; each invocation accumulates a
//!   block of C (up to 16x32, sized to the product: `Block::for_product`)
//!   straight from the storage buffers (see `blocked.rs`).
//!
//! Both read operands through their strides, so transposed views from
//! backward rules cost no copy; broadcast batch dims read with stride 0. They
//! share the parameter block and bindings; only the tile shape (and so the
//! grid) differs. `GpuOptions::matmul_kernel` forces one kernel on any
//! adapter (tests use it to run both).
//!
//! Operands are f32, or f16 on devices with `shader-f16` (both the same: the
//! ops reject mixed dtypes). f16 elements are read as f32 (exactly), the
//! products accumulate in f32 and each element of C is rounded to f16 once
//! at its store: the bits `backend::half`'s widen, f32 product, round gave,
//! without the two conversion passes over the operands and one over C.
//!
//! The parts: `block.rs` (the shapes a product runs in and how it reads its
//! operands), `launch.rs` (running one), `tiled.rs` and `blocked.rs` (the
//! two kernels' sources), `window.rs` (B read through a convolution window:
//! the implicit GEMM), `wgsl.rs` (the WGSL under `shaders/` and the helper
//! that fills it in). This file: the sources and pipeline keys the launch
//! and the catalog share. The options that choose among them are the
//! device's (`GpuOptions`, `options.rs`).

mod block;
mod blocked;
mod launch;
#[cfg(test)]
mod tests;
mod tiled;
mod wgsl;
pub mod window;

pub use block::{Block, Loads, Tiles, BLOCK, BLOCK_LANES, BROADCAST_SIZES, TILE, WIDE_TILE};
pub(in crate::backend::gpu) use launch::product;
pub use launch::{grid3, matmul, matmul_with, MAX_BATCH_RANK};
pub use wgsl::TILED as MATMUL;

use super::epilogue::plain_store;
use super::kernels::{ENABLE_F16, PRELUDE};
use crate::dtype::DType;

/// Which kernel a product runs (`GpuOptions::matmul_kernel`).
pub use super::options::MatmulKernel as Kernel;

/// How the kernels write C[i] (a fused epilogue's `store` ends with it):
/// `{v}` is the f32 value, rounded once where C is f16.
fn write(dt: DType) -> &'static str {
    if dt == DType::F16 {
        "C[i] = f16({v})"
    } else {
        "C[i] = {v}"
    }
}

/// The binding of the first input of a fused epilogue (after A, B and C).
const TAIL_BINDING: usize = 4;

/// The element types the kernels take: operands and C all of one.
pub const DTYPES: [DType; 2] = [DType::F32, DType::F16];

/// The full WGSL source of the tiled kernel over `dt` elements (prelude included).
pub fn source(dt: DType) -> String {
    staged_source(Tiles::SMALL, dt, Loads::Scalar)
}

/// The full WGSL source of the tiled kernel with `Tiles::WIDE`.
pub fn wide_source(dt: DType) -> String {
    staged_source(Tiles::WIDE, dt, Loads::Scalar)
}

/// The pipeline key of the tiled kernel with `tiles` over `dt` elements.
pub fn tiled_key(tiles: Tiles, dt: DType) -> String {
    staged_key(tiles, dt, Loads::Scalar)
}

/// The pipeline key of the tiled kernel with `tiles` over `dt` elements,
/// staging B as `tiled::stage_b` says for B's loads `b`.
pub fn staged_key(tiles: Tiles, dt: DType, b: Loads) -> String {
    format!("matmul:{}{}{}", dt.name(), tiles.key(), tiled::stage_key(b))
}

/// The full WGSL source of the tiled kernel with `tiles`, staging B as
/// `tiled::stage_b` says for B's loads `b` (vec4s where its layout allows).
pub fn staged_source(tiles: Tiles, dt: DType, b: Loads) -> String {
    source_with(Kernel::Tiled, Block::FULL.loading(Loads::Scalar, b), tiles, dt, &plain_store(write(dt)))
}

/// The full WGSL source of `kernel` reading B through a window (implicit
/// GEMM; `b`'s B loads say which way round; blocked: with block `b`).
pub fn window_source(kernel: Kernel, b: Block, dt: DType) -> String {
    assert!(b.b.is_window(), "a window source with {:?} loads of B", b.b);
    source_with(kernel, b, Tiles::SMALL, dt, &plain_store(write(dt)))
}

/// Whether a kernel source uses subgroup operations (a broadcasting block's):
/// a device builds it only with subgroups: `Features::SUBGROUP` natively; in
/// a browser, where wgpu cannot ask for them, the page's own request, and
/// then the pipeline cache adds `enable subgroups;` (`subgroups_by_directive`).
pub fn uses_subgroups(source: &str) -> bool {
    source.contains("subgroupBroadcast")
}

/// The full WGSL source of the blocked kernel with block `b` over `dt`
/// elements (prelude included).
pub fn blocked_source(b: Block, dt: DType) -> String {
    source_with(Kernel::Blocked, b, Tiles::SMALL, dt, &plain_store(write(dt)))
}

/// The source of `kernel` (blocked: with block `b`; tiled: with `tiles`)
/// over `dt` elements with `tail` (an epilogue's code) as its store.
fn source_with(kernel: Kernel, b: Block, tiles: Tiles, dt: DType, tail: &str) -> String {
    let body = match kernel {
        Kernel::Tiled if b.b.is_window() => tiled::window_kernel(dt, b.b.is_transposed_window()),
        Kernel::Tiled => tiled::body(dt, tiles, b.b),
        Kernel::Blocked => blocked::kernel(b, dt),
    };
    assemble(dt, &body, tail)
}

/// A kernel `body` over `dt` elements made a whole source: the prelude, the
/// batch offsets both kernels start from, the body and its store `tail`.
fn assemble(dt: DType, body: &str, tail: &str) -> String {
    let enable = if dt == DType::F16 { ENABLE_F16 } else { "" };
    format!("{enable}{PRELUDE}\n{}\n{body}{tail}", wgsl::BATCH)
}

/// Both kernels (the tiled one with both tiles, and with the wide tile
/// staging B as vec4s) with `e`'s tail in their
/// stores (for validation; epilogues head f32 products only: `jit` leaves
/// f16 values unfused).
pub fn epilogue_sources(e: &crate::kernel::Epilogue) -> Vec<String> {
    let code = super::epilogue::code(e, TAIL_BINDING, write(DType::F32));
    let staged = Block::FULL.loading(Loads::Scalar, Loads::Across);
    [
        (Kernel::Tiled, Block::FULL, Tiles::SMALL),
        (Kernel::Tiled, Block::FULL, Tiles::WIDE),
        (Kernel::Tiled, staged, Tiles::WIDE),
        (Kernel::Blocked, Block::FULL, Tiles::SMALL),
    ]
    .map(|(k, b, t)| source_with(k, b, t, DType::F32, &code))
    .to_vec()
}

/// What the tiled kernel's pipeline key adds for a window mode of B.
pub fn window_key(b: Loads) -> &'static str {
    if b.is_transposed_window() {
        "window_t"
    } else {
        "window"
    }
}

/// The pipeline key of the blocked kernel with block `b` over `dt` elements.
pub fn blocked_key(b: Block, dt: DType) -> String {
    format!("matmul:{}:blocked:{}", dt.name(), b.key())
}
