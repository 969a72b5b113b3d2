//! Elementwise drivers over ndarray views. Operands are broadcast to the
//! output shape (stride 0 on broadcast dims), dims that stay contiguous with
//! respect to every operand are merged, and `Zip` walks the innermost lanes
//! together, handing each contiguous or scalar lane to the op's monomorphised
//! slice kernels, so the common cases (same shape, bias broadcast, scalar
//! operand) vectorise.

use super::buffer::{gather_strided, view, view_mut, Elem};
use crate::kernel::{BinarySlices, UnarySlice};
use crate::shape::{coalesce, contiguous_strides, Layout};
use ndarray::{ArrayView1, ArrayViewD, ArrayViewMutD, Axis, Zip};

/// The output (contiguous, `out_shape`) and each operand broadcast to
/// `out_shape`, as layouts over the same merged dims (at least one).
fn broadcast_layouts<const N: usize>(out_shape: &[usize], operands: [&Layout; N]) -> (Layout, [Layout; N]) {
    let so = contiguous_strides(out_shape);
    let strides: [_; N] = std::array::from_fn(|k| operands[k].broadcast_strides(out_shape));
    let all: Vec<&[usize]> = std::iter::once(&so[..]).chain(strides.iter().map(|s| &s[..])).collect();
    let (shape, merged) = coalesce(out_shape, &all);
    let layout = |k: usize, offset: usize| Layout { shape: shape.clone(), strides: merged[k].clone(), offset };
    (layout(0, 0), std::array::from_fn(|k| layout(k + 1, operands[k].offset)))
}

/// The innermost axis of a view built by `broadcast_layouts`.
fn inner<T>(v: &ArrayViewD<'_, T>) -> Axis {
    Axis(v.ndim() - 1)
}

/// A lane's single repeated element, when it is a broadcast (stride 0) lane.
fn repeated<T: Copy>(lane: &ArrayView1<'_, T>) -> Option<T> {
    (lane.strides()[0] == 0 || lane.len() == 1).then(|| lane[0])
}

pub fn unary_map<T: Elem>(x: &[T], layout: &Layout, k: UnarySlice<T>, p: [T; 2]) -> Vec<T> {
    let n = layout.numel();
    let mut out = super::pool::take::<T>(n);
    if layout.is_contiguous() {
        k(&x[layout.offset..layout.offset + n], &mut out, p);
    } else {
        // The slice kernel wants one contiguous run: copying the view once
        // and running it over the whole is faster than lane by lane.
        let tmp = super::Scratch::new(gather_strided(x, layout));
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
    if n == 0 {
        return out;
    }
    // A one-element operand against a contiguous one (`x.lt(0)`, `x + 1`,
    // `loss * scale`): the slice kernels directly, without building views,
    // which costs more than the kernel on small tensors.
    let whole = |l: &Layout| l.is_contiguous() && l.shape.as_slice() == out_shape;
    match (la.numel() == 1, lb.numel() == 1) {
        (_, true) if whole(la) => {
            (k.vs)(&a[la.offset..la.offset + n], b[lb.offset], &mut out);
            return out;
        }
        (true, _) if whole(lb) => {
            (k.sv)(a[la.offset], &b[lb.offset..lb.offset + n], &mut out);
            return out;
        }
        _ => {}
    }
    let (lo, [la, lb]) = broadcast_layouts(out_shape, [la, lb]);
    let (mut o, a, b) = (view_mut(&mut out, &lo), view(a, &la), view(b, &lb));
    let axis = inner(&a);
    Zip::from(o.lanes_mut(axis)).and(a.lanes(axis)).and(b.lanes(axis)).for_each(|mut o, a, b| {
        let dst = o.as_slice_mut().expect("the output is contiguous");
        match (a.as_slice(), b.as_slice(), repeated(&a), repeated(&b)) {
            (Some(a), Some(b), ..) => (k.vv)(a, b, dst),
            (Some(a), _, _, Some(b)) => (k.vs)(a, b, dst),
            (_, Some(b), Some(a), _) => (k.sv)(a, b, dst),
            _ => Zip::from(dst).and(a).and(b).for_each(|d, &a, &b| *d = (k.ss)(a, b)),
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
    if n == 0 {
        return out;
    }
    let (lo, [lc, la, lb]) = broadcast_layouts(out_shape, [lc, la, lb]);
    let o: ArrayViewMutD<T> = view_mut(&mut out, &lo);
    Zip::from(o).and(&view(c, &lc)).and(&view(a, &la)).and(&view(b, &lb)).for_each(|o, &c, &a, &b| {
        *o = if c != 0 { a } else { b };
    });
    out
}

/// Converts elements between dtypes (floats to ints truncate toward zero, as in PyTorch).
/// The output comes from the pool like every kernel's (a ReLU backward casts
/// its mask each step; a fresh buffer each time would never be reused).
pub fn cast<T: Elem, U: Elem>(x: &[T], layout: &Layout) -> Vec<U> {
    let n = layout.numel();
    let mut out = super::pool::take::<U>(n);
    if n == 0 {
        return out;
    }
    // A strided source is gathered first (one `gather_strided` per element
    // type) rather than walked by a `Zip` per (from, to) pair: 16 such pairs
    // of generic code would weigh on the wasm, and a cast of a strided view
    // is rare.
    let src = super::buffer::contiguous(x, layout);
    for (o, &v) in out.iter_mut().zip(src.iter()) {
        *o = U::from_f64(v.to_f64());
    }
    out
}
