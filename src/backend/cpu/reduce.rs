//! Reductions over any set of axes. The input is viewed as [kept..., reduced...]
//! (a permuted strided layout) and gathered into rows, then each row is
//! reduced; when the reduced axes lead a contiguous input (a bias gradient),
//! rows are accumulated column-wise instead, with no gather.

use super::buffer::gather_strided;
use crate::shape::{Dims, Layout};
use num_traits::Float;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Max,
    Min,
}

/// Rows of the reduced axes: returns (data, number of rows, row length).
fn rows<T: super::Elem>(x: &[T], layout: &Layout, axes: &[usize]) -> (Vec<T>, usize, usize) {
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
    (gather_strided(x, &permuted), outer, inner)
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
    let lead = axes.iter().enumerate().all(|(i, &a)| a == i);
    if kind == ReduceKind::Sum && lead && layout.is_contiguous() && !axes.is_empty() {
        let outer: usize = axes.iter().map(|&d| layout.shape[d]).product();
        let inner = layout.numel() / outer.max(1);
        let data = &x[layout.offset..layout.offset + layout.numel()];
        let mut out = super::pool::take_filled::<T>(inner, T::zero());
        for row in data.chunks_exact(inner.max(1)).take(outer) {
            for (o, &v) in out.iter_mut().zip(row) {
                *o = *o + v;
            }
        }
        return out;
    }
    let (data, outer, inner) = rows(x, layout, axes);
    if inner == 0 {
        let init = match kind {
            ReduceKind::Sum => T::zero(),
            ReduceKind::Max => T::neg_infinity(),
            ReduceKind::Min => T::infinity(),
        };
        return vec![init; outer];
    }
    data.chunks_exact(inner)
        .map(|r| match kind {
            ReduceKind::Sum => sum_row(r),
            ReduceKind::Max => extreme_row(r, true),
            ReduceKind::Min => extreme_row(r, false),
        })
        .collect()
}

/// Index of the first max (or min) along `axis`; NaN counts as the extreme.
pub fn arg_reduce<T: Float + super::Elem>(x: &[T], layout: &Layout, axis: usize, max: bool) -> Vec<i32> {
    let (data, _outer, inner) = rows(x, layout, &[axis]);
    data.chunks_exact(inner.max(1))
        .map(|r| {
            let mut best = 0usize;
            for (i, &v) in r.iter().enumerate() {
                if r[best].is_nan() {
                    break;
                }
                if v.is_nan() || (max && v > r[best]) || (!max && v < r[best]) {
                    best = i;
                }
            }
            best as i32
        })
        .collect()
}
