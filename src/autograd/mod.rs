//! Autodiff: the tracer (grad mode and recording), graph nodes, the engine
//! that replays them in reverse, tensor hooks and user-defined functions.
//!
//! The entry points: [`Tensor::backward`] (accumulate into the leaves'
//! `.grad`), [`grad`] (return gradients, optionally differentiable again),
//! [`no_grad`] / [`enable_grad`] (scopes without / with recording),
//! [`Function`] with [`apply_function`] (a hand-written backward), and
//! `Tensor::register_hook` / `retain_grad` (see [`hooks`]).
//!
//! ```
//! use skiff::{no_grad, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?.requires_grad_(true)?;
//! let y = x.mul(&x)?.sum_all()?; // recorded: x requires grad
//! assert_eq!(y.grad_fn_name().as_deref(), Some("sum"));
//! y.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![2.0, -4.0]);
//!
//! let z = no_grad(|| x.mul(&x))?; // not recorded
//! assert!(!z.requires_grad() && z.is_leaf());
//! # Ok(())
//! # }
//! ```
//!
//! Note (recording): an op records a node only when grad mode is on and at
//! least one input requires grad (Paddle's ComputeRequiredGrad), so `no_grad`
//! scopes and constant inputs prune the graph at no cost.

pub mod engine;
pub mod function;
pub mod hooks;
pub mod node;

use crate::error::{Error, Result};
use crate::ops::{Attrs, OpDef};
use crate::tensor::Tensor;
use node::{Edge, Node, NodeKind, SavedTensor};
use std::cell::Cell;
use std::sync::Arc;

pub use engine::{grad, BackwardOptions, GradOptions};
pub use function::{apply_function, Function, FunctionCtx};
pub use hooks::HookHandle;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops currently record autograd history on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Sets grad mode and returns a guard that restores the previous mode on drop.
pub fn set_grad_enabled(on: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(on));
    GradModeGuard { prev }
}

/// Restores the previous grad mode when dropped.
pub struct GradModeGuard {
    prev: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Runs `f` without recording history (PyTorch's `torch.no_grad()`): for
/// evaluation, and for in-place updates of leaves that require grad (which
/// are refused while recording).
///
/// ```
/// use skiff::{no_grad, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let w = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
/// w.mul(&w)?.sum_all()?.backward()?; // grad = 2w = [2, 4]
/// let g = w.grad().unwrap();
///
/// // A gradient-descent step writes into the leaf: only allowed under no_grad.
/// assert!(w.sub_(&g.mul_scalar(0.25)?).is_err());
/// no_grad(|| w.sub_(&g.mul_scalar(0.25)?))?;
/// assert_eq!(w.to_vec::<f32>()?, vec![0.5, 1.0]);
///
/// // Results computed under no_grad carry no history.
/// let y = no_grad(|| w.mul_scalar(2.0))?;
/// assert!(!y.requires_grad());
/// # Ok(())
/// # }
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _g = set_grad_enabled(false);
    f()
}

/// Runs `f` with recording on, even inside a `no_grad` scope.
pub fn enable_grad<R>(f: impl FnOnce() -> R) -> R {
    let _g = set_grad_enabled(true);
    f()
}

/// True when an op on `inputs` must record a node (or, for a stale input,
/// must reach `record` to be refused: see `check_fresh`).
#[inline]
pub(crate) fn needs_record(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad_or_stale())
}

/// An error naming `op` if an input's history is out of date: a view (or
/// alias) taken before a recorded in-place write through another tensor of
/// the same storage reads the written values, but its history still
/// describes the old ones, so its gradients would be silently wrong.
/// PyTorch regenerates such a view's history; skiff asks for the view to be
/// taken again after the write.
pub(crate) fn check_fresh(op: &'static str, inputs: &[&Tensor]) -> Result<()> {
    match inputs.iter().find(|t| t.is_stale()) {
        None => Ok(()),
        Some(t) => Err(Error::autograd(
            op,
            format!(
                "an input of shape {:?} was taken (as a view or alias) before an in-place write through another \
                 tensor of the same storage, so its autograd history no longer matches its values; take the view \
                 again after the write, or detach() it to use it as a constant",
                t.shape()
            ),
        )),
    }
}

/// Records `out = def(inputs)` in the graph. `saved` are tensors the backward
/// rule reads back (in order, through `ctx.saved(i)`); with `save_output` the
/// output is appended to them, held without a reference cycle.
pub(crate) fn record(
    def: &'static OpDef,
    attrs: Attrs,
    inputs: &[&Tensor],
    saved: &[&Tensor],
    save_output: bool,
    out: Tensor,
) -> Result<Tensor> {
    check_fresh(def.name, inputs)?;
    let mut saved_v: Vec<SavedTensor> = saved.iter().map(|t| SavedTensor::new(t)).collect();
    if save_output {
        saved_v.push(SavedTensor::own_output(&out, 0));
    }
    let node = Node::new(NodeKind::Op { def, attrs }, inputs, &[&out], saved_v);
    out.set_history(node, 0);
    Ok(out)
}

impl Tensor {
    /// The edge along which this tensor's gradient flows: its grad_fn, or for
    /// a leaf that requires grad its accumulation node (created on first use).
    pub(crate) fn grad_edge(&self) -> Option<Edge> {
        let mut m = self.meta();
        if let Some(f) = &m.grad_fn {
            return Some(Edge { node: f.clone(), nr: m.output_nr });
        }
        if !m.requires_grad {
            return None;
        }
        let weak = Arc::downgrade(&self.0);
        let acc = m.accumulator.get_or_insert_with(|| Node::accumulate(weak));
        Some(Edge { node: acc.clone(), nr: 0 })
    }

    /// Makes this tensor, just written in place, output `nr` of `node` (the
    /// in-place op's). As in PyTorch, `retain_grad` follows the tensor to its
    /// new history (`.grad` is the gradient of the new value), while hooks
    /// registered before stay with the old value's node.
    pub(crate) fn rebase_history(&self, node: Arc<Node>, nr: usize) {
        let old = self.grad_edge();
        self.set_history(node.clone(), nr);
        // Every other tensor over this storage keeps the old history: mark it stale.
        let epoch = self.storage().bump_history_epoch();
        self.meta().history_epoch = Some(epoch);
        let Some(old) = old else { return };
        if Arc::ptr_eq(&old.node, &node) {
            return;
        }
        let me = Arc::as_ptr(&self.0);
        let mut from = old.node.retains.lock().unwrap_or_else(|e| e.into_inner());
        let before = from.len();
        from.retain(|(n, t)| !(*n == old.nr && t.as_ptr() == me));
        let moved = from.len() != before;
        drop(from);
        if moved {
            node.retains.lock().unwrap_or_else(|e| e.into_inner()).push((nr, Arc::downgrade(&self.0)));
        }
    }

    /// `requires_grad() || is_stale()`, under one lock (the recording hot path).
    pub(crate) fn requires_grad_or_stale(&self) -> bool {
        let m = self.meta();
        m.requires_grad || m.history_epoch.is_some_and(|e| e != self.storage().history_epoch())
    }

    /// True when this tensor's history no longer describes its values (see `check_fresh`).
    pub(crate) fn is_stale(&self) -> bool {
        let e = self.meta().history_epoch;
        e.is_some_and(|e| e != self.storage().history_epoch())
    }

    /// Makes this (fresh) tensor output `nr` of `node`.
    pub(crate) fn set_history(&self, node: Arc<Node>, nr: usize) {
        let mut m = self.meta();
        m.requires_grad = true;
        m.grad_fn = Some(node);
        m.output_nr = nr;
    }
}
