//! Normalisations composed from reductions: `group_norm`, `instance_norm`
//! and `rms_norm` (layer norm and batch norm live with the losses and in
//! `nn`). Each normalises with the biased variance, as PyTorch, and applies
//! an optional per-channel (or per-element) affine.

#[cfg(feature = "testing")]
use super::reference::{self as r, Host, Kind};
use super::{composite_op, expect_float, same_device, same_dtype, OpDef};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Checks an optional affine parameter against `want` and `x`.
/// The checks of the norms over trailing axes (layer_norm, rms_norm): a
/// non-empty suffix `normalized_shape` of `x`'s shape, a non-negative eps,
/// and affine parameters of that shape on `x`'s device and dtype. The axes
/// to normalise over.
pub(super) fn check_trailing_norm(
    op: &'static str,
    x: &Tensor,
    normalized_shape: &[usize],
    eps: f64,
    params: &[(&str, Option<&Tensor>)],
) -> Result<Vec<isize>> {
    let k = normalized_shape.len();
    if k == 0 || k > x.ndim() || &x.shape()[x.ndim() - k..] != normalized_shape {
        return Err(Error::shape(
            op,
            format!(
                "normalized_shape {normalized_shape:?} must be a non-empty suffix of the input shape {:?}",
                x.shape()
            ),
        ));
    }
    check_eps(op, eps)?;
    for (what, p) in params {
        check_param(op, what, x, *p, normalized_shape)?;
    }
    Ok(((x.ndim() - k) as isize..x.ndim() as isize).collect())
}

fn check_param(op: &'static str, what: &str, x: &Tensor, p: Option<&Tensor>, want: &[usize]) -> Result<()> {
    let Some(p) = p else { return Ok(()) };
    same_device(op, &[x, p])?;
    same_dtype(op, x, p)?;
    if p.shape() != want {
        return Err(Error::shape(
            op,
            format!("{what} must have shape {want:?}, got {:?} (input {:?})", p.shape(), x.shape()),
        ));
    }
    Ok(())
}

fn check_eps(op: &'static str, eps: f64) -> Result<()> {
    if eps.is_nan() || eps < 0.0 {
        return Err(Error::value(op, format!("eps must be non-negative, got {eps}")));
    }
    Ok(())
}

/// `y * weight + bias` with both `[C]` broadcast along axis 1 of `y`.
fn channel_affine(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let mut shape = vec![1; y.ndim() - 1];
    shape[0] = y.shape()[1];
    let mut y = y;
    if let Some(w) = weight {
        y = y.mul(&w.reshape_dims(&shape)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&b.reshape_dims(&shape)?)?;
    }
    Ok(y)
}

/// (x - mean) / sqrt(var + eps) over the last axis of `x` (biased variance).
fn standardise_last(x: &Tensor, eps: f64) -> Result<Tensor> {
    let d = x.sub(&x.mean(&[-1], true)?)?;
    let var = d.mul(&d)?.mean(&[-1], true)?;
    d.mul(&var.add_scalar(eps)?.rsqrt()?)
}

impl Tensor {
    /// Group normalisation of `[N, C, *]` (PyTorch's `F.group_norm`): the C
    /// channels split into `num_groups` groups, each normalised over its
    /// channels and every position, then the optional per-channel affine.
    pub fn group_norm(
        &self,
        num_groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.group_norm(num_groups, weight, bias, eps);
        }
        let op = "group_norm";
        super::as_op(op, || {
            expect_float(op, self)?;
            if self.ndim() < 2 {
                return Err(Error::shape(op, format!("expects [N, C, *], got shape {:?}", self.shape())));
            }
            let (n, c) = (self.shape()[0], self.shape()[1]);
            if num_groups == 0 || c % num_groups != 0 {
                return Err(Error::value(
                    op,
                    format!("num_groups {num_groups} must divide the {c} channels of input {:?}", self.shape()),
                ));
            }
            check_eps(op, eps)?;
            check_param(op, "weight", self, weight, &[c])?;
            check_param(op, "bias", self, bias, &[c])?;
            let per_group = self.shape()[1..].iter().product::<usize>() / num_groups;
            let y =
                standardise_last(&self.reshape_dims(&[n, num_groups, per_group])?, eps)?.reshape_dims(self.shape())?;
            channel_affine(y, weight, bias)
        })
    }

    /// Instance normalisation of `[N, C, *spatial]` (PyTorch's
    /// `F.instance_norm` without running statistics): each (sample, channel)
    /// normalised over its positions, then the optional per-channel affine.
    pub fn instance_norm(&self, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.instance_norm(weight, bias, eps);
        }
        let op = "instance_norm";
        super::as_op(op, || {
            expect_float(op, self)?;
            if self.ndim() < 3 {
                return Err(Error::shape(
                    op,
                    format!("expects [N, C, *spatial] (3 or more dims), got shape {:?}", self.shape()),
                ));
            }
            let (n, c) = (self.shape()[0], self.shape()[1]);
            check_eps(op, eps)?;
            check_param(op, "weight", self, weight, &[c])?;
            check_param(op, "bias", self, bias, &[c])?;
            let positions = self.shape()[2..].iter().product::<usize>();
            let y = standardise_last(&self.reshape_dims(&[n, c, positions])?, eps)?.reshape_dims(self.shape())?;
            channel_affine(y, weight, bias)
        })
    }

    /// RMS normalisation over the trailing `normalized_shape` axes (PyTorch's
    /// `F.rms_norm`): x / sqrt(mean(x^2) + eps) * weight; `eps` None is the
    /// dtype's machine epsilon, as PyTorch.
    pub fn rms_norm(&self, normalized_shape: &[usize], weight: Option<&Tensor>, eps: Option<f64>) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.rms_norm(normalized_shape, weight, eps);
        }
        let op = "rms_norm";
        super::as_op(op, || {
            expect_float(op, self)?;
            let eps = eps.unwrap_or(match self.dtype() {
                DType::F64 => f64::EPSILON,
                DType::F16 => half::f16::EPSILON.to_f64(),
                _ => f32::EPSILON as f64,
            });
            let axes = check_trailing_norm(op, self, normalized_shape, eps, &[("weight", weight)])?;
            let y = self.mul(&self.mul(self)?.mean(&axes, true)?.add_scalar(eps)?.rsqrt()?)?;
            match weight {
                Some(w) => y.mul(w),
                None => Ok(y),
            }
        })
    }
}

/// Standardises the elements of `x` in groups sharing `key(index)`:
/// (x - mean) / sqrt(var + eps), biased variance, from the definition.
#[cfg(feature = "testing")]
fn standardise_by(x: &Host, eps: f64, key: impl Fn(&[usize]) -> usize) -> Host {
    let mut groups: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for i in r::indices(&x.shape) {
        groups.entry(key(&i)).or_default().push(x.at(&i));
    }
    let stats: std::collections::BTreeMap<usize, (f64, f64)> = groups
        .into_iter()
        .map(|(k, v)| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            (k, (mean, v.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / n))
        })
        .collect();
    Host::build(&x.shape, Kind::Float, |i| {
        let (mean, var) = stats[&key(i)];
        (x.at(i) - mean) / (var + eps).sqrt()
    })
}

/// `y * w[c] + b[c]` with c the index on axis 1.
#[cfg(feature = "testing")]
fn channel_affine_ref(y: Host, w: Option<&Host>, b: Option<&Host>) -> Host {
    Host::build(&y.shape.clone(), Kind::Float, |i| {
        let c = i[1];
        y.at(i) * w.map_or(1.0, |w| w.data[c]) + b.map_or(0.0, |b| b.data[c])
    })
}

#[cfg(feature = "testing")]
fn group_norm_ref(x: &Host, groups: usize, w: Option<&Host>, b: Option<&Host>, eps: f64) -> Host {
    let per = x.shape[1] / groups;
    channel_affine_ref(standardise_by(x, eps, |i| i[0] * groups + i[1] / per), w, b)
}

#[cfg(feature = "testing")]
fn instance_norm_ref(x: &Host, w: Option<&Host>, b: Option<&Host>, eps: f64) -> Host {
    let c = x.shape[1];
    channel_affine_ref(standardise_by(x, eps, |i| i[0] * c + i[1]), w, b)
}

/// x / sqrt(mean of x^2 over the last `k` axes + eps) * w.
#[cfg(feature = "testing")]
fn rms_norm_ref(x: &Host, k: usize, w: Option<&Host>, eps: f64) -> Host {
    let lead = x.rank() - k;
    let key = |i: &[usize]| r::ravel(&i[..lead], &x.shape[..lead]);
    let mut sums = vec![0.0; x.shape[..lead].iter().product()];
    let count: usize = x.shape[lead..].iter().product();
    for i in r::indices(&x.shape) {
        sums[key(&i)] += x.at(&i).powi(2);
    }
    Host::build(&x.shape, Kind::Float, |i| {
        let wv = w.map_or(1.0, |w| w.at(&i[lead..]));
        x.at(i) / (sums[key(i)] / count as f64 + eps).sqrt() * wv
    })
}

#[cfg(feature = "testing")]
fn u(shape: &[usize], lo: f64, hi: f64) -> Input {
    Input::Uniform(shape.to_vec(), lo, hi)
}

composite_op!(GROUP_NORM, "group_norm", sig: "group_norm(self, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, *, eps: float = 1e-05) -> Tensor", doc: "Normalises [N, C, *] over groups of channels and every position, then the optional per-channel affine.", fwd: |a| a.this()?.group_norm(a.size("num_groups")?, a.opt_tensor("weight")?, a.opt_tensor("bias")?, a.finite("eps")?), cases: || vec![
    Case::new("group_norm 2 groups, affine", vec![u(&[2, 4, 3], -2.0, 2.0), u(&[4], 0.5, 1.5), u(&[4], -1.0, 1.0)], |x| x[0].group_norm(2, Some(&x[1]), Some(&x[2]), 1e-5))
        .reference(|h| group_norm_ref(&h[0], 2, Some(&h[1]), Some(&h[2]), 1e-5)),
    Case::new("group_norm of images, no affine", vec![u(&[2, 6, 2, 3], -2.0, 2.0)], |x| x[0].group_norm(3, None, None, 1e-3))
        .also(Sample::Empty, &[&[0, 6, 2, 3]])
        .reference(|h| group_norm_ref(&h[0], 3, None, None, 1e-3)),
]);
composite_op!(INSTANCE_NORM, "instance_norm", sig: "instance_norm(self, weight: Tensor | None = None, bias: Tensor | None = None, *, eps: float = 1e-05) -> Tensor", doc: "Normalises each (sample, channel) of [N, C, *spatial] over its positions, then the optional per-channel affine.", fwd: |a| a.this()?.instance_norm(a.opt_tensor("weight")?, a.opt_tensor("bias")?, a.finite("eps")?), cases: || vec![
    Case::new("instance_norm of images, affine", vec![u(&[2, 3, 2, 3], -2.0, 2.0), u(&[3], 0.5, 1.5), u(&[3], -1.0, 1.0)], |x| x[0].instance_norm(Some(&x[1]), Some(&x[2]), 1e-5))
        .also(Sample::Empty, &[&[0, 3, 2, 3], &[3], &[3]])
        .reference(|h| instance_norm_ref(&h[0], Some(&h[1]), Some(&h[2]), 1e-5)),
    Case::new("instance_norm of sequences", vec![u(&[2, 3, 5], -2.0, 2.0)], |x| x[0].instance_norm(None, None, 1e-5))
        .reference(|h| instance_norm_ref(&h[0], None, None, 1e-5)),
]);
composite_op!(RMS_NORM, "rms_norm", sig: "rms_norm(self, normalized_shape: shape, weight: Tensor | None = None, *, eps: float | None = None) -> Tensor", doc: "x / sqrt(mean(x^2) + eps) over the trailing dims, times the optional weight (eps: the dtype's epsilon by default).", fwd: |a| a.this()?.rms_norm(&a.sizes("normalized_shape")?, a.opt_tensor("weight")?, a.opt_float("eps")?), cases: || vec![
    Case::new("rms_norm with weight", vec![u(&[3, 4], -2.0, 2.0), u(&[4], 0.5, 1.5)], |x| x[0].rms_norm(&[4], Some(&x[1]), Some(1e-6)))
        .also(Sample::Empty, &[&[0, 4], &[4]])
        .reference(|h| rms_norm_ref(&h[0], 1, Some(&h[1]), 1e-6)),
    Case::new("rms_norm over two dims, default eps", vec![u(&[2, 3, 4], -2.0, 2.0)], |x| x[0].rms_norm(&[3, 4], None, None))
        .reference(|h| rms_norm_ref(&h[0], 2, None, 0.0)),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![&GROUP_NORM, &INSTANCE_NORM, &RMS_NORM]
}
