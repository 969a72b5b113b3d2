//! Reference movement, joins, indexing and matmul (see `mod.rs`): each output
//! element located by index arithmetic from the op's definition.

use super::{axis, broadcast_shape, indices, Host, Kind};

/// The same values in another shape (one entry may be -1).
pub fn reshape(x: &Host, shape: &[isize]) -> Host {
    let known: usize = shape.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
    let dims: Vec<usize> = shape.iter().map(|&d| if d < 0 { x.numel() / known.max(1) } else { d as usize }).collect();
    Host::new(&dims, x.kind, x.data.clone())
}

/// Output axis `i` is input axis `perm[i]`.
pub fn permute(x: &Host, perm: &[usize]) -> Host {
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    Host::build(&shape, x.kind, |o| {
        let mut idx = vec![0; x.rank()];
        for (i, &p) in perm.iter().enumerate() {
            idx[p] = o[i];
        }
        x.at(&idx)
    })
}

pub fn transpose(x: &Host, a: isize, b: isize) -> Host {
    let mut perm: Vec<usize> = (0..x.rank()).collect();
    perm.swap(axis(a, x.rank()), axis(b, x.rank()));
    permute(x, &perm)
}

/// Broadcasts `x` to `shape` (NumPy rules).
pub fn expand(x: &Host, shape: &[usize]) -> Host {
    assert_eq!(broadcast_shape(&x.shape, shape), shape, "reference: cannot expand {:?} to {shape:?}", x.shape);
    Host::build(shape, x.kind, |o| super::broadcast_at(x, o))
}

/// Elements start, start+step, ... below end along `axis` (Python's slice
/// rules: negative bounds count from the end, bounds clamp to the axis).
pub fn slice(x: &Host, ax: isize, start: isize, end: isize, step: usize) -> Host {
    let a = axis(ax, x.rank());
    let d = x.shape[a] as isize;
    let clamp = |v: isize| (if v < 0 { v + d } else { v }).clamp(0, d) as usize;
    let (s, e) = (clamp(start), clamp(end));
    let picked: Vec<usize> = (s..e.max(s)).step_by(step).collect();
    pick(x, a, &picked)
}

pub fn narrow(x: &Host, ax: isize, start: usize, len: usize) -> Host {
    pick(x, axis(ax, x.rank()), &(start..start + len).collect::<Vec<_>>())
}

/// The entries `at` of axis `a`, in that order (index_select's definition).
fn pick(x: &Host, a: usize, at: &[usize]) -> Host {
    let mut shape = x.shape.clone();
    shape[a] = at.len();
    Host::build(&shape, x.kind, |o| {
        let mut idx = o.to_vec();
        idx[a] = at[o[a]];
        x.at(&idx)
    })
}

/// Removes size-1 axes: `axis` only, or all.
pub fn squeeze(x: &Host, ax: Option<isize>) -> Host {
    let shape: Vec<usize> = match ax {
        Some(a) => {
            let a = axis(a, x.rank());
            x.shape.iter().enumerate().filter(|&(i, &d)| i != a || d != 1).map(|(_, &d)| d).collect()
        }
        None => x.shape.iter().cloned().filter(|&d| d != 1).collect(),
    };
    Host::new(&shape, x.kind, x.data.clone())
}

pub fn unsqueeze(x: &Host, ax: isize) -> Host {
    let mut shape = x.shape.clone();
    shape.insert(axis(ax, x.rank() + 1), 1);
    Host::new(&shape, x.kind, x.data.clone())
}

/// Merges axes `start..=end` into one.
pub fn flatten(x: &Host, start: isize, end: isize) -> Host {
    let (s, e) = (axis(start, x.rank()), axis(end, x.rank()));
    let mut shape = x.shape[..s].to_vec();
    shape.push(x.shape[s..=e].iter().product());
    shape.extend(&x.shape[e + 1..]);
    Host::new(&shape, x.kind, x.data.clone())
}

/// Joins along an existing axis.
pub fn concat(xs: &[&Host], ax: isize) -> Host {
    let a = axis(ax, xs[0].rank());
    let mut shape = xs[0].shape.clone();
    shape[a] = xs.iter().map(|x| x.shape[a]).sum();
    Host::build(&shape, xs[0].kind, |o| {
        let (mut idx, mut part) = (o.to_vec(), 0);
        while idx[a] >= xs[part].shape[a] {
            idx[a] -= xs[part].shape[a];
            part += 1;
        }
        xs[part].at(&idx)
    })
}

/// Joins same-shaped tensors along a new axis.
pub fn stack(xs: &[&Host], ax: isize) -> Host {
    let parts: Vec<Host> = xs.iter().map(|x| unsqueeze(x, ax)).collect();
    concat(&parts.iter().collect::<Vec<_>>(), ax)
}

/// Pieces of `size` along `axis` (the last may be smaller).
pub fn split(x: &Host, size: usize, ax: isize) -> Vec<Host> {
    let d = x.shape[axis(ax, x.rank())];
    (0..d).step_by(size).map(|s| narrow(x, ax, s, size.min(d - s))).collect()
}

/// PyTorch's chunk: pieces of ceil(d / chunks) along `axis`.
pub fn chunk(x: &Host, chunks: usize, ax: isize) -> Vec<Host> {
    split(x, x.shape[axis(ax, x.rank())].div_ceil(chunks), ax)
}

/// Constant padding of the last `pads.len()` axes, `(before, after)` each.
pub fn pad(x: &Host, pads: &[(usize, usize)], value: f64) -> Host {
    let first = x.rank() - pads.len();
    let mut shape = x.shape.clone();
    for (k, &(b, a)) in pads.iter().enumerate() {
        shape[first + k] += b + a;
    }
    Host::build(&shape, x.kind, |o| {
        let mut idx = o.to_vec();
        for (k, &(b, _)) in pads.iter().enumerate() {
            let i = o[first + k];
            if i < b || i - b >= x.shape[first + k] {
                return value;
            }
            idx[first + k] = i - b;
        }
        x.at(&idx)
    })
}

/// Rows `index[j]` of `axis` (index is 1-D).
pub fn index_select(x: &Host, ax: isize, index: &Host) -> Host {
    let at: Vec<usize> = (0..index.numel()).map(|j| index.index_at(&[j])).collect();
    pick(x, axis(ax, x.rank()), &at)
}

/// `out[.., index[j], ..] += src[.., j, ..]` along `axis`, starting from `base`.
pub fn index_add(base: &Host, ax: isize, index: &Host, src: &Host) -> Host {
    let a = axis(ax, base.rank());
    let mut out = base.clone();
    for s in indices(&src.shape) {
        let mut idx = s.clone();
        idx[a] = index.index_at(&[s[a]]);
        out.data[super::ravel(&idx, &base.shape)] += src.at(&s);
    }
    out
}

/// `out[i] = x[i with axis replaced by index[i]]` (index has the output's shape).
pub fn gather(x: &Host, ax: isize, index: &Host) -> Host {
    let a = axis(ax, x.rank());
    Host::build(&index.shape, x.kind, |o| {
        let mut idx = o.to_vec();
        idx[a] = index.index_at(o);
        x.at(&idx)
    })
}

/// `out[i with axis replaced by index[i]] += src[i]` for every i of index
/// (src may be larger than index; its extra elements are unused).
pub fn scatter_add(base: &Host, ax: isize, index: &Host, src: &Host) -> Host {
    let a = axis(ax, base.rank());
    let mut out = base.clone();
    for i in indices(&index.shape) {
        let mut idx = i.clone();
        idx[a] = index.index_at(&i);
        out.data[super::ravel(&idx, &base.shape)] += src.at(&i);
    }
    out
}

/// NumPy's matmul: 1-D operands are promoted (and the axis dropped again),
/// batch axes broadcast; each product is the plain sum over k.
pub fn matmul(a: &Host, b: &Host) -> Host {
    let a2 = if a.rank() == 1 { unsqueeze(a, 0) } else { a.clone() };
    let b2 = if b.rank() == 1 { unsqueeze(b, 1) } else { b.clone() };
    let (ra, rb) = (a2.rank(), b2.rank());
    let (m, k, n) = (a2.shape[ra - 2], a2.shape[ra - 1], b2.shape[rb - 1]);
    assert_eq!(k, b2.shape[rb - 2], "reference: matmul inner dims");
    let batch = broadcast_shape(&a2.shape[..ra - 2], &b2.shape[..rb - 2]);
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let at = |x: &Host, bi: &[usize], r: usize, c: usize| {
        let lead = bi.len() - (x.rank() - 2);
        let mut idx: Vec<usize> =
            x.shape[..x.rank() - 2].iter().enumerate().map(|(i, &d)| if d == 1 { 0 } else { bi[lead + i] }).collect();
        idx.extend([r, c]);
        x.at(&idx)
    };
    let out = Host::build(&shape, Kind::Float, |o| {
        let (bi, r, c) = (&o[..batch.len()], o[batch.len()], o[batch.len() + 1]);
        (0..k).map(|j| at(&a2, bi, r, j) * at(&b2, bi, j, c)).sum()
    });
    let mut final_shape = batch;
    if a.rank() > 1 {
        final_shape.push(m);
    }
    if b.rank() > 1 {
        final_shape.push(n);
    }
    Host::new(&final_shape, Kind::Float, out.data)
}

/// Element i of each axis in `axes` taken from position n - 1 - i.
pub fn flip(x: &Host, axes: &[usize]) -> Host {
    Host::build(&x.shape, x.kind, |o| {
        let mut idx = o.to_vec();
        for &a in axes {
            idx[a] = x.shape[a] - 1 - o[a];
        }
        x.at(&idx)
    })
}

/// Element i of each axis in `axes` taken from position (i - shift) mod n;
/// with no axes, the same over the flattened values.
pub fn roll(x: &Host, shifts: &[isize], axes: &[isize]) -> Host {
    let from = |i: usize, shift: isize, n: usize| (i as isize - shift).rem_euclid(n as isize) as usize;
    if axes.is_empty() {
        let n = x.numel();
        let data = (0..n).map(|i| x.data[from(i, shifts[0], n)]).collect();
        return Host::new(&x.shape, x.kind, data);
    }
    Host::build(&x.shape, x.kind, |o| {
        let mut idx = o.to_vec();
        for (&s, &a) in shifts.iter().zip(axes) {
            let a = axis(a, x.rank());
            idx[a] = from(idx[a], s, x.shape[a]);
        }
        x.at(&idx)
    })
}

/// Output axis k has `counts[k]` times the (leading-1-padded) input's size;
/// each element comes from its index modulo the input's size.
pub fn repeat(x: &Host, counts: &[usize]) -> Host {
    let lead = counts.len() - x.rank();
    let padded: Vec<usize> = std::iter::repeat_n(1, lead).chain(x.shape.iter().copied()).collect();
    let shape: Vec<usize> = padded.iter().zip(counts).map(|(s, c)| s * c).collect();
    Host::build(&shape, x.kind, |o| {
        let idx: Vec<usize> = o[lead..].iter().zip(&x.shape).map(|(&i, &s)| i % s).collect();
        x.at(&idx)
    })
}

/// Element (.., i, j) kept where j - i <= diagonal (lower) or >= diagonal (upper), else 0.
pub fn triangle(x: &Host, diagonal: isize, lower: bool) -> Host {
    let n = x.rank();
    Host::build(&x.shape, x.kind, |o| {
        let d = o[n - 1] as isize - o[n - 2] as isize;
        if (lower && d <= diagonal) || (!lower && d >= diagonal) {
            x.at(o)
        } else {
            0.0
        }
    })
}

/// Output (.., c, h, w) is input (.., c r^2 + (h mod r) r + (w mod r), h / r, w / r).
pub fn pixel_shuffle(x: &Host, r: usize) -> Host {
    let n = x.rank();
    let mut shape = x.shape.clone();
    shape[n - 3] /= r * r;
    shape[n - 2] *= r;
    shape[n - 1] *= r;
    Host::build(&shape, x.kind, |o| {
        let (c, h, w) = (o[n - 3], o[n - 2], o[n - 1]);
        let mut idx = o.to_vec();
        idx[n - 3] = c * r * r + (h % r) * r + w % r;
        idx[n - 2] = h / r;
        idx[n - 1] = w / r;
        x.at(&idx)
    })
}

/// Output (.., c r^2 + i r + j, h, w) is input (.., c, h r + i, w r + j).
pub fn pixel_unshuffle(x: &Host, r: usize) -> Host {
    let n = x.rank();
    let mut shape = x.shape.clone();
    shape[n - 3] *= r * r;
    shape[n - 2] /= r;
    shape[n - 1] /= r;
    Host::build(&shape, x.kind, |o| {
        let (k, h, w) = (o[n - 3], o[n - 2], o[n - 1]);
        let mut idx = o.to_vec();
        idx[n - 3] = k / (r * r);
        idx[n - 2] = h * r + (k % (r * r)) / r;
        idx[n - 1] = w * r + k % r;
        x.at(&idx)
    })
}
