//! Scans (running sums and products) and the stable argsort along one axis,
//! on ndarray views: each line of the input is read in place through its
//! strides and its result written into the matching line of a contiguous
//! output. Sums and products accumulate in the element type, in index order
//! (from the end when reversed), one line per step, so the bits do not
//! depend on threads.

use super::buffer::{view, view_mut};
use crate::kernel::ScanKind;
use crate::shape::Layout;
use ndarray::{Axis, Zip};
use num_traits::Float;
use std::cmp::Ordering;

/// The inclusive running sum or product along `axis`, from the last element
/// backwards when `reverse`.
pub fn scan<T: Float + super::Elem>(x: &[T], layout: &Layout, axis: usize, kind: ScanKind, reverse: bool) -> Vec<T> {
    let mut out = super::pool::take::<T>(layout.numel());
    let v = view(x, layout);
    let mut o = view_mut(&mut out, &Layout::contiguous(&layout.shape));
    Zip::from(o.lanes_mut(Axis(axis))).and(v.lanes(Axis(axis))).for_each(|mut o, r| {
        let n = r.len();
        let mut acc = match kind {
            ScanKind::Sum => T::zero(),
            ScanKind::Prod => T::one(),
        };
        for k in 0..n {
            let i = if reverse { n - 1 - k } else { k };
            acc = match kind {
                ScanKind::Sum => acc + r[i],
                ScanKind::Prod => acc * r[i],
            };
            o[i] = acc;
        }
    });
    out
}

/// The order of two values for sorting: NaN is the largest (equal to every
/// other NaN) and -0 equals 0, as PyTorch's sort compares.
pub fn sort_order<T: Float>(a: T, b: T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Element types argsort orders: floats by `sort_order`, integers as integers.
pub trait SortKey: Copy {
    fn order(a: Self, b: Self) -> Ordering;
}
impl SortKey for f32 {
    fn order(a: f32, b: f32) -> Ordering {
        sort_order(a, b)
    }
}
impl SortKey for f64 {
    fn order(a: f64, b: f64) -> Ordering {
        sort_order(a, b)
    }
}
impl SortKey for i32 {
    fn order(a: i32, b: i32) -> Ordering {
        a.cmp(&b)
    }
}

/// The i32 positions that sort each line along `axis`: a stable sort, so
/// equal values keep their order in both directions (PyTorch's
/// `stable=True`).
pub fn argsort<T: SortKey + super::Elem>(x: &[T], layout: &Layout, axis: usize, descending: bool) -> Vec<i32> {
    let mut out = super::pool::take::<i32>(layout.numel());
    let v = view(x, layout);
    let mut o = view_mut(&mut out, &Layout::contiguous(&layout.shape));
    let mut order: Vec<usize> = Vec::new();
    Zip::from(o.lanes_mut(Axis(axis))).and(v.lanes(Axis(axis))).for_each(|mut o, r| {
        order.clear();
        order.extend(0..r.len());
        // `sort_by` is stable; reversing the comparison (not the result)
        // keeps equal values in index order when descending.
        order.sort_by(|&i, &j| {
            let c = T::order(r[i], r[j]);
            if descending {
                c.reverse()
            } else {
                c
            }
        });
        for (slot, &i) in o.iter_mut().zip(&order) {
            *slot = i as i32;
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_run_along_any_axis_and_either_way() {
        let l = Layout::contiguous(&[2, 3]);
        let x = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(scan(&x, &l, 1, ScanKind::Sum, false), [1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        assert_eq!(scan(&x, &l, 0, ScanKind::Prod, false), [1.0, 2.0, 3.0, 4.0, 10.0, 18.0]);
        assert_eq!(scan(&x, &l, 1, ScanKind::Sum, true), [6.0, 5.0, 3.0, 15.0, 11.0, 6.0]);
    }

    #[test]
    fn argsort_is_stable_with_nan_largest() {
        let l = Layout::contiguous(&[5]);
        let x = [1.0f32, f32::NAN, -0.0, 0.0, 1.0];
        assert_eq!(argsort(&x, &l, 0, false), [2, 3, 0, 4, 1]);
        assert_eq!(argsort(&x, &l, 0, true), [1, 0, 4, 2, 3]);
        let ints = [3, i32::MIN, 3, -1, i32::MAX];
        assert_eq!(argsort(&ints, &l, 0, false), [1, 3, 0, 2, 4]);
        assert_eq!(argsort(&ints, &l, 0, true), [4, 0, 2, 3, 1]);
    }
}
