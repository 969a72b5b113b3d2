//! Normalisation and regularisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm,
//! InstanceNorm1d/2d, RMSNorm, Dropout.

use super::{py_bool, py_float, py_tuple, Core, Layer, Param};
use crate::autograd::no_grad;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Options of batch norm (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct BatchNormConfig {
    pub eps: f64,
    /// Weight of the new batch in the running averages.
    pub momentum: f64,
    /// Learnable per-channel scale (ones) and shift (zeros).
    pub affine: bool,
    /// Keep running statistics (used in eval mode); without them eval uses batch statistics.
    pub track_running_stats: bool,
}

impl Default for BatchNormConfig {
    fn default() -> Self {
        BatchNormConfig { eps: 1e-5, momentum: 0.1, affine: true, track_running_stats: true }
    }
}

/// Batch normalisation over the channel axis 1. `D = 1` takes `[N, C]` or
/// `[N, C, L]` (BatchNorm1d), `D = 2` takes `[N, C, H, W]` (BatchNorm2d).
/// Training normalises with the batch mean and biased variance and updates
/// `running_mean` / `running_var` (with the unbiased variance) and
/// `num_batches_tracked` in place; eval normalises with the running statistics.
pub struct BatchNorm<const D: usize> {
    core: Core,
    pub num_features: usize,
    pub config: BatchNormConfig,
    pub weight: Option<Param>,
    pub bias: Option<Param>,
    pub running_mean: Option<Param>,
    pub running_var: Option<Param>,
    pub num_batches_tracked: Option<Param>,
}

pub type BatchNorm1d = BatchNorm<1>;
pub type BatchNorm2d = BatchNorm<2>;

impl<const D: usize> BatchNorm<D> {
    pub fn new(num_features: usize) -> Result<Self> {
        Self::with_config(num_features, BatchNormConfig::default())
    }
    /// PyTorch's class name for this rank.
    fn name() -> &'static str {
        if D == 1 {
            "BatchNorm1d"
        } else {
            "BatchNorm2d"
        }
    }
    pub fn with_config(num_features: usize, config: BatchNormConfig) -> Result<Self> {
        let op = Self::name();
        if num_features == 0 {
            return Err(Error::value(op, "num_features must be positive, got 0"));
        }
        // eps keeps the division away from zero: 0, negative or non-finite
        // values give infinities or NaN for a constant channel.
        if !(config.eps > 0.0 && config.eps.is_finite()) {
            return Err(Error::value(op, format!("eps must be positive and finite, got {}", config.eps)));
        }
        if !(0.0..=1.0).contains(&config.momentum) {
            return Err(Error::value(op, format!("momentum must be in [0, 1], got {}", config.momentum)));
        }
        let c = [num_features];
        let (weight, bias) = if config.affine {
            (
                Some(Param::parameter(Tensor::ones(&c, DType::F32)?)?),
                Some(Param::parameter(Tensor::zeros(&c, DType::F32)?)?),
            )
        } else {
            (None, None)
        };
        let track = config.track_running_stats;
        let buf = |t: Tensor| track.then(|| Param::new(t));
        Ok(BatchNorm {
            core: Core::default(),
            num_features,
            config,
            weight,
            bias,
            running_mean: buf(Tensor::zeros(&c, DType::F32)?),
            running_var: buf(Tensor::ones(&c, DType::F32)?),
            num_batches_tracked: buf(Tensor::zeros(&[], DType::I32)?),
        })
    }

    fn check_input(&self, x: &Tensor) -> Result<()> {
        let ok_rank = if D == 1 { x.ndim() == 2 || x.ndim() == 3 } else { x.ndim() == 4 };
        if !ok_rank || x.shape()[1] != self.num_features {
            let want = if D == 1 { "[N, C] or [N, C, L]" } else { "[N, C, H, W]" };
            return Err(Error::shape(
                "BatchNorm",
                format!("expects {want} input with C = {}, got shape {:?}", self.num_features, x.shape()),
            ));
        }
        Ok(())
    }

    /// Updates the running statistics from the batch's mean and biased variance.
    fn update_running(&self, mean: &Tensor, var: &Tensor, count: usize) -> Result<()> {
        let (Some(rm), Some(rv), Some(nb)) = (&self.running_mean, &self.running_var, &self.num_batches_tracked) else {
            return Ok(());
        };
        let m = self.config.momentum;
        let c = [self.num_features];
        no_grad(|| -> Result<()> {
            let (rm, rv, nb) = (rm.get(), rv.get(), nb.get());
            let mean = mean.detach().reshape_dims(&c)?;
            let unbiased = var.detach().reshape_dims(&c)?.mul_scalar(count as f64 / (count - 1) as f64)?;
            rm.copy_(&rm.mul_scalar(1.0 - m)?.add(&mean.mul_scalar(m)?)?)?;
            rv.copy_(&rv.mul_scalar(1.0 - m)?.add(&unbiased.mul_scalar(m)?)?)?;
            nb.copy_(&nb.to_dtype(DType::F32)?.add_scalar(1.0)?)?;
            Ok(())
        })
    }
}

impl<const D: usize> Layer for BatchNorm<D> {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        self.check_input(x)?;
        let mut axes: Vec<isize> = vec![0];
        axes.extend(2..x.ndim() as isize);
        let mut pshape = vec![1usize; x.ndim()];
        pshape[1] = self.num_features;
        let use_batch = self.is_training() || self.running_mean.is_none();
        let (mean, var) = if use_batch {
            let count = x.numel() / self.num_features;
            if self.is_training() && count <= 1 {
                return Err(Error::value(
                    "BatchNorm",
                    format!("training needs more than 1 value per channel, got input shape {:?}", x.shape()),
                ));
            }
            let mean = x.mean(&axes, true)?;
            let var = x.var(&axes, 0.0, true)?;
            if self.is_training() {
                self.update_running(&mean, &var, count)?;
            }
            (mean, var)
        } else {
            let get = |p: &Option<Param>| -> Result<Tensor> {
                p.as_ref().map(|p| p.get()).ok_or_else(|| Error::value("BatchNorm", "no running statistics"))
            };
            (get(&self.running_mean)?.reshape_dims(&pshape)?, get(&self.running_var)?.reshape_dims(&pshape)?)
        };
        let mut y = x.sub(&mean)?.mul(&var.add_scalar(self.config.eps)?.rsqrt()?)?;
        if let Some(w) = &self.weight {
            y = y.mul(&w.get().reshape_dims(&pshape)?)?;
        }
        if let Some(b) = &self.bias {
            y = y.add(&b.get().reshape_dims(&pshape)?)?;
        }
        Ok(y)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        let mut v = Vec::new();
        v.extend(self.weight.iter().map(|p| ("weight".to_string(), p.clone())));
        v.extend(self.bias.iter().map(|p| ("bias".to_string(), p.clone())));
        v
    }
    fn local_buffers(&self) -> Vec<(String, Param)> {
        let mut v = Vec::new();
        v.extend(self.running_mean.iter().map(|p| ("running_mean".to_string(), p.clone())));
        v.extend(self.running_var.iter().map(|p| ("running_var".to_string(), p.clone())));
        v.extend(self.num_batches_tracked.iter().map(|p| ("num_batches_tracked".to_string(), p.clone())));
        v
    }
    fn type_name(&self) -> &'static str {
        Self::name()
    }
    fn extra_repr(&self) -> String {
        let c = &self.config;
        format!(
            "{}, eps={}, momentum={}, affine={}, track_running_stats={}",
            self.num_features,
            py_float(c.eps),
            py_float(c.momentum),
            py_bool(c.affine),
            py_bool(c.track_running_stats)
        )
    }
}

/// Layer normalisation over the trailing `normalized_shape` axes, with an
/// elementwise affine (weight ones, bias zeros) by default.
pub struct LayerNorm {
    core: Core,
    pub normalized_shape: Vec<usize>,
    pub eps: f64,
    pub weight: Option<Param>,
    pub bias: Option<Param>,
}

impl LayerNorm {
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        LayerNorm::with_options(normalized_shape, 1e-5, true)
    }
    pub fn with_options(normalized_shape: &[usize], eps: f64, elementwise_affine: bool) -> Result<LayerNorm> {
        if normalized_shape.is_empty() || normalized_shape.contains(&0) {
            return Err(Error::value(
                "LayerNorm",
                format!("normalized_shape must be non-empty with positive sizes, got {normalized_shape:?}"),
            ));
        }
        if !(eps > 0.0 && eps.is_finite()) {
            return Err(Error::value("LayerNorm", format!("eps must be positive and finite, got {eps}")));
        }
        let (weight, bias) = if elementwise_affine {
            (
                Some(Param::parameter(Tensor::ones(normalized_shape, DType::F32)?)?),
                Some(Param::parameter(Tensor::zeros(normalized_shape, DType::F32)?)?),
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm { core: Core::default(), normalized_shape: normalized_shape.to_vec(), eps, weight, bias })
    }
}

impl Layer for LayerNorm {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let w = self.weight.as_ref().map(|p| p.get());
        let b = self.bias.as_ref().map(|p| p.get());
        x.layer_norm(&self.normalized_shape, w.as_ref(), b.as_ref(), self.eps)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        let mut v = Vec::new();
        v.extend(self.weight.iter().map(|p| ("weight".to_string(), p.clone())));
        v.extend(self.bias.iter().map(|p| ("bias".to_string(), p.clone())));
        v
    }
    fn type_name(&self) -> &'static str {
        "LayerNorm"
    }
    fn extra_repr(&self) -> String {
        format!(
            "{}, eps={}, elementwise_affine={}",
            py_tuple(&self.normalized_shape),
            py_float(self.eps),
            py_bool(self.weight.is_some())
        )
    }
}

/// Zeroes elements with probability `p` (scaling the rest by 1/(1-p)) in
/// training mode; the identity in eval mode.
pub struct Dropout {
    core: Core,
    pub p: f64,
}

impl Dropout {
    pub fn new(p: f64) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value("Dropout", format!("probability p must be in [0, 1], got {p}")));
        }
        Ok(Dropout { core: Core::default(), p })
    }
}

impl Layer for Dropout {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.dropout(self.p, self.is_training())
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Dropout"
    }
    /// PyTorch's without `inplace` (skiff's dropout is never in place).
    fn extra_repr(&self) -> String {
        format!("p={}", py_float(self.p))
    }
}

/// Group normalisation of `[N, C, *]` (PyTorch's `nn.GroupNorm`): weight
/// and bias `[C]` (ones and zeros) when `affine`.
pub struct GroupNorm {
    core: Core,
    pub num_groups: usize,
    pub num_channels: usize,
    pub eps: f64,
    pub weight: Option<Param>,
    pub bias: Option<Param>,
}

impl GroupNorm {
    pub fn new(num_groups: usize, num_channels: usize) -> Result<GroupNorm> {
        GroupNorm::with_options(num_groups, num_channels, 1e-5, true)
    }
    pub fn with_options(num_groups: usize, num_channels: usize, eps: f64, affine: bool) -> Result<GroupNorm> {
        if num_groups == 0 || num_channels % num_groups != 0 {
            return Err(Error::value(
                "GroupNorm",
                format!("num_groups {num_groups} must divide num_channels {num_channels}"),
            ));
        }
        check_eps("GroupNorm", eps)?;
        let (weight, bias) = affine_params(&[num_channels], affine)?;
        Ok(GroupNorm { core: Core::default(), num_groups, num_channels, eps, weight, bias })
    }
}

impl Layer for GroupNorm {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let (w, b) = (self.weight.as_ref().map(|p| p.get()), self.bias.as_ref().map(|p| p.get()));
        x.group_norm(self.num_groups, w.as_ref(), b.as_ref(), self.eps)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        named_affine(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        "GroupNorm"
    }
    fn extra_repr(&self) -> String {
        let affine = py_bool(self.weight.is_some());
        format!(
            "{}, {}, eps={}, affine={affine}, bias={affine}",
            self.num_groups,
            self.num_channels,
            py_float(self.eps)
        )
    }
}

/// Instance normalisation (PyTorch's `nn.InstanceNorm1d` / `2d` without
/// running statistics): each (sample, channel) over its positions; weight
/// and bias `[C]` when `affine` (off by default, as PyTorch). An unbatched
/// input (`[C, L]` for 1d, `[C, H, W]` for 2d) is one sample.
pub struct InstanceNorm {
    core: Core,
    name: &'static str,
    spatial: usize,
    pub num_features: usize,
    pub eps: f64,
    pub weight: Option<Param>,
    pub bias: Option<Param>,
}

impl InstanceNorm {
    /// `InstanceNorm1d(num_features)` for `[N, C, L]`.
    pub fn new_1d(num_features: usize, eps: f64, affine: bool) -> Result<InstanceNorm> {
        InstanceNorm::build("InstanceNorm1d", 1, num_features, eps, affine)
    }
    /// `InstanceNorm2d(num_features)` for `[N, C, H, W]`.
    pub fn new_2d(num_features: usize, eps: f64, affine: bool) -> Result<InstanceNorm> {
        InstanceNorm::build("InstanceNorm2d", 2, num_features, eps, affine)
    }
    fn build(name: &'static str, spatial: usize, num_features: usize, eps: f64, affine: bool) -> Result<InstanceNorm> {
        if num_features == 0 {
            return Err(Error::value(name, "num_features must be positive, got 0"));
        }
        check_eps(name, eps)?;
        let (weight, bias) = affine_params(&[num_features], affine)?;
        Ok(InstanceNorm { core: Core::default(), name, spatial, num_features, eps, weight, bias })
    }
}

impl Layer for InstanceNorm {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let batched = x.ndim() == self.spatial + 2;
        if !batched && x.ndim() != self.spatial + 1 {
            return Err(Error::shape(
                self.name,
                format!("expects {} or {} dims, got shape {:?}", self.spatial + 2, self.spatial + 1, x.shape()),
            ));
        }
        let c = x.shape()[usize::from(batched)];
        if c != self.num_features {
            return Err(Error::shape(
                self.name,
                format!("expects {} channels, got shape {:?}", self.num_features, x.shape()),
            ));
        }
        let (w, b) = (self.weight.as_ref().map(|p| p.get()), self.bias.as_ref().map(|p| p.get()));
        let xb = if batched { x.clone() } else { x.unsqueeze(0)? };
        let y = xb.instance_norm(w.as_ref(), b.as_ref(), self.eps)?;
        if batched {
            Ok(y)
        } else {
            y.squeeze(Some(0))
        }
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        named_affine(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        self.name
    }
    fn extra_repr(&self) -> String {
        let affine = py_bool(self.weight.is_some());
        format!(
            "{}, eps={}, momentum=0.1, affine={affine}, bias={affine}, track_running_stats=False",
            self.num_features,
            py_float(self.eps),
        )
    }
}

/// RMS normalisation over the trailing `normalized_shape` axes (PyTorch's
/// `nn.RMSNorm`): weight of that shape (ones) when `elementwise_affine`;
/// `eps` None is the input dtype's machine epsilon.
pub struct RMSNorm {
    core: Core,
    pub normalized_shape: Vec<usize>,
    pub eps: Option<f64>,
    pub weight: Option<Param>,
}

impl RMSNorm {
    pub fn new(normalized_shape: &[usize]) -> Result<RMSNorm> {
        RMSNorm::with_options(normalized_shape, None, true)
    }
    pub fn with_options(normalized_shape: &[usize], eps: Option<f64>, elementwise_affine: bool) -> Result<RMSNorm> {
        if normalized_shape.is_empty() || normalized_shape.contains(&0) {
            return Err(Error::value(
                "RMSNorm",
                format!("normalized_shape must be non-empty with positive sizes, got {normalized_shape:?}"),
            ));
        }
        if let Some(e) = eps {
            check_eps("RMSNorm", e)?;
        }
        let weight = if elementwise_affine {
            Some(Param::parameter(Tensor::ones(normalized_shape, DType::F32)?)?)
        } else {
            None
        };
        Ok(RMSNorm { core: Core::default(), normalized_shape: normalized_shape.to_vec(), eps, weight })
    }
}

impl Layer for RMSNorm {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let w = self.weight.as_ref().map(|p| p.get());
        x.rms_norm(&self.normalized_shape, w.as_ref(), self.eps)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        self.weight.iter().map(|p| ("weight".to_string(), p.clone())).collect()
    }
    fn type_name(&self) -> &'static str {
        "RMSNorm"
    }
    fn extra_repr(&self) -> String {
        let eps = self.eps.map_or("None".to_string(), py_float);
        format!(
            "{}, eps={eps}, elementwise_affine={}",
            py_tuple(&self.normalized_shape),
            py_bool(self.weight.is_some())
        )
    }
}

fn check_eps(op: &'static str, eps: f64) -> Result<()> {
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(Error::value(op, format!("eps must be positive and finite, got {eps}")));
    }
    Ok(())
}

/// Weight (ones) and bias (zeros) of `shape` when `affine`.
fn affine_params(shape: &[usize], affine: bool) -> Result<(Option<Param>, Option<Param>)> {
    if !affine {
        return Ok((None, None));
    }
    Ok((
        Some(Param::parameter(Tensor::ones(shape, DType::F32)?)?),
        Some(Param::parameter(Tensor::zeros(shape, DType::F32)?)?),
    ))
}

fn named_affine(w: &Option<Param>, b: &Option<Param>) -> Vec<(String, Param)> {
    let mut v: Vec<(String, Param)> = w.iter().map(|p| ("weight".to_string(), p.clone())).collect();
    v.extend(b.iter().map(|p| ("bias".to_string(), p.clone())));
    v
}
