//! The GEMM of deterministic mode (`crate::determinism`): the same bits on
//! every target, for every blocking, SIMD width and thread count.
//!
//! Each output is `c[i][j] = (..((0 + a[i][0] * b[0][j]) + a[i][1] * b[1][j]) ..)`:
//! the terms in index order, each one multiply and one add, never fused
//! (Rust never contracts `x * y + z` into a fused multiply-add, on any
//! target). So the result equals the plain triple loop bit for bit, which is
//! what the tests check. Speed comes from work that leaves that order alone:
//! - operands read in place where their rows have unit stride, and packed
//!   (`b` in panels of `NR` columns, `a` in slivers of `MR` rows) where not;
//! - a register block of `MR x NR` sums, each lane its own output, so the
//!   compiler vectorises across columns at whatever width the target has;
//! - blocks of `KC` steps of `k`: the sums go to `c` between blocks and come
//!   back for the next, which continues the same sequence;
//! - natively, row blocks split over threads (each output is still one
//!   thread's sequence), and an AVX2 build of the micro-kernel where the
//!   processor has it (wider registers, the same multiplies and adds).

use ndarray::{ArrayView2, LinalgScalar};
use std::mem::MaybeUninit;

/// Rows and columns of the register block: 8 vector accumulators of 128
/// bits in wasm (V8 gives wasm 15 vector registers on x86), 12 of 256 bits
/// natively with AVX2 (16 registers). The bits do not depend on them.
#[cfg(target_arch = "wasm32")]
const MR: usize = 4;
#[cfg(target_arch = "wasm32")]
const NR: usize = 8;
#[cfg(not(target_arch = "wasm32"))]
const MR: usize = 6;
#[cfg(not(target_arch = "wasm32"))]
const NR: usize = 16;
/// Steps of `k` per packed block (a 256 x 16 panel of `b` is 16 KiB in f32).
const KC: usize = 256;

/// `c` (contiguous, m x n, stale contents ignored) = `a b`. `scratch` holds
/// what is packed of `b`: a caller multiplying a batch passes the same one to
/// every product, so it is allocated once.
///
/// Packing only where it pays: `b` with unit-stride rows is read in place
/// (but for its last, partial panel), and so is every whole `MR`-row sliver
/// of an `a` with unit-stride rows; a transposed `b` is packed into panels,
/// a transposed `a` and the last, partial sliver into a zero-padded sliver.
/// On a convolution's small products packing cost as much as the arithmetic.
pub fn fixed_gemm<T: LinalgScalar + Send + Sync>(
    a: &ArrayView2<T>,
    b: &ArrayView2<T>,
    c: &mut [T],
    scratch: &mut Vec<T>,
) {
    let ((m, k), n) = (a.dim(), b.ncols());
    debug_assert_eq!(c.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(T::zero());
        return;
    }
    let panels = n.div_ceil(NR);
    // In place: `b` with unit-stride rows, `a` with unit-stride rows (each of
    // a sliver's rows then streams in order; a transposed `a`, read across
    // rows, is faster packed).
    let b_in_place = b.strides()[1] == 1;
    let a_in_place = a.strides()[1] == 1;
    // Packed panels of `b`, panel by panel, each `k` rows of NR: all of them,
    // or only the partial last one when `b` is read in place.
    let packed_from = if b_in_place { n / NR } else { 0 };
    scratch.resize((panels - packed_from) * k * NR, T::zero());
    for (panel, dst) in (packed_from..panels).zip(scratch.chunks_exact_mut(k * NR)) {
        pack_b_panel(b, panel * NR, dst);
    }
    let packed_b = &*scratch;
    let (a_src, b_src) = (Strided::of(a), Strided::of(b));
    // About 4 MFLOP per thread before a thread is worth its start.
    super::parallel::for_blocks(c, m, n, MR, n * k, 1 << 21, |rows, c_rows| {
        // Only for a transposed `a` or a partial sliver; pack_a writes every
        // element it reads (zeroing all of it first was a memset per product).
        let mut sliver = [const { MaybeUninit::<T>::uninit() }; KC * MR];
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            for (block, i0) in rows.clone().step_by(MR).enumerate() {
                let mr = MR.min(rows.end - i0);
                // SAFETY (here and below): every offset is inside its view:
                // rows i0..i0 + mr, steps k0..k0 + kc, columns j0..j0 + nr,
                // and padded buffers of the lengths made above.
                let a_op = if mr == MR && a_in_place {
                    Operand { ptr: unsafe { a_src.ptr_at(i0, k0) }, lane: a_src.rows, step: a_src.cols }
                } else {
                    pack_a(a, i0, mr, k0, &mut sliver[..kc * MR]);
                    Operand { ptr: sliver.as_ptr().cast::<T>(), lane: 1, step: MR as isize }
                };
                let c_block = &mut c_rows[block * MR * n..];
                for panel in 0..panels {
                    let j0 = panel * NR;
                    let nr = NR.min(n - j0);
                    let b_op = if panel < packed_from {
                        Operand { ptr: unsafe { b_src.ptr_at(k0, j0) }, lane: 1, step: b_src.rows }
                    } else {
                        let packed = &packed_b[(panel - packed_from) * k * NR..][k0 * NR..];
                        Operand { ptr: packed.as_ptr(), lane: 1, step: NR as isize }
                    };
                    // The first block's sums start from zero (`c` is stale:
                    // the kernel zeroes its registers); later blocks continue
                    // the sums stored in `c`.
                    let mut acc = [[T::zero(); NR]; MR];
                    if k0 > 0 {
                        for (i, row) in acc.iter_mut().enumerate().take(mr) {
                            load(row, &c_block[i * n + j0..], nr);
                        }
                    }
                    unsafe { micro_kernel(kc, a_op, b_op, &mut acc, k0 == 0) };
                    for (i, row) in acc.iter().enumerate().take(mr) {
                        store(row, &mut c_block[i * n + j0..], nr);
                    }
                }
            }
        }
    });
}

/// What the micro-kernel reads: element (lane, step) of an `a` sliver (lane:
/// its row) or of a `b` panel (lane: its column, always unit stride) is at
/// `ptr + lane * lane_stride + step * step_stride`.
#[derive(Clone, Copy)]
struct Operand<T> {
    ptr: *const T,
    lane: isize,
    step: isize,
}

/// The first `nr` of a row of sums from `c`: a whole panel as one fixed-size
/// copy.
#[inline(always)]
fn load<T: Copy>(row: &mut [T; NR], c: &[T], nr: usize) {
    if nr == NR {
        *row = c[..NR].try_into().expect("NR elements");
    } else {
        // A fixed trip count with a test, not a copy of `nr`: a slice copy
        // of a few elements compiles to a memmove call (a tenth of a CNN
        // step in deterministic mode, whose weight gradients are 9 wide).
        let c = &c[..nr];
        for (j, v) in row.iter_mut().enumerate() {
            if j < nr {
                *v = c[j];
            }
        }
    }
}

/// Stores the first `nr` sums of `row` into `c`.
#[inline(always)]
fn store<T: Copy>(row: &[T; NR], c: &mut [T], nr: usize) {
    if nr == NR {
        <&mut [T; NR]>::try_from(&mut c[..NR]).expect("NR elements").copy_from_slice(row);
    } else {
        let c = &mut c[..nr];
        for (j, v) in row.iter().enumerate() {
            if j < nr {
                c[j] = *v;
            }
        }
    }
}

/// A 2-d view's elements by raw offsets: packing touches every element of
/// both operands, and ndarray's checked indexing cost more than the product
/// itself on small ones (a convolution's [16, 72] x [72, 121]).
struct Strided<T> {
    ptr: *const T,
    rows: isize,
    cols: isize,
}

// SAFETY: a Strided only reads, and only while the view it was made of is
// borrowed (fixed_gemm's threads end before fixed_gemm returns): sharing it
// is sharing `&ArrayView2<T>`, which is Sync when T is.
unsafe impl<T: Sync> Sync for Strided<T> {}

impl<T: Copy> Strided<T> {
    fn of(v: &ArrayView2<T>) -> Strided<T> {
        Strided { ptr: v.as_ptr(), rows: v.strides()[0], cols: v.strides()[1] }
    }

    /// Where element (r, c) is.
    ///
    /// # Safety
    /// (r, c) is inside the view this was made `of`, which is still alive.
    #[inline(always)]
    unsafe fn ptr_at(&self, r: usize, c: usize) -> *const T {
        self.ptr.offset(r as isize * self.rows + c as isize * self.cols)
    }

    /// Element (r, c); the same contract as `ptr_at`.
    #[inline(always)]
    unsafe fn at(&self, r: usize, c: usize) -> T {
        *self.ptr_at(r, c)
    }
}

/// Copies columns `j0..j0 + NR` of `b` (zero past its last column) as `k`
/// rows of `NR`.
fn pack_b_panel<T: LinalgScalar>(b: &ArrayView2<T>, j0: usize, out: &mut [T]) {
    let nr = NR.min(b.ncols() - j0);
    let src = Strided::of(b);
    if src.rows == 1 && nr == NR {
        // A transposed `b` (a weight gradient's): each column is contiguous,
        // so read column by column.
        for j in 0..NR {
            // SAFETY: column j0 + j < n, rows 0..k: inside `b`.
            let column = unsafe { std::slice::from_raw_parts(src.ptr_at(0, j0 + j), out.len() / NR) };
            for (row, v) in out.chunks_exact_mut(NR).zip(column) {
                row[j] = *v;
            }
        }
        return;
    }
    for (p, row) in out.chunks_exact_mut(NR).enumerate() {
        // Whole rows of NR: a short fill or copy per row would each be a
        // memset or memmove call (a tenth of a CNN step).
        let mut values = [T::zero(); NR];
        for (j, v) in values[..nr].iter_mut().enumerate() {
            // SAFETY: p < k and j0 + j < n: inside `b`.
            *v = unsafe { src.at(p, j0 + j) };
        }
        *<&mut [T; NR]>::try_from(row).expect("rows of NR") = values;
    }
}

/// Writes `a[i0..i0 + mr, k0..k0 + kc]` into every element of `out` (`kc`
/// columns of `MR`, zero past row `mr`).
fn pack_a<T: LinalgScalar>(a: &ArrayView2<T>, i0: usize, mr: usize, k0: usize, out: &mut [MaybeUninit<T>]) {
    let src = Strided::of(a);
    for (p, column) in out.chunks_exact_mut(MR).enumerate() {
        for (i, v) in column.iter_mut().enumerate() {
            // SAFETY: i0 + i < i0 + mr <= m and k0 + p < k: inside `a`.
            v.write(if i < mr { unsafe { src.at(i0 + i, k0 + p) } } else { T::zero() });
        }
    }
}

/// `acc[i][j] += a(i, p) * b(p, j)` for p in order: the one place the sums happen.
///
/// # Safety
/// `a` and `b` address `MR` lanes and `NR` lanes by `kc` steps of live data.
unsafe fn micro_kernel<T: LinalgScalar>(kc: usize, a: Operand<T>, b: Operand<T>, acc: &mut [[T; NR]; MR], zero: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked above); the rest is the caller's.
        unsafe { micro_kernel_avx2(kc, a, b, acc, zero) };
        return;
    }
    micro_kernel_body(kc, a, b, acc, zero)
}

/// The same loop compiled with AVX2 (8 f32 or 4 f64 lanes): separate multiplies and
/// adds as everywhere (the `fma` feature is not enabled, and Rust would not
/// contract them if it were).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn micro_kernel_avx2<T: LinalgScalar>(
    kc: usize,
    a: Operand<T>,
    b: Operand<T>,
    acc: &mut [[T; NR]; MR],
    zero: bool,
) {
    micro_kernel_body(kc, a, b, acc, zero)
}

#[inline(always)]
unsafe fn micro_kernel_body<T: LinalgScalar>(
    kc: usize,
    a: Operand<T>,
    b: Operand<T>,
    out: &mut [[T; NR]; MR],
    zero: bool,
) {
    debug_assert_eq!(b.lane, 1);
    // The sums in locals (registers): zeroed here rather than by the caller,
    // whose zeroing of `out` through memory was a memset call per panel.
    let mut acc = if zero { [[T::zero(); NR]; MR] } else { *out };
    for p in 0..kc as isize {
        let bp: [T; NR] = std::ptr::read_unaligned(b.ptr.offset(p * b.step) as *const [T; NR]);
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = *a.ptr.offset(i as isize * a.lane + p * a.step);
            for j in 0..NR {
                row[j] = row[j] + ai * bp[j];
            }
        }
    }
    *out = acc;
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use ndarray::{Array2, ShapeBuilder};

    /// An irregular matrix whose products round (thirds and sevenths are not dyadic).
    fn matrix<T: From<f32>>(rows: usize, cols: usize, seed: usize) -> Array2<T> {
        Array2::from_shape_fn((rows, cols), |(i, j)| {
            T::from(((i * 31 + j * 17 + seed * 7) % 23) as f32 / 3.0 - 1.3 + (j % 7) as f32 / 7.0)
        })
    }

    /// The definition: the plain triple loop, terms in index order from zero.
    fn triple_loop<T: LinalgScalar>(a: &ArrayView2<T>, b: &ArrayView2<T>) -> Vec<T> {
        let ((m, k), n) = (a.dim(), b.ncols());
        let mut c = Vec::with_capacity(m * n);
        for i in 0..m {
            for j in 0..n {
                let mut s = T::zero();
                for p in 0..k {
                    s = s + a[[i, p]] * b[[p, j]];
                }
                c.push(s);
            }
        }
        c
    }

    fn bits_f32(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn equals_the_triple_loop_bit_for_bit() {
        // Edges of every block: m and n off the register block, k across KC,
        // products large enough to be split over threads.
        let shapes = [(1, 1, 1), (3, 5, 7), (4, 8, 8), (5, 9, 17), (13, 257, 11), (64, 300, 40), (130, 520, 33)];
        for (m, k, n) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = if ta { matrix::<f32>(k, m, 1).reversed_axes() } else { matrix(m, k, 1) };
                let b = if tb { matrix::<f32>(n, k, 2).reversed_axes() } else { matrix(k, n, 2) };
                let mut c = vec![f32::NAN; m * n]; // stale contents must not leak in
                fixed_gemm(&a.view(), &b.view(), &mut c, &mut vec![f32::NAN; 3]);
                assert_eq!(bits_f32(&c), bits_f32(&triple_loop(&a.view(), &b.view())), "{m}x{k}x{n} {ta}/{tb}");
            }
        }
        // f64, and a strided view that is neither row- nor column-major.
        let big = matrix::<f64>(40, 90, 3);
        let a = big.slice(ndarray::s![..;2, ..;3]);
        let b = matrix::<f64>(30, 21, 4);
        let mut c = vec![0.0; 20 * 21];
        fixed_gemm(&a, &b.view(), &mut c, &mut Vec::new());
        let want = triple_loop(&a, &b.view());
        assert!(c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    #[test]
    fn follows_ieee_through_non_finite_terms() {
        let a = Array2::from_shape_vec((1, 3).f(), vec![f32::INFINITY, 1.0, 0.0]).unwrap();
        let b = Array2::from_shape_vec((3, 2), vec![0.0, 1.0, 2.0, 3.0, f32::NAN, 4.0]).unwrap();
        let mut c = vec![0.0; 2];
        fixed_gemm(&a.view(), &b.view(), &mut c, &mut Vec::new());
        assert!(c[0].is_nan(), "inf * 0 is NaN: {c:?}");
        assert_eq!(c[1], f32::INFINITY);
    }
}
