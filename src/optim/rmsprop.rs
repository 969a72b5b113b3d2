//! RMSProp, following PyTorch's `torch.optim.RMSprop`:
//!
//! ```text
//! g = grad + weight_decay * p
//! sq = alpha * sq + (1 - alpha) * g^2
//! ga = alpha * ga + (1 - alpha) * g;  avg = sqrt(sq - ga^2) + eps   (centered)
//! avg = sqrt(sq) + eps                                              (otherwise)
//! buf = momentum * buf + g / avg;  p = p - lr * buf                 (momentum > 0)
//! p = p - lr * g / avg                                              (otherwise)
//! ```

use super::core::{impl_optimizer, non_negative, options, scale, scale_, shift, Core, Hyper, Slot};
use super::IntoParamGroups;
use crate::error::Result;
use crate::tensor::Tensor;

/// RMSProp hyperparameters (the defaults of every group). Group option names:
/// "lr", "alpha", "eps", "weight_decay", "momentum", "centered".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmsPropConfig {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
}

impl Default for RmsPropConfig {
    fn default() -> Self {
        RmsPropConfig { lr: 1e-2, alpha: 0.99, eps: 1e-8, weight_decay: 0.0, momentum: 0.0, centered: false }
    }
}

/// RMSProp (see the module docs for the update).
pub struct RmsProp {
    core: Core,
}

fn validate(h: &Hyper) -> std::result::Result<(), String> {
    for k in ["lr", "alpha", "eps", "weight_decay", "momentum"] {
        non_negative(h, k)?;
    }
    Ok(())
}

fn update(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot) -> Result<()> {
    let (lr, alpha, eps, wd, momentum) =
        (h.sym("lr"), h.sym("alpha"), h.sym("eps"), h.sym("weight_decay"), h.sym("momentum"));
    let mut g = grad.clone();
    if wd.value != 0.0 {
        g = g.add(&scale(p, &wd)?)?;
    }
    let sq = s.buffer("square_avg", 0.0)?;
    scale_(&sq, &alpha)?.add_(&scale(&g.mul(&g)?, &(1.0 - &alpha))?)?;
    let avg = if h.flag("centered") {
        let ga = s.buffer("grad_avg", 0.0)?;
        scale_(&ga, &alpha)?.add_(&scale(&g, &(1.0 - &alpha))?)?;
        shift(&sq.sub(&ga.mul(&ga)?)?.sqrt()?, &eps)?
    } else {
        shift(&sq.sqrt()?, &eps)?
    };
    if momentum.value > 0.0 {
        let buf = s.buffer("momentum_buffer", 0.0)?;
        scale_(&buf, &momentum)?.add_(&g.div(&avg)?)?;
        p.sub_(&scale(&buf, &lr)?)?;
    } else {
        p.sub_(&scale(&g.div(&avg)?, &lr)?)?;
    }
    Ok(())
}

impl RmsProp {
    /// RMSProp over `params` (a `Vec<Tensor>` or `Vec<ParamGroup>`).
    pub fn new(params: impl IntoParamGroups, config: RmsPropConfig) -> Result<RmsProp> {
        let defaults = options(&[
            ("lr", config.lr),
            ("alpha", config.alpha),
            ("eps", config.eps),
            ("weight_decay", config.weight_decay),
            ("momentum", config.momentum),
            ("centered", if config.centered { 1.0 } else { 0.0 }),
        ]);
        let buffers = &["square_avg", "grad_avg", "momentum_buffer"];
        Ok(RmsProp { core: Core::new("RMSProp", params, defaults, buffers, validate)? })
    }
}

impl_optimizer!(RmsProp, update);
