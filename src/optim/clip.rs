//! Gradient clipping, in place on `.grad` (PyTorch's `clip_grad_norm_` and
//! `clip_grad_value_`). Parameters without a gradient are skipped.

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Scales all gradients together so that their joint `norm_type`-norm (over
/// every element of every gradient, as if concatenated) is at most `max_norm`;
/// returns the norm before clipping. `norm_type` is any p > 0 or
/// `f64::INFINITY` (max |g|). Gradients are scaled by
/// `max_norm / (total + 1e-6)` when that is below 1, as in PyTorch.
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<f64> {
    const OP: &str = "clip_grad_norm_";
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::value(OP, format!("norm_type must be > 0 or infinity, got {norm_type}")));
    }
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(Error::value(OP, format!("max_norm must be >= 0, got {max_norm}")));
    }
    let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
    if grads.is_empty() {
        return Ok(0.0);
    }
    let total = no_grad(|| -> Result<f64> {
        let mut acc = 0.0;
        for g in grads.iter().filter(|g| g.numel() > 0) {
            let a = g.abs()?;
            if norm_type.is_infinite() {
                acc = f64::max(acc, a.max(&[], false)?.item()?);
            } else {
                acc += a.pow_scalar(norm_type)?.sum_all()?.item()?;
            }
        }
        Ok(if norm_type.is_infinite() { acc } else { acc.powf(1.0 / norm_type) })
    })?;
    let coef = max_norm / (total + 1e-6);
    if coef < 1.0 {
        no_grad(|| -> Result<()> {
            for g in &grads {
                g.mul_scalar_(coef)?;
            }
            Ok(())
        })?;
    }
    Ok(total)
}

/// Clamps every gradient element into `[-clip, clip]`.
pub fn clip_grad_value_(params: &[Tensor], clip: f64) -> Result<()> {
    if clip.is_nan() || clip < 0.0 {
        return Err(Error::value("clip_grad_value_", format!("clip must be >= 0, got {clip}")));
    }
    no_grad(|| -> Result<()> {
        for g in params.iter().filter_map(|p| p.grad()) {
            g.copy_(&g.clamp(Some(-clip), Some(clip))?)?;
        }
        Ok(())
    })
}
