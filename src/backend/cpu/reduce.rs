//! Reductions over any set of axes, on ndarray views. When the reduced axes
//! form one block of a contiguous input (the common case: bias gradients,
//! softmax rows, pooling windows) the input is viewed in place as
//! [outer, reduced, inner]; otherwise the view is permuted to
//! [kept..., reduced...] and copied into rows first, so every sum runs over a
//! contiguous run in one fixed order (`sum_row`: the f64 results the
//! gradchecks see do not depend on the input's strides).

use super::buffer::{gather_strided, view, Scratch};
use crate::kernel::ReduceKind;
use crate::shape::{Dims, Layout};
use ndarray::{ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut2, Axis, Zip};
use num_traits::Float;

/// Rows of the reduced axes: returns (data, number of rows, row length).
fn rows<T: super::Elem>(x: &[T], layout: &Layout, axes: &[usize]) -> (Scratch<T>, usize, usize) {
    let nd = layout.shape.len();
    let kept: Dims = (0..nd).filter(|d| !axes.contains(d)).collect();
    let perm: Dims = kept.iter().chain(axes.iter()).copied().collect();
    let permuted = Layout {
        shape: perm.iter().map(|&d| layout.shape[d]).collect(),
        strides: perm.iter().map(|&d| layout.strides[d]).collect(),
        offset: layout.offset,
    };
    let inner: usize = axes.iter().map(|&d| layout.shape[d]).product();
    let outer: usize = kept.iter().map(|&d| layout.shape[d]).product();
    (Scratch::new(gather_strided(x, &permuted)), outer, inner)
}

fn sum_row<T: Float>(r: &[T]) -> T {
    // Eight partial sums: vectorises and loses less precision than one running sum.
    let mut acc = [T::zero(); 8];
    let chunks = r.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = acc[i] + c[i];
        }
    }
    let mut s = acc.iter().fold(T::zero(), |a, &b| a + b);
    for &v in rest {
        s = s + v;
    }
    s
}

fn extreme_row<T: Float>(r: &[T], max: bool) -> T {
    let mut m = if max { T::neg_infinity() } else { T::infinity() };
    for &v in r {
        if v.is_nan() {
            return v;
        }
        if (max && v > m) || (!max && v < m) {
            m = v;
        }
    }
    m
}

/// Reduces `axes` (sorted, distinct) of the strided `x`; the result has the kept dims in order.
pub fn reduce<T: Float + super::Elem>(x: &[T], layout: &Layout, axes: &[usize], kind: ReduceKind) -> Vec<T> {
    let block = !axes.is_empty() && axes.windows(2).all(|w| w[1] == w[0] + 1);
    if block && layout.is_contiguous() {
        let (a, b) = (axes[0], axes[axes.len() - 1] + 1);
        let outer: usize = layout.shape[..a].iter().product();
        let k: usize = layout.shape[a..b].iter().product();
        let inner: usize = layout.shape[b..].iter().product();
        let data = &x[layout.offset..layout.offset + layout.numel()];
        return reduce_block(data, outer, k, inner, kind);
    }
    let (data, outer, inner) = rows(x, layout, axes);
    reduce_block(&data, outer, inner, 1, kind)
}

fn init<T: Float>(kind: ReduceKind) -> T {
    match kind {
        ReduceKind::Sum => T::zero(),
        ReduceKind::Max => T::neg_infinity(),
        ReduceKind::Min => T::infinity(),
    }
}

/// Reduces the middle axis of a contiguous [outer, k, inner] array.
/// With inner == 1 each output is one row reduction; otherwise whole rows of
/// `inner` elements are combined at once, which vectorises (bias gradients,
/// pooling windows) and needs no transposing copy.
fn reduce_block<T: Float + super::Elem>(data: &[T], outer: usize, k: usize, inner: usize, kind: ReduceKind) -> Vec<T> {
    // Nothing to reduce, or nothing to reduce into.
    if k == 0 || outer * inner == 0 {
        return vec![init(kind); outer * inner];
    }
    let mut out = super::pool::take::<T>(outer * inner);
    if inner == 1 {
        let rows = ArrayView2::from_shape((outer, k), data).expect("outer * k elements");
        let out1 = ArrayViewMut1::from(&mut out[..]);
        Zip::from(out1).and(rows.rows()).for_each(|o, r| {
            let r = r.as_slice().expect("rows of a contiguous block");
            *o = match kind {
                ReduceKind::Sum => sum_row(r),
                ReduceKind::Max => extreme_row(r, true),
                ReduceKind::Min => extreme_row(r, false),
            }
        });
        return out;
    }
    let slabs = ArrayView3::from_shape((outer, k, inner), data).expect("outer * k * inner elements");
    let mut out2 = ArrayViewMut2::from_shape((outer, inner), &mut out[..]).expect("outer * inner elements");
    Zip::from(out2.rows_mut()).and(slabs.axis_iter(Axis(0))).for_each(|mut dst, slab| {
        dst.assign(&slab.row(0));
        for row in slab.rows().into_iter().skip(1) {
            match kind {
                ReduceKind::Sum => dst.zip_mut_with(&row, |d, &v| *d = *d + v),
                // NaN wins and then stays (v > NaN is false).
                ReduceKind::Max => dst.zip_mut_with(&row, |d, &v| {
                    if v > *d || v.is_nan() {
                        *d = v
                    }
                }),
                ReduceKind::Min => dst.zip_mut_with(&row, |d, &v| {
                    if v < *d || v.is_nan() {
                        *d = v
                    }
                }),
            }
        }
    });
    out
}

/// Index of the first max (or min) along `axis`; NaN counts as the extreme.
/// Each output reads its lane of the view in place (no copy).
pub fn arg_reduce<T: Float + super::Elem>(x: &[T], layout: &Layout, axis: usize, max: bool) -> Vec<i32> {
    let v = view(x, layout);
    let lanes = v.lanes(Axis(axis));
    let kept: Dims = (0..layout.shape.len()).filter(|&d| d != axis).map(|d| layout.shape[d]).collect();
    let mut out = super::pool::take::<i32>(kept.iter().product());
    let o = super::buffer::view_mut(&mut out, &Layout::contiguous(&kept));
    Zip::from(o).and(lanes).for_each(|o, r| {
        let mut best = 0usize;
        for (i, &v) in r.iter().enumerate() {
            if r[best].is_nan() {
                break;
            }
            if v.is_nan() || (max && v > r[best]) || (!max && v < r[best]) {
                best = i;
            }
        }
        *o = best as i32;
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive reference: reduce `axes` of a contiguous array by visiting every element.
    fn naive(x: &[f64], shape: &[usize], axes: &[usize], kind: ReduceKind) -> Vec<f64> {
        let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
        let out_n: usize = kept.iter().map(|&d| shape[d]).product();
        let mut out = vec![init::<f64>(kind); out_n];
        let strides = crate::shape::contiguous_strides(shape);
        for (flat, &v) in x.iter().enumerate() {
            let idx: Vec<usize> = (0..shape.len()).map(|d| flat / strides[d] % shape[d]).collect();
            let o = kept.iter().fold(0, |acc, &d| acc * shape[d] + idx[d]);
            out[o] = match kind {
                ReduceKind::Sum => out[o] + v,
                ReduceKind::Max => {
                    if v > out[o] || v.is_nan() || out[o].is_nan() {
                        if out[o].is_nan() {
                            out[o]
                        } else {
                            v
                        }
                    } else {
                        out[o]
                    }
                }
                ReduceKind::Min => {
                    if v < out[o] || v.is_nan() || out[o].is_nan() {
                        if out[o].is_nan() {
                            out[o]
                        } else {
                            v
                        }
                    } else {
                        out[o]
                    }
                }
            };
        }
        out
    }

    #[test]
    fn every_path_matches_a_naive_reduction() {
        let shape = [3usize, 4, 5, 2];
        let n: usize = shape.iter().product();
        let mut x: Vec<f64> = (0..n).map(|i| ((i * 37 % 101) as f64) - 50.0).collect();
        x[17] = f64::NAN;
        let layout = Layout::contiguous(&shape);
        let axis_sets: [&[usize]; 7] = [&[0], &[1], &[3], &[1, 2], &[0, 2], &[0, 1, 2, 3], &[2, 3]];
        for axes in axis_sets {
            for kind in [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min] {
                let got = reduce(&x, &layout, axes, kind);
                let want = naive(&x, &shape, axes, kind);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!((g.is_nan() && w.is_nan()) || (g - w).abs() < 1e-9, "{axes:?} {kind:?}: {g} vs {w}");
                }
            }
        }
    }
}
