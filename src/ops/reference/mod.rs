//! Independent truth for the registry's forward checks: every op defined
//! again as a naive loop over f64 values in logical (row-major) order, from
//! its mathematical definition (PyTorch's semantics), sharing nothing with the
//! kernels: no layouts, strides, coalescing, blocking or GPU code. A case's
//! `reference` composes these functions the way its `run` composes ops, and
//! `testing` compares the two. Slow by design; sizes are test sizes.
//!
//! Elementwise maps and broadcasting, casts, and reductions live here;
//! `shape.rs` has movement, joins, indexing and matmul; `nn.rs` the windows
//! (unfold/fold/conv/pools), softmax, losses and normalisation.

mod einsum;
mod nn;
mod scan;
mod scatter;
mod shape;

pub use einsum::*;
pub use nn::*;
pub use scan::*;
pub use scatter::*;
pub use shape::*;

use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// What kind of values a `Host` holds, and so which dtype a result must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Floats in the dtype the check runs in (f32 or f64).
    Float,
    /// f32 whatever the check's dtype (a cast of integers or masks).
    F32,
    I32,
    Bool,
}

impl Kind {
    /// The dtype a result of this kind must have when the check runs in `float`.
    pub fn dtype(self, float: DType) -> DType {
        match self {
            Kind::Float => float,
            Kind::F32 => DType::F32,
            Kind::I32 => DType::I32,
            Kind::Bool => DType::Bool,
        }
    }
}

/// A tensor's logical values as f64 (indices and masks too), row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub shape: Vec<usize>,
    pub kind: Kind,
    pub data: Vec<f64>,
}

/// How a case's forward is checked.
#[derive(Clone, Copy)]
pub enum Reference {
    /// The output must equal this function of the inputs.
    Values(fn(&[Host]) -> Host),
    /// The output must have this property (for ops with a random output,
    /// such as dropout's mask).
    Property(fn(&[Host], &Host) -> std::result::Result<(), String>),
}

impl Host {
    pub fn new(shape: &[usize], kind: Kind, data: Vec<f64>) -> Host {
        assert_eq!(shape.iter().product::<usize>(), data.len(), "reference: {} values for shape {shape:?}", data.len());
        Host { shape: shape.to_vec(), kind, data }
    }

    /// Builds a host value of `shape` by calling `f` at each index, row-major.
    pub fn build(shape: &[usize], kind: Kind, mut f: impl FnMut(&[usize]) -> f64) -> Host {
        let data = indices(shape).map(|i| f(&i)).collect();
        Host::new(shape, kind, data)
    }

    /// The values of `t` (read back from any device).
    pub fn from_tensor(t: &Tensor) -> Result<Host> {
        let kind = match t.dtype() {
            DType::F32 | DType::F64 | DType::F16 => Kind::Float,
            DType::I32 => Kind::I32,
            DType::Bool => Kind::Bool,
        };
        Ok(Host::new(t.shape(), kind, t.to_f64_vec()?))
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The value at a multi-index.
    pub fn at(&self, idx: &[usize]) -> f64 {
        self.data[ravel(idx, &self.shape)]
    }

    /// The value at a multi-index, as an index (for index operands).
    pub fn index_at(&self, idx: &[usize]) -> usize {
        let v = self.at(idx);
        assert!(v >= 0.0 && v.fract() == 0.0, "reference: {v} is not an index");
        v as usize
    }
}

/// Every multi-index of `shape` in row-major order (one empty index for 0-d).
pub fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    let n: usize = shape.iter().product();
    (0..n).map(move |flat| unravel(flat, shape))
}

/// The multi-index of element `flat` of a row-major `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for a in (0..shape.len()).rev() {
        idx[a] = flat % shape[a];
        flat /= shape[a];
    }
    idx
}

/// The row-major position of a multi-index.
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    assert_eq!(idx.len(), shape.len(), "reference: index {idx:?} for shape {shape:?}");
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| {
        assert!(i < d, "reference: index {idx:?} out of shape {shape:?}");
        acc * d + i
    })
}

/// A negative axis counted from the end.
pub fn axis(a: isize, rank: usize) -> usize {
    if a < 0 {
        (rank as isize + a) as usize
    } else {
        a as usize
    }
}

// ---- elementwise ----------------------------------------------------------

/// `f` of every element (floats in, floats out).
pub fn map(x: &Host, f: impl Fn(f64) -> f64) -> Host {
    Host::new(&x.shape, Kind::Float, x.data.iter().map(|&v| f(v)).collect())
}

/// `f` of each element, as a result of `kind` (a class test, a constant mask).
pub fn map_to(x: &Host, kind: Kind, f: impl Fn(f64) -> f64) -> Host {
    Host::new(&x.shape, kind, x.data.iter().map(|&v| f(v)).collect())
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r { a[i + a.len() - r] } else { 1 };
            let db = if i + b.len() >= r { b[i + b.len() - r] } else { 1 };
            assert!(da == db || da == 1 || db == 1, "reference: {a:?} and {b:?} do not broadcast");
            if da == 1 {
                db
            } else {
                da
            }
        })
        .collect()
}

/// The element of `x` that index `idx` of a broadcast result reads.
pub fn broadcast_at(x: &Host, idx: &[usize]) -> f64 {
    let lead = idx.len() - x.rank();
    let own: Vec<usize> = x.shape.iter().enumerate().map(|(i, &d)| if d == 1 { 0 } else { idx[lead + i] }).collect();
    x.at(&own)
}

/// `f` of each broadcast pair, as a `kind` result.
pub fn zip(a: &Host, b: &Host, kind: Kind, f: impl Fn(f64, f64) -> f64) -> Host {
    let shape = broadcast_shape(&a.shape, &b.shape);
    Host::build(&shape, kind, |i| f(broadcast_at(a, i), broadcast_at(b, i)))
}

/// A comparison of each broadcast pair, as a mask.
pub fn compare(a: &Host, b: &Host, f: impl Fn(f64, f64) -> bool) -> Host {
    zip(a, b, Kind::Bool, |x, y| f(x, y) as u8 as f64)
}

/// `a` where `cond` is true, else `b` (all three broadcast).
pub fn where_(cond: &Host, a: &Host, b: &Host) -> Host {
    let shape = broadcast_shape(&cond.shape, &broadcast_shape(&a.shape, &b.shape));
    Host::build(&shape, a.kind, |i| if broadcast_at(cond, i) != 0.0 { broadcast_at(a, i) } else { broadcast_at(b, i) })
}

/// A cast: floats to integers truncate toward zero, anything to a mask is `!= 0`.
pub fn cast(x: &Host, to: Kind) -> Host {
    let f = |v: f64| match to {
        Kind::I32 => v.trunc(),
        Kind::Bool => (v != 0.0) as u8 as f64,
        Kind::Float | Kind::F32 => v,
    };
    Host::new(&x.shape, to, x.data.iter().map(|&v| f(v)).collect())
}

// ---- reductions -----------------------------------------------------------

/// The reduced axes (all for an empty list), sorted.
fn reduced_axes(axes: &[isize], rank: usize) -> Vec<usize> {
    let mut ax: Vec<usize> =
        if axes.is_empty() { (0..rank).collect() } else { axes.iter().map(|&a| axis(a, rank)).collect() };
    ax.sort_unstable();
    ax
}

/// `f` of the values along `axes` (all: empty), for each remaining index.
pub fn reduce(x: &Host, axes: &[isize], keepdim: bool, kind: Kind, f: impl Fn(&[f64]) -> f64) -> Host {
    let ax = reduced_axes(axes, x.rank());
    let kept: Vec<usize> = x.shape.iter().enumerate().map(|(i, &d)| if ax.contains(&i) { 1 } else { d }).collect();
    let red: Vec<usize> = ax.iter().map(|&a| x.shape[a]).collect();
    let full = Host::build(&kept, kind, |o| {
        let vals: Vec<f64> = indices(&red)
            .map(|r| {
                let mut idx = o.to_vec();
                for (k, &a) in ax.iter().enumerate() {
                    idx[a] = r[k];
                }
                x.at(&idx)
            })
            .collect();
        f(&vals)
    });
    if keepdim {
        full
    } else {
        let shape: Vec<usize> = x.shape.iter().enumerate().filter(|(i, _)| !ax.contains(i)).map(|(_, &d)| d).collect();
        Host::new(&shape, kind, full.data)
    }
}

pub fn sum(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().sum())
}
pub fn max(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
}
pub fn min(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().cloned().fold(f64::INFINITY, f64::min))
}
pub fn mean(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().sum::<f64>() / v.len() as f64)
}
/// Variance with `correction` (1: unbiased), from the two-pass definition.
pub fn var(x: &Host, axes: &[isize], correction: f64, keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (v.len() as f64 - correction)
    })
}
pub fn logsumexp(x: &Host, axes: &[isize], keepdim: bool) -> Host {
    reduce(x, axes, keepdim, Kind::Float, |v| v.iter().map(|a| a.exp()).sum::<f64>().ln())
}

/// The first index of the largest (`max`) or smallest value along `axis`
/// (None: of the flattened tensor), as i32.
pub fn argextreme(x: &Host, axis_: Option<isize>, keepdim: bool, max: bool) -> Host {
    let pick = |v: &[f64]| {
        let mut best = 0;
        for (i, &a) in v.iter().enumerate() {
            if (max && a > v[best]) || (!max && a < v[best]) {
                best = i;
            }
        }
        best as f64
    };
    match axis_ {
        Some(a) => reduce(x, &[a], keepdim, Kind::I32, pick),
        None => {
            let flat = Host::new(&[x.numel()], x.kind, x.data.clone());
            let r = reduce(&flat, &[0], false, Kind::I32, pick);
            let shape = if keepdim { vec![1; x.rank()] } else { vec![] };
            Host::new(&shape, Kind::I32, r.data)
        }
    }
}

/// Sums the broadcast axes away so the result has `shape` (the adjoint of expand).
pub fn sum_to(x: &Host, shape: &[usize]) -> Host {
    let lead = x.rank() - shape.len();
    Host::build(shape, Kind::Float, |o| {
        indices(&x.shape)
            .filter(|i| shape.iter().enumerate().all(|(k, &d)| d == 1 || i[lead + k] == o[k]))
            .map(|i| x.at(&i))
            .sum()
    })
}
