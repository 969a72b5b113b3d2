//! Stochastic gradient descent with momentum, dampening, Nesterov momentum and
//! (L2) weight decay, following PyTorch's `torch.optim.SGD` exactly:
//!
//! ```text
//! g = grad + weight_decay * p
//! buf = g                                       (first step)
//! buf = momentum * buf + (1 - dampening) * g    (later steps)
//! g = g + momentum * buf  (nesterov)   or   g = buf   (momentum > 0)
//! p = p - lr * g
//! ```

use super::core::{impl_optimizer, non_negative, options, scale, scale_, Core, Hyper, Slot};
use super::IntoParamGroups;
use crate::error::Result;
use crate::tensor::Tensor;

/// SGD hyperparameters (the defaults of every group).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdConfig {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig { lr: 1e-3, momentum: 0.0, dampening: 0.0, weight_decay: 0.0, nesterov: false }
    }
}

/// Stochastic gradient descent (see the module docs for the update).
///
/// ```
/// use skiff::optim::{Optimizer, Sgd, SgdConfig};
/// use skiff::Tensor;
///
/// # fn main() -> skiff::Result<()> {
/// let w = Tensor::from_vec(vec![0.0f32], &[1])?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.5, momentum: 0.5, ..Default::default() })?;
/// for _ in 0..2 {
///     opt.zero_grad();
///     w.sum_all()?.backward()?; // the gradient is 1 at every step
///     opt.step()?;
/// }
/// // buf = 1, then 0.5 * 1 + 1 = 1.5; w = 0 - 0.5 * 1 - 0.5 * 1.5.
/// assert_eq!(w.to_vec::<f32>()?, vec![-1.25]);
///
/// // Invalid settings are refused when the optimizer is built.
/// let nesterov = SgdConfig { nesterov: true, ..Default::default() }; // without momentum
/// assert!(Sgd::new(vec![w], nesterov).is_err());
/// # Ok(())
/// # }
/// ```
pub struct Sgd {
    core: Core,
}

fn validate(h: &Hyper) -> std::result::Result<(), String> {
    for k in ["lr", "momentum", "weight_decay"] {
        non_negative(h, k)?;
    }
    let d = h.get("dampening");
    if !d.is_finite() {
        return Err(format!("dampening must be finite, got {d}"));
    }
    if h.flag("nesterov") && (h.get("momentum") <= 0.0 || d != 0.0) {
        return Err("Nesterov momentum requires a momentum > 0 and zero dampening".into());
    }
    Ok(())
}

fn update(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot) -> Result<()> {
    let (lr, momentum, wd) = (h.sym("lr"), h.sym("momentum"), h.sym("weight_decay"));
    let mut g = grad.clone();
    if wd.value != 0.0 {
        g = g.add(&scale(p, &wd)?)?;
    }
    if momentum.value != 0.0 {
        let buf = match s.get("momentum_buffer") {
            None => {
                let b = g.contiguous_copy()?;
                s.insert("momentum_buffer", b.clone());
                b
            }
            Some(b) => scale_(&b, &momentum)?.add_(&scale(&g, &(1.0 - &h.sym("dampening")))?)?,
        };
        g = if h.flag("nesterov") { g.add(&scale(&buf, &momentum)?)? } else { buf };
    }
    p.sub_(&scale(&g, &lr)?)?;
    Ok(())
}

impl Sgd {
    /// SGD over `params` (a `Vec<Tensor>` or `Vec<ParamGroup>`); errors on
    /// negative rates, unknown group options or Nesterov without momentum.
    pub fn new(params: impl IntoParamGroups, config: SgdConfig) -> Result<Sgd> {
        let defaults = options(&[
            ("lr", config.lr),
            ("momentum", config.momentum),
            ("dampening", config.dampening),
            ("weight_decay", config.weight_decay),
            ("nesterov", if config.nesterov { 1.0 } else { 0.0 }),
        ]);
        Ok(Sgd { core: Core::new("SGD", params, defaults, &["momentum_buffer"], validate)? })
    }
}

impl_optimizer!(Sgd, update);
