//! Neural-network functions composed from primitives (DESIGN principle 1):
//! softmax, losses, layer norm, dropout and embedding. None has its own
//! backward rule; autodiff (to any order) comes from the primitives they call.
//! Each still has a registry entry so the generated gradchecks cover it.

use super::args::Args;
#[cfg(feature = "testing")]
use super::reference::{self as r, Reduce};
use super::{composite_op, expect_float, same_device, same_dtype, OpDef};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{CheckWhat, Effect, IndexCheck};
#[cfg(feature = "testing")]
use crate::random::manual_seed;
use crate::shape::normalize_axis;
use crate::tensor::Tensor;

/// How a loss combines its per-element values (PyTorch's `reduction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The average over all elements (over the batch for class losses).
    Mean,
    Sum,
    /// The unreduced per-element (per-sample) losses.
    None,
}

fn reduce(loss: Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::Mean => loss.mean(&[], false),
        Reduction::Sum => loss.sum_all(),
        Reduction::None => Ok(loss),
    }
}

/// Checks `[N, C]` scores against `[N]` i32 labels, including every label's
/// value (a bad label would otherwise surface as an index error of `gather`).
fn check_class_inputs(op: &'static str, scores: &Tensor, labels: &Tensor) -> Result<()> {
    same_device(op, &[scores, labels])?;
    expect_float(op, scores)?;
    if scores.ndim() != 2 {
        return Err(Error::shape(op, format!("expects [N, C] scores, got shape {:?}", scores.shape())));
    }
    if labels.dtype() != DType::I32 {
        return Err(Error::dtype(
            op,
            format!("labels must be i32 class indices, got {} of shape {:?}", labels.dtype(), labels.shape()),
        ));
    }
    let (n, c) = (scores.shape()[0], scores.shape()[1]);
    if labels.shape() != [n] {
        return Err(Error::shape(
            op,
            format!("labels must have shape [{n}] for scores of shape {:?}, got {:?}", scores.shape(), labels.shape()),
        ));
    }
    // Labels computed by argmax over C classes are in range by construction
    // (and on a GPU, reading them back would stall; in a browser it is
    // impossible): the check skips them. Labels that exist only on a GPU are
    // checked there, reporting at the next readback.
    let what = CheckWhat::Label { scores_shape: scores.shape().to_vec() };
    crate::dispatch::index::check_range(IndexCheck { op, dim: c, what }, labels)
}

/// `-log_probs[i, labels[i]]` for each row i (inputs already checked).
fn picked_nll(log_probs: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let n = log_probs.shape()[0];
    log_probs.gather(1, &labels.unsqueeze(1)?)?.reshape_dims(&[n])?.neg()
}

/// Same device, float, same dtype and same shape (elementwise losses).
fn check_pair(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    same_device(op, &[a, b])?;
    expect_float(op, a)?;
    same_dtype(op, a, b)?;
    if a.shape() != b.shape() {
        return Err(Error::shape(op, format!("input and target shapes differ: {:?} vs {:?}", a.shape(), b.shape())));
    }
    Ok(())
}

impl Tensor {
    /// exp(x) / sum(exp(x)) along `axis`, shifted by the (detached) max for stability.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.softmax(axis);
        }
        super::as_op("softmax", || {
            expect_float("softmax", self)?;
            let ax = normalize_axis("softmax", axis, self.shape())? as isize;
            let m = self.max(&[ax], true)?.detach();
            let e = self.sub(&m)?.exp()?;
            e.div(&e.sum(&[ax], true)?)
        })
    }

    /// log(softmax(x)) along `axis`, computed as x - logsumexp(x) (stable).
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.log_softmax(axis);
        }
        super::as_op("log_softmax", || {
            expect_float("log_softmax", self)?;
            let ax = normalize_axis("log_softmax", axis, self.shape())? as isize;
            self.sub(&self.logsumexp(&[ax], true)?)
        })
    }

    /// Cross-entropy of `[N, C]` logits against `[N]` i32 class labels, with
    /// PyTorch's label smoothing: the target puts `1 - s` on the label and
    /// `s / C` on every class. Mean reduction averages over the batch.
    pub fn cross_entropy(&self, labels: &Tensor, reduction: Reduction, label_smoothing: f64) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.cross_entropy(labels, reduction, label_smoothing);
        }
        super::as_op("cross_entropy", || {
            let op = "cross_entropy";
            check_class_inputs(op, self, labels)?;
            if !(0.0..=1.0).contains(&label_smoothing) {
                return Err(Error::value(op, format!("label_smoothing must be in [0, 1], got {label_smoothing}")));
            }
            let logp = self.log_softmax(1)?;
            let mut loss = picked_nll(&logp, labels)?;
            if label_smoothing > 0.0 {
                let uniform = logp.mean(&[1], false)?.neg()?;
                loss = loss.mul_scalar(1.0 - label_smoothing)?.add(&uniform.mul_scalar(label_smoothing)?)?;
            }
            reduce(loss, reduction)
        })
    }

    /// Negative log-likelihood of `[N, C]` log-probabilities at `[N]` i32 labels.
    pub fn nll_loss(&self, labels: &Tensor, reduction: Reduction) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.nll_loss(labels, reduction);
        }
        super::as_op("nll_loss", || {
            check_class_inputs("nll_loss", self, labels)?;
            reduce(picked_nll(self, labels)?, reduction)
        })
    }

    /// (self - target)^2, reduced. The shapes must match.
    pub fn mse_loss(&self, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
        if let Some((a, b)) = crate::amp::widened_pair(self, target)? {
            return a.mse_loss(&b, reduction);
        }
        super::as_op("mse_loss", || {
            check_pair("mse_loss", self, target)?;
            let d = self.sub(target)?;
            reduce(d.mul(&d)?, reduction)
        })
    }

    /// |self - target|, reduced. The shapes must match.
    pub fn l1_loss(&self, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
        if let Some((a, b)) = crate::amp::widened_pair(self, target)? {
            return a.l1_loss(&b, reduction);
        }
        super::as_op("l1_loss", || {
            check_pair("l1_loss", self, target)?;
            reduce(self.sub(target)?.abs()?, reduction)
        })
    }

    /// Binary cross-entropy of `self` (logits) against probabilities `targets`:
    /// max(x, 0) - x*y + log(1 + exp(-|x|)), which is softplus(x) - x*y with
    /// skiff's stable softplus kernel (no overflow for large |x|).
    pub fn binary_cross_entropy_with_logits(&self, targets: &Tensor, reduction: Reduction) -> Result<Tensor> {
        if let Some((a, b)) = crate::amp::widened_pair(self, targets)? {
            return a.binary_cross_entropy_with_logits(&b, reduction);
        }
        super::as_op("binary_cross_entropy_with_logits", || {
            check_pair("binary_cross_entropy_with_logits", self, targets)?;
            reduce(self.softplus()?.sub(&self.mul(targets)?)?, reduction)
        })
    }

    /// Normalises over the trailing `normalized_shape` dims to mean 0 and
    /// (biased) variance 1, then applies the optional elementwise affine.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if let Some(wide) = crate::amp::widened(self)? {
            return wide.layer_norm(normalized_shape, weight, bias, eps);
        }
        super::as_op("layer_norm", || {
            let op = "layer_norm";
            expect_float(op, self)?;
            let params = [("weight", weight), ("bias", bias)];
            let axes = super::normalize::check_trailing_norm(op, self, normalized_shape, eps, &params)?;
            let d = self.sub(&self.mean(&axes, true)?)?;
            let var = d.mul(&d)?.mean(&axes, true)?;
            let mut y = d.mul(&var.add_scalar(eps)?.rsqrt()?)?;
            if let Some(w) = weight {
                y = y.mul(w)?;
            }
            if let Some(b) = bias {
                y = y.add(b)?;
            }
            Ok(y)
        })
    }

    /// Zeroes each element with probability `p` and scales the rest by
    /// 1/(1-p) when `train`; the identity otherwise. The mask is drawn from
    /// the global generator (`manual_seed` makes it reproducible).
    pub fn dropout(&self, p: f64, train: bool) -> Result<Tensor> {
        super::as_op("dropout", || {
            let op = "dropout";
            expect_float(op, self)?;
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::value(op, format!("probability p must be in [0, 1], got {p}")));
            }
            if !train || p == 0.0 {
                return Ok(self.clone());
            }
            if p == 1.0 {
                // Every element dropped; PyTorch multiplies by zero (so NaN and
                // infinities give NaN) rather than dividing by 1 - p = 0.
                return self.mul_scalar(0.0);
            }
            // The keep mask is drawn on the tensor's device as one bool spec
            // (each element true with probability 1 - p, from a 53-bit uniform),
            // so an f32 and an f64 run, and a cpu and a GPU run, keep the same
            // elements for the same seed.
            let keep = Tensor::bernoulli_on(self.shape(), 1.0 - p, &self.device())?;
            // where_ saves only the bool mask for backward (a mul would save a float mask).
            Tensor::where_(&keep, &self.mul_scalar(1.0 / (1.0 - p))?, &self.zeros_scalar()?)
        })
    }

    /// Embedding lookup: `self` is the `[V, D]` table, `indices` any-shaped
    /// i32 in `[0, V)`; the result has shape `indices.shape() + [D]`.
    pub fn embedding(&self, indices: &Tensor) -> Result<Tensor> {
        super::as_op("embedding", || {
            let op = "embedding";
            if self.ndim() != 2 {
                return Err(Error::shape(
                    op,
                    format!("weight must be [num_embeddings, dim], got shape {:?}", self.shape()),
                ));
            }
            if indices.dtype() != DType::I32 {
                return Err(Error::dtype(
                    op,
                    format!("indices must be i32, got {} of shape {:?}", indices.dtype(), indices.shape()),
                ));
            }
            // Indices that exist only on a GPU are checked there under this op's
            // name; that check covers index_select's (host-held values are
            // checked by index_select, whose errors are renamed).
            if self.device() == indices.device() {
                let what = CheckWhat::Index {
                    axis: 0,
                    data_shape: self.shape().to_vec(),
                    index_shape: indices.shape().to_vec(),
                    effect: Effect::ReadsZero,
                };
                crate::dispatch::index::check_on_device(IndexCheck { op, dim: self.shape()[0], what }, indices)?;
            }
            let rows = self.index_select(0, &indices.reshape(&[-1])?)?;
            let mut shape = indices.dims();
            shape.push(self.shape()[1]);
            rows.reshape_dims(&shape)
        })
    }
}

impl Tensor {
    /// PReLU: x where positive, weight * x elsewhere, with `weight` of one
    /// element or one per channel (axis 1), as PyTorch's `F.prelu`.
    pub fn prelu(&self, weight: &Tensor) -> Result<Tensor> {
        let op = "prelu";
        super::as_op(op, || {
            same_device(op, &[self, weight])?;
            expect_float(op, self)?;
            same_dtype(op, self, weight)?;
            let channels = if self.ndim() >= 2 { self.shape()[1] } else { 1 };
            let n = weight.numel();
            if weight.ndim() > 1 || (n != 1 && n != channels) {
                return Err(Error::shape(
                    op,
                    format!(
                        "weight must have 1 element or one per channel ({channels} for input shape {:?}), got shape {:?}",
                        self.shape(),
                        weight.shape()
                    ),
                ));
            }
            // One slope per channel broadcasts along axis 1: [C, 1, ..., 1].
            let mut slope_shape = vec![1; self.ndim().saturating_sub(1)];
            if let Some(first) = slope_shape.first_mut() {
                *first = n;
            }
            let slope = if n == 1 { weight.reshape_dims(&[])? } else { weight.reshape_dims(&slope_shape)? };
            Tensor::where_(&self.gt_scalar(0.0)?, self, &self.mul(&slope)?)
        })
    }
}

#[cfg(feature = "testing")]
fn u(shape: &[usize], lo: f64, hi: f64) -> Input {
    Input::Uniform(shape.to_vec(), lo, hi)
}

composite_op!(SOFTMAX, "softmax", sig: "softmax(self, dim: int) -> Tensor", doc: "exp(x) / sum(exp(x)) along `dim`, computed stably.", fwd: |a| a.this()?.softmax(a.int("dim")?), second_order: true, cases: || vec![
    Case::new("softmax last axis", vec![u(&[3, 5], -3.0, 3.0)], |x| x[0].softmax(-1))
        .also(Sample::Empty, &[&[0, 5]])
        .reference(|h| r::softmax(&h[0], -1)),
    Case::new("softmax axis 0", vec![u(&[2, 3, 4], -3.0, 3.0)], |x| x[0].softmax(0)).reference(|h| r::softmax(&h[0], 0)),
]);
composite_op!(LOG_SOFTMAX, "log_softmax", sig: "log_softmax(self, dim: int) -> Tensor", doc: "log(softmax(x)) along `dim`, computed stably.", fwd: |a| a.this()?.log_softmax(a.int("dim")?), second_order: true, cases: || vec![
    Case::new("log_softmax last axis", vec![u(&[3, 5], -3.0, 3.0)], |x| x[0].log_softmax(-1)).also(Sample::Empty, &[&[0, 5]])
        .reference(|h| r::log_softmax(&h[0], -1)),
    Case::new("log_softmax axis 1 of 3-D", vec![u(&[2, 3, 4], -3.0, 3.0)], |x| x[0].log_softmax(1))
        .reference(|h| r::log_softmax(&h[0], 1)),
]);
composite_op!(CROSS_ENTROPY, "cross_entropy", sig: "cross_entropy(self, target: Tensor<int32>, *, reduction: 'mean' | 'sum' | 'none' = 'mean', label_smoothing: float = 0) -> Tensor", doc: "Cross-entropy of [N, C] logits against [N] class labels, with optional label smoothing.", fwd: |a| a.this()?.cross_entropy(a.tensor("target")?, reduction(a)?, a.finite("label_smoothing")?), second_order: true, cases: || {
    let ins = || vec![u(&[4, 5], -2.0, 2.0), Input::Int(vec![4], 0, 5)];
    vec![
        Case::new("cross_entropy mean", ins(), |x| x[0].cross_entropy(&x[1], Reduction::Mean, 0.0))
            .reference(|h| r::cross_entropy(&h[0], &h[1], Reduce::Mean, 0.0)),
        Case::new("cross_entropy sum smoothed", ins(), |x| x[0].cross_entropy(&x[1], Reduction::Sum, 0.1))
            .reference(|h| r::cross_entropy(&h[0], &h[1], Reduce::Sum, 0.1)),
        Case::new("cross_entropy none", ins(), |x| x[0].cross_entropy(&x[1], Reduction::None, 0.0))
            .also(Sample::Empty, &[&[0, 5], &[0]])
            .reference(|h| r::cross_entropy(&h[0], &h[1], Reduce::None, 0.0)),
    ]
});
composite_op!(NLL_LOSS, "nll_loss", sig: "nll_loss(self, target: Tensor<int32>, *, reduction: 'mean' | 'sum' | 'none' = 'mean') -> Tensor", doc: "Negative log-likelihood of [N, C] log-probabilities against [N] labels.", fwd: |a| a.this()?.nll_loss(a.tensor("target")?, reduction(a)?), second_order: true, cases: || {
    let ins = || vec![u(&[4, 3], -2.0, 2.0), Input::Int(vec![4], 0, 3)];
    vec![
        Case::new("nll_loss of log_softmax mean", ins(), |x| x[0].log_softmax(1)?.nll_loss(&x[1], Reduction::Mean))
            .reference(|h| r::nll_loss(&r::log_softmax(&h[0], 1), &h[1], Reduce::Mean)),
        Case::new("nll_loss none", ins(), |x| x[0].nll_loss(&x[1], Reduction::None)).also(Sample::Empty, &[&[0, 3], &[0]]).reference(|h| r::nll_loss(&h[0], &h[1], Reduce::None)),
    ]
});
composite_op!(MSE_LOSS, "mse_loss", sig: "mse_loss(self, target: Tensor, *, reduction: 'mean' | 'sum' | 'none' = 'mean') -> Tensor", doc: "Mean squared error against `target` (same shape).", fwd: |a| a.this()?.mse_loss(a.tensor("target")?, reduction(a)?), second_order: true, cases: || {
    let ins = || vec![u(&[3, 4], -2.0, 2.0), u(&[3, 4], -2.0, 2.0)];
    vec![
        Case::new("mse_loss mean", ins(), |x| x[0].mse_loss(&x[1], Reduction::Mean))
            .reference(|h| r::mse_loss(&h[0], &h[1], Reduce::Mean)),
        Case::new("mse_loss sum", ins(), |x| x[0].mse_loss(&x[1], Reduction::Sum))
            .also(Sample::Scalar, &[&[], &[]])
            .reference(|h| r::mse_loss(&h[0], &h[1], Reduce::Sum)),
        Case::new("mse_loss none", ins(), |x| x[0].mse_loss(&x[1], Reduction::None)).also(Sample::Empty, &[&[0, 4], &[0, 4]])
            .reference(|h| r::mse_loss(&h[0], &h[1], Reduce::None)),
    ]
});
composite_op!(L1_LOSS, "l1_loss", sig: "l1_loss(self, target: Tensor, *, reduction: 'mean' | 'sum' | 'none' = 'mean') -> Tensor", doc: "Mean absolute error against `target` (same shape).", fwd: |a| a.this()?.l1_loss(a.tensor("target")?, reduction(a)?), second_order: true, cases: || {
    // Inputs and targets drawn from disjoint ranges keep |x - t| away from its kink.
    let ins = || vec![u(&[3, 4], 0.5, 2.0), u(&[3, 4], -2.0, -0.5)];
    vec![
        Case::new("l1_loss mean", ins(), |x| x[0].l1_loss(&x[1], Reduction::Mean)).also(Sample::Scalar, &[&[], &[]])
            .reference(|h| r::l1_loss(&h[0], &h[1], Reduce::Mean)),
        Case::new("l1_loss none", ins(), |x| x[0].l1_loss(&x[1], Reduction::None)).also(Sample::Empty, &[&[0, 4], &[0, 4]])
            .reference(|h| r::l1_loss(&h[0], &h[1], Reduce::None)),
    ]
});
composite_op!(BCE_WITH_LOGITS, "binary_cross_entropy_with_logits", sig: "binary_cross_entropy_with_logits(self, target: Tensor, *, reduction: 'mean' | 'sum' | 'none' = 'mean') -> Tensor", doc: "Binary cross-entropy of logits against probabilities (same shape), computed stably.", fwd: |a| a.this()?.binary_cross_entropy_with_logits(a.tensor("target")?, reduction(a)?), second_order: true, cases: || {
    let ins = || vec![u(&[3, 4], -4.0, 4.0), u(&[3, 4], 0.0, 1.0)];
    vec![
        Case::new("bce_with_logits mean", ins(), |x| x[0].binary_cross_entropy_with_logits(&x[1], Reduction::Mean)).also(Sample::Scalar, &[&[], &[]])
            .reference(|h| r::bce_with_logits(&h[0], &h[1], Reduce::Mean)),
        Case::new("bce_with_logits none", ins(), |x| x[0].binary_cross_entropy_with_logits(&x[1], Reduction::None)).also(Sample::Empty, &[&[0, 4], &[0, 4]])
            .reference(|h| r::bce_with_logits(&h[0], &h[1], Reduce::None)),
    ]
});
composite_op!(LAYER_NORM, "layer_norm", sig: "layer_norm(self, normalized_shape: shape, weight: Tensor | None = None, bias: Tensor | None = None, *, eps: float = 1e-05) -> Tensor", doc: "Normalises over the trailing dims (biased variance), then the optional affine.", fwd: |a| a.this()?.layer_norm(&a.sizes("normalized_shape")?, a.opt_tensor("weight")?, a.opt_tensor("bias")?, a.finite("eps")?), second_order: true, cases: || vec![
    Case::new("layer_norm affine", vec![u(&[3, 4], -2.0, 2.0), u(&[4], 0.5, 1.5), u(&[4], -1.0, 1.0)], |x| {
        x[0].layer_norm(&[4], Some(&x[1]), Some(&x[2]), 1e-5)
    })
    .also(Sample::Empty, &[&[0, 4], &[4], &[4]])
    .reference(|h| r::layer_norm(&h[0], 1, Some(&h[1]), Some(&h[2]), 1e-5)),
    Case::new("layer_norm over two dims, no affine", vec![u(&[2, 3, 4], -2.0, 2.0)], |x| x[0].layer_norm(&[3, 4], None, None, 1e-5))
        .reference(|h| r::layer_norm(&h[0], 2, None, None, 1e-5)),
]);
composite_op!(DROPOUT, "dropout", sig: "dropout(self, p: float = 0.5, *, training: bool = True) -> Tensor", doc: "Zeroes elements with probability p and scales the rest by 1/(1-p) while training.", fwd: |a| a.this()?.dropout(a.finite("p")?, a.bool("training")?), second_order: true, cases: || vec![
    // Re-seeding inside the case draws the same mask at every evaluation, so
    // finite differences see one fixed (linear) function.
    Case::new("dropout train p=0.3", vec![u(&[4, 5], -1.0, 1.0)], |x| {
        manual_seed(3);
        x[0].dropout(0.3, true)
    }).also(Sample::Empty, &[&[0, 5]])
    .property(|h, out| r::dropout_property(&h[0], out, 0.3)),
    Case::new("dropout eval", vec![u(&[3, 4], -1.0, 1.0)], |x| x[0].dropout(0.5, false)).also(Sample::Scalar, &[&[]]).reference(|h| h[0].clone()),
]);
composite_op!(EMBEDDING, "embedding", sig: "embedding(self, weight: Tensor<any>) -> Tensor", doc: "Rows of `weight` [num_embeddings, dim] picked by this int32 index tensor.", fwd: |a| a.tensor("weight")?.embedding(a.this()?), second_order: true, cases: || vec![
    Case::new("embedding 2-D indices with repeats", vec![u(&[5, 3], -1.0, 1.0), Input::Int(vec![2, 4], 0, 5)], |x| {
        x[0].embedding(&x[1])
    })
    .also(Sample::Empty, &[&[5, 3], &[2, 0]])
    .reference(|h| r::embedding(&h[0], &h[1])),
]);

composite_op!(PRELU, "prelu", sig: "prelu(self, weight: Tensor) -> Tensor", doc: "x where positive, weight * x elsewhere; weight has 1 element or one per channel (axis 1).", fwd: |a| a.this()?.prelu(a.tensor("weight")?), second_order: true, cases: || vec![
    Case::new("prelu per channel", vec![Input::AwayFromZero(vec![2, 3, 4], 0.1, 2.0), u(&[3], 0.1, 0.5)], |x| x[0].prelu(&x[1]))
        .also(Sample::Empty, &[&[0, 3, 4], &[3]])
        .reference(|h| r::prelu(&h[0], &h[1])),
    Case::new("prelu one slope", vec![Input::AwayFromZero(vec![3, 4], 0.1, 2.0), u(&[1], 0.1, 0.5)], |x| x[0].prelu(&x[1]))
        .also(Sample::Scalar, &[&[], &[1]])
        .reference(|h| r::prelu(&h[0], &h[1])),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![
        &SOFTMAX,
        &LOG_SOFTMAX,
        &CROSS_ENTROPY,
        &NLL_LOSS,
        &MSE_LOSS,
        &L1_LOSS,
        &BCE_WITH_LOGITS,
        &LAYER_NORM,
        &DROPOUT,
        &EMBEDDING,
        &PRELU,
    ]
}

/// A loss's `reduction`: 'mean', 'sum' or 'none'.
fn reduction(a: &Args) -> Result<Reduction> {
    match a.str("reduction")? {
        "sum" => Ok(Reduction::Sum),
        "none" => Ok(Reduction::None),
        "mean" => Ok(Reduction::Mean),
        other => Err(Error::value(a.def.name, format!("reduction must be 'mean', 'sum' or 'none', got {other:?}"))),
    }
}
