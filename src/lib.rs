//! skiff: an imperative (define-by-run) deep-learning runtime.

pub mod autograd;
pub mod backend;
pub mod device;
pub mod dtype;
pub mod error;
pub mod ops;
pub mod random;
pub mod shape;
pub mod tensor;

pub use autograd::{enable_grad, grad, no_grad, BackwardOptions, Function, FunctionCtx, GradOptions};
pub use device::Device;
pub use dtype::DType;
pub use error::{Error, Result};
pub use random::manual_seed;
pub use tensor::Tensor;
