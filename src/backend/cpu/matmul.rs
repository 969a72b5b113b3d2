//! Batched GEMM on strided operands through `matrixmultiply` (multi-threaded
//! natively via its `threading` feature, single-threaded in wasm). Strided
//! operands (transposed views from backward rules) need no copy: the GEMM
//! packs them itself.

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
        matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, 1);
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
        matrixmultiply::dgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, 1);
    }
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
