//! Loss layers: thin structs over the composite loss functions of `Tensor`,
//! each with `forward(input, target)`.

use crate::error::Result;
use crate::ops::composite::Reduction;
use crate::tensor::Tensor;

/// Cross-entropy of `[N, C]` logits against `[N]` i32 labels (optional label smoothing).
#[derive(Clone, Copy, Debug)]
pub struct CrossEntropyLoss {
    pub reduction: Reduction,
    pub label_smoothing: f64,
}
impl Default for CrossEntropyLoss {
    fn default() -> Self {
        CrossEntropyLoss { reduction: Reduction::Mean, label_smoothing: 0.0 }
    }
}
impl CrossEntropyLoss {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        input.cross_entropy(target, self.reduction, self.label_smoothing)
    }
}

macro_rules! simple_loss {
    ($(#[$doc:meta])* $Name:ident, $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $Name {
            pub reduction: Reduction,
        }
        impl Default for $Name {
            fn default() -> Self {
                $Name { reduction: Reduction::Mean }
            }
        }
        impl $Name {
            pub fn new() -> Self {
                Self::default()
            }
            pub fn with_reduction(reduction: Reduction) -> Self {
                $Name { reduction }
            }
            pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
                input.$method(target, self.reduction)
            }
        }
    };
}

simple_loss!(
    /// Negative log-likelihood of `[N, C]` log-probabilities at `[N]` i32 labels.
    NLLLoss, nll_loss
);
simple_loss!(
    /// (input - target)^2, reduced.
    MSELoss, mse_loss
);
simple_loss!(
    /// |input - target|, reduced.
    L1Loss, l1_loss
);
simple_loss!(
    /// Binary cross-entropy of logits against probabilities.
    BCEWithLogitsLoss, binary_cross_entropy_with_logits
);

impl CrossEntropyLoss {
    pub fn with_reduction(reduction: Reduction) -> Self {
        CrossEntropyLoss { reduction, ..Self::default() }
    }
}
