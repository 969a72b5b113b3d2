//! skiff: an imperative (define-by-run) deep-learning runtime.
//!
//! Every op runs as soon as it is called; when grad mode is on and an input
//! requires grad, the op also records a node, and `backward()` walks those
//! records in reverse. Ops come from one registry ([`ops`]), backward rules are
//! written with skiff's own differentiable ops (so gradients can be
//! differentiated again), and the kernels run on the cpu backend or, with the
//! `gpu` feature (on by default), on a WGSL/wgpu GPU backend (Vulkan, Metal,
//! DX12, or WebGPU in browsers). The same crate builds the npm package for
//! WebAssembly (feature `web`).
//!
//! # Where to start
//!
//! - [`Tensor`]: creation, ops, views, `backward`, reading values; its
//!   [`DType`] and [`Device`] (`Device::best()` and `tensor.to(&device)`).
//! - [`Error`]: what every fallible call returns, naming the op and the shapes.
//! - [`autograd`]: [`no_grad`], [`grad`] (with `create_graph` for higher
//!   derivatives), custom [`Function`]s, tensor hooks.
//! - [`nn`]: the [`Layer`](nn::Layer) trait and layers such as
//!   [`Linear`](nn::Linear), [`Conv2d`](nn::Conv2d) and
//!   [`Sequential`](nn::Sequential), losses such as
//!   [`CrossEntropyLoss`](nn::CrossEntropyLoss), initialisers.
//! - [`optim`]: the [`Optimizer`](optim::Optimizer) trait, [`Sgd`](optim::Sgd),
//!   [`Adam`](optim::Adam) and others, [learning-rate schedules](optim::schedule),
//!   [gradient clipping](optim::clip_grad_norm_).
//! - [`models`]: small standard models with PyTorch's parameter names, such
//!   as the MNIST CNN the benchmarks train ([`mnist_cnn`](models::mnist_cnn)).
//! - [`io`]: [safetensors](io::safetensors) state dicts and checkpoints,
//!   [`Dataset`](io::Dataset) and [`DataLoader`](io::DataLoader),
//!   [MNIST](io::Mnist).
//!
//! The crate's `examples/` train a CNN on MNIST (`mnist.rs`) and an MLP on
//! spirals (`train.rs`), and list the devices (`devices.rs`).
//!
//! # Gradients
//!
//! ```
//! use skiff::{grad, no_grad, DType, GradOptions, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! // A leaf that requires grad, and a scalar computed from it.
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
//! let y = x.mul(&x)?.mul(&x)?.sum_all()?; // sum(x^3)
//!
//! // dy/dx = 3x^2, kept in the graph (create_graph) so it can be differentiated again.
//! let opts = GradOptions { create_graph: true, ..Default::default() };
//! let dy = grad(&[y], &[x.clone()], None, opts)?.remove(0).unwrap();
//! assert_eq!(dy.to_vec::<f32>()?, vec![3.0, 12.0, 27.0]);
//!
//! // d/dx sum(3x^2) = 6x, accumulated into x.grad by backward().
//! dy.sum_all()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![6.0, 12.0, 18.0]);
//!
//! // Updates run outside the graph, in place.
//! no_grad(|| x.sub_(&x.grad().unwrap().mul_scalar(0.25)?))?;
//! assert_eq!(x.to_vec::<f32>()?, vec![-0.5, -1.0, -1.5]);
//!
//! // Matrix products, broadcasting and reductions.
//! let w = Tensor::full(&[3, 2], -1.0, DType::F32)?;
//! let out = x.unsqueeze(0)?.matmul(&w)?.relu()?.mean(&[], false)?; // mean(relu([3, 3]))
//! assert_eq!(out.item()?, 3.0);
//! # Ok(())
//! # }
//! ```
//!
//! # Training a model
//!
//! ```
//! use skiff::nn::{CrossEntropyLoss, Layer, Linear, ReLU, Sequential};
//! use skiff::optim::{Adam, AdamConfig, Optimizer};
//! use skiff::{manual_seed, no_grad, DType, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! manual_seed(0);
//! // XOR: no linear model separates the two classes.
//! let x = Tensor::from_vec(vec![0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[4, 2])?;
//! let y = Tensor::from_vec(vec![0i32, 1, 1, 0], &[4])?;
//!
//! let model = Sequential::new().push(Linear::new(2, 16)?).push(ReLU::new()).push(Linear::new(16, 2)?);
//! let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 0.05, ..Default::default() })?;
//! let loss_fn = CrossEntropyLoss::new();
//! for _ in 0..200 {
//!     opt.zero_grad();
//!     let loss = loss_fn.forward(&model.forward(&x)?, &y)?;
//!     loss.backward()?;
//!     opt.step()?;
//! }
//!
//! model.eval();
//! let predicted = no_grad(|| model.forward(&x)?.argmax(Some(1), false))?;
//! assert_eq!(predicted.to_vec::<i32>()?, vec![0, 1, 1, 0]);
//! # Ok(())
//! # }
//! ```

pub mod amp;
pub mod autograd;
pub mod backend;
pub mod custom;
pub mod determinism;
pub mod device;
pub mod dispatch;
#[cfg(all(feature = "distributed", not(target_arch = "wasm32")))]
pub mod distributed;
pub mod dtype;
pub mod error;
pub mod io;
pub mod jit;
pub mod kernel;
pub mod memory;
pub mod models;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod profile;
pub mod program;
pub mod random;
pub mod shape;
pub mod tensor;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
#[cfg(feature = "web")]
pub mod web;

pub use autograd::{enable_grad, grad, no_grad, BackwardOptions, Function, FunctionCtx, GradOptions};
pub use backend::empty_cache;
pub use determinism::{is_deterministic, set_deterministic};
pub use device::Device;
pub use dtype::DType;
pub use error::{Error, Result};
/// The f16 element type (from the `half` crate): `to_vec::<f16>()`, `from_vec(Vec<f16>, ..)`.
pub use half::f16;
pub use ops::composite::Reduction;
pub use ops::scatter::ScatterReduce;
#[cfg(not(target_arch = "wasm32"))]
pub use profile::profile;
pub use random::manual_seed;
pub use tensor::Tensor;
