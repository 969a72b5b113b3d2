//! Parameter-free activation layers.

use super::{py_float, Core, Layer, Param};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

macro_rules! activation {
    ($(#[$doc:meta])* $Name:ident, |$s:ident, $x:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $Name {
            core: Core,
        }
        impl $Name {
            pub fn new() -> $Name {
                $Name::default()
            }
        }
        impl Layer for $Name {
            fn forward_impl(&self, $x: &Tensor) -> Result<Tensor> {
                let $s = self;
                let _ = $s;
                $body
            }
            fn core(&self) -> &Core {
                &self.core
            }
            fn type_name(&self) -> &'static str {
                stringify!($Name)
            }
        }
    };
}

activation!(
    /// max(x, 0).
    ReLU, |s, x| x.relu()
);
activation!(
    /// x * sigmoid(x).
    SiLU, |s, x| x.silu()
);
activation!(Tanh, |s, x| x.tanh());
activation!(Sigmoid, |s, x| x.sigmoid());
activation!(
    /// SELU: scale * elu(x, alpha) with alpha = 1.6733, scale = 1.0507.
    SELU, |s, x| x.selu()
);
activation!(
    /// x * tanh(softplus(x)).
    Mish, |s, x| x.mish()
);
activation!(
    /// x * relu6(x + 3) / 6.
    Hardswish, |s, x| x.hardswish()
);
activation!(
    /// relu6(x + 3) / 6.
    Hardsigmoid, |s, x| x.hardsigmoid()
);

/// `x` where positive, `alpha * (e^x - 1)` elsewhere (default alpha 1).
pub struct ELU {
    core: Core,
    pub alpha: f64,
}
impl ELU {
    pub fn new(alpha: f64) -> ELU {
        ELU { core: Core::default(), alpha }
    }
}
impl Default for ELU {
    fn default() -> Self {
        ELU::new(1.0)
    }
}
impl Layer for ELU {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.elu(self.alpha)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "ELU"
    }
    fn extra_repr(&self) -> String {
        format!("alpha={}", py_float(self.alpha))
    }
}

/// `x` where positive, `weight * x` elsewhere, with a learned slope: one
/// for all channels, or one per channel (axis 1), as PyTorch's `PReLU`
/// (parameter `weight`, initialised to `init`, 0.25 by default).
pub struct PReLU {
    core: Core,
    pub weight: Param,
}
impl PReLU {
    pub fn new(num_parameters: usize, init: f64) -> Result<PReLU> {
        if num_parameters == 0 {
            return Err(Error::value("PReLU", "num_parameters must be at least 1, got 0"));
        }
        if !init.is_finite() {
            return Err(Error::value("PReLU", format!("init must be a finite number, got {init}")));
        }
        let weight = Param::parameter(Tensor::full(&[num_parameters], init, DType::F32)?)?;
        Ok(PReLU { core: Core::default(), weight })
    }
}
impl Layer for PReLU {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.prelu(&self.weight.get())
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        vec![("weight".to_string(), self.weight.clone())]
    }
    fn type_name(&self) -> &'static str {
        "PReLU"
    }
    fn extra_repr(&self) -> String {
        format!("num_parameters={}", self.weight.get().numel())
    }
}

/// `x` where positive, `slope * x` elsewhere (default slope 0.01).
pub struct LeakyReLU {
    core: Core,
    pub negative_slope: f64,
}
impl LeakyReLU {
    pub fn new(negative_slope: f64) -> LeakyReLU {
        LeakyReLU { core: Core::default(), negative_slope }
    }
}
impl Default for LeakyReLU {
    fn default() -> Self {
        LeakyReLU::new(0.01)
    }
}
impl Layer for LeakyReLU {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.leaky_relu(self.negative_slope)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "LeakyReLU"
    }
    fn extra_repr(&self) -> String {
        format!("negative_slope={}", py_float(self.negative_slope))
    }
}

/// Which GELU formula (PyTorch's `approximate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeluApproximate {
    /// The exact x * Phi(x) with erf (PyTorch's default).
    #[default]
    None,
    /// The tanh approximation.
    Tanh,
}

/// GELU, exact by default.
#[derive(Default)]
pub struct GELU {
    core: Core,
    pub approximate: GeluApproximate,
}
impl GELU {
    pub fn new() -> GELU {
        GELU::default()
    }
    pub fn with_approximate(approximate: GeluApproximate) -> GELU {
        GELU { core: Core::default(), approximate }
    }
}
impl Layer for GELU {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        match self.approximate {
            GeluApproximate::None => x.gelu_erf(),
            GeluApproximate::Tanh => x.gelu(),
        }
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "GELU"
    }
    fn extra_repr(&self) -> String {
        let name = match self.approximate {
            GeluApproximate::None => "none",
            GeluApproximate::Tanh => "tanh",
        };
        format!("approximate='{name}'")
    }
}

/// Softmax along `axis`.
pub struct Softmax {
    core: Core,
    pub axis: isize,
}
impl Softmax {
    pub fn new(axis: isize) -> Softmax {
        Softmax { core: Core::default(), axis }
    }
}
impl Layer for Softmax {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.softmax(self.axis)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Softmax"
    }
    fn extra_repr(&self) -> String {
        format!("dim={}", self.axis)
    }
}
