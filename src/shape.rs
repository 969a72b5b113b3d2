//! Shapes, strides and the rules that relate them: NumPy broadcasting, axis
//! normalisation, and the strided layout of a view into a storage buffer.

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// Dimension sizes; inline up to rank 6, so shapes rarely allocate.
pub type Dims = SmallVec<[usize; 6]>;

/// Row-major (C-order) strides for `shape`, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1);
    }
    strides
}

/// Number of elements of a shape (1 for a scalar).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The most elements one tensor (or view) may have. In WebAssembly (32-bit
/// addresses, at most 4 GiB of memory) 2^28 elements is 1 GiB of f32; larger
/// results are refused with an error before anything is allocated. Natively
/// the bound is what strided offsets (`isize`) can address.
pub const MAX_ELEMENTS: usize = if cfg!(target_arch = "wasm32") { 1 << 28 } else { isize::MAX as usize };

// Checked size arithmetic: every element count, extent and padded or
// concatenated length computed from user input goes through these, so a size
// that overflows or exceeds MAX_ELEMENTS is an error naming the op, never a
// wrapped count or a panic.

/// The element count of `shape`, or an error naming `op` when a tensor of
/// that shape may not exist here (a `Memory` error: too large to allocate). The dims' product with zero dims counted as
/// 1 (which bounds every stride) must not overflow either, so an empty
/// tensor cannot carry impossible strides.
pub fn check_size(op: &'static str, shape: &[usize]) -> Result<usize> {
    let span = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d.max(1)));
    let count = span.filter(|&s| s <= isize::MAX as usize).map(|_| numel(shape));
    match count {
        Some(n) if n <= MAX_ELEMENTS => Ok(n),
        _ => Err(Error::memory(
            op,
            format!(
                "a result of shape {shape:?} would have {} elements, more than one tensor may hold here ({MAX_ELEMENTS})",
                count.map_or_else(|| "too many".to_string(), |n| n.to_string())
            ),
        )),
    }
}

/// `a + b` for a size computed from arguments (a padded or concatenated
/// length), or an error naming `op` and `what` when it overflows.
pub fn add_sizes(op: &'static str, what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_add(b).filter(|&n| n <= MAX_ELEMENTS).ok_or_else(|| {
        Error::memory(op, format!("{what} {a} + {b} is too large: more than one tensor may hold here ({MAX_ELEMENTS})"))
    })
}

/// `a * b` for a size computed from arguments, as `add_sizes`.
pub fn mul_sizes(op: &'static str, what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).filter(|&n| n <= MAX_ELEMENTS).ok_or_else(|| {
        Error::memory(op, format!("{what} {a} * {b} is too large: more than one tensor may hold here ({MAX_ELEMENTS})"))
    })
}

/// The broadcast shape of two operands (NumPy rules: align right, sizes must
/// match or one of them must be 1).
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!("shapes {a:?} and {b:?} cannot be broadcast together (dim {i}: {da} vs {db})"),
            ));
        };
    }
    check_size(op, &out)?;
    Ok(out)
}

/// Maps a possibly negative axis onto `0..ndim`.
pub fn normalize_axis(op: &'static str, axis: isize, shape: &[usize]) -> Result<usize> {
    let ndim = shape.len() as isize;
    let a = if axis < 0 { axis + ndim } else { axis };
    if a < 0 || a >= ndim.max(1) || (ndim == 0 && a != 0) {
        return Err(Error::Axis { op, axis, ndim: shape.len(), shape: shape.to_vec() });
    }
    Ok(a as usize)
}

/// `normalize_axis` for ops that index along the axis (slice, concat,
/// transpose, ...): a 0-d tensor has no axis at all for them.
pub fn normalize_real_axis(op: &'static str, axis: isize, shape: &[usize]) -> Result<usize> {
    if shape.is_empty() {
        return Err(Error::Axis { op, axis, ndim: 0, shape: Vec::new() });
    }
    normalize_axis(op, axis, shape)
}

/// Normalises a set of axes, rejecting duplicates; an empty set means "all axes".
pub fn normalize_axes(op: &'static str, axes: &[isize], shape: &[usize]) -> Result<Dims> {
    if axes.is_empty() {
        return Ok((0..shape.len()).collect());
    }
    let mut out = Dims::new();
    for &a in axes {
        let n = normalize_axis(op, a, shape)?;
        if shape.is_empty() {
            continue; // a scalar reduces over nothing; axis 0 / -1 is tolerated
        }
        if out.contains(&n) {
            return Err(Error::value(op, format!("axis {a} appears twice in {axes:?}")));
        }
        out.push(n);
    }
    out.sort_unstable();
    Ok(out)
}

/// A strided view of a storage buffer: element (i0, i1, ...) lives at
/// `offset + sum(ik * strides[k])`. Broadcast dims have stride 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub shape: Dims,
    pub strides: Dims,
    pub offset: usize,
}

impl Layout {
    /// Whether every element of the view lies inside a buffer of `len`
    /// elements (for views read from files; arithmetic checked).
    pub fn fits_in(&self, len: usize) -> bool {
        if self.shape.len() != self.strides.len() {
            return false;
        }
        if self.shape.contains(&0) {
            return true;
        }
        let mut last = self.offset;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            match (d - 1).checked_mul(s).and_then(|x| last.checked_add(x)) {
                Some(v) => last = v,
                None => return false,
            }
        }
        last < len
    }
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: shape.into(), strides: contiguous_strides(shape), offset: 0 }
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// Row-major contiguous (offset may be non-zero).
    pub fn is_contiguous(&self) -> bool {
        let mut acc = 1usize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 && self.strides[i] != acc {
                return false;
            }
            acc *= self.shape[i];
        }
        true
    }
    /// This layout's elements in row-major order, viewed as `shape` without
    /// moving data, when strides can express it (None: a copy is needed).
    /// The dims (size-1 dims aside) fall into runs that are contiguous with
    /// respect to one another; each new dim must lie within one run, and
    /// takes its stride from the run's innermost stride.
    pub fn reshaped(&self, shape: &[usize]) -> Option<Layout> {
        if numel(shape) != self.numel() {
            return None;
        }
        if self.numel() == 0 {
            return Some(Layout { shape: shape.into(), strides: contiguous_strides(shape), offset: self.offset });
        }
        // (elements, innermost stride) of each run, innermost run first.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (&d, &st) in self.shape.iter().zip(&self.strides).rev().filter(|(&d, _)| d != 1) {
            match runs.last_mut() {
                Some((size, base)) if st == *base * *size => *size *= d,
                _ => runs.push((d, st)),
            }
        }
        let mut strides: Dims = smallvec::smallvec![0; shape.len()];
        let (mut run, mut placed) = (0, 1);
        for j in (0..shape.len()).rev() {
            if shape[j] == 1 {
                // Never stepped along: any stride; the next one out keeps is_contiguous simple.
                strides[j] = if j + 1 < shape.len() { strides[j + 1] * shape[j + 1] } else { 1 };
                continue;
            }
            let &(size, base) = runs.get(run)?;
            strides[j] = base * placed;
            placed *= shape[j];
            if placed == size {
                (run, placed) = (run + 1, 1);
            } else if size % placed != 0 {
                return None;
            }
        }
        (run == runs.len()).then(|| Layout { shape: shape.into(), strides, offset: self.offset })
    }
    /// Strides this layout would have when broadcast to `shape` (0 on new or size-1 dims).
    pub fn broadcast_strides(&self, shape: &[usize]) -> Dims {
        let n = shape.len();
        let k = self.shape.len();
        let mut out: Dims = smallvec::smallvec![0; n];
        for i in 0..k {
            let o = n - k + i;
            out[o] = if self.shape[i] == 1 && shape[o] != 1 { 0 } else { self.strides[i] };
        }
        out
    }
}

/// Merges adjacent dims that are contiguous with respect to every stride set,
/// so strided loops run over as few, as long rows as possible. Returns the
/// merged shape and one merged stride vector per input.
pub fn coalesce(shape: &[usize], strides: &[&[usize]]) -> (Dims, Vec<Dims>) {
    let mut out_shape = Dims::new();
    let mut out_strides: Vec<Dims> = vec![Dims::new(); strides.len()];
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let can_merge = !out_shape.is_empty()
            && strides.iter().enumerate().all(|(k, s)| {
                let last = *out_strides[k].last().unwrap();
                last == s[i] * d
            });
        if can_merge {
            let last = out_shape.len() - 1;
            out_shape[last] *= d;
            for (k, s) in strides.iter().enumerate() {
                out_strides[k][last] = s[i];
            }
        } else {
            out_shape.push(d);
            for (k, s) in strides.iter().enumerate() {
                out_strides[k].push(s[i]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in out_strides.iter_mut() {
            s.push(0);
        }
    }
    (out_shape, out_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes("t", &[2, 1, 3], &[4, 1]).unwrap().as_slice(), &[2, 4, 3]);
        assert_eq!(broadcast_shapes("t", &[], &[5]).unwrap().as_slice(), &[5]);
        let e = broadcast_shapes("add", &[2, 3], &[4]).unwrap_err().to_string();
        assert!(e.contains("add") && e.contains("[2, 3]") && e.contains("[4]"), "{e}");
    }

    #[test]
    fn coalesce_merges_contiguous_dims() {
        let (s, st) = coalesce(&[2, 3, 4], &[&[12, 4, 1], &[0, 0, 1]]);
        assert_eq!(s.as_slice(), &[6, 4]);
        assert_eq!(st[0].as_slice(), &[4, 1]);
        assert_eq!(st[1].as_slice(), &[0, 1]);
    }

    /// The element offsets a layout visits, in row-major order.
    fn offsets(l: &Layout) -> Vec<usize> {
        (0..l.numel())
            .map(|mut flat| {
                let mut at = l.offset;
                for a in (0..l.shape.len()).rev() {
                    at += flat % l.shape[a] * l.strides[a];
                    flat /= l.shape[a];
                }
                at
            })
            .collect()
    }

    fn view(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout { shape: shape.into(), strides: strides.into(), offset }
    }

    #[test]
    fn reshaped_views_visit_the_same_elements_or_refuse() {
        let t = view(&[4, 3], &[1, 4], 0); // a transposed [3, 4]
        let s = view(&[2, 3, 4], &[30, 8, 2], 5); // step-2 slices of padded rows, with an offset
        let e = view(&[3, 4], &[0, 1], 2); // an expanded row
        let cases: &[(&Layout, &[usize], bool)] = &[
            (&t, &[4, 3, 1], true),
            (&t, &[2, 2, 3], true), // splitting the strided axis
            (&t, &[12], false),     // merging across the transpose
            (&s, &[2, 12], true),   // the inner two axes are contiguous with each other
            (&s, &[6, 4], false),   // the outer two are not
            (&s, &[2, 3, 2, 2], true),
            (&e, &[3, 2, 2], true),
            (&e, &[12], false),
            (&e, &[1, 3, 1, 4, 1], true),
            (&view(&[], &[], 7), &[1, 1], true),
            (&view(&[1, 1], &[5, 9], 7), &[], true),
        ];
        for &(from, to, ok) in cases {
            match from.reshaped(to) {
                Some(r) => {
                    assert!(ok, "{from:?} -> {to:?} should need a copy, got {r:?}");
                    assert_eq!(r.shape.as_slice(), to);
                    assert_eq!(offsets(&r), offsets(from), "{from:?} -> {to:?} visits other elements: {r:?}");
                }
                None => assert!(!ok, "{from:?} -> {to:?} is expressible as a view"),
            }
        }
        let contiguous = Layout::contiguous(&[2, 3, 4]).reshaped(&[4, 6]).unwrap();
        assert!(contiguous.is_contiguous());
        assert_eq!(view(&[2, 0, 3], &[9, 3, 1], 4).reshaped(&[0, 6]).unwrap().numel(), 0);
        assert!(t.reshaped(&[5]).is_none(), "a different element count is never a view");
    }

    #[test]
    fn axes_normalise_and_reject_out_of_range() {
        assert_eq!(normalize_axes("sum", &[-1, 0], &[2, 3, 4]).unwrap().as_slice(), &[0, 2]);
        assert!(matches!(normalize_axis("sum", 3, &[2, 3, 4]), Err(Error::Axis { .. })));
    }
}
