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

/// Element types argsort orders, as PyTorch's sort compares: NaN is the
/// largest float (equal to every other NaN), -0 equals 0, integers as
/// integers; each through an unsigned key whose order is the values' order.
pub trait SortKey: Copy {
    /// The key: a larger value has a larger key, equal values (every NaN,
    /// -0 and 0) equal keys, in the low `KEY_BITS` bits.
    fn key(self) -> u64;
    const KEY_BITS: u32;
}

/// The order-preserving unsigned image of a float's bits (negatives
/// reversed below the positives); NaN above everything, -0 as 0.
macro_rules! float_key {
    ($t:ty, $bits:ty, $width:literal) => {
        impl SortKey for $t {
            fn key(self) -> u64 {
                const SIGN: $bits = 1 << ($width - 1);
                if self.is_nan() {
                    return <$bits>::MAX as u64;
                }
                let b = if self == 0.0 { 0 } else { self.to_bits() };
                (if b & SIGN != 0 { !b } else { b | SIGN }) as u64
            }
            const KEY_BITS: u32 = $width;
        }
    };
}
float_key!(f32, u32, 32);
float_key!(f64, u64, 64);

impl SortKey for i32 {
    fn key(self) -> u64 {
        ((self as u32) ^ (1 << 31)) as u64
    }
    const KEY_BITS: u32 = 32;
}

/// A key and a position packed into one integer, the key above: sorting
/// these sorts by key, and equal keys by position, which is what a stable
/// sort gives, at the speed of an unstable sort of plain integers (no
/// comparator reading the values through the positions).
trait Packed: Ord + Copy {
    fn pack(key: u64, position: u32) -> Self;
    fn position(self) -> u32;
}
impl Packed for u64 {
    fn pack(key: u64, position: u32) -> u64 {
        (key << 32) | position as u64
    }
    fn position(self) -> u32 {
        self as u32
    }
}
impl Packed for u128 {
    fn pack(key: u64, position: u32) -> u128 {
        ((key as u128) << 32) | position as u128
    }
    fn position(self) -> u32 {
        self as u32
    }
}

/// The i32 positions that sort each line along `axis`: a stable sort, so
/// equal values keep their order in both directions (PyTorch's
/// `stable=True`). Descending sorts the complemented keys, positions still
/// ascending among equals.
pub fn argsort<T: SortKey + super::Elem>(x: &[T], layout: &Layout, axis: usize, descending: bool) -> Vec<i32> {
    if T::KEY_BITS <= 32 {
        argsort_packed::<T, u64>(x, layout, axis, descending)
    } else {
        argsort_packed::<T, u128>(x, layout, axis, descending)
    }
}

fn argsort_packed<T: SortKey + super::Elem, P: Packed>(
    x: &[T],
    layout: &Layout,
    axis: usize,
    descending: bool,
) -> Vec<i32> {
    let mut out = super::pool::take::<i32>(layout.numel());
    let v = view(x, layout);
    let mut o = view_mut(&mut out, &Layout::contiguous(&layout.shape));
    let mask = u64::MAX >> (64 - T::KEY_BITS);
    let mut entries: Vec<P> = Vec::new();
    Zip::from(o.lanes_mut(Axis(axis))).and(v.lanes(Axis(axis))).for_each(|mut o, r| {
        entries.clear();
        entries.extend(r.iter().enumerate().map(|(i, &x)| {
            let key = if descending { !x.key() & mask } else { x.key() };
            P::pack(key, i as u32)
        }));
        entries.sort_unstable();
        for (slot, e) in o.iter_mut().zip(&entries) {
            *slot = e.position() as i32;
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    /// The order the keys must give (PyTorch's comparison), written out.
    fn sort_order<T: Float>(a: T, b: T) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        }
    }

    #[test]
    fn keys_order_floats_as_the_comparison_does() {
        let specials = |big: f64, tiny: f64| {
            [
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                -f64::INFINITY,
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -2.5,
                big,
                -big,
                tiny,
                -tiny,
            ]
        };
        let f32s: Vec<f32> = specials(f32::MAX as f64, 1e-45).iter().map(|&v| v as f32).collect();
        let f64s: Vec<f64> = specials(f64::MAX, 5e-324).to_vec();
        for &a in &f32s {
            for &b in &f32s {
                assert_eq!(a.key().cmp(&b.key()), sort_order(a, b), "f32 {a} vs {b}");
            }
        }
        for &a in &f64s {
            for &b in &f64s {
                assert_eq!(a.key().cmp(&b.key()), sort_order(a, b), "f64 {a} vs {b}");
            }
        }
        for (a, b) in [(i32::MIN, -1), (-1, 0), (0, 1), (1, i32::MAX), (5, 5)] {
            assert_eq!(a.key().cmp(&b.key()), a.cmp(&b), "i32 {a} vs {b}");
        }
    }

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
