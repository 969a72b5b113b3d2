//! Batched matrix products on the GPU, in one of two kernels:
//!
//! - `shaders/matmul.wgsl` (real GPUs): 64x64 output tiles per 8x8
//!   workgroup (or 128x128 per 16x16 for big products), 8x8 register
//!   blocks per invocation, K staged through workgroup memory in slices of
//!   16 (8) (see the shader's notes).
//! - a register-block kernel generated here (software adapters such as
//!   lavapipe, `DeviceType::Cpu`): no workgroup memory and no barriers; each
//!   invocation accumulates a block of C (up to 16x32, sized to the product:
//!   `Block::for_product`) straight from the storage buffers (see
//!   `blocked_kernel`).
//!
//! Both read operands through their strides, so transposed views from
//! backward rules cost no copy; broadcast batch dims read with stride 0. They
//! share the parameter block and bindings; only the tile shape (and so the
//! grid) differs. `SKIFF_GPU_MATMUL=tiled|blocked` forces one kernel on any
//! adapter (tests use it to run both).
//!
//! Operands are f32, or f16 on devices with `shader-f16` (both the same: the
//! ops reject mixed dtypes). f16 elements are read as f32 (exactly), the
//! products accumulate in f32 and each element of C is rounded to f16 once
//! at its store: the bits `backend::half`'s widen, f32 product, round gave,
//! without the two conversion passes over the operands and one over C.

use super::epilogue::{plain_store, Tail};
use super::kernels::{ENABLE_F16, PRELUDE};
use super::{matmul_stage, window_loads};
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{coalesce, contiguous_strides, Layout};
use std::fmt::Write;
use std::sync::OnceLock;

pub const MATMUL: &str = include_str!("../../../shaders/matmul.wgsl");

/// Output tile edge (rows and columns) of one workgroup of the tiled kernel.
pub const TILE: usize = 64;
/// The tiled kernel's wide tile edge, for products with enough such tiles
/// to fill the GPU (`GpuContext::matmul_wide_from`).
pub const WIDE_TILE: usize = 128;

/// The tiled kernel's shape: `edge` x `edge` outputs per workgroup (8x8
/// per invocation), K staged `k` steps at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    pub edge: usize,
    pub k: usize,
}

impl Tiles {
    /// 64x64 outputs, 8x8 invocations, K in slices of 16: every product's
    /// (`TILE`).
    pub const SMALL: Tiles = Tiles { edge: TILE, k: 16 };

    /// 128x128 outputs, 16x16 invocations, K in slices of 8: the same
    /// workgroup storage as `SMALL` (8,448 bytes), for big products. Longer
    /// slices, where an adapter allows more than WebGPU's 16 KiB, measured
    /// slower on an H200 (4096^3: 19.8 TFLOP/s with 8, 19.2 with 16, 12.2
    /// with 32; benches/README.md).
    pub const WIDE: Tiles = Tiles { edge: WIDE_TILE, k: 8 };

    /// Workgroup storage the staged slices take: both operands, `k` rows of
    /// `edge / 4 + 1` vec4s (one of padding).
    pub fn workgroup_bytes(self) -> usize {
        2 * self.k * (self.edge / 4 + 1) * 16
    }

    fn key(self) -> String {
        if self == Tiles::SMALL {
            String::new()
        } else {
            ":wide".to_string()
        }
    }
}
/// Rows and columns of C one invocation of the blocked kernel accumulates,
/// at most (`Block::for_product` picks smaller ones for small products).
pub const BLOCK: [usize; 2] = [16, 32];
/// Invocations per workgroup of the blocked kernel, side by side along N, at most.
pub const BLOCK_LANES: usize = 8;
/// Products at most this wide take 4-column blocks (`Block::for_product`).
const NARROW: usize = 16;
/// The subgroup sizes the blocked kernel can share its loads of B across
/// (`Block::broadcast`): SwiftShader's 4 and lavapipe's 8.
pub const BROADCAST_SIZES: [usize; 2] = [4, 8];
/// Rows of C one workgroup of a broadcasting block computes: the subgroup's
/// lanes side by side along M, `BROADCAST_ROWS / size` rows each.
const BROADCAST_ROWS: usize = 64;
/// The subgroup size (SwiftShader's) whose broadcasting block grows to
/// `TALL_ROWS` rows per workgroup for products of at least `TALL_ROWS` rows
/// and steps of K. SwiftShader's JIT keeps nearly all of a kernel's values
/// on the stack: a multiply-add there costs about five instructions, three
/// of them stack loads and stores. What else a step of K costs (each lane's
/// loads of A, tested one element at a time, and B's broadcasts) is shared
/// by more multiply-adds in a taller block. 256^3 went from 5.7-5.9 to
/// 6.3-6.8 GFLOP/s natively (benches/README.md). K stays unrolled 4x: 8x
/// (first measured with this block) ran no faster, natively or in Chromium,
/// and doubled the pipeline's build (in Chromium the bench's first call at
/// 256^3, the build and 14 products, took 5.0-5.4 s with 8x, 2.3-2.6 s with
/// 4x). The build is still slower than the 64-row block's (0.7-0.9 s), for
/// nothing where K is short ([784, 64] x [64, 256], an MLP's weight gradient
/// at batch 64: 3.7-4.0 GFLOP/s either way, measured with 8x), hence the
/// bound on K. lavapipe (8 lanes) was not measured with it and keeps its
/// block.
const TALL_SIZE: usize = 4;
const TALL_ROWS: usize = 128;

/// The register block of the blocked kernel: `rows` x `cols` of C per
/// invocation, `lanes` invocations per workgroup along N (along M where
/// they share loads: `broadcast`), `unroll` steps of K
/// per loop iteration (1, or 4 with a remainder loop: the adapter's choice,
/// `GpuContext::matmul_unroll`; 4 in the broadcasting blocks). `AlongK`
/// loads of A take any multiple of 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub rows: usize,
    pub cols: usize,
    pub lanes: usize,
    pub unroll: usize,
    /// How the kernel reads A and B (`Loads`).
    pub a: Loads,
    pub b: Loads,
    /// 0, or the subgroup size S across which the lanes share their loads of
    /// B (`Block::broadcasting`): a workgroup is one subgroup of `lanes` = S
    /// invocations side by side along M, all over the same `cols` columns.
    /// Each lane loads 1/S of B's row segment and `subgroupBroadcast` hands
    /// every value to all lanes. On SwiftShader and lavapipe a load costs per
    /// lane (SwiftShader tests and branches on each lane), a constant-lane
    /// broadcast is one shuffle: 256^3 ran 0.8-1.4x as fast on SwiftShader
    /// (median 1.26) and 1.1-2.2x on lavapipe (benches/README.md).
    pub broadcast: usize,
}

/// How the blocked kernel reads an operand. A software adapter pays per load
/// instruction (lavapipe loops over the lanes of each, SwiftShader checks
/// each against the buffer's bounds), so where an operand's contiguous axis
/// lines up with vec4s the kernel binds it as `array<vec4<f32>>` and reads
/// four elements per load. Only the largest block (`BLOCK`) has these
/// variants: each is a pipeline to build (about 0.25 s on SwiftShader), and
/// the products that fill it are the ones whose time is loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Loads {
    /// One element per load, through the strides (any layout).
    Scalar,
    /// Four consecutive steps of K per load: A is contiguous along K
    /// (row-major). Needs `unroll` a multiple of 4. (For B, a transposed
    /// view, it measured no faster than `Scalar`, so B never reads this way.)
    AlongK,
    /// Four rows of A (or columns of B) at one step of K per load: the
    /// operand is contiguous along M (A a transposed view) or N (B row-major).
    Across,
    /// B only: B is the im2col columns of an image that is never unfolded
    /// (implicit GEMM, `conv_gemm.rs`). Element (k, j) of batch n is pixel
    /// (y, x) of channel c of image n, k = (c * kh + ki) * kw + kj and
    /// j = oh * out_w + ow naming the tap and the window, or 0 in the
    /// padding; the geometry follows the product's parameters
    /// (`window_loads.rs`).
    Window,
    /// B only: the transpose of `Window`'s columns (k a window, j a tap).
    WindowT,
    /// `Window` where no window leaves the image (no padding, or an image
    /// padded first: `conv_gemm.rs`), so the loads skip the padding test.
    /// SwiftShader's shader compiler (Subzero) ran out of memory on the
    /// tested loads of every block measured from 8x16 up (a 4-column one
    /// built), and builds these.
    Inside,
    /// `WindowT` where no window leaves the image.
    InsideT,
}

impl Loads {
    /// Whether B is read through a window (any of the four ways).
    pub fn is_window(self) -> bool {
        matches!(self, Loads::Window | Loads::WindowT | Loads::Inside | Loads::InsideT)
    }

    /// Whether B is read through a window the transposed way (k a window, j a tap).
    pub fn is_transposed_window(self) -> bool {
        matches!(self, Loads::WindowT | Loads::InsideT)
    }

    /// Whether each load through the window tests for the padding.
    pub fn tests_padding(self) -> bool {
        matches!(self, Loads::Window | Loads::WindowT)
    }
}

impl Loads {
    /// The mode for an operand whose element (outer, k) sits at
    /// `offset + outer * s_outer + k * s_k` plus multiples of its `batch`
    /// strides: vec4 loads need a unit stride along one axis and the offset,
    /// the other stride and every batch stride on a vec4 boundary; `AlongK`
    /// only where `along_k` allows it (A with K unrolled a multiple of 4x:
    /// each unrolled iteration starts on a multiple of 4; the remainder loop
    /// reads single elements). The last vec4 of a row or column may reach past the
    /// operand's edge, but never past its buffer (sizes are multiples of 256
    /// bytes): those lanes feed only elements of C that are never stored.
    fn for_operand(offset: usize, s_outer: usize, s_k: usize, batch: &[usize], along_k: bool) -> Loads {
        let aligned = |v: usize| v % 4 == 0;
        if !aligned(offset) || !batch.iter().all(|&s| aligned(s)) {
            Loads::Scalar
        } else if s_outer == 1 && aligned(s_k) {
            Loads::Across
        } else if s_k == 1 && aligned(s_outer) && along_k {
            Loads::AlongK
        } else {
            Loads::Scalar
        }
    }

    fn key(self) -> &'static str {
        match self {
            Loads::Scalar => "s",
            Loads::AlongK => "k",
            Loads::Across => "x",
            Loads::Window => "w",
            Loads::WindowT => "t",
            Loads::Inside => "i",
            Loads::InsideT => "j",
        }
    }
}

impl Block {
    /// The largest block, for products that fill it.
    pub const FULL: Block = Block {
        rows: BLOCK[0],
        cols: BLOCK[1],
        lanes: BLOCK_LANES,
        unroll: 1,
        a: Loads::Scalar,
        b: Loads::Scalar,
        broadcast: 0,
    };

    /// The block for an [m, k] x [k, n] product: the smallest of 4, 8 or 16
    /// rows; 4 columns for a product at most `NARROW` wide, 16 for one at most
    /// `cols16_to` wide (`GpuContext::matmul_cols16_to`), else 32; and as many
    /// lanes (1, 2, 4 or 8) as its columns need. A software adapter pays for every load and every
    /// multiply-add of an active invocation, and runs a workgroup's
    /// invocations side by side: so a 16x32 block over a convolution's
    /// [8, 676] x [676, 9] weight gradient loaded 48 values per k where 20
    /// suffice, and an 8x16 block still computed 7 columns for nothing, one
    /// invocation doing all the work. Three invocations of 4 columns each
    /// halved that product on lavapipe and on SwiftShader (and [64, 400] x
    /// [400, 10], [1024, 1024] x [1024, 16] alike); lanes past C's edge return
    /// at once and cost nothing. The same held for wider products: 16-column
    /// blocks beat 32-column ones from 24 to 121 columns on lavapipe by 5-35%
    /// ([64, 400] x [400, 32], [1024, 1024] x [1024, 64], [1024, 72] x [72,
    /// 121], the CNN's conv2 products), and on SwiftShader up to 64 columns by
    /// 1.6-2.6x, but were 10-20% slower there at 80 to 121. At most 45 shapes,
    /// each its own pipeline (twice: K unrolled or not).
    pub fn for_product(m: usize, n: usize, cols16_to: usize) -> Block {
        let rows = [4, 8].into_iter().find(|&r| m <= r).unwrap_or(BLOCK[0]);
        let cols = match n {
            n if n <= NARROW => 4,
            n if n <= cols16_to => 16,
            _ => BLOCK[1],
        };
        let lanes = n.div_ceil(cols).next_power_of_two().min(BLOCK_LANES);
        Block { rows, cols, lanes, unroll: 1, a: Loads::Scalar, b: Loads::Scalar, broadcast: 0 }
    }

    /// This block with `steps` steps of K per loop iteration.
    pub fn unrolled(self, steps: usize) -> Block {
        Block { unroll: steps, ..self }
    }

    /// This block reading A and B as `a` and `b` say.
    pub fn loading(self, a: Loads, b: Loads) -> Block {
        Block { a, b, ..self }
    }

    /// Rows and columns of the output tile one workgroup computes.
    pub fn tile(self) -> [usize; 2] {
        if self.broadcast > 0 {
            [self.rows * self.lanes, self.cols]
        } else {
            [self.rows, self.cols * self.lanes]
        }
    }

    /// The broadcasting form of this block on a device whose subgroups have
    /// `size` lanes, where it applies: the largest block, B read through its
    /// strides (as vec4s across N, or one element per load: a transposed B,
    /// as in `x @ w.T`), and an [m, k] x [k, n] product with rows enough to
    /// fill the workgroup's tile (SwiftShader's tall one where m and k allow:
    /// `TALL_SIZE`); else this block unchanged.
    fn broadcasting(self, size: usize, m: usize, k: usize) -> Block {
        let applies = BROADCAST_SIZES.contains(&size)
            && [self.rows, self.cols] == BLOCK
            && matches!(self.b, Loads::Across | Loads::Scalar)
            && m >= BROADCAST_ROWS;
        if !applies {
            return self;
        }
        let rows = if size == TALL_SIZE && m >= TALL_ROWS && k >= TALL_ROWS { TALL_ROWS } else { BROADCAST_ROWS };
        Block { rows: rows / size, lanes: size, broadcast: size, ..self }
    }

    /// Every broadcasting block the matmul can pick, for validation: per
    /// subgroup size a short product's and (SwiftShader's) the tall one, K
    /// unrolled 4x, with any loads of A and both of B.
    pub fn all_broadcasting() -> Vec<Block> {
        use Loads::{Across, AlongK, Scalar};
        let full = Block::FULL.unrolled(4);
        let loads = [
            (Scalar, Scalar),
            (Scalar, Across),
            (AlongK, Scalar),
            (AlongK, Across),
            (Across, Scalar),
            (Across, Across),
        ];
        let mut all = Vec::new();
        // A product with the fewest rows (and steps of K) that shares loads,
        // and one big enough for the tall block where a size has one.
        for size in BROADCAST_SIZES {
            for mk in [BROADCAST_ROWS, TALL_ROWS] {
                for (a, b) in loads {
                    let block = full.loading(a, b).broadcasting(size, mk, mk);
                    if !all.contains(&block) {
                        all.push(block);
                    }
                }
            }
        }
        all
    }

    /// Every block `for_product` and `Block::loads_for` can pick (for validation).
    pub fn all() -> Vec<Block> {
        use Loads::{Across, AlongK, Scalar};
        let mut all = Vec::new();
        for rows in [4, 8, 16] {
            for cols in [4, 8, 16, 32] {
                // 4 columns serve products at most NARROW wide: 4 lanes at most.
                let lanes: &[usize] = if cols == 4 { &[1, 2, 4] } else { &[1, 2, 4, 8] };
                for &lanes in lanes {
                    for unroll in [1, 4] {
                        let block = Block { rows, cols, lanes, unroll, a: Scalar, b: Scalar, broadcast: 0 };
                        all.push(block);
                        if [rows, cols] != BLOCK {
                            continue;
                        }
                        let a_loads: &[Loads] = if unroll == 4 { &[Scalar, AlongK, Across] } else { &[Scalar, Across] };
                        for &a in a_loads {
                            for b in [Scalar, Across] {
                                if (a, b) != (Scalar, Scalar) {
                                    all.push(block.loading(a, b));
                                }
                            }
                        }
                    }
                }
            }
        }
        all
    }

    /// This block with the loads the operands' layouts allow (`Loads`): the
    /// largest block only, others read one element per load.
    fn loads_for(self, la: &Layout, lb: &Layout, batch: &[usize]) -> Block {
        let r = la.shape.len();
        if [self.rows, self.cols] != BLOCK {
            return self;
        }
        let (sa, sb) = (batch_strides(la, batch), batch_strides(lb, batch));
        let a = Loads::for_operand(la.offset, la.strides[r - 2], la.strides[r - 1], &sa, self.unroll % 4 == 0);
        let b = Loads::for_operand(lb.offset, lb.strides[r - 1], lb.strides[r - 2], &sb, false);
        self.loading(a, b)
    }

    fn key(self) -> String {
        let shared = if self.broadcast > 0 { format!("b{}", self.broadcast) } else { String::new() };
        format!("{}x{}x{}u{}{}{}{shared}", self.rows, self.cols, self.lanes, self.unroll, self.a.key(), self.b.key())
    }
}
/// Batch dims the kernel indexes (after merging contiguous ones).
pub const MAX_BATCH_RANK: usize = 8;

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
/// staging B as `matmul_stage` says for B's loads `b`.
pub fn staged_key(tiles: Tiles, dt: DType, b: Loads) -> String {
    format!("matmul:{}{}{}", dt.name(), tiles.key(), matmul_stage::key(b))
}

/// The full WGSL source of the tiled kernel with `tiles`, staging B as
/// `matmul_stage` says for B's loads `b` (vec4s where its layout allows).
pub fn staged_source(tiles: Tiles, dt: DType, b: Loads) -> String {
    source_with(Kernel::Tiled, Block::FULL.loading(Loads::Scalar, b), tiles, dt, &plain_store(write(dt)))
}

/// `shaders/matmul.wgsl` over `dt` elements with `tiles`, staging B as
/// `matmul_stage` says for B's loads `b`, its loop over a staged slice
/// unrolled (`unroll_slice`).
fn tiled_body(dt: DType, tiles: Tiles, b: Loads) -> String {
    let (wg, tk) = (tiles.edge / 8, tiles.k);
    let staged = tk * (2 * wg + 1);
    let body = MATMUL
        .replace("{ELEM}", wgsl_type(dt))
        .replace("{WG}", &wg.to_string())
        .replace("{TK}", &tk.to_string())
        .replace("{STAGE}", &staged.to_string());
    unroll_slice(&matmul_stage::apply(&body, wgsl_type(dt), b), tk)
}

/// The shader's loop over the `tk` steps of a staged slice written out step
/// by step, each step a block that binds `kk` to its constant: the
/// workgroup-memory addresses become constant offsets and no loop counter
/// or exit test runs between the FMAs. On an H200: 4096^3 19.8 -> 21.8
/// TFLOP/s (128x128 tiles), 9.2 -> 10.0 (64x64); 1024^3 5.1-5.4 -> 6.1.
fn unroll_slice(body: &str, tk: usize) -> String {
    const HEAD: &str = "        for (var kk = 0u; kk < TK; kk = kk + 1u) {\n";
    const END: &str = "\n        }\n";
    let start = body.find(HEAD).expect("shaders/matmul.wgsl's loop over a slice changed");
    let len = body[start + HEAD.len()..].find(END).expect("the loop over a slice ends") + 1;
    let step = &body[start + HEAD.len()..start + HEAD.len() + len];
    let steps: String =
        (0..tk).map(|k| format!("        {{\n            let kk = {k}u;\n{step}        }}\n")).collect();
    format!("{}{steps}{}", &body[..start], &body[start + HEAD.len() + len + END.len() - 1..])
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
        Kernel::Tiled if b.b.is_window() => tiled_window_kernel(dt, b.b.is_transposed_window()),
        Kernel::Tiled => tiled_body(dt, tiles, b.b),
        Kernel::Blocked => blocked_kernel(b, dt),
    };
    let enable = if dt == DType::F16 { ENABLE_F16 } else { "" };
    format!("{enable}{PRELUDE}\n{body}{tail}")
}

/// The tiled kernel reading B through a window (`Loads::Window`, or
/// `WindowT` when `transposed`): its one staging load of B becomes a call of
/// `window_b` (`window_loads::tiled_fn`).
fn tiled_window_kernel(dt: DType, transposed: bool) -> String {
    const LOAD: &str = "w = f32(B[ob + (k0 + bk) * rsb + (col0 + bc) * csb]);";
    assert!(MATMUL.contains(LOAD), "shaders/matmul.wgsl's staging load of B changed");
    let body = tiled_body(dt, Tiles::SMALL, Loads::Scalar).replace(LOAD, "w = window_b(ob, k0 + bk, col0 + bc);");
    format!("{body}{}", window_loads::tiled_fn(transposed, |load| Widen(dt).scalar(load)))
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

/// Whether the tiled kernel keeps wgpu's shader runtime checks
/// (`SKIFF_GPU_MATMUL_CHECKS=on`): off by default, see `product`'s safety
/// note; on an H200 4096^3 ran at 21.6 TFLOP/s with them, 29.1 without (and
/// 30.2 without them, B staged as vec4s; benches/README.md).
pub fn runtime_checks() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SKIFF_GPU_MATMUL_CHECKS").as_deref() == Ok("on"))
}

/// Which kernel a device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Workgroup-memory tiles (`shaders/matmul.wgsl`), for real GPUs.
    Tiled,
    /// Barrier-free register blocks (`blocked_source`), for software adapters.
    Blocked,
}

impl Kernel {
    /// The kernel for an adapter of type `device_type`, unless
    /// `SKIFF_GPU_MATMUL` names one.
    pub fn for_device(device_type: wgpu::DeviceType) -> Kernel {
        static FORCED: OnceLock<Option<Kernel>> = OnceLock::new();
        let forced = FORCED.get_or_init(|| match std::env::var("SKIFF_GPU_MATMUL").as_deref() {
            Ok("tiled") => Some(Kernel::Tiled),
            Ok("blocked") => Some(Kernel::Blocked),
            _ => None,
        });
        forced.unwrap_or(if device_type == wgpu::DeviceType::Cpu { Kernel::Blocked } else { Kernel::Tiled })
    }
}

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
/// `window_loads::WINDOW` on), B is an image read as its im2col columns or
/// their transpose, and `lb` gives B's shape [batch..., k, n] and the
/// image's batch strides.
pub(super) fn product(
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
    let kernel = Kernel::for_device(ctx.info.device_type);
    let mut block = Block::for_product(m, n, ctx.matmul_cols16_to()).unrolled(unroll_for(&ctx, kernel, m, k, n)?);
    if kernel == Kernel::Blocked && ctx.matmul_vec4() {
        block = block.loads_for(la, lb, batch);
        // Shared loads of B take K four steps at a time: on lavapipe (whose
        // own choice is 1) 256^3 ran at 15-18 GFLOP/s one step at a time and
        // 30-42 four at a time. (B read through a window never broadcasts.)
        let size = ctx.matmul_broadcast();
        if size > 0 && window.is_none() {
            let shared = block.unrolled(4).loads_for(la, lb, batch).broadcasting(size, m, k);
            if shared.broadcast > 0 {
                block = shared;
            }
        }
    }
    if let Some((loads, _)) = window {
        block = block.loading(block.a, loads);
    } else if kernel == Kernel::Tiled && ctx.matmul_vec4() {
        // Stage an aligned B as vec4s (`matmul_stage`).
        block = block.loading(Loads::Scalar, Block::FULL.loads_for(la, lb, batch).b);
    }
    // The wide tile where the product has enough of them (never through a
    // window: the convolutions' products are small).
    let wide = m.div_ceil(WIDE_TILE) * n.div_ceil(WIDE_TILE) * nb >= ctx.matmul_wide_from();
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
            if runtime_checks() {
                ctx.pipeline(&key, source)?
            } else {
                // SAFETY: the kernel's loads are operand elements (their
                // layouts fit their buffers, checked above), staged only
                // inside the product's M, K and N, or vec4s starting there,
                // which end inside the buffer (`matmul_stage`); its stores
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
                Kernel::Tiled => format!("{}{}", tiling.key(), matmul_stage::key(block.b)),
            };
            ctx.pipeline(&format!("matmul:f32:{kernel:?}{shape}:{}", t.key), || {
                source_with(kernel, block, tiling, dt, &t.code(TAIL_BINDING, write(dt)))
            })?
        }
    };
    ctx.dispatch_grid(&pipeline, &params, &buffers, grid);
    Ok(out)
}

/// Where a workgroup's block starts (`row0`, `col0`), returning from padding
/// workgroups and blocks past C's edge. A broadcasting block's lanes stack
/// along M from the workgroup's first row; it returns only on what the
/// whole workgroup shares (its id), since a subgroup operation needs every
/// lane.
fn origin(block: Block) -> String {
    let (rows, cols) = (block.rows, block.cols);
    if block.broadcast > 0 {
        format!(
            "    let tile_row0 = (rest % tiles_m) * TM;
    let col0 = (linear % tiles_n) * TN;
    if (bat >= pm(3u) || tile_row0 >= M || col0 >= N) {{
        return; // padding workgroup of a folded grid, or a tile past C's edge
    }}
    let row0 = tile_row0 + sl * {rows}u;
"
        )
    } else {
        format!(
            "    let row0 = (rest % tiles_m) * TM;
    let col0 = (linear % tiles_n) * TN + lid.x * {cols}u;
    if (bat >= pm(3u) || row0 >= M || col0 >= N) {{
        return; // padding workgroup of a folded grid, or a block past C's edge
    }}
"
        )
    }
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
fn unroll_for(ctx: &super::GpuContext, kernel: Kernel, m: usize, k: usize, n: usize) -> Result<usize> {
    let unroll = ctx.matmul_unroll();
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

/// Strides of the batch dims of `l` broadcast to `batch` (0 where broadcast).
fn batch_strides(l: &Layout, batch: &[usize]) -> Vec<usize> {
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

/// The blocked kernel: `lanes` invocations per workgroup side by side along
/// N, each accumulating a `rows` x `cols` block of C (`cols` a multiple of 4,
/// kept as vec4s) straight from the storage buffers, with no workgroup memory
/// and no barriers. Same parameters and bindings as `shaders/matmul.wgsl`.
///
/// Why, on lavapipe (llvmpipe, Mesa 22): a workgroup runs on one CPU thread,
/// 8 invocations per SIMD vector, but every storage or workgroup-memory
/// access is a scalar loop over the active lanes, while arithmetic is 8 wide
/// and register spills are plain vector moves. The cost of a product is thus
/// about the number of scalar loads, M N K (1/rows + 1/cols) over all
/// invocations: a 16x32 block loads 48 values per 512 FMAs, against 16 + 4
/// (staging) per 64 for the tiled kernel's 8x8 blocks, and skips the staging
/// stores and the barriers (which split the shader into resumable pieces).
/// Measured on 2 cores: 256^3 and 1024^3 1.25 -> ~3.7 GFLOP/s, the MLP bench
/// step 73 -> ~37 ms. Larger blocks load less still but build slower (32x32:
/// ~3.3 s to compile the pipeline against ~1 s, for ~15% more GFLOP/s), and
/// the stores go through a runtime loop over rows that shifts the block up
/// one row each pass because unrolled stores tripled the build time.
///
/// Edges: loads clamp the row and column into range (the products they feed
/// are never stored); invocations wholly outside C return at once (no
/// barriers, so that is allowed), which also spares their loads.
///
/// f16 operands (`dt`) bind as `array<f16>` (`vec4<f16>` for vec4 loads)
/// and each load converts to f32 (`Widen`): everything after is the f32 kernel.
fn blocked_kernel(block: Block, dt: DType) -> String {
    let Block { rows, cols, lanes, unroll, a, b, broadcast } = block;
    let wide = Widen(dt);
    assert!(
        broadcast == 0
            || (matches!(b, Loads::Across | Loads::Scalar) && lanes == broadcast && (cols / 4) % broadcast == 0),
        "a broadcasting block reads B through its strides, one subgroup per workgroup, whole vec4s per lane"
    );
    assert!(cols % 4 == 0 && rows >= 1 && lanes >= 1 && unroll >= 1);
    assert!(unroll % 4 == 0 || a != Loads::AlongK, "AlongK loads need K unrolled a multiple of 4x");
    assert!(b != Loads::AlongK, "B never reads AlongK");
    assert!(!a.is_window(), "only B reads through a window");
    assert!(a != Loads::Across || rows % 4 == 0, "Across loads of A need whole groups of 4 rows");
    let elem = wgsl_type(dt);
    let ty = |l: Loads| match l {
        Loads::AlongK | Loads::Across => format!("vec4<{elem}>"),
        // One element per load: through the strides or through a window.
        _ => elem.to_string(),
    };
    let (ta, tb) = (ty(a), ty(b));
    let q = cols / 4;
    let [tm, tn] = block.tile();
    let along = if broadcast > 0 { "M (one subgroup, sharing B's loads)" } else { "N" };
    let mut s = String::new();
    let w = &mut s;
    let _ = write!(
        w,
        "// Generated by src/backend/gpu/matmul.rs (blocked_kernel): {rows}x{cols} register blocks,
// {lanes} invocations per workgroup along {along}, tile {tm}x{tn}, K unrolled {unroll}x, loads of A {a:?}
// and of B {b:?}. Parameters as in shaders/matmul.wgsl.
const TM: u32 = {tm}u;
const TN: u32 = {tn}u;

@group(0) @binding(1) var<storage, read> A: array<{ta}>;
@group(0) @binding(2) var<storage, read> B: array<{tb}>;
@group(0) @binding(3) var<storage, read_write> C: array<{elem}>;

@compute @workgroup_size({lanes}, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,{sl_param}
) {{
    let M = pm(0u);
    let K = pm(1u);
    let N = pm(2u);
    let tiles_n = pm(4u);
    let tiles_m = pm(5u);
    let linear = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    let rest = linear / tiles_n;
    let bat = rest / tiles_m;
{origin}    var oa = pm(6u);
    var ob = pm(7u);
    var r = bat;
    for (var d = pm(12u); d > 0u; d = d - 1u) {{
        let size = pm(15u + d);
        let i = r % size;
        oa = oa + i * pm(23u + d);
        ob = ob + i * pm(31u + d);
        r = r / size;
    }}
    let rsa = pm(8u);
    let csa = pm(9u);
    let rsb = pm(10u);
    let csb = pm(11u);
",
        sl_param = if broadcast > 0 { "\n    @builtin(subgroup_invocation_id) sl: u32," } else { "" },
        origin = origin(block),
    );
    if b.is_window() {
        w.push_str(&window_loads::lets());
    }
    // Element offsets of the block's rows of A and columns of B (clamped
    // into range: out-of-range lanes are computed but never stored). Across
    // reads groups of 4 rows (columns) from the group's first, clamped to the
    // last group start inside the operand.
    let _ = writeln!(w, "    let m4 = (M - 1u) & ~3u;");
    let _ = writeln!(w, "    let n4 = (N - 1u) & ~3u;");
    for i in 0..rows {
        if a == Loads::Across {
            if i % 4 == 0 {
                let _ = writeln!(w, "    let ra{i} = oa + min(row0 + {i}u, m4) * rsa;");
            }
        } else {
            let _ = writeln!(w, "    let ra{i} = oa + min(row0 + {i}u, M - 1u) * rsa;");
        }
    }
    for p in 0..q.checked_div(broadcast).unwrap_or(0) {
        // This lane's share of B's row segment: vec4s sl, sl + S, ... (one
        // load each, or one per column through the strides).
        let first = format!("col0 + (sl + {}u) * 4u", p * broadcast);
        if b == Loads::Across {
            let _ = writeln!(w, "    let cs{p} = ob + min({first}, n4) * csb;");
        } else {
            for e in 0..4 {
                let _ = writeln!(w, "    let cs{p}_{e} = ob + min({first} + {e}u, N - 1u) * csb;");
            }
        }
    }
    for c in 0..if broadcast > 0 { 0 } else { cols } {
        match b {
            Loads::Across if c % 4 == 0 => {
                let _ = writeln!(w, "    let cb{c} = ob + min(col0 + {c}u, n4) * csb;");
            }
            Loads::Across => {}
            _ if b.is_window() => w.push_str(&window_loads::column(c, b.is_transposed_window())),
            _ => {
                let _ = writeln!(w, "    let cb{c} = ob + min(col0 + {c}u, N - 1u) * csb;");
            }
        }
    }
    for i in 0..rows {
        for j in 0..q {
            let _ = writeln!(w, "    var acc{i}_{j} = vec4<f32>(0.0);");
        }
    }
    let _ = writeln!(w, "    var k = 0u;");
    if unroll > 1 {
        // `unroll` steps per iteration, each accumulator updated once by
        // nested fmas (the same sums in the same order as one step at a
        // time); the loop below finishes the rest of K.
        let _ = writeln!(w, "    for (; k + {unroll}u <= K; k = k + {unroll}u) {{");
        for u in 0..unroll {
            b_step_loads(w, block, wide, &format!("_{u}"), &format!("(k + {u}u)"));
        }
        for u in 0..unroll {
            let _ = writeln!(w, "        let ka_{u} = (k + {u}u) * csa;");
        }
        for i in 0..rows {
            match a {
                Loads::AlongK => {
                    for g in 0..unroll / 4 {
                        let at = wide.vec4(&format!("A[(ra{i} + k + {}u) >> 2u]", 4 * g));
                        let _ = writeln!(w, "        let ak{i}_{g} = {at};");
                    }
                    for u in 0..unroll {
                        let _ = writeln!(w, "        let a{i}_{u} = vec4<f32>(ak{i}_{}[{}]);", u / 4, u % 4);
                    }
                }
                Loads::Across => {
                    for u in 0..unroll {
                        if i % 4 == 0 {
                            let load = wide.vec4(&format!("A[(ra{i} + ka_{u}) >> 2u]"));
                            let _ = writeln!(w, "        let ag{i}_{u} = {load};");
                        }
                        let (g, t) = (i - i % 4, i % 4);
                        let _ = writeln!(w, "        let a{i}_{u} = vec4<f32>(ag{g}_{u}[{t}]);");
                    }
                }
                // Scalar (A never reads through a window: asserted above).
                _ => {
                    for u in 0..unroll {
                        let _ = writeln!(
                            w,
                            "        let a{i}_{u} = vec4<f32>({});",
                            wide.scalar(&format!("A[ra{i} + ka_{u}]"))
                        );
                    }
                }
            }
            for j in 0..q {
                let sum = (0..unroll).fold(format!("acc{i}_{j}"), |acc, u| format!("fma(a{i}_{u}, b{j}_{u}, {acc})"));
                let _ = writeln!(w, "        acc{i}_{j} = {sum};");
            }
        }
        let _ = writeln!(w, "    }}");
    }
    // One step at a time: all of K, or the rest after the unrolled loop
    // (where AlongK operands are read one element at a time).
    let _ = writeln!(w, "    for (; k < K; k = k + 1u) {{");
    b_step_loads(w, block, wide, "", "k");
    let _ = writeln!(w, "        let ka = k * csa;");
    for i in 0..rows {
        let a_i = match a {
            Loads::AlongK => wide.scalar(&format!("A[(ra{i} + ka) >> 2u][(ra{i} + ka) & 3u]")),
            Loads::Across => {
                if i % 4 == 0 {
                    let _ = writeln!(w, "        let ag{i} = {};", wide.vec4(&format!("A[(ra{i} + ka) >> 2u]")));
                }
                format!("ag{}[{}]", i - i % 4, i % 4)
            }
            // Scalar (A never reads through a window: asserted above).
            _ => wide.scalar(&format!("A[ra{i} + ka]")),
        };
        let _ = writeln!(w, "        let a{i} = vec4<f32>({a_i});");
        for j in 0..q {
            let _ = writeln!(w, "        acc{i}_{j} = fma(a{i}, b{j}, acc{i}_{j});");
        }
    }
    let _ = writeln!(w, "    }}");
    let _ = writeln!(w, "    // Row by row: store row 0 of the block, then shift the block up one row.");
    if broadcast > 0 {
        // A lane's rows may start past C's edge (the workgroup's do not).
        let _ = writeln!(w, "    let rows = select(0u, min({rows}u, M - row0), row0 < M);");
    } else {
        let _ = writeln!(w, "    let rows = min({rows}u, M - row0);");
    }
    let _ = writeln!(w, "    var o = bat * M * N + row0 * N + col0;");
    let _ = writeln!(w, "    for (var i = 0u; i < rows; i = i + 1u) {{");
    for j in 0..q {
        for e in 0..4 {
            let c = 4 * j + e;
            let _ = writeln!(w, "        if (col0 + {c}u < N) {{ store(o + {c}u, acc0_{j}[{e}]); }}");
        }
    }
    for i in 0..rows.saturating_sub(1) {
        for j in 0..q {
            let _ = writeln!(w, "        acc{i}_{j} = acc{}_{j};", i + 1);
        }
    }
    let _ = writeln!(w, "        o = o + N;");
    let _ = writeln!(w, "    }}");
    let _ = writeln!(w, "}}");
    s
}

/// The blocked kernel's loads of B for step `k` (a WGSL expression) of K:
/// the `q` vec4s `b{j}{suffix}` of B's row, one load each (`Across`) or one
/// per element (`Scalar`); a broadcasting block loads its lane's share and
/// receives the rest from the other lanes.
fn b_step_loads(w: &mut String, block: Block, wide: Widen, suffix: &str, k: &str) {
    let (b, q, size) = (block.b, block.cols / 4, block.broadcast);
    if b.is_window() {
        w.push_str(&window_loads::step(q, suffix, k, b, |load| wide.scalar(load)));
        return;
    }
    let _ = writeln!(w, "        let kb{suffix} = {k} * rsb;");
    if let Some(shares) = q.checked_div(size) {
        for p in 0..shares {
            let load = if b == Loads::Across {
                wide.vec4(&format!("B[(cs{p} + kb{suffix}) >> 2u]"))
            } else {
                let at = |e: usize| wide.scalar(&format!("B[cs{p}_{e} + kb{suffix}]"));
                format!("vec4<f32>({}, {}, {}, {})", at(0), at(1), at(2), at(3))
            };
            let _ = writeln!(w, "        let l{p}{suffix} = {load};");
        }
        // A constant lane: the same value for every lane, one shuffle.
        for j in 0..q {
            let _ = writeln!(w, "        let b{j}{suffix} = subgroupBroadcast(l{}{suffix}, {}u);", j / size, j % size);
        }
        return;
    }
    for j in 0..q {
        let c = 4 * j;
        if b == Loads::Across {
            let _ = writeln!(w, "        let b{j}{suffix} = {};", wide.vec4(&format!("B[(cb{c} + kb{suffix}) >> 2u]")));
            continue;
        }
        let at = |c: usize| wide.scalar(&format!("B[cb{c} + kb{suffix}]"));
        let _ = writeln!(
            w,
            "        let b{j}{suffix} = vec4<f32>({}, {}, {}, {});",
            at(c),
            at(c + 1),
            at(c + 2),
            at(c + 3)
        );
    }
}

/// How the blocked kernel's loads reach f32: as they are (f32 operands) or
/// converted (f16; exact). f32 sources stay free of identity conversions.
#[derive(Clone, Copy)]
struct Widen(DType);

impl Widen {
    /// A scalar load as an f32 expression.
    fn scalar(self, load: &str) -> String {
        if self.0 == DType::F16 {
            format!("f32({load})")
        } else {
            load.to_string()
        }
    }

    /// A vec4 load as a `vec4<f32>` expression.
    fn vec4(self, load: &str) -> String {
        if self.0 == DType::F16 {
            format!("vec4<f32>({load})")
        } else {
            load.to_string()
        }
    }
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
    use super::{
        blocked_kernel, blocked_source, grid3, uses_subgroups, Block, DType, Layout, Loads, BLOCK, BLOCK_LANES,
        BROADCAST_ROWS, TALL_ROWS,
    };

    /// An operand whose layout reaches past its buffer is an error before
    /// any kernel runs (the tiled kernel has no runtime bounds checks).
    #[test]
    fn an_operand_past_its_buffer_is_an_error() {
        let Ok(dev) = super::super::default_device() else {
            eprintln!("SKIPPED: no GPU adapter");
            return;
        };
        let ctx = dev.context();
        let buf = super::GpuBuffer::new(ctx, "test", DType::F32, 32).unwrap();
        let fits = Layout::contiguous(&[4, 8]);
        let mut rows_too_far = Layout::contiguous(&[4, 8]);
        rows_too_far.strides[0] = 9;
        let mut offset_too_far = Layout::contiguous(&[8, 4]);
        offset_too_far.offset = 1;
        assert!(super::matmul(&buf, &fits, &buf, &Layout::contiguous(&[8, 4]), &[]).is_ok());
        for (la, lb, name) in [(&rows_too_far, &Layout::contiguous(&[8, 4]), "A"), (&fits, &offset_too_far, "B")] {
            let e = super::matmul(&buf, la, &buf, lb, &[]).unwrap_err();
            assert!(matches!(e, crate::error::Error::Shape { op: "matmul", .. }), "{e}");
            let text = e.to_string();
            assert!(text.contains(&format!("operand {name}")), "{text}");
            assert!(text.contains("past its 32-element buffer"), "{text}");
        }
    }

    /// The generated kernel validates with naga at the WebGPU baseline and
    /// fits its default limits (no workgroup memory, <= 256 invocations).
    #[test]
    fn blocked_kernel_validates() {
        let check = |src: &str| {
            use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
            let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)));
            // Only the broadcasting blocks use subgroups (their broadcasts are in naga's ballot set).
            let caps = if uses_subgroups(src) { Capabilities::SUBGROUP } else { Capabilities::empty() };
            let mut validator = Validator::new(ValidationFlags::all(), caps);
            if uses_subgroups(src) {
                validator.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::BALLOT);
            }
            validator.validate(&module).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)));
            assert!(module.global_variables.iter().all(|(_, v)| v.space != naga::AddressSpace::WorkGroup));
            for ep in &module.entry_points {
                assert!(ep.workgroup_size.iter().product::<u32>() <= 256);
            }
        };
        for b in Block::all() {
            check(&blocked_source(b, DType::F32));
            assert!(!uses_subgroups(&blocked_source(b, DType::F32)), "{b:?} needs subgroups");
        }
        for b in Block::all_broadcasting() {
            assert!(b.broadcast > 0 && b.unroll == 4, "{b:?}");
            assert!([[BROADCAST_ROWS, BLOCK[1]], [TALL_ROWS, BLOCK[1]]].contains(&b.tile()), "{b:?}");
            check(&blocked_source(b, DType::F32));
            assert!(uses_subgroups(&blocked_source(b, DType::F32)), "{b:?} shares no loads");
        }
        // Other shapes the generator accepts (a 1-row block has no shifts).
        let store = super::plain_store(super::write(DType::F32));
        check(&format!(
            "{}\n{}{store}",
            super::PRELUDE,
            blocked_kernel(
                Block { rows: 1, cols: 4, lanes: 1, unroll: 4, a: Loads::AlongK, b: Loads::Across, broadcast: 0 },
                DType::F32
            )
        ));
        check(&format!(
            "{}\n{}{store}",
            super::PRELUDE,
            blocked_kernel(
                Block { rows: 3, cols: 8, lanes: 64, unroll: 2, a: Loads::Scalar, b: Loads::Across, broadcast: 0 },
                DType::F32
            )
        ));
    }

    /// SwiftShader's 4 lanes share B over 128 rows (32 each) where a product
    /// has them and 128 steps of K, and over 64 otherwise; lavapipe's 8 lanes
    /// always over 64. All of them take K four steps at a time. The generator
    /// also takes A four steps of K per load for any multiple of 4 (two loads
    /// per row for eight steps).
    #[test]
    fn swiftshader_products_of_128_rows_get_the_tall_block() {
        let full = Block::FULL.unrolled(4).loading(Loads::AlongK, Loads::Across);
        let tall = full.broadcasting(4, 128, 128);
        assert_eq!((tall.rows, tall.lanes, tall.unroll, tall.tile()), (32, 4, 4, [128, 32]));
        for (m, k) in [(127, 256), (256, 127), (784, 64)] {
            let short = full.broadcasting(4, m, k);
            assert_eq!((short.rows, short.unroll, short.tile()), (16, 4, [64, 32]), "[{m}, {k}]");
        }
        let lavapipe = full.broadcasting(8, 1024, 1024);
        assert_eq!((lavapipe.rows, lavapipe.unroll, lavapipe.tile()), (8, 4, [64, 32]));
        let talls = Block::all_broadcasting().iter().filter(|b| b.tile()[0] == TALL_ROWS).count();
        assert_eq!(talls, 6);
        let src = blocked_source(tall, DType::F32);
        assert!(src.contains("let ak31_0 = A[(ra31 + k + 0u) >> 2u];"), "{src}");
        assert!(src.contains("let a31_3 = vec4<f32>(ak31_0[3]);"), "{src}");
        assert!(src.contains("for (; k + 4u <= K; k = k + 4u)"), "{src}");
        let src = blocked_source(tall.unrolled(8), DType::F32);
        assert!(src.contains("let ak31_1 = A[(ra31 + k + 4u) >> 2u];"), "{src}");
        assert!(src.contains("let a31_7 = vec4<f32>(ak31_1[3]);"), "{src}");
        assert!(src.contains("for (; k + 8u <= K; k = k + 8u)"), "{src}");
    }

    #[test]
    fn small_products_get_small_blocks() {
        // SwiftShader's bound for 16 columns (64), then lavapipe's (127).
        let (b, lvp) = (|m, n| Block::for_product(m, n, 64), |m, n| Block::for_product(m, n, 127));
        let block = |rows, cols, lanes| Block {
            rows,
            cols,
            lanes,
            unroll: 1,
            a: Loads::Scalar,
            b: Loads::Scalar,
            broadcast: 0,
        };
        assert_eq!(b(256, 784), Block::FULL);
        assert_eq!(b(8, 9), block(8, 4, 4));
        assert_eq!(b(64, 16), block(16, 4, 4));
        assert_eq!(b(64, 17), block(16, 16, 2));
        assert_eq!(b(64, 64), block(16, 16, 4));
        assert_eq!(b(16, 72), block(16, 32, 4));
        assert_eq!(lvp(16, 72), block(16, 16, 8));
        assert_eq!(b(1, 4), block(4, 4, 1));
        assert_eq!(b(72, 121), block(16, 32, 4));
        assert_eq!(lvp(72, 121), block(16, 16, 8));
        assert_eq!(lvp(72, 128), block(16, 32, 4));
        assert_eq!(b(64, 1000), Block::FULL);
        for cols16_to in [64, 127] {
            for m in 1..40 {
                for n in 1..300 {
                    let blk = Block::for_product(m, n, cols16_to);
                    assert!(Block::all().contains(&blk), "{blk:?}");
                    let [tm, tn] = blk.tile();
                    // A workgroup covers the product, or the largest block repeats.
                    assert!((tm >= m || tm == BLOCK[0]) && (tn >= n || blk.lanes == BLOCK_LANES), "{m}x{n}: {blk:?}");
                }
            }
        }
    }

    /// vec4 loads only where the contiguous axis, the offset, the other
    /// stride and the batch strides all line up (and K is unrolled for AlongK).
    #[test]
    fn vec4_loads_need_aligned_layouts() {
        use Loads::{Across, AlongK, Scalar};
        let mode = Loads::for_operand;
        // A [m, k] row-major (k fast), B [k, n] row-major (n fast).
        assert_eq!(mode(0, 784, 1, &[], true), AlongK);
        assert_eq!(mode(0, 784, 1, &[], false), Scalar);
        assert_eq!(mode(0, 1, 128, &[], false), Across);
        assert_eq!(mode(0, 1, 128, &[], true), Across);
        // Misaligned: odd strides, offsets or batch strides.
        assert_eq!(mode(0, 10, 1, &[], true), Scalar);
        assert_eq!(mode(0, 1, 10, &[], true), Scalar);
        assert_eq!(mode(2, 784, 1, &[], true), Scalar);
        assert_eq!(mode(0, 1, 128, &[128 * 6, 6], false), Scalar);
        assert_eq!(mode(0, 1, 128, &[128 * 64, 0], false), Across);
        // Neither axis contiguous.
        assert_eq!(mode(0, 8, 16, &[], true), Scalar);
        // Only the largest block has vec4 variants.
        let l = |shape: &[usize]| Layout::contiguous(shape);
        let full = Block::for_product(64, 128, 127).unrolled(4).loads_for(&l(&[64, 64]), &l(&[64, 128]), &[]);
        assert_eq!((full.a, full.b), (AlongK, Across));
        let small = Block::for_product(8, 64, 16).unrolled(4).loads_for(&l(&[8, 64]), &l(&[64, 64]), &[]);
        assert_eq!((small.a, small.b), (Scalar, Scalar));
        assert!(Block::all().contains(&full));
    }

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
