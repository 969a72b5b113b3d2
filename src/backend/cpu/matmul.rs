//! Batched GEMM on strided operands, over ndarray views, through three GEMMs:
//!
//! - on wasm32, f32 products go to skiff's own SIMD128 GEMM (sgemm.rs, whose
//!   docs say why it beats `gemm`'s there);
//! - `gemm` (single-threaded) for f64 on wasm32, where its SIMD128
//!   micro-kernels beat matrixmultiply's scalar fallback; and natively for
//!   the products where its packing costs less (see `Engine::for_product`);
//! - natively otherwise `ndarray::linalg::general_mat_mul`, which calls
//!   `matrixmultiply`, multi-threaded through its `threading` feature.
//!
//! In deterministic mode (`crate::determinism`) every product goes to a
//! fourth, `fixed_gemm`, which gives the same bits on every target.
//!
//! Strided operands (transposed views from backward rules) need no copy:
//! all four GEMMs pack them themselves.

use crate::shape::{Dims, Layout};
use ndarray::{ArrayView2, ArrayViewMut2, LinalgScalar, ShapeBuilder};

/// Element types with a GEMM.
pub trait Gemm: super::Elem + LinalgScalar + Send + Sync {
    /// `c = a b` with skiff's own SIMD GEMM where this type has one here
    /// (f32 on wasm32); false, and `c` untouched, where it has none.
    fn own_gemm(a: &ArrayView2<Self>, b: &ArrayView2<Self>, c: &mut ArrayViewMut2<Self>) -> bool {
        let _ = (a, b, c);
        false
    }
}
impl Gemm for f64 {}
#[cfg(not(target_arch = "wasm32"))]
impl Gemm for f32 {}
#[cfg(target_arch = "wasm32")]
impl Gemm for f32 {
    fn own_gemm(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: &mut ArrayViewMut2<f32>) -> bool {
        use super::sgemm::{sgemm, Operand};
        let operand = |v: &ArrayView2<f32>| Operand { ptr: v.as_ptr(), rows: v.strides()[0], cols: v.strides()[1] };
        let ((m, k), n) = (a.dim(), b.ncols());
        let c = c.as_slice_mut().expect("the product's chunk is contiguous");
        // SAFETY: the operands are views of these shapes over live buffers,
        // and `c` (a fresh output) overlaps neither.
        unsafe { sgemm(m, k, n, operand(a), operand(b), c) };
        true
    }
}

/// Multiply-adds a thread takes at least when a batch of `gemm` products is
/// split over the cores (about 50 us of work: several times a thread's start).
const BATCH_SPLIT: usize = 1 << 23;

/// Which GEMM multiplies an (m x k) by (k x n) product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    /// The `gemm` crate, single-threaded.
    Gemm,
    /// `matrixmultiply` through ndarray (native only).
    #[cfg(not(target_arch = "wasm32"))]
    MatrixMultiply,
    /// skiff's own SIMD GEMM where the type has one, else `gemm` (wasm32 only).
    #[cfg(target_arch = "wasm32")]
    Own,
    /// Deterministic mode's GEMM: the same bits on every target.
    Fixed,
}

impl Engine {
    /// Natively, `gemm` (one core) where it skips the packing that dominates
    /// matrixmultiply's time, as measured in interleaved rounds:
    /// - a side under 10: matrixmultiply packs the long operand of a product
    ///   that barely reuses it (a convolution's [8, 9] x [9, 676] forward and
    ///   [8, 676] x [676, 9] weight gradient);
    /// - both operands row-major up to about 256^3;
    /// - not with a transposed operand from 16 up, where matrixmultiply on
    ///   all cores stays faster.
    ///
    /// - a batch of two or more products with `BATCH_SPLIT` multiply-adds
    ///   for each of two cores: the batch is split over the cores
    ///   (`parallel::for_blocks`), each product on one, which beat
    ///   matrixmultiply's threads inside each product (a transposed
    ///   convolution's batched products); smaller batches lost more to the
    ///   threads' start than they gained (a CNN step's convolutions).
    ///
    /// `row_major` says both operands have unit-stride rows.
    ///
    /// On wasm32, skiff's own GEMM from 16 rows and 64 columns: it packs `b`
    /// whole, which fewer rows do not repay, and pads `n` to 12s, which
    /// narrower products waste; below those bounds `gemm` is faster.
    /// (The measurements behind both bounds: benches/HISTORY.md.)
    fn for_product(batch: usize, m: usize, k: usize, n: usize, row_major: bool) -> Engine {
        if crate::determinism::is_deterministic() {
            return Engine::Fixed;
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = (batch, k, row_major);
            if m >= 16 && n >= 64 {
                return Engine::Own;
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        if batch >= 2 && batch * m * k * n >= 2 * BATCH_SPLIT {
            return Engine::Gemm;
        }
        #[cfg(not(target_arch = "wasm32"))]
        if m.min(n) >= 10 && !(row_major && m * k * n < 1 << 24) {
            return Engine::MatrixMultiply;
        }
        Engine::Gemm
    }
}

/// `c = a b` for one (m x k) by (k x n) product with `engine`; `c` may hold
/// stale data (beta = 0: it is written, never read). `scratch`: the fixed
/// GEMM's packing buffer, shared by the products of a batch.
fn gemm<T: Gemm>(engine: Engine, a: ArrayView2<T>, b: ArrayView2<T>, mut c: ArrayViewMut2<T>, scratch: &mut Vec<T>) {
    match engine {
        Engine::Fixed => {
            let c = c.as_slice_mut().expect("the product's chunk is contiguous");
            super::fixed_gemm::fixed_gemm(&a, &b, c, scratch)
        }
        #[cfg(not(target_arch = "wasm32"))]
        Engine::MatrixMultiply => ndarray::linalg::general_mat_mul(T::one(), &a, &b, T::zero(), &mut c),
        #[cfg(target_arch = "wasm32")]
        Engine::Own if T::own_gemm(&a, &b, &mut c) => {}
        #[cfg(target_arch = "wasm32")]
        Engine::Own => gemm(Engine::Gemm, a, b, c, scratch),
        Engine::Gemm => {
            let ((m, k), n) = (a.dim(), b.ncols());
            let (sa, sb) = (a.strides(), b.strides());
            let (rsc, csc) = (c.strides()[0], c.strides()[1]);
            // gemm computes dst = alpha * dst + beta * lhs * rhs; read_dst = false ignores alpha.
            let (read_dst, conj) = (false, false);
            // SAFETY: the pointers and strides come from views of these shapes
            // over live buffers, and `c` does not overlap `a` or `b`.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    c.as_mut_ptr(),
                    csc,
                    rsc,
                    read_dst,
                    a.as_ptr(),
                    sa[1],
                    sa[0],
                    b.as_ptr(),
                    sb[1],
                    sb[0],
                    T::zero(),
                    T::one(),
                    conj,
                    conj,
                    conj,
                    gemm::Parallelism::None,
                );
            }
        }
    }
}

/// `a` is [..., m, k], `b` is [..., k, n] (same rank, batch dims broadcast to
/// `batch`); returns the contiguous [batch..., m, n] product.
pub fn matmul<T: Gemm>(a: &[T], la: &Layout, b: &[T], lb: &Layout, batch: &[usize]) -> Vec<T> {
    let r = la.shape.len();
    let (m, k, n) = (la.shape[r - 2], la.shape[r - 1], lb.shape[r - 1]);
    let nb: usize = batch.iter().product();
    let mut out = super::pool::take::<T>(nb * m * n);
    if out.is_empty() {
        return out;
    }
    if k == 0 {
        out.fill(T::zero()); // empty inner dimension: the product is zeros
        return out;
    }
    // Each operand as [batch..., rows, cols], stride 0 on broadcast batch
    // dims; one fixed-rank (Ix2) view per product, located from its batch
    // index: dynamic-rank views and chunk iterators cost more than a small
    // product itself (a 2x2 matmul in wasm).
    let full = |rows: usize, cols: usize| -> Dims { batch.iter().copied().chain([rows, cols]).collect() };
    let (sa, sb) = (la.broadcast_strides(&full(m, k)), lb.broadcast_strides(&full(k, n)));
    let nd = batch.len();
    // The operands' offsets of product `i` of the batch (row-major order).
    let offsets = |mut i: usize| -> (usize, usize) {
        let (mut oa, mut ob) = (la.offset, lb.offset);
        for d in (0..nd).rev() {
            let at = i % batch[d];
            i /= batch[d];
            (oa, ob) = (oa + at * sa[d], ob + at * sb[d]);
        }
        (oa, ob)
    };
    let engine = Engine::for_product(nb, m, k, n, sa[nd + 1] == 1 && sb[nd + 1] == 1);
    let products = |range: std::ops::Range<usize>, part: &mut [T]| {
        let mut scratch = Vec::new();
        for (i, c) in range.zip(part.chunks_exact_mut(m * n)) {
            let (oa, ob) = offsets(i);
            let av = ArrayView2::from_shape((m, k).strides((sa[nd], sa[nd + 1])), &a[oa..])
                .expect("a's layout fits its buffer");
            let bv = ArrayView2::from_shape((k, n).strides((sb[nd], sb[nd + 1])), &b[ob..])
                .expect("b's layout fits its buffer");
            gemm(engine, av, bv, ArrayViewMut2::from_shape((m, n), c).expect("a chunk of m * n"), &mut scratch);
        }
    };
    if engine == Engine::Gemm {
        // `gemm` runs on one core: a large batch of products goes to all of
        // them, a block of whole products each (the other GEMMs split each
        // product themselves).
        super::parallel::for_blocks(&mut out, nb, m * n, 1, m * k * n, BATCH_SPLIT, products);
    } else {
        products(0..nb, &mut out);
    }
    out
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// A deterministic, irregular f64 matrix (rows x cols).
    fn matrix(rows: usize, cols: usize, seed: usize) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 31 + j * 17 + seed * 7) % 23) as f64 / 8.0 - 1.3)
    }

    /// The plain triple loop.
    fn reference(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        let ((m, k), n) = (a.dim(), b.ncols());
        Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum())
    }

    #[test]
    fn both_engines_multiply_strided_operands() {
        // Shapes on both sides of the choice, each with row-major and transposed operands.
        for (m, k, n) in [(8, 9, 37), (8, 70, 9), (16, 24, 30), (33, 17, 12), (1, 5, 1), (20, 1, 40)] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = if ta { matrix(k, m, 1).reversed_axes() } else { matrix(m, k, 1) };
                let b = if tb { matrix(n, k, 2).reversed_axes() } else { matrix(k, n, 2) };
                let want = reference(a.view(), b.view());
                for engine in [Engine::Gemm, Engine::MatrixMultiply, Engine::Fixed] {
                    let mut c = Array2::from_elem((m, n), f64::NAN); // stale data must be overwritten
                    gemm(engine, a.view(), b.view(), c.view_mut(), &mut Vec::new());
                    let err = (&c - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                    assert!(err < 1e-12, "{engine:?} {m}x{k}x{n} transposed {ta}/{tb}: max error {err}");
                }
            }
        }
    }

    #[test]
    fn a_batch_split_over_threads_equals_each_product_alone() {
        // [2, 2] products of 64 x 256 x 256, the left operand broadcast over
        // the first batch dim: 2^24 multiply-adds, split over the cores.
        let (m, k, n) = (64, 256, 256);
        let a: Vec<f64> = (0..2 * m * k).map(|i| ((i * 31) % 23) as f64 / 8.0 - 1.3).collect();
        let b: Vec<f64> = (0..4 * k * n).map(|i| ((i * 17) % 19) as f64 / 8.0 - 1.1).collect();
        let (la, lb) = (Layout::contiguous(&[1, 2, m, k]), Layout::contiguous(&[2, 2, k, n]));
        assert_eq!(Engine::for_product(4, m, k, n, true), Engine::Gemm);
        let c = matmul(&a, &la, &b, &lb, &[2, 2]);
        for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            let av = ArrayView2::from_shape((m, k), &a[j * m * k..][..m * k]).unwrap();
            let bv = ArrayView2::from_shape((k, n), &b[(2 * i + j) * k * n..][..k * n]).unwrap();
            let want = reference(av, bv);
            let got = ArrayView2::from_shape((m, n), &c[(2 * i + j) * m * n..][..m * n]).unwrap();
            let err = (&got - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
            assert!(err < 1e-9, "product ({i}, {j}): max error {err}");
        }
    }

    #[test]
    fn the_engine_choice_follows_the_measurements() {
        // A convolution's short products go to gemm whatever the layout.
        assert_eq!(Engine::for_product(1, 8, 9, 676, true), Engine::Gemm);
        assert_eq!(Engine::for_product(1, 8, 676, 9, false), Engine::Gemm);
        // Row-major products below 256^3 too; from there matrixmultiply's threads win.
        assert_eq!(Engine::for_product(1, 64, 784, 256, true), Engine::Gemm);
        assert_eq!(Engine::for_product(1, 256, 256, 256, true), Engine::MatrixMultiply);
        // A transposed operand with both sides from 10 up: matrixmultiply.
        assert_eq!(Engine::for_product(1, 16, 121, 72, false), Engine::MatrixMultiply);
        // A large batch: gemm, one product per core at a time; a small one as one product.
        assert_eq!(Engine::for_product(64, 1024, 128, 256, false), Engine::Gemm);
        assert_eq!(Engine::for_product(64, 16, 72, 121, false), Engine::MatrixMultiply);
    }
}
