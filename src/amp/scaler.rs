//! Dynamic loss scaling (PyTorch's `GradScaler`).
//!
//! A step is `scale(loss).backward()`, `step(opt)`, `update()`. `step`
//! divides every gradient by the scale in place, then checks them for inf
//! and NaN with one number read back per device (the sum of all gradients:
//! finite exactly when every gradient is, barring a sum past f32's range,
//! which is as good a reason to skip); the optimizer steps only if they
//! are finite. `update` then halves the scale after a skipped step, or
//! doubles it after `growth_interval` good steps in a row.
//!
//! The read is the one thing a step waits for: natively `step` blocks on
//! it; in a browser, which cannot block, `step_async` awaits it (the JS
//! `scaler.step(opt)` returns a promise). Skipping on the device instead
//! (an update masked by a device-side flag) would have to hold back the
//! optimizer's host-side step counts too, which no optimizer here can.

use crate::autograd::no_grad;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::optim::Optimizer;
use crate::tensor::Tensor;

/// `GradScaler` settings; the defaults are PyTorch's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerConfig {
    /// The first scale (2^16).
    pub init_scale: f64,
    /// The factor the scale grows by after `growth_interval` good steps (2).
    pub growth_factor: f64,
    /// The factor it shrinks by after a step with inf/NaN gradients (0.5).
    pub backoff_factor: f64,
    /// Good steps in a row before the scale grows (2000).
    pub growth_interval: u32,
    /// With `false` every method passes through: `scale` returns the loss
    /// as it is and `step` always steps.
    pub enabled: bool,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        GradScalerConfig {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// Dynamic loss scaling for mixed-precision training (see the module docs).
///
/// ```
/// use skiff::amp::{autocast, GradScaler, GradScalerConfig};
/// use skiff::nn::{Layer, Linear};
/// use skiff::optim::{Optimizer, Sgd, SgdConfig};
/// use skiff::{DType, Reduction, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let model = Linear::new(4, 3)?;
/// let mut opt = Sgd::new(model.parameters(), SgdConfig { lr: 0.1, ..Default::default() })?;
/// let mut scaler = GradScaler::new(GradScalerConfig::default())?;
/// let x = Tensor::randn(&[8, 4], DType::F32)?;
/// let y = Tensor::from_vec(vec![0i32, 1, 2, 0, 1, 2, 0, 1], &[8])?;
/// for _ in 0..3 {
///     opt.zero_grad();
///     let loss = autocast(|| model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0))?;
///     scaler.scale(&loss)?.backward()?;
///     let stepped = scaler.step(&mut opt)?; // false when a gradient was inf or NaN
///     scaler.update()?;
///     assert!(stepped);
/// }
/// // The master weights stay f32.
/// assert!(model.parameters().iter().all(|p| p.dtype() == DType::F32));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct GradScaler {
    config: GradScalerConfig,
    scale: f64,
    /// Good steps since the scale last changed.
    growth_tracker: u32,
    /// This iteration's check (None until `unscale_`/`step` ran it).
    found_inf: Option<bool>,
}

const OP: &str = "GradScaler";

impl GradScaler {
    /// A scaler with `config` (an error for factors or a scale out of range).
    pub fn new(config: GradScalerConfig) -> Result<GradScaler> {
        let c = &config;
        if !(c.init_scale.is_finite() && c.init_scale > 0.0) {
            return Err(Error::value(OP, format!("init_scale must be finite and > 0, got {}", c.init_scale)));
        }
        if !(c.growth_factor.is_finite() && c.growth_factor > 1.0) {
            return Err(Error::value(OP, format!("growth_factor must be finite and > 1, got {}", c.growth_factor)));
        }
        if !(c.backoff_factor > 0.0 && c.backoff_factor < 1.0) {
            return Err(Error::value(OP, format!("backoff_factor must be in (0, 1), got {}", c.backoff_factor)));
        }
        if c.growth_interval == 0 {
            return Err(Error::value(OP, "growth_interval must be at least 1, got 0"));
        }
        Ok(GradScaler { config, scale: config.init_scale, growth_tracker: 0, found_inf: None })
    }

    /// The current scale (1 when disabled).
    pub fn get_scale(&self) -> f64 {
        if self.config.enabled {
            self.scale
        } else {
            1.0
        }
    }

    pub fn config(&self) -> &GradScalerConfig {
        &self.config
    }

    /// `loss` times the scale (a differentiable op: call `backward` on it).
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        if !self.config.enabled {
            return Ok(loss.clone());
        }
        if !loss.dtype().is_float() {
            return Err(Error::dtype(OP, format!("scale expects a float loss, got {}", loss.dtype())));
        }
        loss.mul_scalar(self.scale)
    }

    /// Divides every gradient of `opt`'s parameters by the scale (in place)
    /// and checks them: returns whether one is inf or NaN. Once per step
    /// (to clip gradients before `step`, call it first; `step` then does
    /// not divide again). Blocks natively on one readback per device.
    pub fn unscale_(&mut self, opt: &dyn Optimizer) -> Result<bool> {
        if !self.config.enabled {
            return Ok(false);
        }
        let sums = self.start_unscale(opt)?;
        Ok(self.finish_unscale(all_finite(sums)?))
    }

    /// `unscale_` without blocking (the browser's way).
    pub async fn unscale_async(&mut self, opt: &dyn Optimizer) -> Result<bool> {
        if !self.config.enabled {
            return Ok(false);
        }
        let sums = self.start_unscale(opt)?;
        Ok(self.finish_unscale(all_finite_async(sums).await?))
    }

    /// Unscales `opt`'s gradients (unless `unscale_` did already) and steps
    /// it when they are finite; returns whether it stepped. Blocks natively
    /// on the check's readback.
    pub fn step(&mut self, opt: &mut dyn Optimizer) -> Result<bool> {
        let finite = match self.start_step(opt)? {
            Some(sums) => Some(all_finite(sums)?),
            None => None,
        };
        self.finish_step(opt, finite)
    }

    /// `step` without blocking (the browser's way).
    pub async fn step_async(&mut self, opt: &mut dyn Optimizer) -> Result<bool> {
        let finite = match self.start_step(opt)? {
            Some(sums) => Some(all_finite_async(sums).await?),
            None => None,
        };
        self.finish_step(opt, finite)
    }

    /// The first half of a step that must not hold the optimizer while it
    /// waits (the JS binding): the sums to check, None when there is
    /// nothing to check (disabled, or `unscale_` ran already).
    pub(crate) fn start_step(&mut self, opt: &dyn Optimizer) -> Result<Option<Vec<Tensor>>> {
        if !self.config.enabled || self.found_inf.is_some() {
            return Ok(None);
        }
        self.start_unscale(opt).map(Some)
    }

    /// The second half: records whether the sums were `finite` (when they
    /// were checked) and steps `opt` unless a gradient was inf or NaN.
    pub(crate) fn finish_step(&mut self, opt: &mut dyn Optimizer, finite: Option<bool>) -> Result<bool> {
        if let Some(f) = finite {
            self.finish_unscale(f);
        }
        let found_inf = self.config.enabled && self.found_inf == Some(true);
        if !found_inf {
            opt.step()?;
        }
        Ok(!found_inf)
    }

    /// Adapts the scale to this iteration's check: times `backoff_factor`
    /// after inf/NaN gradients, times `growth_factor` after
    /// `growth_interval` finite steps in a row. An error unless `step` (or
    /// `unscale_`) ran since the last update.
    pub fn update(&mut self) -> Result<()> {
        if !self.config.enabled {
            return Ok(());
        }
        let Some(found_inf) = self.found_inf.take() else {
            return Err(Error::value(OP, "update: no step or unscale_ since the last update (nothing was checked)"));
        };
        if found_inf {
            self.scale *= self.config.backoff_factor;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == self.config.growth_interval {
                self.scale *= self.config.growth_factor;
                self.growth_tracker = 0;
            }
        }
        Ok(())
    }

    /// Divides the gradients in place and returns, per device, the sum of
    /// all of them (one f32 scalar each) for the finite check.
    pub(crate) fn start_unscale(&mut self, opt: &dyn Optimizer) -> Result<Vec<Tensor>> {
        if self.found_inf.is_some() {
            return Err(Error::value(OP, "unscale_ was already called since the last update"));
        }
        let inv = 1.0 / self.scale;
        no_grad(|| {
            let mut sums: Vec<(Device, Tensor)> = Vec::new();
            for group in opt.param_groups() {
                for p in &group.params {
                    let Some(g) = p.grad() else { continue };
                    g.mul_scalar_(inv)?;
                    // An f16 gradient's own sum could overflow where its values do not.
                    let s = if g.dtype() == DType::F16 { g.to_dtype(DType::F32)? } else { g }.sum_all()?;
                    match sums.iter_mut().find(|(d, _)| *d == s.device()) {
                        Some((_, total)) => *total = total.add(&s.to_dtype(total.dtype())?)?,
                        None => sums.push((s.device(), s)),
                    }
                }
            }
            Ok(sums.into_iter().map(|(_, s)| s).collect())
        })
    }

    pub(crate) fn finish_unscale(&mut self, finite: bool) -> bool {
        self.found_inf = Some(!finite);
        !finite
    }
}

/// Whether every sum is finite (a blocking readback each, natively).
fn all_finite(sums: Vec<Tensor>) -> Result<bool> {
    let mut finite = true;
    for s in sums {
        finite &= s.item()?.is_finite();
    }
    Ok(finite)
}

/// `all_finite`, awaiting each readback instead.
pub(crate) async fn all_finite_async(sums: Vec<Tensor>) -> Result<bool> {
    let mut finite = true;
    for s in sums {
        finite &= s.to_vec_async::<f32>().await?.iter().all(|v| v.is_finite());
    }
    Ok(finite)
}
