//! Initialisers (PyTorch's `torch.nn.init`). Each fills a tensor in place
//! under `no_grad` with values drawn on the cpu from skiff's seeded global
//! generator (`manual_seed`), then copied to the tensor's device and dtype.

use crate::autograd::no_grad;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Which fan Kaiming initialisation preserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    FanIn,
    FanOut,
}

/// The nonlinearity a gain is computed for (PyTorch's `calculate_gain`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nonlinearity {
    Linear,
    Sigmoid,
    Tanh,
    Relu,
    /// With its negative slope.
    LeakyRelu(f64),
}

/// The recommended gain: 1 for linear and sigmoid, 5/3 for tanh, sqrt(2) for
/// relu, sqrt(2 / (1 + slope^2)) for leaky relu.
pub fn calculate_gain(nl: Nonlinearity) -> f64 {
    match nl {
        Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f64.sqrt(),
        Nonlinearity::LeakyRelu(s) => (2.0 / (1.0 + s * s)).sqrt(),
    }
}

/// (fan_in, fan_out) of a weight of shape [out, in, *receptive]: in * prod(receptive)
/// and out * prod(receptive). Needs at least 2 dims.
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    fans_for("fans", shape)
}

/// `fans`, with errors naming the initialiser `op` that needed them.
fn fans_for(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::shape(op, format!("fan in/out needs a tensor of at least 2 dims, got shape {shape:?}")));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// Copies host-drawn f64 values into `t` (cast first: f64 cannot go to a GPU).
fn write(t: &Tensor, values: Tensor) -> Result<()> {
    no_grad(|| t.copy_(&values.to_dtype(t.dtype())?)).map(|_| ())
}

/// Sets every element to `value`.
pub fn constant_(t: &Tensor, value: f64) -> Result<()> {
    no_grad(|| t.fill_(value)).map(|_| ())
}
/// Uniform samples in [lo, hi).
pub fn uniform_(t: &Tensor, lo: f64, hi: f64) -> Result<()> {
    if !lo.is_finite() || !hi.is_finite() || lo > hi {
        return Err(Error::value("uniform_", format!("needs finite lo <= hi, got [{lo}, {hi})")));
    }
    write(t, Tensor::uniform(t.shape(), lo, hi, DType::F64)?)
}
/// Normal samples with `mean` and `std`.
pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<()> {
    if !mean.is_finite() || !std.is_finite() || std < 0.0 {
        return Err(Error::value("normal_", format!("needs a finite mean and std >= 0, got mean {mean}, std {std}")));
    }
    let z = Tensor::randn(t.shape(), DType::F64)?;
    write(t, z.mul_scalar(std)?.add_scalar(mean)?)
}
/// Glorot uniform: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
pub fn xavier_uniform_(t: &Tensor, gain: f64) -> Result<()> {
    let (fi, fo) = fans_for("xavier_uniform_", t.shape())?;
    let b = gain * (6.0 / (fi + fo).max(1) as f64).sqrt();
    uniform_(t, -b, b)
}
/// Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
pub fn xavier_normal_(t: &Tensor, gain: f64) -> Result<()> {
    let (fi, fo) = fans_for("xavier_normal_", t.shape())?;
    normal_(t, 0.0, gain * (2.0 / (fi + fo).max(1) as f64).sqrt())
}

fn kaiming_std(op: &'static str, t: &Tensor, mode: FanMode, nl: Nonlinearity) -> Result<f64> {
    let (fi, fo) = fans_for(op, t.shape())?;
    let fan = match mode {
        FanMode::FanIn => fi,
        FanMode::FanOut => fo,
    };
    Ok(calculate_gain(nl) / (fan.max(1) as f64).sqrt())
}
/// He uniform: U(-b, b) with b = gain * sqrt(3 / fan). PyTorch's layer default
/// is `kaiming_uniform_(w, FanIn, LeakyRelu(sqrt(5)))`, i.e. b = 1 / sqrt(fan_in).
pub fn kaiming_uniform_(t: &Tensor, mode: FanMode, nl: Nonlinearity) -> Result<()> {
    let b = 3f64.sqrt() * kaiming_std("kaiming_uniform_", t, mode, nl)?;
    uniform_(t, -b, b)
}
/// He normal: N(0, std^2) with std = gain / sqrt(fan).
pub fn kaiming_normal_(t: &Tensor, mode: FanMode, nl: Nonlinearity) -> Result<()> {
    let std = kaiming_std("kaiming_normal_", t, mode, nl)?;
    normal_(t, 0.0, std)
}
