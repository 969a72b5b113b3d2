//! The shapes a product runs in: the tiled kernel's tiles (`Tiles`), the
//! blocked kernel's register block (`Block`, sized to the product by
//! `Block::for_product`) and how either reads its operands (`Loads`), with
//! the lists of every shape the kernels can be built with (for validation)
//! and the parts of the pipeline keys they name.

use super::launch::batch_strides;
use crate::shape::Layout;

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
    /// slower on a real GPU (an H200).
    pub const WIDE: Tiles = Tiles { edge: WIDE_TILE, k: 8 };

    /// Workgroup storage the staged slices take: both operands, `k` rows of
    /// `edge / 4 + 1` vec4s (one of padding).
    pub fn workgroup_bytes(self) -> usize {
        2 * self.k * (self.edge / 4 + 1) * 16
    }

    /// What the tiled kernel's pipeline key adds for these tiles.
    pub(super) fn key(self) -> String {
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
pub(super) const BROADCAST_ROWS: usize = 64;
/// The subgroup size (SwiftShader's) whose broadcasting block grows to
/// `TALL_ROWS` rows per workgroup for products of at least `TALL_ROWS` rows
/// and steps of K. SwiftShader's JIT keeps nearly all of a kernel's values
/// on the stack: a multiply-add there costs about five instructions, three
/// of them stack loads and stores. What else a step of K costs (each lane's
/// loads of A, tested one element at a time, and B's broadcasts) is shared
/// by more multiply-adds in a taller block, which ran faster (256^3). K
/// stays unrolled 4x: 8x ran no faster, natively or in Chromium, and
/// doubled the pipeline's build. The build is still slower than the 64-row
/// block's, for nothing where K is short ([784, 64] x [64, 256], an MLP's
/// weight gradient, ran as fast either way), hence the bound on K. lavapipe
/// (8 lanes) was not measured with it and keeps its block.
const TALL_SIZE: usize = 4;
pub(super) const TALL_ROWS: usize = 128;

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
    /// broadcast is one shuffle: 256^3 ran faster on both.
    pub broadcast: usize,
}

/// How the blocked kernel reads an operand. A software adapter pays per load
/// instruction (lavapipe loops over the lanes of each, SwiftShader checks
/// each against the buffer's bounds), so where an operand's contiguous axis
/// lines up with vec4s the kernel binds it as `array<vec4<f32>>` and reads
/// four elements per load. Only the largest block (`BLOCK`) has these
/// variants: each is one more pipeline to build (slow on SwiftShader), and
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
    /// (`window.rs`).
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
    pub(super) fn for_operand(offset: usize, s_outer: usize, s_k: usize, batch: &[usize], along_k: bool) -> Loads {
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

    /// What the blocked kernel's pipeline key adds for these loads.
    pub(super) fn key(self) -> &'static str {
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
    /// lanes (1, 2, 4 or 8) as its columns need. A software adapter pays for
    /// every load and every multiply-add of an active invocation, and runs a
    /// workgroup's invocations side by side: so a 16x32 block over a
    /// convolution's [8, 676] x [676, 9] weight gradient loaded 48 values per
    /// k where 20 suffice, and an 8x16 block still computed 7 columns for
    /// nothing, one invocation doing all the work. Three invocations of 4
    /// columns each ran that product about twice as fast on lavapipe and on
    /// SwiftShader (and [64, 400] x [400, 10], [1024, 1024] x [1024, 16]
    /// alike); lanes past C's edge return at once and cost nothing. The same
    /// held for wider products: 16-column blocks beat 32-column ones from 24
    /// to 121 columns on lavapipe ([64, 400] x [400, 32], [1024, 1024] x
    /// [1024, 64], [1024, 72] x [72, 121], the CNN's conv2 products), and on
    /// SwiftShader up to 64 columns, but were slower there from 80 columns
    /// on: hence the adapter's bound `cols16_to`. At most 45 shapes, each its
    /// own pipeline (twice: K unrolled or not).
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
    pub(super) fn broadcasting(self, size: usize, m: usize, k: usize) -> Block {
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
    pub(super) fn loads_for(self, la: &Layout, lb: &Layout, batch: &[usize]) -> Block {
        let r = la.shape.len();
        if [self.rows, self.cols] != BLOCK {
            return self;
        }
        let (sa, sb) = (batch_strides(la, batch), batch_strides(lb, batch));
        let a = Loads::for_operand(la.offset, la.strides[r - 2], la.strides[r - 1], &sa, self.unroll % 4 == 0);
        let b = Loads::for_operand(lb.offset, lb.strides[r - 1], lb.strides[r - 2], &sb, false);
        self.loading(a, b)
    }

    /// What the blocked kernel's pipeline key names of this block.
    pub(super) fn key(self) -> String {
        let shared = if self.broadcast > 0 { format!("b{}", self.broadcast) } else { String::new() };
        format!("{}x{}x{}u{}{}{}{shared}", self.rows, self.cols, self.lanes, self.unroll, self.a.key(), self.b.key())
    }
}
