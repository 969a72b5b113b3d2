//! Elementwise drivers: walk (possibly strided, broadcast) operands row by
//! row and hand contiguous runs to the op's monomorphised slice kernels, so
//! the common cases (same shape, bias broadcast, scalar operand) vectorise.

use super::buffer::{for_each_row, gather_strided, Elem};
use crate::kernel::{BinarySlices, UnarySlice};
use crate::shape::{contiguous_strides, Layout};

pub fn unary_map<T: Elem>(x: &[T], layout: &Layout, k: UnarySlice<T>, p: [T; 2]) -> Vec<T> {
    let n = layout.numel();
    let mut out = super::pool::take::<T>(n);
    if layout.is_contiguous() {
        k(&x[layout.offset..layout.offset + n], &mut out, p);
    } else {
        let tmp = gather_strided(x, layout);
        k(&tmp, &mut out, p);
    }
    out
}

pub fn binary_map<T: Elem, U: Elem>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out_shape: &[usize],
    k: BinarySlices<T, U>,
) -> Vec<U> {
    let n: usize = out_shape.iter().product();
    let mut out = super::pool::take::<U>(n);
    if la.is_contiguous() && lb.is_contiguous() && la.shape.as_slice() == out_shape && lb.shape.as_slice() == out_shape
    {
        (k.vv)(&a[la.offset..la.offset + n], &b[lb.offset..lb.offset + n], &mut out);
        return out;
    }
    let so = contiguous_strides(out_shape);
    let sa = la.broadcast_strides(out_shape);
    let sb = lb.broadcast_strides(out_shape);
    for_each_row(out_shape, [&so, &sa, &sb], [0, la.offset, lb.offset], |[o, ao, bo], len, [_, sa, sb]| {
        let dst = &mut out[o..o + len];
        match (sa, sb) {
            (1, 1) => (k.vv)(&a[ao..ao + len], &b[bo..bo + len], dst),
            (1, 0) => (k.vs)(&a[ao..ao + len], b[bo], dst),
            (0, 1) => (k.sv)(a[ao], &b[bo..bo + len], dst),
            _ => {
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = (k.ss)(a[ao + i * sa], b[bo + i * sb]);
                }
            }
        }
    });
    out
}

/// `out = cond ? a : b` with broadcasting of all three.
pub fn where_map<T: Elem>(
    c: &[u8],
    lc: &Layout,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out_shape: &[usize],
) -> Vec<T> {
    let n: usize = out_shape.iter().product();
    let mut out = super::pool::take::<T>(n);
    let so = contiguous_strides(out_shape);
    let sc = lc.broadcast_strides(out_shape);
    let sa = la.broadcast_strides(out_shape);
    let sb = lb.broadcast_strides(out_shape);
    for_each_row(
        out_shape,
        [&so, &sc, &sa, &sb],
        [0, lc.offset, la.offset, lb.offset],
        |[o, co, ao, bo], len, [_, sc, sa, sb]| {
            for i in 0..len {
                out[o + i] = if c[co + i * sc] != 0 { a[ao + i * sa] } else { b[bo + i * sb] };
            }
        },
    );
    out
}

/// Converts elements between dtypes (floats to ints truncate toward zero, as in PyTorch).
/// The output comes from the pool like every kernel's (a ReLU backward casts
/// its mask each step; a fresh buffer each time would never be reused).
pub fn cast<T: Elem, U: Elem>(x: &[T], layout: &Layout) -> Vec<U> {
    let n = layout.numel();
    let mut out = super::pool::take::<U>(n);
    let convert = |src: &[T], out: &mut [U]| {
        for (o, &v) in out.iter_mut().zip(src) {
            *o = U::from_f64(v.to_f64());
        }
    };
    if layout.is_contiguous() {
        convert(&x[layout.offset..layout.offset + n], &mut out);
    } else {
        convert(&gather_strided(x, layout), &mut out);
    }
    out
}
