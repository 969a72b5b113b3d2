//! scatter, scatter_reduce and index_put as their definitions: the sources
//! aimed at each element collected in index order (row-major), then
//! written (the last one), or reduced with or without the element itself.

use super::{axis, broadcast_at, indices, ravel, Host};

/// For every element of `base`: the sources aimed at it, in index order.
fn aimed(base: &Host, ax: isize, index: &Host, src: &Host) -> Vec<Vec<f64>> {
    let a = axis(ax, base.rank());
    let mut lists = vec![Vec::new(); base.numel()];
    for i in indices(&index.shape) {
        let mut idx = i.clone();
        idx[a] = index.index_at(&i);
        lists[ravel(&idx, &base.shape)].push(src.at(&i));
    }
    lists
}

/// PyTorch's scatter; where a target repeats, the last source in index order wins.
pub fn scatter(base: &Host, ax: isize, index: &Host, src: &Host) -> Host {
    let lists = aimed(base, ax, index, src);
    let data = base.data.iter().zip(&lists).map(|(&x, l)| l.last().copied().unwrap_or(x)).collect();
    Host::new(&base.shape, base.kind, data)
}

/// PyTorch's scatter_reduce: `reduce` is "sum", "prod", "mean", "amax" or "amin".
pub fn scatter_reduce(base: &Host, ax: isize, index: &Host, src: &Host, reduce: &str, include_self: bool) -> Host {
    let lists = aimed(base, ax, index, src);
    let data = base
        .data
        .iter()
        .zip(&lists)
        .map(|(&x, l)| {
            if l.is_empty() {
                return x;
            }
            let mut v = l.clone();
            if include_self {
                v.push(x);
            }
            match reduce {
                "sum" => v.iter().sum(),
                "prod" => v.iter().product(),
                "mean" => v.iter().sum::<f64>() / v.len() as f64,
                "amax" => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                "amin" => v.iter().copied().fold(f64::INFINITY, f64::min),
                other => panic!("reference scatter_reduce: no reduce {other:?}"),
            }
        })
        .collect();
    Host::new(&base.shape, base.kind, data)
}

/// PyTorch's index_put (out of place): `idx` broadcast together index the
/// leading dims; `values` broadcast to the indexed shape; summed where
/// `accumulate`, else the last in index order wins.
pub fn index_put(base: &Host, idx: &[&Host], values: &Host, accumulate: bool) -> Host {
    let k = idx.len();
    let mut b: Vec<usize> = Vec::new();
    for i in idx {
        b = super::broadcast_shape(&b, &i.shape);
    }
    let rest = &base.shape[k..];
    let mut out = base.clone();
    for p in indices(&b) {
        // A negative index counts from the end of its dim.
        let lead: Vec<usize> = idx
            .iter()
            .zip(&base.shape)
            .map(|(i, &n)| {
                let v = broadcast_at(i, &p) as isize;
                (if v < 0 { v + n as isize } else { v }) as usize
            })
            .collect();
        for q in indices(rest) {
            let at: Vec<usize> = lead.iter().chain(&q).copied().collect();
            let from: Vec<usize> = p.iter().chain(&q).copied().collect();
            let v = broadcast_at(values, &from);
            let o = ravel(&at, &base.shape);
            out.data[o] = if accumulate { out.data[o] + v } else { v };
        }
    }
    out
}
