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
/// Reads the norm back; `clip_grad_norm_tensor_` does not.
///
/// Call it between `backward` and the optimizer's `step`:
///
/// ```
/// use skiff::optim::{clip_grad_norm_, clip_grad_value_};
/// use skiff::Tensor;
///
/// # fn main() -> skiff::Result<()> {
/// let a = Tensor::from_vec(vec![1.0f32], &[1])?.requires_grad_(true)?;
/// let b = Tensor::from_vec(vec![1.0f32], &[1])?.requires_grad_(true)?;
/// a.mul_scalar(3.0)?.add(&b.mul_scalar(4.0)?)?.sum_all()?.backward()?; // grads 3 and 4
///
/// let norm = clip_grad_norm_(&[a.clone(), b.clone()], 1.0, 2.0)?;
/// assert!((norm - 5.0).abs() < 1e-6); // the norm before clipping
/// let (ga, gb) = (a.grad().unwrap().item()?, b.grad().unwrap().item()?);
/// assert!((ga - 0.6).abs() < 1e-5 && (gb - 0.8).abs() < 1e-5);
///
/// clip_grad_value_(&[a.clone(), b.clone()], 0.7)?;
/// assert!((b.grad().unwrap().item()? - 0.7).abs() < 1e-6);
/// # Ok(())
/// # }
/// ```
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<f64> {
    match clip_grad_norm_tensor_(params, max_norm, norm_type)? {
        Some(total) => total.item(),
        None => Ok(0.0),
    }
}

/// `clip_grad_norm_` without leaving the device: the norm is a one-element
/// tensor on the gradients' device (None without gradients), and the scale
/// `min(1, max_norm / (total + 1e-6))` is applied as a tensor, so nothing is
/// read back (a browser cannot wait for a GPU readback in the middle of a step).
pub fn clip_grad_norm_tensor_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Option<Tensor>> {
    const OP: &str = "clip_grad_norm_";
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::value(OP, format!("norm_type must be > 0 or infinity, got {norm_type}")));
    }
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(Error::value(OP, format!("max_norm must be >= 0, got {max_norm}")));
    }
    let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).filter(|g| g.numel() > 0).collect();
    if grads.is_empty() {
        return Ok(None);
    }
    no_grad(|| {
        let mut parts = Vec::with_capacity(grads.len());
        for g in &grads {
            let a = g.abs()?;
            parts.push(if norm_type.is_infinite() {
                a.max(&[], false)?
            } else {
                a.pow_scalar(norm_type)?.sum_all()?
            });
        }
        let total = if norm_type.is_infinite() {
            parts.iter().skip(1).try_fold(parts[0].clone(), |m, p| m.maximum(p))?
        } else {
            parts.iter().skip(1).try_fold(parts[0].clone(), |s, p| s.add(p))?.pow_scalar(1.0 / norm_type)?
        };
        let coef = total.add_scalar(1e-6)?.pow_scalar(-1.0)?.mul_scalar(max_norm)?.clamp(Some(0.0), Some(1.0))?;
        for g in &grads {
            g.mul_(&coef)?;
        }
        Ok(Some(total))
    })
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
