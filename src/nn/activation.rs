//! Parameter-free activation layers.

use super::{py_float, Core, Layer};
use crate::error::Result;
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
