//! Scans, products and sorting, from their definitions: each output element
//! recomputed from the whole line it depends on (no running state shared
//! with the kernels' order).

use super::{axis, reduce, Host, Kind};
use std::cmp::Ordering;

/// Element i along `ax` combines elements 0..=i of its line with `f`.
fn running(x: &Host, ax: isize, f: impl Fn(&[f64]) -> f64) -> Host {
    if x.rank() == 0 {
        return x.clone();
    }
    let a = axis(ax, x.rank());
    Host::build(&x.shape, x.kind, |o| {
        let line: Vec<f64> = (0..=o[a])
            .map(|i| {
                let mut idx = o.to_vec();
                idx[a] = i;
                x.at(&idx)
            })
            .collect();
        f(&line)
    })
}

/// PyTorch's `cumsum`.
pub fn cumsum(x: &Host, ax: isize) -> Host {
    running(x, ax, |v| v.iter().sum())
}

/// PyTorch's `cumprod`.
pub fn cumprod(x: &Host, ax: isize) -> Host {
    running(x, ax, |v| v.iter().product())
}

/// The product over `axes` (all: empty); 1 over no elements.
pub fn prod(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().product())
}

/// PyTorch's order for sorting: NaN above everything, equal to NaN.
fn order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The positions of the stable sort along `ax` (PyTorch's `stable=True`):
/// element i's position is the number of elements that go before it, those
/// that compare lower (higher when descending) or equal at a lower index.
pub fn argsort(x: &Host, ax: isize, descending: bool) -> Host {
    if x.rank() == 0 {
        return Host::new(&[], Kind::I32, vec![0.0]);
    }
    let a = axis(ax, x.rank());
    let n = x.shape[a];
    // rank_of[o] = where the element at o lands; then invert per line.
    let mut out = Host::new(&x.shape, Kind::I32, vec![0.0; x.numel()]);
    for o in super::indices(&x.shape) {
        let at = |i: usize| {
            let mut idx = o.clone();
            idx[a] = i;
            x.at(&idx)
        };
        let v = at(o[a]);
        let before = (0..n)
            .filter(|&i| {
                let c = order(at(i), v);
                let c = if descending { c.reverse() } else { c };
                c == Ordering::Less || (c == Ordering::Equal && i < o[a])
            })
            .count();
        let mut dest = o.clone();
        dest[a] = before;
        out.data[super::ravel(&dest, &x.shape)] = o[a] as f64;
    }
    out
}

/// The sorted values along `ax`.
pub fn sort(x: &Host, ax: isize, descending: bool) -> Host {
    if x.rank() == 0 {
        return x.clone();
    }
    super::gather(x, ax, &argsort(x, ax, descending))
}

/// The first `k` positions of the stable sort along `ax` (largest first when `largest`).
pub fn topk_indices(x: &Host, k: usize, ax: isize, largest: bool) -> Host {
    let a = axis(ax, x.rank());
    super::narrow(&argsort(x, ax, largest), a as isize, 0, k)
}

/// The `k` largest (or smallest) values along `ax`, in order.
pub fn topk(x: &Host, k: usize, ax: isize, largest: bool) -> Host {
    super::gather(x, ax, &topk_indices(x, k, ax, largest))
}
