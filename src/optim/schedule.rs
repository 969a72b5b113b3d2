//! Learning-rate schedules. A schedule maps a step number and a group's base
//! learning rate to a learning rate (`lr_for`); `step(opt)` advances its
//! counter and writes the new rate into every group of the optimizer. Base
//! rates are each group's lr when the schedule first touches the optimizer
//! (`attach`, which also applies the step-0 rate, or the first `step`).
//!
//! ```
//! use skiff::optim::{LrSchedule, Optimizer, Sgd, SgdConfig, StepLR};
//! use skiff::Tensor;
//!
//! # fn main() -> skiff::Result<()> {
//! let w = Tensor::zeros(&[2], skiff::DType::F32)?.requires_grad_(true)?;
//! let mut opt = Sgd::new(vec![w], SgdConfig { lr: 1.0, ..Default::default() })?;
//! let mut sched = StepLR::new(2, 0.5)?;
//! for _ in 0..4 {
//!     opt.step()?;
//!     sched.step(&mut opt)?;
//! }
//! assert_eq!(opt.lr(0), Some(0.25)); // step 4: 1.0 * 0.5^(4 / 2)
//! # Ok(())
//! # }
//! ```

use super::Optimizer;
use crate::error::{Error, Result};
use crate::kernel::math::{host_cos, host_powf};
use std::f64::consts::PI;

/// Counter and captured base rates, shared by every schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScheduleState {
    /// The step whose rate is currently applied.
    pub step: usize,
    /// Each group's base learning rate (empty until attached).
    pub base_lrs: Vec<f64>,
}

/// A learning-rate schedule.
pub trait LrSchedule {
    /// The learning rate at `step` for a group whose base learning rate is `base_lr`.
    fn lr_for(&self, step: usize, base_lr: f64) -> f64;
    /// The schedule's counter and base rates.
    fn state(&self) -> &ScheduleState;
    fn state_mut(&mut self) -> &mut ScheduleState;

    /// The learning rate at `step` for the first group's base rate (1.0 before
    /// the schedule is attached to an optimizer).
    fn lr_at(&self, step: usize) -> f64 {
        self.lr_for(step, self.state().base_lrs.first().copied().unwrap_or(1.0))
    }
    /// Captures each group's current lr as its base rate and applies step 0's rate.
    fn attach(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        let n = opt.param_groups().len();
        let base: Vec<f64> = (0..n).map(|g| opt.lr(g).unwrap_or(0.0)).collect();
        *self.state_mut() = ScheduleState { step: 0, base_lrs: base };
        self.apply(opt)
    }
    /// Advances one step and sets every group's lr (attaching first if needed).
    fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        if self.state().base_lrs.is_empty() {
            let n = opt.param_groups().len();
            self.state_mut().base_lrs = (0..n).map(|g| opt.lr(g).unwrap_or(0.0)).collect();
        }
        self.state_mut().step += 1;
        self.apply(opt)
    }
    /// Sets every group's lr to this schedule's rate at the current step.
    fn apply(&self, opt: &mut dyn Optimizer) -> Result<()> {
        let st = self.state();
        if st.base_lrs.len() != opt.param_groups().len() {
            return Err(Error::value(
                "LrSchedule::step",
                format!(
                    "the schedule was attached to {} parameter groups, the optimizer has {}",
                    st.base_lrs.len(),
                    opt.param_groups().len()
                ),
            ));
        }
        for (g, &base) in st.base_lrs.iter().enumerate() {
            opt.set_lr(g, self.lr_for(st.step, base))?;
        }
        Ok(())
    }
}

macro_rules! state_accessors {
    () => {
        fn state(&self) -> &ScheduleState {
            &self.state
        }
        fn state_mut(&mut self) -> &mut ScheduleState {
            &mut self.state
        }
    };
}

fn check(op: &'static str, ok: bool, msg: String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::value(op, msg))
    }
}

/// `base * gamma^(step / step_size)` (integer division).
#[derive(Clone, Debug)]
pub struct StepLR {
    pub step_size: usize,
    pub gamma: f64,
    state: ScheduleState,
}

impl StepLR {
    pub fn new(step_size: usize, gamma: f64) -> Result<StepLR> {
        check("StepLR", step_size > 0, format!("step_size must be > 0, got {step_size}"))?;
        check("StepLR", gamma.is_finite() && gamma >= 0.0, format!("gamma must be >= 0, got {gamma}"))?;
        Ok(StepLR { step_size, gamma, state: ScheduleState::default() })
    }
}

impl LrSchedule for StepLR {
    fn lr_for(&self, step: usize, base_lr: f64) -> f64 {
        base_lr * self.gamma.powi((step / self.step_size) as i32)
    }
    state_accessors!();
}

/// `base * gamma^step`.
#[derive(Clone, Debug)]
pub struct ExponentialLR {
    pub gamma: f64,
    state: ScheduleState,
}

impl ExponentialLR {
    pub fn new(gamma: f64) -> Result<ExponentialLR> {
        check("ExponentialLR", gamma.is_finite() && gamma >= 0.0, format!("gamma must be >= 0, got {gamma}"))?;
        Ok(ExponentialLR { gamma, state: ScheduleState::default() })
    }
}

impl LrSchedule for ExponentialLR {
    fn lr_for(&self, step: usize, base_lr: f64) -> f64 {
        base_lr * host_powf(self.gamma, step as f64)
    }
    state_accessors!();
}

/// Linear warm-up from 0 to the base rate over `warmup_steps`, then cosine
/// annealing to `min_lr` at `total_steps` (and `min_lr` after):
/// `min + (base - min) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2`.
///
/// ```
/// use skiff::optim::{CosineAnnealing, LrSchedule, Optimizer, Sgd, SgdConfig};
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig { lr: 0.1, ..Default::default() })?;
/// let mut sched = CosineAnnealing::new(2, 6, 0.0)?;
/// sched.attach(&mut opt)?; // base rate 0.1; step 0 of the warm-up: lr 0
/// let mut lrs = vec![opt.lr(0).unwrap()];
/// for _ in 0..6 {
///     opt.step()?; // (the training step)
///     sched.step(&mut opt)?;
///     lrs.push(opt.lr(0).unwrap());
/// }
/// let expected = [0.0, 0.05, 0.1, 0.085355, 0.05, 0.014645, 0.0];
/// assert!(lrs.iter().zip(expected).all(|(lr, e)| (lr - e).abs() < 1e-6), "{lrs:?}");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct CosineAnnealing {
    pub warmup_steps: usize,
    pub total_steps: usize,
    pub min_lr: f64,
    state: ScheduleState,
}

impl CosineAnnealing {
    pub fn new(warmup_steps: usize, total_steps: usize, min_lr: f64) -> Result<CosineAnnealing> {
        check(
            "CosineAnnealing",
            warmup_steps < total_steps,
            format!("warmup_steps ({warmup_steps}) must be below total_steps ({total_steps})"),
        )?;
        check("CosineAnnealing", min_lr.is_finite() && min_lr >= 0.0, format!("min_lr must be >= 0, got {min_lr}"))?;
        Ok(CosineAnnealing { warmup_steps, total_steps, min_lr, state: ScheduleState::default() })
    }
}

impl LrSchedule for CosineAnnealing {
    fn lr_for(&self, step: usize, base_lr: f64) -> f64 {
        if step < self.warmup_steps {
            return base_lr * step as f64 / self.warmup_steps as f64;
        }
        if step >= self.total_steps {
            return self.min_lr;
        }
        let progress = (step - self.warmup_steps) as f64 / (self.total_steps - self.warmup_steps) as f64;
        self.min_lr + (base_lr - self.min_lr) * 0.5 * (1.0 + host_cos(PI * progress))
    }
    state_accessors!();
}

/// PyTorch's OneCycleLR (two phases, cosine annealing): from
/// `max_lr / div_factor` up to `max_lr` at step `pct_start * total_steps - 1`,
/// then down to `max_lr / div_factor / final_div_factor` at `total_steps - 1`
/// (and held there after). Ignores the groups' base rates.
#[derive(Clone, Debug)]
pub struct OneCycleLR {
    pub max_lr: f64,
    pub total_steps: usize,
    pub pct_start: f64,
    pub div_factor: f64,
    pub final_div_factor: f64,
    state: ScheduleState,
}

impl OneCycleLR {
    /// PyTorch's defaults are pct_start 0.3, div_factor 25, final_div_factor 1e4.
    pub fn new(
        max_lr: f64,
        total_steps: usize,
        pct_start: f64,
        div_factor: f64,
        final_div_factor: f64,
    ) -> Result<OneCycleLR> {
        const OP: &str = "OneCycleLR";
        check(OP, max_lr.is_finite() && max_lr > 0.0, format!("max_lr must be > 0, got {max_lr}"))?;
        check(OP, total_steps >= 2, format!("total_steps must be >= 2, got {total_steps}"))?;
        check(OP, pct_start > 0.0 && pct_start < 1.0, format!("pct_start must be in (0, 1), got {pct_start}"))?;
        check(OP, div_factor.is_finite() && div_factor > 0.0, format!("div_factor must be > 0, got {div_factor}"))?;
        check(
            OP,
            final_div_factor.is_finite() && final_div_factor > 0.0,
            format!("final_div_factor must be > 0, got {final_div_factor}"),
        )?;
        let up_end = pct_start * total_steps as f64 - 1.0;
        check(OP, up_end > 0.0 && up_end < total_steps as f64 - 1.0, "pct_start * total_steps is too small".into())?;
        Ok(OneCycleLR { max_lr, total_steps, pct_start, div_factor, final_div_factor, state: ScheduleState::default() })
    }
}

fn cos_anneal(start: f64, end: f64, pct: f64) -> f64 {
    end + (start - end) / 2.0 * (host_cos(PI * pct) + 1.0)
}

impl LrSchedule for OneCycleLR {
    fn lr_for(&self, step: usize, _base_lr: f64) -> f64 {
        let initial = self.max_lr / self.div_factor;
        let min = initial / self.final_div_factor;
        let up_end = self.pct_start * self.total_steps as f64 - 1.0;
        let down_end = self.total_steps as f64 - 1.0;
        let s = step as f64;
        if s <= up_end {
            cos_anneal(initial, self.max_lr, s / up_end)
        } else {
            cos_anneal(self.max_lr, min, ((s - up_end) / (down_end - up_end)).min(1.0))
        }
    }
    state_accessors!();
}
