//! Loss layers: thin structs over the composite loss functions of `Tensor`,
//! each with `forward(input, target)`.
//!
//! ```
//! use skiff::nn::MSELoss;
//! use skiff::{Reduction, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let pred = Tensor::from_vec(vec![1.0f32, 2.0, 4.0, 0.0], &[4])?;
//! let target = Tensor::from_vec(vec![1.0f32, 0.0, 1.0, 1.0], &[4])?;
//! // Squared errors 0, 4, 9, 1.
//! assert_eq!(MSELoss::new().forward(&pred, &target)?.item()?, 3.5);
//! assert_eq!(MSELoss::with_reduction(Reduction::Sum).forward(&pred, &target)?.item()?, 14.0);
//! # Ok(())
//! # }
//! ```

use crate::error::Result;
use crate::ops::composite::Reduction;
use crate::tensor::Tensor;

/// Cross-entropy of `[N, C]` logits against `[N]` i32 labels (optional label smoothing).
///
/// ```
/// use skiff::nn::CrossEntropyLoss;
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// // Equal logits: every class has probability 1/4, so the loss is ln 4.
/// let logits = Tensor::zeros(&[2, 4], DType::F32)?.requires_grad_(true)?;
/// let labels = Tensor::from_vec(vec![1i32, 3], &[2])?;
/// let loss = CrossEntropyLoss::new().forward(&logits, &labels)?;
/// assert!((loss.item()? - 4f64.ln()).abs() < 1e-6);
///
/// // The gradient is (softmax - one_hot) / N.
/// loss.backward()?;
/// let g = logits.grad().unwrap().to_vec::<f32>()?;
/// assert!((g[0] - 0.125).abs() < 1e-6 && (g[1] + 0.375).abs() < 1e-6);
///
/// // A label outside 0..C is an error, not a wrong loss.
/// let bad = Tensor::from_vec(vec![1i32, 4], &[2])?;
/// assert!(CrossEntropyLoss::new().forward(&logits, &bad).is_err());
/// # Ok(())
/// # }
/// ```
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
