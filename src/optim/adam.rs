//! Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight
//! decay), following PyTorch's `torch.optim.Adam` / `AdamW`:
//!
//! ```text
//! AdamW: p = p * (1 - lr * weight_decay)        Adam: g = grad + weight_decay * p
//! m = beta1 * m + (1 - beta1) * g
//! v = beta2 * v + (1 - beta2) * g^2
//! v_max = max(v_max, v)                         (amsgrad; v_max replaces v below)
//! denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//! p = p - lr / (1 - beta1^t) * m / denom
//! ```

use super::core::{
    bound_all, divide, impl_optimizer, non_negative, options, scale, scale_, shift, unit, Core, Hyper, Slot,
};
use super::IntoParamGroups;
use crate::dispatch::optim as fused;
use crate::error::Result;
use crate::tensor::Tensor;

/// Adam / AdamW hyperparameters (the defaults of every group). Group option
/// names: "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    pub lr: f64,
    pub betas: (f64, f64),
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
}

impl Default for AdamConfig {
    /// PyTorch's Adam defaults (AdamW's default weight decay is 0.01: see `AdamW::default_config`).
    fn default() -> Self {
        AdamConfig { lr: 1e-3, betas: (0.9, 0.999), eps: 1e-8, weight_decay: 0.0, amsgrad: false }
    }
}

impl AdamConfig {
    fn defaults(&self) -> std::collections::BTreeMap<String, f64> {
        options(&[
            ("lr", self.lr),
            ("beta1", self.betas.0),
            ("beta2", self.betas.1),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
            ("amsgrad", if self.amsgrad { 1.0 } else { 0.0 }),
        ])
    }
}

/// Adam with L2 weight decay.
///
/// ```
/// use skiff::optim::{Adam, AdamConfig, Optimizer, ParamGroup};
/// use skiff::Tensor;
///
/// # fn main() -> skiff::Result<()> {
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?.requires_grad_(true)?;
/// let b = Tensor::from_vec(vec![0.0f32], &[1])?.requires_grad_(true)?;
/// // Two parameter groups: the second one with its own learning rate.
/// let groups = vec![ParamGroup::new(vec![w.clone()]), ParamGroup::new(vec![b.clone()]).lr(0.0)];
/// let mut opt = Adam::new(groups, AdamConfig { lr: 0.1, ..Default::default() })?;
///
/// w.mul(&w)?.sum_all()?.add(&b.sum_all()?)?.backward()?;
/// opt.step()?;
/// // Adam's first step moves each element by about lr, against its gradient's sign.
/// let w1 = w.to_vec::<f32>()?;
/// assert!((w1[0] - 0.9).abs() < 1e-5 && (w1[1] + 1.9).abs() < 1e-5);
/// assert_eq!(b.to_vec::<f32>()?, vec![0.0]); // lr 0
/// # Ok(())
/// # }
/// ```
pub struct Adam {
    core: Core,
}

/// Adam with decoupled weight decay.
pub struct AdamW {
    core: Core,
}

const BUFFERS: &[&str] = &["exp_avg", "exp_avg_sq", "max_exp_avg_sq"];

fn validate(h: &Hyper) -> std::result::Result<(), String> {
    for k in ["lr", "eps", "weight_decay"] {
        non_negative(h, k)?;
    }
    unit(h, "beta1")?;
    unit(h, "beta2")
}

fn adam(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot) -> Result<()> {
    update(h, p, grad, s, false)
}

fn adamw(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot) -> Result<()> {
    update(h, p, grad, s, true)
}

fn update(h: &Hyper, p: &Tensor, grad: &Tensor, s: &mut Slot, decoupled: bool) -> Result<()> {
    let (lr, b1, b2, eps, wd) = (h.sym("lr"), h.sym("beta1"), h.sym("beta2"), h.sym("eps"), h.sym("weight_decay"));
    let mut g = grad.clone();
    let t = s.step.clone();
    let m = s.buffer("exp_avg", 0.0)?;
    let v = s.buffer("exp_avg_sq", 0.0)?;
    let (bc1, bc2_sqrt) = (1.0 - &b1.powf(&t), (1.0 - &b2.powf(&t)).sqrt());
    if !h.flag("amsgrad") && fused::adam_fusable(p, grad, &m, &v) {
        // One pass (one dispatch on the GPU) instead of a dozen: same formulas.
        let hyper = [lr, b1, b2, eps, wd, bc1, bc2_sqrt, (decoupled as u8 as f64).into()];
        return bound_all("adam_step", &hyper, || fused::adam_step(p, grad, &m, &v, hyper.each_ref().map(|s| s.value)));
    }
    if wd.value != 0.0 {
        if decoupled {
            scale_(p, &(1.0 - &(&lr * &wd)))?;
        } else {
            g = g.add(&scale(p, &wd)?)?;
        }
    }
    scale_(&m, &b1)?.add_(&scale(&g, &(1.0 - &b1))?)?;
    scale_(&v, &b2)?.add_(&scale(&g.mul(&g)?, &(1.0 - &b2))?)?;
    let second = if h.flag("amsgrad") {
        let vmax = s.buffer("max_exp_avg_sq", 0.0)?;
        vmax.copy_(&vmax.maximum(&v)?)?
    } else {
        v
    };
    let denom = shift(&divide(&second.sqrt()?, &bc2_sqrt)?, &eps)?;
    p.sub_(&scale(&m.div(&denom)?, &(&lr / &bc1))?)?;
    Ok(())
}

impl Adam {
    /// Adam over `params` (a `Vec<Tensor>` or `Vec<ParamGroup>`).
    pub fn new(params: impl IntoParamGroups, config: AdamConfig) -> Result<Adam> {
        Ok(Adam { core: Core::new("Adam", params, config.defaults(), BUFFERS, validate)? })
    }
}

impl AdamW {
    /// PyTorch's AdamW defaults: Adam's, with weight_decay 0.01.
    pub fn default_config() -> AdamConfig {
        AdamConfig { weight_decay: 0.01, ..AdamConfig::default() }
    }
    /// AdamW over `params` (a `Vec<Tensor>` or `Vec<ParamGroup>`).
    pub fn new(params: impl IntoParamGroups, config: AdamConfig) -> Result<AdamW> {
        Ok(AdamW { core: Core::new("AdamW", params, config.defaults(), BUFFERS, validate)? })
    }
}

impl_optimizer!(Adam, adam);
impl_optimizer!(AdamW, adamw);
