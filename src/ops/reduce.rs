//! Reductions over any set of axes with keepdim: sum, max and min are
//! primitives; mean, var, std and logsumexp are composed from them.

use super::args::Args;
#[cfg(feature = "testing")]
use super::reference::{self as r, Host};
use super::{expect_float, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::reduce as be;
use crate::error::{Error, Result};
use crate::kernel::ReduceKind;
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
    // Under autocast a sum is an f32 op (`amp`: an f16 result overflows at
    // 65504); max and min are exact in any dtype.
    if kind == ReduceKind::Sum {
        if let Some(wide) = crate::amp::widened(x)? {
            return reduce_op(def, kind, &wide, axes, keepdim);
        }
    }
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
    record(def, attrs, &[x], saves_x, kind != ReduceKind::Sum, out)
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

/// A case over a [2, 3, 4] input drawn by `input`, checked against `reference`.
#[cfg(feature = "testing")]
fn rc(
    name: &'static str,
    input: fn(Vec<usize>) -> Input,
    run: fn(&[Tensor]) -> Result<Tensor>,
    reference: fn(&[Host]) -> Host,
) -> Case {
    Case::new(name, vec![input(vec![2, 3, 4])], run).reference(reference)
}

#[cfg(feature = "testing")]
fn u(s: Vec<usize>) -> Input {
    Input::Uniform(s, -1.0, 1.0)
}

/// Values from {-1, -0.5, 0, 0.5, 1}: ties of any multiplicity (for the
/// index reductions, which must pick the first).
#[cfg(feature = "testing")]
fn grid(s: Vec<usize>) -> Input {
    Input::Grid(s, -1.0, 1.0, 5)
}

static SUM: OpDef = OpDef {
    name: "sum",
    signature: "sum(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "Sum over `axes` (all when omitted; Rust: `sum`, `sum_all`).",
    forward: Some(Forward::One(|a| a.this()?.sum(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| Ok(vec![Some(unreduce(&g[0], c.attrs(), c.input_shape(0))?.expand_dims(c.input_shape(0))?)])),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc("sum all", u, |x| x[0].sum_all(), |h| r::sum(&h[0], &[], false)).also(Sample::Scalar, &[&[]]),
            rc("sum axis 1", u, |x| x[0].sum(&[1], false), |h| r::sum(&h[0], &[1], false))
                .also(Sample::Empty, &[&[2, 0, 4]]),
            rc("sum axes 0,2 keepdim", u, |x| x[0].sum(&[0, -1], true), |h| r::sum(&h[0], &[0, 2], true)),
            rc("sum leading axis", u, |x| x[0].sum(&[0], false), |h| r::sum(&h[0], &[0], false))
                .also(Sample::Empty, &[&[2, 0, 4]]),
        ]
    },
};

static MAX: OpDef = OpDef {
    name: "max",
    signature: "max(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "Maximum over `axes` (all when omitted): the values only.",
    forward: Some(Forward::One(|a| a.this()?.max(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Primitive,
    backward: Some(extreme_backward),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc("max axis 1", Input::Distinct, |x| x[0].max(&[1], false), |h| r::max(&h[0], &[1], false))
                .also(Sample::Empty, &[&[2, 3, 0]]),
            rc("max all keepdim", Input::Distinct, |x| x[0].max(&[], true), |h| r::max(&h[0], &[], true))
                .also(Sample::Scalar, &[&[]]),
            // Two-way ties split the gradient in halves, as central differences
            // see it; a kink, so first order only.
            rc("max axis 2 with ties", Input::Pairs, |x| x[0].max(&[2], false), |h| r::max(&h[0], &[2], false))
                .first_order_only(),
        ]
    },
};

static MIN: OpDef = OpDef {
    name: "min",
    signature: "min(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "Minimum over `axes` (all when omitted): the values only.",
    forward: Some(Forward::One(|a| a.this()?.min(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Primitive,
    backward: Some(extreme_backward),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc("min axes 0,2", Input::Distinct, |x| x[0].min(&[0, 2], false), |h| r::min(&h[0], &[0, 2], false))
                .also(Sample::Empty, &[&[2, 0, 4]]),
            rc("min all with ties", Input::Pairs, |x| x[0].min(&[], false), |h| r::min(&h[0], &[], false))
                .also(Sample::Scalar, &[&[]])
                .first_order_only(),
        ]
    },
};

static ARGMAX: OpDef = OpDef {
    name: "argmax",
    signature: "argmax(self, axis: int | None = None, *, keepdim: bool = False) -> Tensor<int32>",
    doc: "Index of the maximum along `axis`, or into the flattened tensor.",
    forward: Some(Forward::One(|a| arg_forward(a, Tensor::argmax))),
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc(
                "argmax axis 1",
                Input::Distinct,
                |x| x[0].argmax(Some(1), false),
                |h| r::argextreme(&h[0], Some(1), false, true),
            )
            .also(Sample::Empty, &[&[2, 3, 0]]),
            rc(
                "argmax axis 0 keepdim, first of ties",
                grid,
                |x| x[0].argmax(Some(0), true),
                |h| r::argextreme(&h[0], Some(0), true, true),
            ),
            rc(
                "argmax all, first of ties",
                grid,
                |x| x[0].argmax(None, false),
                |h| r::argextreme(&h[0], None, false, true),
            )
            .also(Sample::Scalar, &[&[]]),
        ]
    },
};

static ARGMIN: OpDef = OpDef {
    name: "argmin",
    signature: "argmin(self, axis: int | None = None, *, keepdim: bool = False) -> Tensor<int32>",
    doc: "Index of the minimum along `axis`, or into the flattened tensor.",
    forward: Some(Forward::One(|a| arg_forward(a, Tensor::argmin))),
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc(
                "argmin all",
                Input::Distinct,
                |x| x[0].argmin(None, false),
                |h| r::argextreme(&h[0], None, false, false),
            )
            .also(Sample::Scalar, &[&[]]),
            rc(
                "argmin last axis, first of ties",
                grid,
                |x| x[0].argmin(Some(-1), false),
                |h| r::argextreme(&h[0], Some(-1), false, false),
            )
            .also(Sample::Empty, &[&[2, 0, 4]]),
        ]
    },
};

static MEAN: OpDef = OpDef {
    name: "mean",
    signature: "mean(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "Mean over `axes` (all when omitted).",
    forward: Some(Forward::One(|a| a.this()?.mean(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc("mean axis -1", u, |x| x[0].mean(&[-1], false), |h| r::mean(&h[0], &[2], false))
                .also(Sample::Empty, &[&[0, 3, 4]]),
            rc("mean all", u, |x| x[0].mean(&[], false), |h| r::mean(&h[0], &[], false)).also(Sample::Scalar, &[&[]]),
        ]
    },
};

static VAR: OpDef = OpDef {
    name: "var",
    signature: "var(self, axes: int | int[] | None = None, *, correction: float | None = None, unbiased: bool | None = None, keepdim: bool = False) -> Tensor",
    doc: "Variance over `axes`: correction 1 (unbiased) or 0 (population).",
    forward: Some(Forward::One(|a| a.this()?.var(&a.ints("axes")?, correction(a)?, a.bool("keepdim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            rc("var axis 1 unbiased", u, |x| x[0].var(&[1], 1.0, false), |h| r::var(&h[0], &[1], 1.0, false))
                .also(Sample::Empty, &[&[2, 3, 0]]),
            rc(
                "var axes 0,2 biased keepdim",
                u,
                |x| x[0].var(&[0, 2], 0.0, true),
                |h| r::var(&h[0], &[0, 2], 0.0, true),
            ),
        ]
    },
};

static STD: OpDef = OpDef {
    name: "std",
    signature: "std(self, axes: int | int[] | None = None, *, correction: float | None = None, unbiased: bool | None = None, keepdim: bool = False) -> Tensor",
    doc: "Standard deviation over `axes`, with `correction` as in `var`.",
    forward: Some(Forward::One(|a| a.this()?.std(&a.ints("axes")?, correction(a)?, a.bool("keepdim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![rc(
            "std axis 2",
            u,
            |x| x[0].std(&[2], 1.0, false),
            |h| r::map(&r::var(&h[0], &[2], 1.0, false), f64::sqrt),
        )
        .also(Sample::Empty, &[&[0, 3, 4]])]
    },
};

static LOGSUMEXP: OpDef = OpDef {
    name: "logsumexp",
    signature: "logsumexp(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "log(sum(exp(x))) over `axes`, computed stably.",
    forward: Some(Forward::One(|a| a.this()?.logsumexp(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u3 = |s| Input::Uniform(s, -3.0, 3.0);
        vec![
            rc("logsumexp axis 1", u3, |x| x[0].logsumexp(&[1], false), |h| r::logsumexp(&h[0], &[1], false))
                .also(Sample::Empty, &[&[2, 3, 0]]),
            rc("logsumexp all keepdim", u3, |x| x[0].logsumexp(&[], true), |h| r::logsumexp(&h[0], &[], true))
                .also(Sample::Scalar, &[&[]]),
        ]
    },
};

static SUM_TO: OpDef = OpDef {
    name: "sum_to",
    signature: "sum_to(self, shape: shape) -> Tensor",
    doc: "Sums broadcast dims away so the result has `shape` (the adjoint of `expand`).",
    forward: Some(Forward::One(|a| a.this()?.sum_to(&a.sizes("shape")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![rc("sum_to [3,1]", u, |x| x[0].sum_to(&[3, 1]), |h| r::sum_to(&h[0], &[3, 1]))
            .also(Sample::Empty, &[&[0, 3, 4]])]
    },
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
        super::as_op("mean", || {
            expect_float("mean", self)?;
            let ax = normalize_axes("mean", axes, self.shape())?;
            let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
            self.sum(axes, keepdim)?.mul_scalar(1.0 / n as f64)
        })
    }
    /// Variance with `correction` (1.0: unbiased, as PyTorch's default; 0.0: population).
    pub fn var(&self, axes: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        super::as_op("var", || {
            expect_float("var", self)?;
            if !correction.is_finite() {
                return Err(Error::value("var", format!("correction must be a finite number, got {correction}")));
            }
            let ax = normalize_axes("var", axes, self.shape())?;
            let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
            let d = self.sub(&self.mean(axes, true)?)?;
            d.mul(&d)?.sum(axes, keepdim)?.mul_scalar(1.0 / (n as f64 - correction).max(0.0))
        })
    }
    pub fn std(&self, axes: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        super::as_op("std", || self.var(axes, correction, keepdim)?.sqrt())
    }
    /// log(sum(exp(x))) over `axes`, shifted by the max for stability.
    pub fn logsumexp(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        super::as_op("logsumexp", || {
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
        })
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
    // A 0-d tensor's only axes are 0 and -1 (as in PyTorch), and reducing along
    // one is reducing over the whole (one-element) tensor.
    let axis = match axis {
        Some(a) if x.ndim() == 0 => {
            normalize_axis(def.name, a, x.shape())?;
            None
        }
        other => other,
    };
    // As in PyTorch: an empty tensor has no argmax over all of it, nor along an
    // empty axis; along a non-empty axis the result is simply empty.
    let empty = match axis {
        None => (x.numel() == 0).then(|| format!("of an empty tensor of shape {:?}", x.shape())),
        Some(a) => {
            let ax = normalize_axis(def.name, a, x.shape())?;
            (x.shape()[ax] == 0).then(|| format!("along the empty axis {ax} of shape {:?}", x.shape()))
        }
    };
    if let Some(what) = empty {
        return Err(Error::shape(def.name, format!("cannot take {} {what}", def.name)));
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

/// var/std's correction: `correction` (1 when omitted), or PyTorch's older
/// `unbiased` flag (1 or 0); not both.
fn correction(a: &Args) -> Result<f64> {
    match (a.opt_float("correction")?, a.opt_bool("unbiased")?) {
        (Some(_), Some(_)) => Err(Error::value(a.def.name, "give either correction or unbiased, not both")),
        (c, None) => Ok(c.unwrap_or(1.0)),
        (None, Some(unbiased)) => Ok(if unbiased { 1.0 } else { 0.0 }),
    }
}

/// argmax/argmin from arguments: an axis needs a tensor that has one.
fn arg_forward(a: &Args, f: fn(&Tensor, Option<isize>, bool) -> Result<Tensor>) -> Result<Tensor> {
    let (x, axis) = (a.this()?, a.opt_int("axis")?);
    if axis.is_some() && x.ndim() == 0 {
        return Err(Error::shape(a.def.name, "needs a tensor with at least one axis, got a scalar (shape [])"));
    }
    f(x, axis, a.bool("keepdim")?)
}
