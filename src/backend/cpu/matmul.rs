//! Batched GEMM on strided operands, over ndarray views: natively through
//! `ndarray::linalg::general_mat_mul` (which calls `matrixmultiply`,
//! multi-threaded via its `threading` feature); on wasm32 through `gemm`,
//! whose SIMD128 micro-kernels measured 22-23 GFLOP/s at 512-1024 in V8 here
//! against 20-21 for matrixmultiply's auto-vectorised fallback, and 3-4x more
//! at 64 (see benches/README.md). Strided operands (transposed views from
//! backward rules) need no copy: both GEMMs pack them themselves.

use super::buffer::{view, view_mut};
use crate::shape::{Dims, Layout};
use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, Ix2, IxDyn, LinalgScalar, Zip};

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

/// The trailing matrix of a chunk whose batch dims all have length 1.
fn matrix<T>(mut v: ArrayViewD<'_, T>) -> ArrayView2<'_, T> {
    while v.ndim() > 2 {
        v = v.index_axis_move(Axis(0), 0);
    }
    v.into_dimensionality::<Ix2>().expect("two dims left")
}

fn matrix_mut<T>(mut v: ArrayViewMutD<'_, T>) -> ArrayViewMut2<'_, T> {
    while v.ndim() > 2 {
        v = v.index_axis_move(Axis(0), 0);
    }
    v.into_dimensionality::<Ix2>().expect("two dims left")
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
    // Each operand as [batch..., rows, cols], stride 0 on broadcast batch dims.
    let full = |rows: usize, cols: usize| -> Dims { batch.iter().copied().chain([rows, cols]).collect() };
    let batched = |l: &Layout, shape: Dims| Layout { strides: l.broadcast_strides(&shape), shape, offset: l.offset };
    let (av, bv) = (view(a, &batched(la, full(m, k))), view(b, &batched(lb, full(k, n))));
    let mut cv = view_mut(&mut out, &Layout::contiguous(&full(m, n)));
    // One chunk per batch index: each is one matrix.
    let chunk = |rows: usize, cols: usize| IxDyn(&batch.iter().map(|_| 1).chain([rows, cols]).collect::<Dims>());
    Zip::from(cv.exact_chunks_mut(chunk(m, n)))
        .and(av.exact_chunks(chunk(m, k)))
        .and(bv.exact_chunks(chunk(k, n)))
        .for_each(|c, a, b| gemm(matrix(a), matrix(b), matrix_mut(c)));
    out
}
