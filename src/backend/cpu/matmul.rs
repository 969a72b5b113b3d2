//! Batched GEMM on strided operands: natively through `matrixmultiply`
//! (multi-threaded via its `threading` feature); on wasm32 through `gemm`,
//! whose SIMD128 micro-kernels measured 22-23 GFLOP/s at 512-1024 in V8 here
//! against 20-21 for matrixmultiply's auto-vectorised fallback, and 3-4x more
//! at 64 (see benches/README.md). Strided operands (transposed views from
//! backward rules) need no copy: both GEMMs pack them themselves.

use crate::shape::Layout;

/// Element types with a GEMM.
pub trait Gemm: super::Elem {
    /// C = A B for one (m x k) by (k x n) product with arbitrary strides.
    ///
    /// # Safety
    /// The pointers and strides must describe valid matrices of these sizes.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
    );
}

impl Gemm for f32 {
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        c: *mut f32,
        rsc: isize,
    ) {
        #[cfg(not(target_arch = "wasm32"))]
        matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, 1);
        #[cfg(target_arch = "wasm32")]
        wasm_gemm(m, k, n, a, rsa, csa, b, rsb, csb, c, rsc);
    }
}

impl Gemm for f64 {
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        c: *mut f64,
        rsc: isize,
    ) {
        #[cfg(not(target_arch = "wasm32"))]
        matrixmultiply::dgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, 1);
        #[cfg(target_arch = "wasm32")]
        wasm_gemm(m, k, n, a, rsa, csa, b, rsb, csb, c, rsc);
    }
}

/// C = A B through `gemm` (row stride `rsc`, unit column stride for C).
#[cfg(target_arch = "wasm32")]
#[allow(clippy::too_many_arguments)]
unsafe fn wasm_gemm<T: 'static + num_traits::Zero + num_traits::One>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    c: *mut T,
    rsc: isize,
) {
    // gemm computes dst = alpha * dst + beta * lhs * rhs; read_dst = false ignores alpha.
    let (read_dst, conj) = (false, false);
    gemm::gemm(
        m,
        n,
        k,
        c,
        1,
        rsc,
        read_dst,
        a,
        csa,
        rsa,
        b,
        csb,
        rsb,
        T::zero(),
        T::one(),
        conj,
        conj,
        conj,
        gemm::Parallelism::None,
    );
}

/// `a` is [..., m, k], `b` is [..., k, n] (same rank, batch dims broadcast to
/// `batch`); returns the contiguous [batch..., m, n] product.
pub fn matmul<T: Gemm>(a: &[T], la: &Layout, b: &[T], lb: &Layout, batch: &[usize]) -> Vec<T> {
    let r = la.shape.len();
    let (m, k, n) = (la.shape[r - 2], la.shape[r - 1], lb.shape[r - 1]);
    let nb: usize = batch.iter().product();
    let mut out = super::pool::take::<T>(nb * m * n);
    if m == 0 || n == 0 {
        return out;
    }
    let bsa = batch_strides(la, batch);
    let bsb = batch_strides(lb, batch);
    let (rsa, csa) = (la.strides[r - 2] as isize, la.strides[r - 1] as isize);
    let (rsb, csb) = (lb.strides[r - 2] as isize, lb.strides[r - 1] as isize);
    let mut idx = vec![0usize; batch.len()];
    for bi in 0..nb {
        let oa = la.offset + idx.iter().zip(&bsa).map(|(i, s)| i * s).sum::<usize>();
        let ob = lb.offset + idx.iter().zip(&bsb).map(|(i, s)| i * s).sum::<usize>();
        let c = &mut out[bi * m * n..(bi + 1) * m * n];
        if k == 0 {
            c.fill(T::default()); // empty inner dimension: the product is zeros
        } else {
            // SAFETY: offsets and strides come from layouts validated against
            // their buffers; `c` is exactly m*n contiguous elements.
            unsafe {
                T::gemm(
                    m,
                    k,
                    n,
                    a.as_ptr().add(oa),
                    rsa,
                    csa,
                    b.as_ptr().add(ob),
                    rsb,
                    csb,
                    c.as_mut_ptr(),
                    n as isize,
                );
            }
        }
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Strides of the batch dims of `l` broadcast to `batch` (0 where broadcast).
fn batch_strides(l: &Layout, batch: &[usize]) -> Vec<usize> {
    (0..batch.len()).map(|i| if l.shape[i] == 1 && batch[i] != 1 { 0 } else { l.strides[i] }).collect()
}
