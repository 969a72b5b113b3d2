//! Layers with weights: Linear, Conv2d, Embedding (PyTorch's initialisations).

use super::init::{self, FanMode, Nonlinearity};
use super::{py_bool, py_pair, Core, Layer, Param};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// PyTorch's default for Linear/Conv weights and biases:
/// kaiming_uniform(a = sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both.
pub(super) fn default_weight_and_bias(
    op: &'static str,
    wshape: &[usize],
    bias: Option<usize>,
) -> Result<(Param, Option<Param>)> {
    if wshape.contains(&0) {
        return Err(Error::value(op, format!("every size must be positive, got weight shape {wshape:?}")));
    }
    let w = Tensor::zeros(wshape, DType::F32)?;
    init::kaiming_uniform_(&w, FanMode::FanIn, Nonlinearity::LeakyRelu(5f64.sqrt()))?;
    let bias = match bias {
        Some(n) => {
            let (fan_in, _) = init::fans(wshape)?;
            let bound = 1.0 / (fan_in as f64).sqrt();
            Some(Param::parameter(Tensor::uniform(&[n], -bound, bound, DType::F32)?)?)
        }
        None => None,
    };
    Ok((Param::parameter(w)?, bias))
}

pub(super) fn weight_and_bias(w: &Param, b: &Option<Param>) -> Vec<(String, Param)> {
    let mut v = vec![("weight".to_string(), w.clone())];
    v.extend(b.iter().map(|b| ("bias".to_string(), b.clone())));
    v
}

/// `y = x W^T + b` over the last axis: weight `[out, in]`, bias `[out]`.
///
/// ```
/// use skiff::nn::{Layer, Linear};
/// use skiff::Tensor;
///
/// # fn main() -> skiff::Result<()> {
/// let fc = Linear::new(3, 2)?; // PyTorch's initialisation
/// assert_eq!(fc.weight.get().shape(), &[2, 3]);
///
/// // Known weights, loaded by PyTorch's names.
/// let w = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0, 1.0, 1.0], &[2, 3])?;
/// let b = Tensor::from_vec(vec![0.5f32, -0.5], &[2])?;
/// fc.load_state_dict(&[("weight".into(), w), ("bias".into(), b)], true)?;
///
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3])?;
/// assert_eq!(fc.forward(&x)?.to_vec::<f32>()?, vec![1.5, 4.5]);
/// assert!(fc.forward(&Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?).is_err());
/// # Ok(())
/// # }
/// ```
pub struct Linear {
    core: Core,
    pub weight: Param,
    pub bias: Option<Param>,
}

impl Linear {
    /// With a bias.
    pub fn new(in_features: usize, out_features: usize) -> Result<Linear> {
        Linear::with_bias(in_features, out_features, true)
    }
    pub fn with_bias(in_features: usize, out_features: usize, bias: bool) -> Result<Linear> {
        if in_features == 0 || out_features == 0 {
            return Err(Error::value(
                "Linear",
                format!("in_features and out_features must be positive, got {in_features} and {out_features}"),
            ));
        }
        let (weight, bias) =
            default_weight_and_bias("Linear", &[out_features, in_features], bias.then_some(out_features))?;
        Ok(Linear { core: Core::default(), weight, bias })
    }
}

impl Layer for Linear {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let w = self.weight.get();
        let inf = w.shape()[1];
        if x.ndim() == 0 || x.shape()[x.ndim() - 1] != inf {
            return Err(Error::shape(
                "Linear",
                format!("expects input with last dim {inf} (weight {:?}), got shape {:?}", w.shape(), x.shape()),
            ));
        }
        let y = x.matmul(&w.transpose(0, 1)?)?;
        match &self.bias {
            // Under autocast the bias joins the f16 product in f16, as PyTorch's linear does.
            Some(b) => y.add(&crate::amp::like(&y, &b.get())?),
            None => Ok(y),
        }
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        "Linear"
    }
    fn extra_repr(&self) -> String {
        let w = self.weight.get();
        let (out_features, in_features) = (w.shape()[0], w.shape()[1]);
        format!("in_features={in_features}, out_features={out_features}, bias={}", py_bool(self.bias.is_some()))
    }
}

/// Options of `Conv2d` (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct Conv2dConfig {
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
    pub bias: bool,
}

impl Default for Conv2dConfig {
    fn default() -> Self {
        Conv2dConfig { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1, bias: true }
    }
}

/// 2-D convolution of `[N, C, H, W]` inputs: weight `[out, in/groups, kh, kw]`, bias `[out]`.
///
/// ```
/// use skiff::nn::{Conv2d, Conv2dConfig, Layer};
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let same = Conv2d::with_config(1, 4, [3, 3], Conv2dConfig { padding: [1, 1], ..Default::default() })?;
/// let down = Conv2d::with_config(4, 8, [3, 3], Conv2dConfig { stride: [2, 2], ..Default::default() })?;
/// assert_eq!(same.weight.get().shape(), &[4, 1, 3, 3]);
///
/// let x = Tensor::randn(&[2, 1, 28, 28], DType::F32)?;
/// let h = same.forward(&x)?;
/// assert_eq!(h.shape(), &[2, 4, 28, 28]);
/// assert_eq!(down.forward(&h)?.shape(), &[2, 8, 13, 13]); // (28 - 3) / 2 + 1
/// assert!(down.forward(&x).is_err()); // 1 channel where 4 are expected
/// # Ok(())
/// # }
/// ```
pub struct Conv2d {
    core: Core,
    pub weight: Param,
    pub bias: Option<Param>,
    pub config: Conv2dConfig,
}

impl Conv2d {
    /// Stride 1, no padding, bias.
    pub fn new(in_channels: usize, out_channels: usize, kernel: [usize; 2]) -> Result<Conv2d> {
        Conv2d::with_config(in_channels, out_channels, kernel, Conv2dConfig::default())
    }
    /// Refuses what PyTorch's `nn.Conv2d` refuses when it is built: zero
    /// channels, kernel, stride or dilation, and groups that do not divide
    /// both channel counts. (Whether the kernel fits the padded input is
    /// known only per input: `conv2d` checks it.)
    pub fn with_config(in_channels: usize, out_channels: usize, kernel: [usize; 2], c: Conv2dConfig) -> Result<Conv2d> {
        const OP: &str = "Conv2d";
        if in_channels == 0 || out_channels == 0 {
            return Err(Error::value(
                OP,
                format!("in_channels and out_channels must be positive, got {in_channels} and {out_channels}"),
            ));
        }
        for (what, v) in [("kernel_size", kernel), ("stride", c.stride), ("dilation", c.dilation)] {
            if v.contains(&0) {
                return Err(Error::value(OP, format!("{what} must be at least 1 in both dims, got {v:?}")));
            }
        }
        if c.groups == 0 || in_channels % c.groups != 0 || out_channels % c.groups != 0 {
            return Err(Error::value(
                OP,
                format!("groups {} must divide in_channels {in_channels} and out_channels {out_channels}", c.groups),
            ));
        }
        let wshape = [out_channels, in_channels / c.groups, kernel[0], kernel[1]];
        let (weight, bias) = default_weight_and_bias("Conv2d", &wshape, c.bias.then_some(out_channels))?;
        Ok(Conv2d { core: Core::default(), weight, bias, config: c })
    }
}

impl Layer for Conv2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let c = &self.config;
        let b = self.bias.as_ref().map(|b| b.get());
        x.conv2d(&self.weight.get(), b.as_ref(), c.stride, c.padding, c.dilation, c.groups)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        "Conv2d"
    }
    /// PyTorch's: the settings that differ from their defaults after the sizes.
    fn extra_repr(&self) -> String {
        let (c, w) = (&self.config, self.weight.get());
        let (out_channels, in_channels) = (w.shape()[0], w.shape()[1] * c.groups);
        let kernel = [w.shape()[2], w.shape()[3]];
        let mut s =
            format!("{in_channels}, {out_channels}, kernel_size={}, stride={}", py_pair(kernel), py_pair(c.stride));
        if c.padding != [0, 0] {
            s += &format!(", padding={}", py_pair(c.padding));
        }
        if c.dilation != [1, 1] {
            s += &format!(", dilation={}", py_pair(c.dilation));
        }
        if c.groups != 1 {
            s += &format!(", groups={}", c.groups);
        }
        if self.bias.is_none() {
            s += ", bias=False";
        }
        s
    }
}

/// A lookup table `[num_embeddings, dim]` initialised N(0, 1); the input is an
/// i32 index tensor of any shape, the output has one more axis of size `dim`.
pub struct Embedding {
    core: Core,
    pub weight: Param,
}

impl Embedding {
    pub fn new(num_embeddings: usize, dim: usize) -> Result<Embedding> {
        if num_embeddings == 0 || dim == 0 {
            return Err(Error::value("Embedding", format!("sizes must be positive, got [{num_embeddings}, {dim}]")));
        }
        let weight = Param::parameter(Tensor::randn(&[num_embeddings, dim], DType::F32)?)?;
        Ok(Embedding { core: Core::default(), weight })
    }
}

impl Layer for Embedding {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        self.weight.get().embedding(x)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        vec![("weight".to_string(), self.weight.clone())]
    }
    fn type_name(&self) -> &'static str {
        "Embedding"
    }
    fn extra_repr(&self) -> String {
        let w = self.weight.get();
        format!("{}, {}", w.shape()[0], w.shape()[1])
    }
}
