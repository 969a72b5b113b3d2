//! skiff's own f32 GEMM for WebAssembly: `c = a b` on strided operands,
//! blocked and packed like BLIS, with a 3 x 12 micro-kernel of WebAssembly
//! SIMD128.
//!
//! Why its own: in V8 it is faster than the `gemm` crate's SIMD128
//! micro-kernel in both builds, most where the engine has relaxed SIMD, whose
//! `f32x4.relaxed_madd` is one fused multiply-add on x86 and ARM (the package
//! ships a second .wasm built with `+relaxed-simd`; see scripts/build-wasm.sh).
//! Why 3 x 12: V8 gives WebAssembly 15 vector registers on x86; 3 x 12 holds 9
//! accumulators, 3 vectors of `b` and one broadcast of `a` in them, where
//! 4 x 12 (16) or 6 x 8 (15, with no spare) spill and run far slower.
//!
//! The summation order is fixed by the shapes alone: each output sums its
//! products in `k` order within blocks of `KC`, and adds the blocks in order.
//!
//! Natively this module is compiled for its tests only, with a portable
//! micro-kernel in place of the SIMD one; the blocking, packing and edge
//! handling are the same code on both.

use std::cell::RefCell;

/// Rows of `a` per micro-kernel call.
const MR: usize = 3;
/// Columns of `b` per micro-kernel call (three f32x4 vectors).
const NR: usize = 12;
/// Depth of one block: a packed `kc x NR` strip of `b` (12 KiB) stays in L1.
const KC: usize = 256;
/// Rows of `a` packed at once (72 KiB at `KC`, in L2).
const MC: usize = 72;
/// Columns of `b` packed at once (2 MiB at `KC`).
const NC: usize = 2040;

/// One strided matrix operand: element (i, j) is at `ptr + i * rows + j * cols`.
#[derive(Clone, Copy)]
pub struct Operand {
    pub ptr: *const f32,
    pub rows: isize,
    pub cols: isize,
}

impl Operand {
    /// Element (i, j).
    ///
    /// # Safety
    /// (i, j) must lie inside the matrix the operand describes.
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> f32 {
        *self.ptr.offset(i as isize * self.rows + j as isize * self.cols)
    }
}

/// A cache line of f32s: the packed strips start on one.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// The first `len` values of `buf`, zeroed, starting on a cache line.
///
/// Why: wasm32's allocator aligns to 8 bytes only; with a packed strip at
/// an odd 8, a quarter of the micro-kernel's vector loads would straddle
/// two cache lines.
fn zeroed_lines(buf: &mut Vec<Line>, len: usize) -> &mut [f32] {
    let lines = len.div_ceil(16);
    buf.clear();
    buf.reserve(lines);
    // One memset: `resize` with a Line value is a loop of 64-byte stores
    // wherever the inliner does not see through it (the package's wasm is
    // built with a low inlining threshold, .cargo/config.toml).
    // SAFETY: `reserve` made room for `lines` Lines, and all-zero bytes are
    // a valid Line (sixteen 0.0s); the Lines are plain f32s without padding.
    unsafe {
        buf.as_mut_ptr().write_bytes(0, lines);
        buf.set_len(lines);
        std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<f32>(), len)
    }
}

thread_local! {
    /// The packing buffers, kept between calls (wasm32 is single-threaded).
    static PACKED: RefCell<(Vec<Line>, Vec<Line>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `c = a b` for an (m x k) `a` and a (k x n) `b`; `c` is row-major (m x n),
/// written without being read (stale data is fine).
///
/// # Safety
/// `a` and `b` must describe live (m x k) and (k x n) matrices that do not
/// overlap `c`.
pub unsafe fn sgemm(m: usize, k: usize, n: usize, a: Operand, b: Operand, c: &mut [f32]) {
    assert_eq!(c.len(), m * n, "sgemm: c holds m * n elements");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    PACKED.with(|packed| {
        let (lines_a, lines_b) = &mut *packed.borrow_mut();
        let mut tile = [0f32; MR * NR];
        for jc in (0..n).step_by(NC) {
            let nc = NC.min(n - jc);
            for pc in (0..k).step_by(KC) {
                let kc = KC.min(k - pc);
                let pb = zeroed_lines(lines_b, nc.div_ceil(NR) * kc * NR);
                pack_b(kc, nc, b, pc, jc, pb);
                for ic in (0..m).step_by(MC) {
                    let mc = MC.min(m - ic);
                    let pa = zeroed_lines(lines_a, mc.div_ceil(MR) * kc * MR);
                    pack_a(mc, kc, a, ic, pc, pa);
                    for (jr, strip_b) in pb.chunks_exact(kc * NR).enumerate() {
                        let (col, cols) = (jc + jr * NR, NR.min(nc - jr * NR));
                        for (ir, strip_a) in pa.chunks_exact(kc * MR).enumerate() {
                            let (row, rows) = (ic + ir * MR, MR.min(mc - ir * MR));
                            if rows == MR && cols == NR {
                                // A whole tile: straight into `c`.
                                let out = &mut c[row * n + col..][..(MR - 1) * n + NR];
                                micro_kernel(kc, strip_a, strip_b, out, n, pc > 0);
                                continue;
                            }
                            // An edge tile: through `tile`, then its valid part.
                            micro_kernel(kc, strip_a, strip_b, &mut tile, NR, false);
                            for (r, sums) in tile.chunks_exact(NR).take(rows).enumerate() {
                                let out = &mut c[(row + r) * n + col..][..cols];
                                if pc == 0 {
                                    out.copy_from_slice(&sums[..cols]);
                                } else {
                                    out.iter_mut().zip(sums).for_each(|(o, s)| *o += s);
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Packs `b[pc..pc + kc, jc..jc + nc]` into strips of `NR` columns, each
/// `kc` rows of `NR` contiguous values; `out` (zeroed) pads past column `nc`.
unsafe fn pack_b(kc: usize, nc: usize, b: Operand, pc: usize, jc: usize, out: &mut [f32]) {
    for (s, strip) in out.chunks_exact_mut(kc * NR).enumerate() {
        let cols = NR.min(nc - s * NR);
        for (p, row) in strip.chunks_exact_mut(NR).enumerate() {
            if b.cols == 1 && cols == NR {
                // A fixed-size copy: inlined, where a slice's length makes it a
                // call to memory.copy per row, a real cost in this hot loop.
                let src = b.ptr.offset((pc + p) as isize * b.rows + (jc + s * NR) as isize);
                row.copy_from_slice(&*(src as *const [f32; NR]));
            } else {
                for (j, v) in row[..cols].iter_mut().enumerate() {
                    *v = b.at(pc + p, jc + s * NR + j);
                }
            }
        }
    }
}

/// Packs `a[ic..ic + mc, pc..pc + kc]` into strips of `MR` rows, each `kc`
/// columns of `MR` contiguous values; `out` (zeroed) pads past row `mc`.
unsafe fn pack_a(mc: usize, kc: usize, a: Operand, ic: usize, pc: usize, out: &mut [f32]) {
    for (s, strip) in out.chunks_exact_mut(kc * MR).enumerate() {
        let rows = MR.min(mc - s * MR);
        for (p, column) in strip.chunks_exact_mut(MR).enumerate() {
            for (r, v) in column[..rows].iter_mut().enumerate() {
                *v = a.at(ic + s * MR + r, pc + p);
            }
        }
    }
}

/// `out = a b` (or `out += a b` when `accumulate`) for a packed `MR x kc`
/// strip of `a` and `kc x NR` strip of `b`; `out` holds `MR` rows of `NR`
/// values, `rs` apart.
#[cfg(target_arch = "wasm32")]
#[inline(never)]
fn micro_kernel(kc: usize, a: &[f32], b: &[f32], out: &mut [f32], rs: usize, accumulate: bool) {
    use core::arch::wasm32::*;

    /// `x y + acc`: one fused multiply-add with relaxed SIMD (the engine may
    /// round once or twice; on x86 with FMA and on ARM it rounds once).
    #[inline(always)]
    fn madd(x: v128, y: v128, acc: v128) -> v128 {
        #[cfg(target_feature = "relaxed-simd")]
        return f32x4_relaxed_madd(x, y, acc);
        #[cfg(not(target_feature = "relaxed-simd"))]
        return f32x4_add(f32x4_mul(x, y), acc);
    }

    const { assert!(MR == 3 && NR == 12, "the kernel below is written out for 3 x 12") };
    assert!(a.len() >= kc * MR && b.len() >= kc * NR && out.len() >= (MR - 1) * rs + NR);
    // The 3 x 3 accumulators are written out by name, not as arrays walked by
    // iterators: those stay in registers only if LLVM inlines the adapters and
    // unrolls their loops, which opt-level "z" does not (the kernel ran 30x
    // slower there) and the package's low inlining threshold
    // (.cargo/config.toml) need not. Written out, the kernel is the same code
    // at any setting.
    let zero = f32x4_splat(0.0);
    let (mut c00, mut c01, mut c02) = (zero, zero, zero);
    let (mut c10, mut c11, mut c12) = (zero, zero, zero);
    let (mut c20, mut c21, mut c22) = (zero, zero, zero);
    let (mut pa, mut pb) = (a.as_ptr(), b.as_ptr());
    // SAFETY: the loop reads kc * MR values of `a` and kc * NR of `b`, and
    // the stores write MR rows of NR values of `out`, all checked above;
    // v128 loads and stores need no alignment in WebAssembly.
    unsafe {
        for _ in 0..kc {
            let b0 = v128_load(pb as *const v128);
            let b1 = v128_load(pb.add(4) as *const v128);
            let b2 = v128_load(pb.add(8) as *const v128);
            let a0 = v128_load32_splat(pa as *const u32);
            (c00, c01, c02) = (madd(a0, b0, c00), madd(a0, b1, c01), madd(a0, b2, c02));
            let a1 = v128_load32_splat(pa.add(1) as *const u32);
            (c10, c11, c12) = (madd(a1, b0, c10), madd(a1, b1, c11), madd(a1, b2, c12));
            let a2 = v128_load32_splat(pa.add(2) as *const u32);
            (c20, c21, c22) = (madd(a2, b0, c20), madd(a2, b1, c21), madd(a2, b2, c22));
            pa = pa.add(MR);
            pb = pb.add(NR);
        }
        let o = out.as_mut_ptr();
        let store = |p: *mut f32, sum: v128| {
            let p = p as *mut v128;
            v128_store(p, if accumulate { f32x4_add(v128_load(p), sum) } else { sum });
        };
        for (r, row) in [[c00, c01, c02], [c10, c11, c12], [c20, c21, c22]].into_iter().enumerate() {
            for (v, sum) in row.into_iter().enumerate() {
                store(o.add(r * rs + 4 * v), sum);
            }
        }
    }
}

/// The same product in portable code, for the native tests of the driver.
#[cfg(not(target_arch = "wasm32"))]
fn micro_kernel(kc: usize, a: &[f32], b: &[f32], out: &mut [f32], rs: usize, accumulate: bool) {
    let mut tile = [0f32; MR * NR];
    for (col_a, row_b) in a.chunks_exact(MR).zip(b.chunks_exact(NR)).take(kc) {
        for (sums, &x) in tile.chunks_exact_mut(NR).zip(col_a) {
            sums.iter_mut().zip(row_b).for_each(|(s, &y)| *s += x * y);
        }
    }
    for (r, sums) in tile.chunks_exact(NR).enumerate() {
        let row = &mut out[r * rs..][..NR];
        if accumulate {
            row.iter_mut().zip(sums).for_each(|(o, s)| *o += s);
        } else {
            row.copy_from_slice(sums);
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// An irregular value for element (i, j) of matrix `seed`.
    fn value(i: usize, j: usize, seed: usize) -> f32 {
        ((i * 31 + j * 17 + seed * 7) % 23) as f32 / 8.0 - 1.3
    }

    /// Checks `sgemm` against an f64 triple loop, with `a` and `b` stored
    /// row-major or transposed, and `c` prefilled with NaN (it must be written).
    fn check(m: usize, k: usize, n: usize, ta: bool, tb: bool) {
        let a: Vec<f32> = (0..m * k).map(|x| value(x / k, x % k, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|x| value(x / n, x % n, 2)).collect();
        // Transposed storage: the same matrix, stored column-major.
        let store = |v: &[f32], r: usize, c: usize, t: bool| -> (Vec<f32>, isize, isize) {
            if t {
                ((0..r * c).map(|x| v[(x % r) * c + x / r]).collect(), 1, r as isize)
            } else {
                (v.to_vec(), c as isize, 1)
            }
        };
        let (sa, ra, ca) = store(&a, m, k, ta);
        let (sb, rb, cb) = store(&b, k, n, tb);
        let mut c = vec![f32::NAN; m * n];
        // SAFETY: the operands describe the vectors built above.
        unsafe {
            sgemm(
                m,
                k,
                n,
                Operand { ptr: sa.as_ptr(), rows: ra, cols: ca },
                Operand { ptr: sb.as_ptr(), rows: rb, cols: cb },
                &mut c,
            )
        };
        for i in 0..m {
            for j in 0..n {
                let terms = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64);
                let (want, size): (f64, f64) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + t.abs()));
                // The rounding error bound of a k-term f32 dot product (Higham: k u sum |a b|).
                let bound = k as f64 * f32::EPSILON as f64 * size;
                let got = c[i * n + j] as f64;
                assert!((got - want).abs() <= bound, "{m}x{k}x{n} ({ta}, {tb}) at ({i}, {j}): {got} vs {want}");
            }
        }
    }

    #[test]
    fn products_of_every_edge_and_layout_match_the_triple_loop() {
        // Shapes inside one tile, on tile edges, across MC, KC and NC blocks.
        let shapes = [
            (1, 1, 1),
            (2, 2, 2),
            (3, 5, 12),
            (4, 9, 13),
            (8, 9, 676),
            (16, 72, 121),
            (73, 257, 25),
            (64, 784, 10),
            (5, 3, 2041),
        ];
        for (m, k, n) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                check(m, k, n, ta, tb);
            }
        }
    }

    #[test]
    fn an_empty_inner_dimension_gives_zeros() {
        let mut c = vec![f32::NAN; 6];
        let none = Operand { ptr: [].as_ptr(), rows: 0, cols: 1 };
        // SAFETY: with k = 0 no element is read.
        unsafe { sgemm(2, 0, 3, none, none, &mut c) };
        assert_eq!(c, [0.0; 6]);
    }
}
