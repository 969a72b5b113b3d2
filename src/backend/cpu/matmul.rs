//! Batched GEMM on strided operands, over ndarray views: natively through
//! `ndarray::linalg::general_mat_mul` (which calls `matrixmultiply`,
//! multi-threaded via its `threading` feature); on wasm32 through `gemm`,
//! whose SIMD128 micro-kernels measured 22-23 GFLOP/s at 512-1024 in V8 here
//! against 20-21 for matrixmultiply's auto-vectorised fallback, and 3-4x more
//! at 64 (see benches/README.md). Strided operands (transposed views from
//! backward rules) need no copy: both GEMMs pack them themselves.

use crate::shape::{Dims, Layout};
use ndarray::{ArrayView2, ArrayViewMut2, LinalgScalar, ShapeBuilder};

/// Element types with a GEMM.
pub trait Gemm: super::Elem + LinalgScalar {}
impl Gemm for f32 {}
impl Gemm for f64 {}

/// `c = a b` for one (m x k) by (k x n) product; `c` may hold stale data
/// (beta = 0: it is written, never read).
fn gemm<T: Gemm>(a: ArrayView2<T>, b: ArrayView2<T>, mut c: ArrayViewMut2<T>) {
    #[cfg(not(target_arch = "wasm32"))]
    ndarray::linalg::general_mat_mul(T::one(), &a, &b, T::zero(), &mut c);
    #[cfg(target_arch = "wasm32")]
    {
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
    // dims; one fixed-rank (Ix2) view per product, located by an odometer
    // over the batch index: dynamic-rank views and chunk iterators cost
    // more than a small product itself (a 2x2 matmul in wasm).
    let full = |rows: usize, cols: usize| -> Dims { batch.iter().copied().chain([rows, cols]).collect() };
    let (sa, sb) = (la.broadcast_strides(&full(m, k)), lb.broadcast_strides(&full(k, n)));
    let nd = batch.len();
    let mut index: Dims = batch.iter().map(|_| 0).collect();
    let (mut oa, mut ob) = (la.offset, lb.offset);
    for c in out.chunks_exact_mut(m * n) {
        let av =
            ArrayView2::from_shape((m, k).strides((sa[nd], sa[nd + 1])), &a[oa..]).expect("a's layout fits its buffer");
        let bv =
            ArrayView2::from_shape((k, n).strides((sb[nd], sb[nd + 1])), &b[ob..]).expect("b's layout fits its buffer");
        gemm(av, bv, ArrayViewMut2::from_shape((m, n), c).expect("a chunk of m * n"));
        // Next batch index, last dim fastest; the offsets follow.
        for d in (0..nd).rev() {
            index[d] += 1;
            oa += sa[d];
            ob += sb[d];
            if index[d] < batch[d] {
                break;
            }
            oa -= sa[d] * batch[d];
            ob -= sb[d] * batch[d];
            index[d] = 0;
        }
    }
    out
}
