//! Index kernels: index_select / index_add (whole slices along one axis) and
//! gather / scatter_add (one element per index position). Indices arrive as
//! i32 already validated by the dispatch layer (in range, so non-negative and
//! safe to cast), so the kernels never see an out-of-range value.
//!
//! index_select/index_add view their operands as [outer, dim, inner] and move
//! whole [outer, inner] sub-views (an embedding lookup is one contiguous copy
//! per row); gather/scatter_add pair up the lanes along `axis` of the index,
//! the data (cut to the index's extent in the other dims) and the output,
//! and follow the index inside each lane.

use super::buffer::{view, view_mut, Elem};
use crate::shape::Layout;
use ndarray::{ArrayView3, ArrayViewMut3, Axis, Zip};
use std::ops::AddAssign;

/// `out[o, k, :] = x[o, idx[k], :]` for contiguous `x` of shape [outer, dim, inner].
pub fn index_select<T: Elem>(x: &[T], outer: usize, dim: usize, inner: usize, idx: &[i32]) -> Vec<T> {
    let mut out = super::pool::take::<T>(outer * idx.len() * inner);
    let x = ArrayView3::from_shape((outer, dim, inner), x).expect("outer * dim * inner elements");
    let mut o = ArrayViewMut3::from_shape((outer, idx.len(), inner), &mut out[..]).expect("sized above");
    for (mut dst, &i) in o.axis_iter_mut(Axis(1)).zip(idx) {
        dst.assign(&x.index_axis(Axis(1), i as usize));
    }
    out
}

/// `out[o, idx[k], :] += src[o, k, :]` for contiguous `out` of shape [outer, dim, inner]
/// and contiguous `src` of shape [outer, idx.len(), inner]. Repeated indices accumulate.
pub fn index_add<T: Elem + AddAssign>(out: &mut [T], outer: usize, dim: usize, inner: usize, idx: &[i32], src: &[T]) {
    let mut o = ArrayViewMut3::from_shape((outer, dim, inner), out).expect("outer * dim * inner elements");
    let src = ArrayView3::from_shape((outer, idx.len(), inner), src).expect("outer * k * inner elements");
    for (s, &i) in src.axis_iter(Axis(1)).zip(idx) {
        o.index_axis_mut(Axis(1), i as usize).zip_mut_with(&s, |d, &s| *d += s);
    }
}

/// `layout` cut to the first `extent[d]` positions of every dim but `axis`.
fn cut(layout: &Layout, extent: &[usize], axis: usize) -> Layout {
    let shape = layout.shape.iter().zip(extent).enumerate().map(|(d, (&s, &e))| if d == axis { s } else { e });
    Layout { shape: shape.collect(), strides: layout.strides.clone(), offset: layout.offset }
}

/// `out[p] = x[p with p[axis] replaced by idx[p]]` over every position `p` of
/// `idx_shape` (`idx` is contiguous in that shape; `x` may be strided).
pub fn gather<T: Elem>(x: &[T], xl: &Layout, axis: usize, idx: &[i32], idx_shape: &[usize]) -> Vec<T> {
    let mut out = super::pool::take::<T>(idx.len());
    if out.is_empty() {
        return out;
    }
    let il = Layout::contiguous(idx_shape);
    let (x, idx) = (view(x, &cut(xl, idx_shape, axis)), view(idx, &il));
    let mut o = view_mut(&mut out, &il);
    let ax = Axis(axis);
    Zip::from(o.lanes_mut(ax)).and(x.lanes(ax)).and(idx.lanes(ax)).for_each(|mut o, x, idx| {
        // Unit-stride lanes (a gather along the last axis of contiguous
        // operands: max-pool's) as slices: a strided lane iterator and
        // strided indexing cost several times the loop itself.
        if let (Some(x), Some(idx)) = (x.as_slice(), idx.as_slice()) {
            if let Some(o) = o.as_slice_mut() {
                for (o, &i) in o.iter_mut().zip(idx) {
                    *o = x[i as usize];
                }
                return;
            }
        }
        for (o, &i) in o.iter_mut().zip(idx) {
            *o = x[i as usize];
        }
    });
    out
}

/// `out[p with p[axis] replaced by idx[p]] += src[p]` over every position `p`
/// of `idx_shape`, where `out` is contiguous in `out_shape` and `src` is any
/// layout at least as large as `idx_shape` in every dim.
pub fn scatter_add<T: Elem + AddAssign>(
    out: &mut [T],
    out_shape: &[usize],
    axis: usize,
    idx: &[i32],
    idx_shape: &[usize],
    src: &[T],
    sl: &Layout,
) {
    if idx.is_empty() {
        return;
    }
    let il = Layout::contiguous(idx_shape);
    let src_cut = Layout { shape: idx_shape.into(), ..sl.clone() };
    let (src, idx) = (view(src, &src_cut), view(idx, &il));
    let mut o = view_mut(out, &cut(&Layout::contiguous(out_shape), idx_shape, axis));
    let ax = Axis(axis);
    Zip::from(o.lanes_mut(ax)).and(src.lanes(ax)).and(idx.lanes(ax)).for_each(|mut o, src, idx| {
        // Unit-stride lanes as slices, as in `gather`.
        if let (Some(src), Some(idx)) = (src.as_slice(), idx.as_slice()) {
            if let Some(o) = o.as_slice_mut() {
                for (&s, &i) in src.iter().zip(idx) {
                    o[i as usize] += s;
                }
                return;
            }
        }
        for (&s, &i) in src.iter().zip(idx) {
            o[i as usize] += s;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_and_add_are_adjoint_on_a_small_case() {
        // x: [1, 3, 2] = rows [0,1], [2,3], [4,5]
        let x: Vec<f64> = (0..6).map(f64::from).collect();
        assert_eq!(index_select(&x, 1, 3, 2, &[2, 0, 2]), vec![4., 5., 0., 1., 4., 5.]);
        let mut out = vec![0.0; 6];
        index_add(&mut out, 1, 3, 2, &[2, 0, 2], &[1., 1., 2., 2., 3., 3.]);
        assert_eq!(out, vec![2., 2., 0., 0., 4., 4.]);
    }

    #[test]
    fn gather_and_scatter_add_on_axis_1() {
        let x: Vec<f64> = (0..6).map(f64::from).collect(); // [[0,1,2],[3,4,5]]
        let l = Layout::contiguous(&[2, 3]);
        assert_eq!(gather(&x, &l, 1, &[2, 2, 0, 1], &[2, 2]), vec![2., 2., 3., 4.]);
        let mut out = vec![0.0; 6];
        scatter_add(&mut out, &[2, 3], 1, &[2, 2, 0, 1], &[2, 2], &[1., 2., 3., 4.], &Layout::contiguous(&[2, 2]));
        assert_eq!(out, vec![0., 0., 3., 3., 4., 0.]);
    }
}
