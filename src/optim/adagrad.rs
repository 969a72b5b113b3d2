//! Adagrad, following PyTorch's `torch.optim.Adagrad`:
//!
//! ```text
//! g = grad + weight_decay * p
//! clr = lr / (1 + (t - 1) * lr_decay)
//! sum = sum + g^2                      (sum starts at initial_accumulator_value)
//! p = p - clr * g / (sqrt(sum) + eps)
//! ```

use super::core::{impl_optimizer, non_negative, options, scale, shift, Core, Hyper, Slot};
use super::IntoParamGroups;
use crate::error::Result;
use crate::tensor::Tensor;

/// Adagrad hyperparameters (the defaults of every group). Group option names:
/// "lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdagradConfig {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub initial_accumulator_value: f64,
    pub eps: f64,
}

impl Default for AdagradConfig {
    fn default() -> Self {
        AdagradConfig { lr: 1e-2, lr_decay: 0.0, weight_decay: 0.0, initial_accumulator_value: 0.0, eps: 1e-10 }
    }
}

/// Adagrad (see the module docs for the update).
pub struct Adagrad {
    core: Core,
}

fn validate(h: &Hyper) -> std::result::Result<(), String> {
    for k in ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"] {
        non_negative(h, k)?;
    }
    Ok(())
}

fn update(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot) -> Result<()> {
    let (lr, lr_decay, wd, eps) = (h.sym("lr"), h.sym("lr_decay"), h.sym("weight_decay"), h.sym("eps"));
    let mut g = grad.clone();
    if wd.value != 0.0 {
        g = g.add(&scale(p, &wd)?)?;
    }
    let clr = &lr / &(1.0 + &(&(&s.step - 1.0) * &lr_decay));
    let sum = s.buffer("sum", h.get("initial_accumulator_value"))?;
    sum.add_(&g.mul(&g)?)?;
    p.sub_(&scale(&g.div(&shift(&sum.sqrt()?, &eps)?)?, &clr)?)?;
    Ok(())
}

impl Adagrad {
    /// Adagrad over `params` (a `Vec<Tensor>` or `Vec<ParamGroup>`).
    pub fn new(params: impl IntoParamGroups, config: AdagradConfig) -> Result<Adagrad> {
        let defaults = options(&[
            ("lr", config.lr),
            ("lr_decay", config.lr_decay),
            ("weight_decay", config.weight_decay),
            ("initial_accumulator_value", config.initial_accumulator_value),
            ("eps", config.eps),
        ]);
        Ok(Adagrad { core: Core::new("Adagrad", params, defaults, &["sum"], validate)? })
    }
}

impl_optimizer!(Adagrad, update);
