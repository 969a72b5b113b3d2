//! Optimizers, learning-rate schedules and gradient clipping.
//!
//! Parameters are plain leaf tensors that require grad. An optimizer holds them
//! in parameter groups, each with its own hyperparameters (PyTorch's
//! `param_groups`); `step()` updates every parameter whose `.grad` is set, with
//! skiff tensor ops under `no_grad` writing in place, so the optimizer state
//! lives on the parameter's device (a GPU parameter gets GPU state).
//!
//! ```
//! use skiff::optim::{Optimizer, Sgd, SgdConfig};
//! use skiff::Tensor;
//!
//! # fn main() -> skiff::Result<()> {
//! let w = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
//! let mut opt = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.5, ..Default::default() })?;
//! w.mul(&w)?.sum_all()?.backward()?; // grad = 2w
//! opt.step()?;
//! assert_eq!(w.to_vec::<f32>()?, vec![0.0, 0.0]);
//! opt.zero_grad();
//! assert!(w.grad().is_none());
//! # Ok(())
//! # }
//! ```

mod adagrad;
mod adam;
mod clip;
mod core;
mod rmsprop;
pub mod schedule;
mod sgd;
mod state;

pub use adagrad::{Adagrad, AdagradConfig};
pub use adam::{Adam, AdamConfig, AdamW};
pub use clip::{clip_grad_norm_, clip_grad_norm_tensor_, clip_grad_value_};
pub use rmsprop::{RmsProp, RmsPropConfig};
pub use schedule::{CosineAnnealing, ExponentialLR, LrSchedule, OneCycleLR, StepLR};
pub use sgd::{Sgd, SgdConfig};
pub use state::{GroupState, OptimState, ParamState};

use crate::error::Result;
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// A set of parameters sharing hyperparameters. Options not set here take the
/// optimizer's defaults (from its config); unknown option names are an error
/// when the optimizer is built.
#[derive(Clone, Debug)]
pub struct ParamGroup {
    pub(crate) params: Vec<Tensor>,
    pub(crate) options: BTreeMap<String, f64>,
}

impl ParamGroup {
    /// A group with no overrides.
    pub fn new(params: Vec<Tensor>) -> ParamGroup {
        ParamGroup { params, options: BTreeMap::new() }
    }
    /// Overrides one hyperparameter by name ("lr", "weight_decay", "momentum",
    /// "beta1", ...; booleans such as "nesterov" are 0.0 or 1.0).
    pub fn with(mut self, name: &str, value: f64) -> ParamGroup {
        self.options.insert(name.to_string(), value);
        self
    }
    /// Overrides the learning rate.
    pub fn lr(self, lr: f64) -> ParamGroup {
        self.with("lr", lr)
    }
    /// Overrides the weight decay.
    pub fn weight_decay(self, weight_decay: f64) -> ParamGroup {
        self.with("weight_decay", weight_decay)
    }
    /// The group's parameters.
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }
    /// One hyperparameter (after the optimizer merged its defaults in).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.options.get(name).copied()
    }
    /// All hyperparameters of the group.
    pub fn options(&self) -> &BTreeMap<String, f64> {
        &self.options
    }
}

/// What optimizers are built from: a list of tensors (one group) or groups.
pub trait IntoParamGroups {
    fn into_param_groups(self) -> Vec<ParamGroup>;
}
impl IntoParamGroups for Vec<Tensor> {
    fn into_param_groups(self) -> Vec<ParamGroup> {
        vec![ParamGroup::new(self)]
    }
}
impl IntoParamGroups for &[Tensor] {
    fn into_param_groups(self) -> Vec<ParamGroup> {
        vec![ParamGroup::new(self.to_vec())]
    }
}
impl IntoParamGroups for Vec<ParamGroup> {
    fn into_param_groups(self) -> Vec<ParamGroup> {
        self
    }
}
impl IntoParamGroups for ParamGroup {
    fn into_param_groups(self) -> Vec<ParamGroup> {
        vec![self]
    }
}

/// The common optimizer interface.
///
/// A training step is `zero_grad`, a forward pass and `backward`, then `step`.
/// Code that takes `&mut dyn Optimizer` works with every optimizer.
///
/// ```
/// use skiff::nn::{Layer, Linear, MSELoss};
/// use skiff::optim::{Adam, AdamConfig, Optimizer};
/// use skiff::{manual_seed, DType, Tensor};
///
/// fn train_step(model: &dyn Layer, opt: &mut dyn Optimizer, x: &Tensor, y: &Tensor) -> skiff::Result<f64> {
///     opt.zero_grad();
///     let loss = MSELoss::new().forward(&model.forward(x)?, y)?;
///     loss.backward()?;
///     opt.step()?;
///     loss.item()
/// }
///
/// # fn main() -> skiff::Result<()> {
/// manual_seed(0);
/// // Fit y = 2x - 1.
/// let x = Tensor::randn(&[32, 1], DType::F32)?;
/// let y = x.mul_scalar(2.0)?.add_scalar(-1.0)?;
/// let model = Linear::new(1, 1)?;
/// let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 0.1, ..Default::default() })?;
/// let first = train_step(&model, &mut opt, &x, &y)?;
/// let mut last = first;
/// for _ in 0..200 {
///     last = train_step(&model, &mut opt, &x, &y)?;
/// }
/// assert!(last < first * 1e-3, "loss {first} -> {last}");
///
/// // Hyperparameters per group; the state is a snapshot for checkpoints.
/// opt.set_lr(0, 0.01)?;
/// assert_eq!(opt.lr(0), Some(0.01));
/// let state = opt.state_dict()?;
/// opt.load_state_dict(&state)?;
/// # Ok(())
/// # }
/// ```
pub trait Optimizer {
    /// Updates every parameter whose `.grad` is set (others are skipped).
    fn step(&mut self) -> Result<()>;
    /// Clears every parameter's `.grad` (sets it to None).
    fn zero_grad(&mut self) {
        for g in self.param_groups() {
            for p in &g.params {
                p.zero_grad();
            }
        }
    }
    /// The parameter groups with their hyperparameters.
    fn param_groups(&self) -> &[ParamGroup];
    /// Sets one hyperparameter of one group (the name must be one the optimizer uses).
    fn set_option(&mut self, group: usize, name: &str, value: f64) -> Result<()>;
    /// Sets a group's learning rate.
    fn set_lr(&mut self, group: usize, lr: f64) -> Result<()> {
        self.set_option(group, "lr", lr)
    }
    /// A group's learning rate (None for a group index out of range).
    fn lr(&self, group: usize) -> Option<f64> {
        self.param_groups().get(group).and_then(|g| g.get("lr"))
    }
    /// Hyperparameters, step counts and copies of the state tensors (a snapshot:
    /// later steps do not change it).
    fn state_dict(&self) -> Result<OptimState>;
    /// Restores a `state_dict`; errors (leaving the optimizer unchanged) when
    /// the group or parameter counts, option names or tensor shapes differ.
    fn load_state_dict(&mut self, state: &OptimState) -> Result<()>;
}
