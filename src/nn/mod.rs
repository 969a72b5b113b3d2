//! Layers (PyTorch's `torch.nn`): the [`Layer`] trait, parameter cells,
//! forward hooks, containers, layers, losses and initialisers.
//!
//! Note (parameter cells): a layer keeps each parameter and buffer in a
//! [`Param`], a shared `Arc<RwLock<Tensor>>` cell. Parameters are created once,
//! at construction, on the cpu. `load_state_dict`, `init::*_` and the running
//! statistics of batch norm write *into* the existing tensors (`copy_` under
//! `no_grad`), so tensor handles held elsewhere (an optimizer) stay valid.
//! `Layer::to(device)` cannot move a storage in place, so it *replaces* each
//! cell's tensor with a new leaf on the device: create optimizers after `to`,
//! as PyTorch recommends. `Layer::to_dtype` swaps the cells' tensors the same way.
//!
//! Layers are used through `&self` (they are `Send + Sync`): the training flag
//! and the hooks live in a [`Core`] with interior mutability.
//!
//! ```
//! use skiff::nn::{Layer, Linear, ReLU, Sequential};
//! use skiff::{DType, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let model = Sequential::new().push(Linear::new(4, 8)?).push(ReLU::new()).push(Linear::new(8, 2)?);
//! let names: Vec<String> = model.state_dict().into_iter().map(|(k, _)| k).collect();
//! assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
//! let y = model.forward(&Tensor::randn(&[3, 4], DType::F32)?)?;
//! assert_eq!(y.shape(), &[3, 2]);
//! # Ok(())
//! # }
//! ```

mod activation;
mod attention;
mod container;
mod conv;
mod hooks;
pub mod init;
mod linear;
pub mod loss;
mod norm;
mod pool;
mod recurrent;
mod repr;
mod reshape;
mod transformer;
mod tree;

pub use crate::ops::resample::Interpolation;
pub use activation::{
    GeluApproximate, Hardsigmoid, Hardswish, LeakyReLU, Mish, PReLU, ReLU, SiLU, Sigmoid, Softmax, Tanh, ELU, GELU,
    SELU,
};
pub use attention::MultiHeadAttention;
pub use container::{LayerDict, LayerList, Sequential};
pub use conv::{Conv1d, Conv1dConfig, ConvTranspose2d, ConvTranspose2dConfig};
pub use hooks::{HookHandle, Hooks, PostHook, PreHook};
pub use linear::{Conv2d, Conv2dConfig, Embedding, Linear};
pub use loss::{BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss};
pub use norm::{
    BatchNorm, BatchNorm1d, BatchNorm2d, BatchNormConfig, Dropout, GroupNorm, InstanceNorm, LayerNorm, RMSNorm,
};
pub use pool::{AdaptiveAvgPool2d, AvgPool2d, Flatten, MaxPool2d};
pub use recurrent::{Recurrent, RecurrentCell, RecurrentConfig, RecurrentKind, RecurrentState};
pub(crate) use repr::{py_bool, py_float, py_pair, py_tuple};
pub use reshape::{Identity, PixelShuffle, PixelUnshuffle, Unflatten, Upsample, ZeroPad2d};
pub use transformer::{FeedForwardActivation, TransformerConfig, TransformerDecoderLayer, TransformerEncoderLayer};
pub use tree::AsLayer;

use crate::device::Device;
use crate::dispatch::record::Stamp;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// A shared, swappable tensor cell holding one parameter or buffer (see the
/// module note). Cloning the cell shares it.
#[derive(Clone)]
pub struct Param(Arc<(RwLock<Tensor>, Stamp)>);

impl Param {
    /// A cell holding `t` as it is.
    pub fn new(t: Tensor) -> Param {
        let stamp = Stamp::new(format!("a parameter cell of shape {:?}", t.shape()));
        Param(Arc::new((RwLock::new(t), stamp)))
    }
    /// A trainable parameter: `t` as a leaf that requires grad.
    pub fn parameter(t: Tensor) -> Result<Param> {
        Ok(Param::new(t.detach().requires_grad_(true)?))
    }
    /// The current tensor (a cheap handle clone).
    pub fn get(&self) -> Tensor {
        // A captured program holds the storage the cell has now.
        self.0 .1.read();
        self.0 .0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Replaces the tensor held by the cell (programs captured with the old one recapture).
    pub fn set(&self, t: Tensor) {
        *self.0 .0.write().unwrap_or_else(|e| e.into_inner()) = t;
        self.0 .1.changed("given another tensor (Param::set)");
    }
    /// True when both cells are the same cell.
    pub fn ptr_eq(&self, other: &Param) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The per-layer state every layer holds: its training flag (on at creation,
/// as in PyTorch) and its forward hooks.
pub struct Core {
    training: AtomicBool,
    /// Programs captured while a layer branched on its flag assume it.
    training_stamp: Stamp,
    hooks: Hooks,
}

impl Default for Core {
    fn default() -> Core {
        Core {
            training: AtomicBool::new(true),
            training_stamp: Stamp::new("a layer's training flag"),
            hooks: Hooks::default(),
        }
    }
}

impl Core {
    pub fn new() -> Core {
        Core::default()
    }
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }
    pub fn is_training(&self) -> bool {
        self.training_stamp.read();
        self.training.load(Ordering::Relaxed)
    }
    pub fn set_training(&self, on: bool) {
        if self.training.swap(on, Ordering::Relaxed) != on {
            self.training_stamp.changed(if on { "set to training" } else { "set to eval" });
        }
    }
}

/// What a non-strict `load_state_dict` skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Keys of the layer that the entries did not provide (left unchanged).
    pub missing_keys: Vec<String>,
    /// Entries that name nothing in the layer (ignored).
    pub unexpected_keys: Vec<String>,
}

/// One entry of a layer's state: its dotted name, its cell, and whether it is
/// a parameter (else a buffer).
pub type StateCell = (String, Param, bool);

fn prefixed(prefix: &str, name: &str) -> String {
    format!("{prefix}.{name}")
}

/// A neural-network layer (PyTorch's `nn.Module`). Implementors supply
/// `forward_impl` and `core`, and list their own parameters, buffers and
/// child layers; everything else (hooks, names, state dicts, train/eval,
/// device moves) is provided.
///
/// ```
/// use skiff::nn::{Core, Layer, Linear, Param};
/// use skiff::{DType, Result, Tensor};
///
/// /// `x + scale * inner(x)`: a residual block with a learned scale.
/// struct Residual {
///     core: Core,
///     inner: Linear,
///     scale: Param,
/// }
///
/// impl Layer for Residual {
///     fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
///         x.add(&self.inner.forward(x)?.mul(&self.scale.get())?)
///     }
///     fn core(&self) -> &Core {
///         &self.core
///     }
///     fn local_parameters(&self) -> Vec<(String, Param)> {
///         vec![("scale".into(), self.scale.clone())]
///     }
///     fn children(&self) -> Vec<(String, &dyn Layer)> {
///         vec![("inner".into(), &self.inner)]
///     }
/// }
///
/// # fn main() -> skiff::Result<()> {
/// let block = Residual {
///     core: Core::new(),
///     inner: Linear::new(4, 4)?,
///     scale: Param::parameter(Tensor::zeros(&[1], DType::F32)?)?,
/// };
/// // Names, state dicts, train/eval and device moves come with the trait.
/// let names: Vec<String> = block.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["scale", "inner.weight", "inner.bias"]);
/// block.eval();
/// assert!(!block.inner.is_training());
/// // PyTorch's printed form; the class name defaults to the Rust type's.
/// assert_eq!(block.repr(), "Residual(\n  (inner): Linear(in_features=4, out_features=4, bias=True)\n)");
///
/// // The scale starts at 0, so the block starts as the identity.
/// let x = Tensor::randn(&[2, 4], DType::F32)?;
/// assert_eq!(block.forward(&x)?.to_vec::<f32>()?, x.to_vec::<f32>()?);
/// # Ok(())
/// # }
/// ```
pub trait Layer: Send + Sync + AsLayer {
    /// The layer's computation, without hooks. Call [`Layer::forward`] instead.
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor>;

    /// The layer's training flag and hooks.
    fn core(&self) -> &Core;

    /// This layer's own parameters (not its children's), in declaration order.
    fn local_parameters(&self) -> Vec<(String, Param)> {
        Vec::new()
    }
    /// This layer's own buffers (running statistics, ...).
    fn local_buffers(&self) -> Vec<(String, Param)> {
        Vec::new()
    }
    /// The direct child layers with their names.
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        Vec::new()
    }

    /// PyTorch's class name (`Linear`, `Conv2d`, `Sequential`, `ModuleList`,
    /// ...), which starts the layer's [`repr`](Layer::repr). Defaults to the
    /// Rust type's name (`Residual` for `my_crate::Residual<T>`).
    fn type_name(&self) -> &'static str {
        repr::short_type_name(std::any::type_name::<Self>())
    }
    /// PyTorch's `extra_repr`: the layer's settings as its repr shows them
    /// (`in_features=4, out_features=8, bias=True`); empty by default.
    fn extra_repr(&self) -> String {
        String::new()
    }
    /// What PyTorch's `print(model)` prints: `Linear(in_features=4, ...)`
    /// for a leaf; for a layer with children, its extra lines and then each
    /// child as `(name): repr`, indented by two spaces. `dyn Layer`'s
    /// `Display` prints the same.
    fn repr(&self) -> String {
        repr::render(self.as_layer())
    }

    /// Runs the forward pre-hooks, `forward_impl`, then the post-hooks (each
    /// in registration order; a hook may replace the input or the output).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let hooks = &self.core().hooks;
        let x = hooks.run_pre(x)?;
        let y = self.forward_impl(&x)?;
        hooks.run_post(&x, y)
    }

    /// Registers a hook run before `forward_impl`; returning `Some(t)` replaces the input.
    fn register_forward_pre_hook(&self, hook: PreHook) -> HookHandle {
        self.core().hooks.add_pre(hook)
    }
    /// Registers a hook run after `forward_impl` with (input, output); returning
    /// `Some(t)` replaces the output.
    fn register_forward_hook(&self, hook: PostHook) -> HookHandle {
        self.core().hooks.add_post(hook)
    }

    /// Parameter and buffer cells with dotted names, in PyTorch's `state_dict`
    /// order: own parameters, own buffers, then each child's, depth first.
    fn state_cells(&self) -> Vec<StateCell> {
        tree::state_cells(self.as_layer())
    }

    /// Parameter cells with dotted names; a cell shared by several layers is
    /// listed once (PyTorch's de-duplication).
    fn named_parameter_cells(&self) -> Vec<(String, Param)> {
        tree::named_parameter_cells(self.as_layer())
    }

    /// Parameters with dotted names (`weight`, `0.bias`, `out_proj.weight`, ...).
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        tree::named_parameters(self.as_layer())
    }
    /// Buffers with dotted names (`running_mean`, `running_var`, `num_batches_tracked`).
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        tree::named_buffers(self.as_layer())
    }
    /// The parameter tensors (the handles an optimizer updates in place).
    fn parameters(&self) -> Vec<Tensor> {
        tree::parameters(self.as_layer())
    }
    /// Parameters and buffers by name, in PyTorch's order. The tensors are the
    /// live ones (not copies); `detach` or copy them to keep a snapshot.
    fn state_dict(&self) -> Vec<(String, Tensor)> {
        tree::state_dict(self.as_layer())
    }

    /// Copies `entries` into the layer's parameters and buffers in place (under
    /// `no_grad`, converting dtype and device). A wrongly shaped entry is
    /// always an error; missing and unexpected keys are errors when `strict`,
    /// else listed in the report. Nothing is written when an error is returned.
    fn load_state_dict(&self, entries: &[(String, Tensor)], strict: bool) -> Result<LoadReport> {
        tree::load_state_dict(self.as_layer(), entries, strict)
    }

    /// Sets training mode on this layer and all its descendants.
    fn train(&self, on: bool) {
        tree::train(self.as_layer(), on)
    }
    /// `train(false)`.
    fn eval(&self) {
        self.train(false)
    }
    fn is_training(&self) -> bool {
        self.core().is_training()
    }

    /// Moves every parameter and buffer to `device` by replacing the cells'
    /// tensors with new leaves there (see the module note). Gradients are dropped.
    fn to(&self, device: &Device) -> Result<()> {
        tree::to(self.as_layer(), device)
    }

    /// Converts every floating-point parameter and buffer to `dtype` by
    /// replacing the cells' tensors with new leaves (as `to` does; gradients
    /// are dropped). Integer buffers (`num_batches_tracked`) keep their dtype.
    /// Layers are built in f32; `to_dtype(DType::F64)` makes one gradcheckable
    /// on the cpu (f64 does not exist on the GPU: converting a GPU layer to f64
    /// is a dtype error).
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        tree::to_dtype(self.as_layer(), dtype)
    }

    /// Clears every parameter's `.grad`.
    fn zero_grad(&self) {
        tree::zero_grad(self.as_layer())
    }
}
