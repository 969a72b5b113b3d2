//! Reductions over any set of axes with keepdim: sum, max and min are
//! primitives; mean, var, std and logsumexp are composed from them.

use super::{expect_float, Attrs, Case, Input, OpDef, OpKind};
use crate::autograd::{needs_record, record};
use crate::backend::cpu::reduce::ReduceKind;
use crate::backend::reduce as be;
use crate::error::{Error, Result};
use crate::shape::{normalize_axes, normalize_axis, Dims};
use crate::tensor::Tensor;

/// The reduced result's shape, and the same shape with reduced axes kept as 1.
fn reduced_shapes(shape: &[usize], axes: &[usize], keepdim: bool) -> (Dims, Dims) {
    let kept: Dims = shape.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
    let out = if keepdim {
        kept.clone()
    } else {
        shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
    };
    (out, kept)
}

/// Reshapes a reduced gradient to the input's rank (reduced axes as 1).
fn unreduce(g: &Tensor, attrs: &Attrs, input_shape: &[usize]) -> Result<Tensor> {
    let Attrs::Reduce { axes, .. } = attrs else { unreachable!("reduce node without Reduce attrs") };
    let (_, kept) = reduced_shapes(input_shape, axes, true);
    g.reshape_dims(&kept)
}

fn reduce_op(def: &'static OpDef, kind: ReduceKind, x: &Tensor, axes: &[isize], keepdim: bool) -> Result<Tensor> {
    expect_float(def.name, x)?;
    let ax = normalize_axes(def.name, axes, x.shape())?;
    if kind != ReduceKind::Sum && ax.iter().any(|&a| x.shape()[a] == 0) {
        return Err(Error::shape(def.name, format!("cannot reduce an empty axis of shape {:?}", x.shape())));
    }
    let (out_shape, _) = reduced_shapes(x.shape(), &ax, keepdim);
    let out = be::reduce(def.name, x, &ax, kind, &out_shape)?;
    if !needs_record(&[x]) {
        return Ok(out);
    }
    let attrs = Attrs::Reduce { axes: ax, keepdim };
    let saves_x: &[&Tensor] = if kind == ReduceKind::Sum { &[] } else { &[x] };
    Ok(record(def, attrs, &[x], saves_x, kind != ReduceKind::Sum, out))
}

/// Gradient of max/min: the incoming gradient split evenly between tied extremes.
fn extreme_backward(c: &crate::autograd::node::BackwardCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    let (x, y) = (c.saved(0), c.saved(1));
    let shape = c.input_shape(0);
    let y = unreduce(y, c.attrs(), shape)?;
    let gk = unreduce(&g[0], c.attrs(), shape)?;
    let Attrs::Reduce { axes, .. } = c.attrs() else { unreachable!() };
    let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    let mask = x.eq(&y)?.to_dtype(x.dtype())?;
    let count = mask.sum(&axes, true)?;
    Ok(vec![Some(gk.mul(&mask)?.div(&count)?)])
}

fn reduce_cases(name: &'static str, run: fn(&[Tensor]) -> Result<Tensor>, input: fn(Vec<usize>) -> Input) -> Vec<Case> {
    vec![Case::new(name, vec![input(vec![2, 3, 4])], run)]
}

static SUM: OpDef = OpDef {
    name: "sum",
    kind: OpKind::Primitive,
    backward: Some(|c, g| Ok(vec![Some(unreduce(&g[0], c.attrs(), c.input_shape(0))?.expand_dims(c.input_shape(0))?)])),
    second_order: true,
    cases: || {
        let u = |s| Input::Uniform(s, -1.0, 1.0);
        let mut v = reduce_cases("sum all", |x| x[0].sum_all(), u);
        v.extend(reduce_cases("sum axis 1", |x| x[0].sum(&[1], false), u));
        v.extend(reduce_cases("sum axes 0,2 keepdim", |x| x[0].sum(&[0, -1], true), u));
        v.extend(reduce_cases("sum leading axis", |x| x[0].sum(&[0], false), u));
        v
    },
};

static MAX: OpDef = OpDef {
    name: "max",
    kind: OpKind::Primitive,
    backward: Some(extreme_backward),
    second_order: true,
    cases: || {
        let mut v = reduce_cases("max axis 1", |x| x[0].max(&[1], false), Input::Distinct);
        v.extend(reduce_cases("max all keepdim", |x| x[0].max(&[], true), Input::Distinct));
        v
    },
};

static MIN: OpDef = OpDef {
    name: "min",
    kind: OpKind::Primitive,
    backward: Some(extreme_backward),
    second_order: true,
    cases: || reduce_cases("min axes 0,2", |x| x[0].min(&[0, 2], false), Input::Distinct),
};

static ARGMAX: OpDef = OpDef {
    name: "argmax",
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    cases: || reduce_cases("argmax axis 1", |x| x[0].argmax(Some(1), false), Input::Distinct),
};

static ARGMIN: OpDef = OpDef {
    name: "argmin",
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    cases: || reduce_cases("argmin all", |x| x[0].argmin(None, false), Input::Distinct),
};

static MEAN: OpDef = OpDef {
    name: "mean",
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    cases: || {
        let mut v = reduce_cases("mean axis -1", |x| x[0].mean(&[-1], false), |s| Input::Uniform(s, -1.0, 1.0));
        v.extend(reduce_cases("mean all", |x| x[0].mean(&[], false), |s| Input::Uniform(s, -1.0, 1.0)));
        v
    },
};

static VAR: OpDef = OpDef {
    name: "var",
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    cases: || {
        let mut v =
            reduce_cases("var axis 1 unbiased", |x| x[0].var(&[1], 1.0, false), |s| Input::Uniform(s, -1.0, 1.0));
        v.extend(reduce_cases(
            "var axes 0,2 biased keepdim",
            |x| x[0].var(&[0, 2], 0.0, true),
            |s| Input::Uniform(s, -1.0, 1.0),
        ));
        v
    },
};

static STD: OpDef = OpDef {
    name: "std",
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    cases: || reduce_cases("std axis 2", |x| x[0].std(&[2], 1.0, false), |s| Input::Uniform(s, -1.0, 1.0)),
};

static LOGSUMEXP: OpDef = OpDef {
    name: "logsumexp",
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    cases: || {
        let mut v = reduce_cases("logsumexp axis 1", |x| x[0].logsumexp(&[1], false), |s| Input::Uniform(s, -3.0, 3.0));
        v.extend(reduce_cases(
            "logsumexp all keepdim",
            |x| x[0].logsumexp(&[], true),
            |s| Input::Uniform(s, -3.0, 3.0),
        ));
        v
    },
};

static SUM_TO: OpDef = OpDef {
    name: "sum_to",
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    cases: || vec![Case::new("sum_to [3,1]", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| x[0].sum_to(&[3, 1]))],
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&SUM, &MAX, &MIN, &ARGMAX, &ARGMIN, &MEAN, &VAR, &STD, &LOGSUMEXP, &SUM_TO]
}

impl Tensor {
    /// Sum over `axes` (empty: all axes).
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce_op(&SUM, ReduceKind::Sum, self, axes, keepdim)
    }
    /// Sum of all elements, as a rank-0 tensor.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce_op(&MAX, ReduceKind::Max, self, axes, keepdim)
    }
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce_op(&MIN, ReduceKind::Min, self, axes, keepdim)
    }
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        expect_float("mean", self)?;
        let ax = normalize_axes("mean", axes, self.shape())?;
        let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
        self.sum(axes, keepdim)?.mul_scalar(1.0 / n as f64)
    }
    /// Variance with `correction` (1.0: unbiased, as PyTorch's default; 0.0: population).
    pub fn var(&self, axes: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        expect_float("var", self)?;
        let ax = normalize_axes("var", axes, self.shape())?;
        let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
        let d = self.sub(&self.mean(axes, true)?)?;
        d.mul(&d)?.sum(axes, keepdim)?.mul_scalar(1.0 / (n as f64 - correction).max(0.0))
    }
    pub fn std(&self, axes: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        self.var(axes, correction, keepdim)?.sqrt()
    }
    /// log(sum(exp(x))) over `axes`, shifted by the max for stability.
    pub fn logsumexp(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let m = self.max(axes, true)?.detach();
        let m = Tensor::where_(&m.abs()?.lt_scalar(f64::INFINITY)?, &m, &m.zeros_like()?)?;
        let s = self.sub(&m)?.exp()?.sum(axes, true)?.log()?.add(&m)?;
        if keepdim {
            Ok(s)
        } else {
            let ax = normalize_axes("logsumexp", axes, self.shape())?;
            let (out, _) = reduced_shapes(self.shape(), &ax, false);
            s.reshape_dims(&out)
        }
    }
    /// Index of the max along `axis` (None: over the flattened tensor), as I32.
    pub fn argmax(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        arg_reduce(&ARGMAX, self, axis, keepdim, true)
    }
    pub fn argmin(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        arg_reduce(&ARGMIN, self, axis, keepdim, false)
    }
    /// Sums broadcast dims away so the result has `shape` (the adjoint of `expand`).
    pub fn sum_to(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let lead = self.ndim().checked_sub(shape.len()).ok_or_else(|| {
            Error::shape("sum_to", format!("cannot sum shape {:?} to the larger rank of {:?}", self.shape(), shape))
        })?;
        let mut axes: Vec<isize> = (0..lead as isize).collect();
        for (i, &d) in shape.iter().enumerate() {
            let s = self.shape()[lead + i];
            if d == 1 && s != 1 {
                axes.push((lead + i) as isize);
            } else if d != s {
                return Err(Error::shape("sum_to", format!("cannot sum shape {:?} to {:?}", self.shape(), shape)));
            }
        }
        if axes.is_empty() {
            return self.reshape_dims(shape);
        }
        self.sum(&axes, false)?.reshape_dims(shape)
    }
}

fn arg_reduce(def: &'static OpDef, x: &Tensor, axis: Option<isize>, keepdim: bool, max: bool) -> Result<Tensor> {
    expect_float(def.name, x)?;
    if x.numel() == 0 {
        return Err(Error::shape(def.name, format!("cannot take {} of an empty tensor {:?}", def.name, x.shape())));
    }
    match axis {
        None => {
            let flat = x.reshape(&[-1])?;
            let r = be::arg_reduce(def.name, &flat, 0, max, &[])?;
            if keepdim {
                r.reshape_dims(&vec![1; x.ndim()])
            } else {
                Ok(r)
            }
        }
        Some(a) => {
            let a = normalize_axis(def.name, a, x.shape())?;
            let (out, _) = reduced_shapes(x.shape(), &[a], keepdim);
            be::arg_reduce(def.name, x, a, max, &out)
        }
    }
}
