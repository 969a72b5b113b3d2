//! im2col (`unfold`) and col2im (`fold`) for 2-D sliding windows. Both walk
//! the same (batch, channel, ki, kj) rows of the column matrix; for each row
//! the output positions whose input falls inside the unpadded image are worked
//! out once (`valid`), so the inner loops are plain slice copies / adds with
//! no per-element bounds tests, and padding is simply never touched.
//!
//! These stay hand-written slice loops rather than ndarray code: ndarray has
//! no im2col/col2im or windowed-argmax primitive, and spelling one as a
//! strided sub-view assign per (ki, kj) walks the same rows with per-element
//! strided steps instead of `copy_from_slice`, for no gain in clarity. The
//! inputs reach them contiguous through `buffer::contiguous` (an ndarray copy
//! when the view is strided).

use super::{pool, Elem};
use crate::kernel::Window2d;
use num_traits::Float;
use std::ops::Add;

/// The output positions `o` in `0..out` whose input coordinate
/// `o * stride + offset - pad` lies in `0..size`, as a half-open range
/// (the coordinate grows with `o`, so the valid set is contiguous).
fn valid(out: usize, stride: usize, offset: usize, pad: usize, size: usize) -> (usize, usize) {
    // First o with o * stride + offset >= pad.
    let lo = if offset >= pad { 0 } else { (pad - offset).div_ceil(stride) };
    // Last o with o * stride + offset <= pad + size - 1.
    let hi = match (pad + size).checked_sub(offset + 1) {
        Some(room) => (room / stride + 1).min(out),
        None => 0,
    };
    (lo.min(hi), hi)
}

/// Elements each thread of a plane loop takes at least (a few ms of work):
/// split, the benchmark CNN's columns (400-560K elements) cost its step more
/// than they saved; a transposed convolution's 16M-element columns gain.
const MIN_PER_THREAD: usize = 1 << 22;

/// Runs `f(plane, ki, kj, part)` for every row of the column matrix, that
/// is every [h, w] input plane (`n * c + channel`) and tap, with `part` the
/// `per_plane` elements of `out` that belong to the plane (`out` holds
/// `n * c` such parts), zeroed first when `zeroed`. Blocks of planes run on
/// all cores when there is work enough (`parallel::for_blocks`); planes never
/// share output. Zeroing a plane's part here, just before its taps write it,
/// costs less than zeroing all of `out` up front: in cache, and on every core.
fn for_each_plane_tap<T: Elem>(
    g: &Window2d,
    out: &mut [T],
    (per_plane, work_per_plane): (usize, usize),
    zeroed: bool,
    f: impl Fn(usize, usize, usize, &mut [T]) + Sync,
) {
    let [kh, kw] = g.kernel;
    super::parallel::for_blocks(out, g.n * g.c, per_plane, 1, work_per_plane, MIN_PER_THREAD, |planes, part| {
        for (plane, part) in planes.zip(part.chunks_exact_mut(per_plane)) {
            if zeroed {
                part.fill(T::default());
            }
            for ki in 0..kh {
                for kj in 0..kw {
                    f(plane, ki, kj, part);
                }
            }
        }
    });
}

/// im2col: `x` is a contiguous [n, c, h, w] slice; returns the contiguous
/// [n, c * kh * kw, out_h * out_w] column matrix (zeros where a window
/// reaches into the padding).
pub fn unfold<T: Elem>(x: &[T], g: &Window2d) -> Vec<T> {
    let (l, hw) = (g.windows(), g.h * g.w);
    let len = g.n * g.col_rows() * l;
    if l == 0 || hw == 0 {
        return pool::take_filled(len, T::default());
    }
    // From the pool (a fresh allocation is zero-faulted page by page). Only
    // windows reaching into the padding leave elements unwritten below: then
    // each plane's rows are zeroed as they are filled.
    let mut out = pool::take(len);
    let ([sh, sw], [ph, pw], [dh, dw]) = (g.stride, g.padding, g.dilation);
    let per_plane = g.kernel[0] * g.kernel[1] * l;
    for_each_plane_tap(g, &mut out, (per_plane, per_plane), g.padding != [0, 0], |plane, ki, kj, rows| {
        let src = &x[plane * hw..(plane + 1) * hw];
        let dst = &mut rows[(ki * g.kernel[1] + kj) * l..][..l];
        let (oh_lo, oh_hi) = valid(g.out_h, sh, ki * dh, ph, g.h);
        let (ow_lo, ow_hi) = valid(g.out_w, sw, kj * dw, pw, g.w);
        if ow_lo == ow_hi {
            return;
        }
        let iw0 = ow_lo * sw + kj * dw - pw;
        let len = ow_hi - ow_lo;
        for oh in oh_lo..oh_hi {
            let ih = oh * sh + ki * dh - ph;
            let s = &src[ih * g.w + iw0..(ih + 1) * g.w];
            let d = &mut dst[oh * g.out_w + ow_lo..oh * g.out_w + ow_hi];
            if sw == 1 {
                d.copy_from_slice(&s[..len]);
            } else {
                // Strided as chunks: `step_by` compiled to a slower loop.
                for (d, s) in d.iter_mut().zip(s.chunks(sw)) {
                    *d = s[0];
                }
            }
        }
    });
    out
}

/// col2im, the adjoint of `unfold`: `cols` is a contiguous
/// [n, c * kh * kw, out_h * out_w] slice; every entry is added back onto the
/// input position it was read from (overlapping windows sum, padding drops).
pub fn fold<T: Elem + Add<Output = T>>(cols: &[T], g: &Window2d) -> Vec<T> {
    let (l, hw) = (g.windows(), g.h * g.w);
    if l == 0 || hw == 0 {
        return pool::take_filled(g.n * g.c * hw, T::default());
    }
    let mut out = pool::take(g.n * g.c * hw);
    let ([sh, sw], [ph, pw], [dh, dw]) = (g.stride, g.padding, g.dilation);
    let taps = g.kernel[0] * g.kernel[1];
    for_each_plane_tap(g, &mut out, (hw, taps * l), true, |plane, ki, kj, dst| {
        let row = plane * taps + ki * g.kernel[1] + kj;
        let src = &cols[row * l..(row + 1) * l];
        let (oh_lo, oh_hi) = valid(g.out_h, sh, ki * dh, ph, g.h);
        let (ow_lo, ow_hi) = valid(g.out_w, sw, kj * dw, pw, g.w);
        if ow_lo == ow_hi {
            return;
        }
        let iw0 = ow_lo * sw + kj * dw - pw;
        let len = ow_hi - ow_lo;
        for oh in oh_lo..oh_hi {
            let ih = oh * sh + ki * dh - ph;
            let s = &src[oh * g.out_w + ow_lo..oh * g.out_w + ow_hi];
            let d = &mut dst[ih * g.w + iw0..(ih + 1) * g.w];
            if sw == 1 {
                for (d, &s) in d[..len].iter_mut().zip(s) {
                    *d = *d + s;
                }
            } else {
                for (d, &s) in d.chunks_mut(sw).zip(s) {
                    d[0] = d[0] + s;
                }
            }
        }
    });
    out
}

/// The taps `t` in `0..k` of window `o` whose coordinate `o * stride + t *
/// dilation - pad` lies in `0..size`, as a half-open range (the dual of `valid`).
fn taps(o: usize, stride: usize, dilation: usize, pad: usize, k: usize, size: usize) -> (usize, usize) {
    let start = o * stride;
    let lo = if start >= pad { 0 } else { (pad - start).div_ceil(dilation) };
    let hi = match (pad + size).checked_sub(start + 1) {
        Some(room) => (room / dilation + 1).min(k),
        None => 0,
    };
    (lo.min(hi), hi)
}

/// For every window of every [h, w] plane of the contiguous [n, c, h, w] `x`,
/// the flat index (into its plane) of its maximum, picked as PyTorch's
/// max_pool2d does: the first maximum, or the last NaN; taps in the padding
/// never win, and an all -inf window answers its first in-image tap (a window
/// wholly in the padding, which callers rule out, answers 0).
///
/// One window at a time with the running max and index in registers: kept
/// in memory (a row of windows at a time), the compare-selects become
/// branches that random data mispredicts, which cost several times more.
pub fn window_argmax<T: Elem + Float>(x: &[T], g: &Window2d) -> Vec<i32> {
    let hw = g.h * g.w;
    let mut out = vec![0i32; g.n * g.c * g.windows()];
    if out.is_empty() || hw == 0 {
        return out;
    }
    if g.padding == [0, 0] && g.dilation == [1, 1] {
        argmax_unpadded(x, g, &mut out);
    } else {
        argmax_general(x, g, &mut out);
    }
    out
}

/// `window_argmax` for any padding and dilation: per window, the range of
/// its taps that fall in the image.
fn argmax_general<T: Elem + Float>(x: &[T], g: &Window2d, out: &mut [i32]) {
    let hw = g.h * g.w;
    let ([kh, kw], [sh, sw], [ph, pw], [dh, dw]) = (g.kernel, g.stride, g.padding, g.dilation);
    // Per output column: its in-image taps and the column of the first one.
    let cols: Vec<(usize, usize)> = (0..g.out_w)
        .map(|ow| {
            let (lo, hi) = taps(ow, sw, dw, pw, kw, g.w);
            (hi - lo, (ow * sw + lo * dw).saturating_sub(pw))
        })
        .collect();
    for (plane, out) in x.chunks_exact(hw).zip(out.chunks_exact_mut(g.windows())) {
        for (oh, out) in out.chunks_exact_mut(g.out_w).enumerate() {
            let (lo, hi) = taps(oh, sh, dh, ph, kh, g.h);
            if lo == hi {
                continue;
            }
            let ih0 = oh * sh + lo * dh - ph;
            for (o, &(n_cols, iw0)) in out.iter_mut().zip(&cols) {
                if n_cols == 0 {
                    continue;
                }
                let first = ih0 * g.w + iw0;
                let (mut best, mut best_v, mut nan) = (first, T::neg_infinity(), false);
                for ki in 0..hi - lo {
                    let row = first + ki * dh * g.w;
                    for kj in 0..n_cols {
                        let i = row + kj * dw;
                        let v = plane[i];
                        let take = v > best_v;
                        best_v = if take { v } else { best_v };
                        best = if take { i } else { best };
                        nan |= v.is_nan();
                    }
                }
                if nan {
                    // Rare: rescan for the last NaN (the fast loop skips NaNs).
                    let taps = (0..hi - lo).flat_map(|ki| (0..n_cols).map(move |kj| first + ki * dh * g.w + kj * dw));
                    best = taps.filter(|&i| plane[i].is_nan()).last().unwrap_or(best);
                }
                *o = best as i32;
            }
        }
    }
}

/// `window_argmax` without padding or dilation (every max-pool in the
/// benchmarks and the demo): every tap is in the image, so a window is `kh`
/// row segments of `kw` contiguous values. The 2x2 window (the usual
/// max-pool) has its four taps unrolled. Same picks as the general loop:
/// taps in row-major order, the first maximum, else the last NaN, else the
/// first tap.
fn argmax_unpadded<T: Elem + Float>(x: &[T], g: &Window2d, out: &mut [i32]) {
    let ([kh, kw], [sh, sw], w) = (g.kernel, g.stride, g.w);
    for (plane, out) in x.chunks_exact(g.h * w).zip(out.chunks_exact_mut(g.windows())) {
        for (oh, out) in out.chunks_exact_mut(g.out_w).enumerate() {
            let top = oh * sh * w;
            let rows = &plane[top..top + kh * w];
            if [kh, kw, sw] == [2, 2, 2] {
                // The usual max-pool: the windows tile the row pair, so they
                // are its pairs of columns: no index arithmetic or bounds
                // checks per window, and with i32 offsets (as wide as f32
                // lanes) the loop vectorises: a third of the general 2x2
                // loop's time on a ReLU output.
                let (r0, r1) = rows.split_at(w);
                let pairs = r0.chunks_exact(2).zip(r1.chunks_exact(2));
                let (w32, base) = (w as i32, top as i32);
                for ((o, (a, b)), first) in out.iter_mut().zip(pairs).zip((base..).step_by(2)) {
                    *o = first + pick4([a[0], a[1], b[0], b[1]], w32);
                }
                continue;
            }
            if [kh, kw] == [2, 2] {
                let (r0, r1) = rows.split_at(w);
                for (ow, o) in out.iter_mut().enumerate() {
                    let i = ow * sw;
                    *o = (top + i) as i32 + pick4([r0[i], r0[i + 1], r1[i], r1[i + 1]], w as i32);
                }
                continue;
            }
            for (ow, o) in out.iter_mut().enumerate() {
                let iw0 = ow * sw;
                let taps = (0..kh).flat_map(|ki| (0..kw).map(move |kj| ki * w + kj));
                *o = (top + iw0 + pick(taps.map(|t| (t, rows[t + iw0])))) as i32;
            }
        }
    }
}

/// The offset of the first maximum of `(offset, value)` taps in order, else
/// of the last NaN, else of the first tap.
#[inline(always)]
fn pick<T: Float>(taps: impl IntoIterator<Item = (usize, T)> + Clone) -> usize {
    let (mut best, mut best_v, mut nan) = (usize::MAX, T::neg_infinity(), false);
    for (t, v) in taps.clone() {
        let take = v > best_v;
        best_v = if take { v } else { best_v };
        best = if take || best == usize::MAX { t } else { best };
        nan |= v.is_nan();
    }
    if nan {
        // Rare: the last NaN (the loop above skips NaNs).
        best = taps.into_iter().filter(|(_, v)| v.is_nan()).map(|(t, _)| t).last().unwrap_or(best);
    }
    if best == usize::MAX {
        0
    } else {
        best
    }
}

/// `pick` for a 2x2 window `[a, b, c, d]` (offsets 0, 1, w, w + 1), without
/// branches on the values: after ReLU half the taps tie at 0, so a branch on
/// each comparison would mispredict about half the time.
/// Offsets are i32 (a plane's H*W fits i32: dispatch checks), as wide as f32
/// lanes, so the caller's loop over windows vectorises.
#[inline(always)]
fn pick4<T: Float>(v: [T; 4], w: i32) -> i32 {
    let offsets = [0, 1, w, w + 1];
    // Starting from the first tap: a first tap of -inf stays picked unless a
    // larger one follows, as in `pick`; a NaN anywhere is handled below.
    let (mut best, mut best_v) = (0, v[0]);
    for k in 1..4 {
        let take = v[k] > best_v;
        best = if take { offsets[k] } else { best };
        best_v = if take { v[k] } else { best_v };
    }
    // One test for the four (non-short-circuit `|`: no branch per tap).
    if v[0].is_nan() | v[1].is_nan() | v[2].is_nan() | v[3].is_nan() {
        best = offsets[v.iter().rposition(|x| x.is_nan()).unwrap_or(0)];
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ranges() {
        // 5 outputs, stride 1, no offset, pad 1, size 5: o = 0 reads -1.
        assert_eq!(valid(5, 1, 0, 1, 5), (1, 5));
        // Offset 2 (last tap of a 3-wide kernel): o = 4 reads 5, out of range.
        assert_eq!(valid(5, 1, 2, 1, 5), (0, 4));
        // Stride 2, pad 2: o = 0 reads -2, o = 1 reads 0, o = 3 reads 4.
        assert_eq!(valid(4, 2, 0, 2, 5), (1, 4));
        // A tap entirely in the padding.
        assert_eq!(valid(3, 1, 0, 9, 2), (3, 3));
    }

    #[test]
    fn columns_split_over_threads_equal_each_image_alone() {
        // A transposed convolution's geometry (k4 s2 p1, 32x32 images, 16x16
        // windows) large enough that unfold and fold split their planes over
        // threads (16M column elements); one image alone stays on one thread.
        let g = |n| Window2d {
            n,
            c: 64,
            h: 32,
            w: 32,
            kernel: [4, 4],
            stride: [2, 2],
            padding: [1, 1],
            dilation: [1, 1],
            out_h: 16,
            out_w: 16,
        };
        assert!(g(64).n * g(64).col_rows() * g(64).windows() >= 2 * MIN_PER_THREAD);
        let image = 64 * 32 * 32;
        let x: Vec<f32> = (0..64 * image).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
        let cols = unfold(&x, &g(64));
        let per_image = cols.len() / 64;
        let folded = fold(&cols, &g(64));
        for i in [0, 1, 31, 32, 63] {
            let alone = unfold(&x[i * image..][..image], &g(1));
            assert!(alone == cols[i * per_image..][..per_image], "unfold of image {i}");
            let alone = fold(&cols[i * per_image..][..per_image], &g(1));
            assert!(alone == folded[i * image..][..image], "fold of image {i}");
        }
    }

    #[test]
    fn unfold_then_fold_counts_overlaps() {
        // A 3x3 image of ones, 2x2 kernel, stride 1: fold(unfold(1)) counts
        // how many windows cover each pixel.
        let g = Window2d {
            n: 1,
            c: 1,
            h: 3,
            w: 3,
            kernel: [2, 2],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            out_h: 2,
            out_w: 2,
        };
        let cols = unfold(&[1.0f64; 9], &g);
        assert_eq!(cols, vec![1.0; 16]);
        assert_eq!(fold(&cols, &g), vec![1., 2., 1., 2., 4., 2., 1., 2., 1.]);
    }

    /// The unpadded and the general argmax over `x`.
    fn both_argmaxes(x: &[f32], g: &Window2d) -> (Vec<i32>, Vec<i32>) {
        let (mut fast, mut general) = (vec![0; g.n * g.c * g.windows()], vec![0; g.n * g.c * g.windows()]);
        argmax_unpadded(x, g, &mut fast);
        argmax_general(x, g, &mut general);
        (fast, general)
    }

    #[test]
    fn the_unpadded_argmax_picks_what_the_general_loop_picks() {
        // Values with ties, -inf, NaN and an all -inf window, over kernels and strides.
        let vals = [1.0f32, 3.0, 3.0, -1.0, f32::NEG_INFINITY, f32::NAN, 2.0, 0.0, 3.0, -2.0];
        for (h, w, kernel, stride) in
            [(7, 9, [2, 2], [2, 2]), (7, 9, [3, 2], [1, 2]), (6, 6, [3, 3], [3, 1]), (5, 8, [1, 4], [2, 3])]
        {
            let (n, c) = (2, 3);
            let x: Vec<f32> = (0..n * c * h * w).map(|i| vals[(i * 7 + i / 5) % vals.len()]).collect();
            let mut x = x;
            x[..kernel[1]].fill(f32::NEG_INFINITY); // the first window of row 0 only -inf when kh = 1
            let out_h = (h - kernel[0]) / stride[0] + 1;
            let out_w = (w - kernel[1]) / stride[1] + 1;
            let g = Window2d { n, c, h, w, kernel, stride, padding: [0, 0], dilation: [1, 1], out_h, out_w };
            let (fast, general) = both_argmaxes(&x, &g);
            assert_eq!(fast, general, "{h}x{w}, kernel {kernel:?}, stride {stride:?}");
        }
        // 2x2 windows by hand (a 2x8 plane): all -inf -> the first tap; NaNs ->
        // the last NaN; a tie -> the first; a later larger value wins.
        let (inf, nan) = (f32::NEG_INFINITY, f32::NAN);
        let x = [inf, inf, nan, 5.0, 0.0, 0.0, -1.0, -2.0, inf, inf, nan, 2.0, 0.0, 0.0, -1.0, 3.0];
        let g = Window2d {
            n: 1,
            c: 1,
            h: 2,
            w: 8,
            kernel: [2, 2],
            stride: [2, 2],
            padding: [0, 0],
            dilation: [1, 1],
            out_h: 1,
            out_w: 4,
        };
        let (fast, general) = both_argmaxes(&x, &g);
        assert_eq!(fast, vec![0, 10, 4, 15]);
        assert_eq!(general, fast);
    }

    #[test]
    fn argmax_skips_padding_and_keeps_the_first_tie() {
        // [[-1, -2], [-3, -3]], 2x2 windows, stride 1, padding 1: 3x3 windows.
        let g = Window2d {
            n: 1,
            c: 1,
            h: 2,
            w: 2,
            kernel: [2, 2],
            stride: [1, 1],
            padding: [1, 1],
            dilation: [1, 1],
            out_h: 3,
            out_w: 3,
        };
        assert_eq!(window_argmax(&[-1.0f64, -2.0, -3.0, -3.0], &g), vec![0, 0, 1, 0, 0, 1, 2, 2, 3]);
        assert_eq!(window_argmax(&[1.0f64, f64::NAN, 3.0, 0.0], &g)[4], 1);
        // An all -inf window answers its first in-image tap.
        assert_eq!(window_argmax(&[f64::NEG_INFINITY; 4], &g), vec![0, 0, 1, 0, 0, 1, 2, 2, 3]);
    }
}
