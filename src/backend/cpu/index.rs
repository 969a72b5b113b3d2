//! Index kernels: index_select / index_add (whole slices along one axis) and
//! gather / scatter_add (one element per index position). Indices arrive
//! already validated and converted to `usize` by the dispatch layer, so the
//! kernels never see an out-of-range value.
//!
//! index_select/index_add view their operands as [outer, dim, inner] and move
//! `inner`-long contiguous runs (an embedding lookup is one memcpy per row);
//! gather/scatter_add walk the index shape with `for_each_row`, where the data
//! operand's stride along `axis` is zeroed and replaced by `index * stride`.

use super::buffer::{for_each_row, Elem};
use crate::shape::{contiguous_strides, Layout};
use std::ops::AddAssign;

/// `out[o, k, :] = x[o, idx[k], :]` for contiguous `x` of shape [outer, dim, inner].
pub fn index_select<T: Elem>(x: &[T], outer: usize, dim: usize, inner: usize, idx: &[usize]) -> Vec<T> {
    let mut out = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        let block = &x[o * dim * inner..(o + 1) * dim * inner];
        for &i in idx {
            out.extend_from_slice(&block[i * inner..(i + 1) * inner]);
        }
    }
    out
}

/// `out[o, idx[k], :] += src[o, k, :]` for contiguous `out` of shape [outer, dim, inner]
/// and contiguous `src` of shape [outer, idx.len(), inner]. Repeated indices accumulate.
pub fn index_add<T: Elem + AddAssign>(out: &mut [T], outer: usize, dim: usize, inner: usize, idx: &[usize], src: &[T]) {
    let k = idx.len();
    for o in 0..outer {
        for (j, &i) in idx.iter().enumerate() {
            let s = &src[(o * k + j) * inner..(o * k + j + 1) * inner];
            let d = &mut out[(o * dim + i) * inner..(o * dim + i + 1) * inner];
            for (d, &s) in d.iter_mut().zip(s) {
                *d += s;
            }
        }
    }
}

/// `out[p] = x[p with p[axis] replaced by idx[p]]` over every position `p` of
/// `idx_shape` (`idx` is contiguous in that shape; `x` may be strided).
pub fn gather<T: Elem>(x: &[T], xl: &Layout, axis: usize, idx: &[usize], idx_shape: &[usize]) -> Vec<T> {
    let mut out = vec![T::default(); idx.len()];
    let mut xs = xl.strides.clone();
    let axis_stride = std::mem::replace(&mut xs[axis], 0);
    let os = contiguous_strides(idx_shape);
    for_each_row(idx_shape, [&os, &xs], [0, xl.offset], |[o, xo], len, [so, sx]| {
        for i in 0..len {
            let p = o + i * so;
            out[p] = x[xo + i * sx + idx[p] * axis_stride];
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
    idx: &[usize],
    idx_shape: &[usize],
    src: &[T],
    sl: &Layout,
) {
    let mut os = contiguous_strides(out_shape);
    let axis_stride = std::mem::replace(&mut os[axis], 0);
    let is = contiguous_strides(idx_shape);
    for_each_row(idx_shape, [&is, &os, &sl.strides], [0, 0, sl.offset], |[io, oo, so], len, [si, s_o, ss]| {
        for i in 0..len {
            let p = io + i * si;
            out[oo + i * s_o + idx[p] * axis_stride] += src[so + i * ss];
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
