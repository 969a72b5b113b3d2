//! Tensor gradient hooks: closures that see (and may replace) the gradient
//! flowing into a tensor during backward. They live on the node the gradient
//! enters: the tensor's grad_fn, or a leaf's accumulation node.

use super::node::Node;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// A gradient hook: return `Some(g)` to replace the gradient, `None` to keep it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Option<Tensor> + Send + Sync>;

static NEXT_HOOK: AtomicU64 = AtomicU64::new(1);

/// Removes its hook when `remove` is called (dropping it keeps the hook).
pub struct HookHandle {
    node: Weak<Node>,
    id: u64,
}

impl HookHandle {
    pub fn remove(self) {
        if let Some(n) = self.node.upgrade() {
            n.hooks.lock().unwrap_or_else(|e| e.into_inner()).retain(|(id, _, _)| *id != self.id);
        }
    }
}

impl Tensor {
    /// Registers `hook` to run on this tensor's gradient during backward, in
    /// registration order. The tensor must require grad.
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        let edge = self.grad_edge().ok_or_else(|| {
            Error::autograd(
                "register_hook",
                format!("cannot register a hook on a tensor of shape {:?} that does not require grad", self.shape()),
            )
        })?;
        let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
        edge.node.hooks.lock().unwrap_or_else(|e| e.into_inner()).push((id, edge.nr, Arc::new(hook)));
        Ok(HookHandle { node: Arc::downgrade(&edge.node), id })
    }

    /// Keeps `.grad` on this non-leaf after backward (leaves always keep
    /// it). As PyTorch's retains_grad hook, it stores the gradient after every
    /// other hook on this tensor has run, whenever those were registered, and
    /// calling it again changes nothing.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::autograd(
                "retain_grad",
                format!("cannot retain the grad of a tensor of shape {:?} that does not require grad", self.shape()),
            ));
        }
        if self.is_leaf() {
            return Ok(());
        }
        let edge = self.grad_edge().ok_or_else(|| {
            Error::autograd(
                "retain_grad",
                format!("cannot retain the grad of a tensor of shape {:?} that does not require grad", self.shape()),
            )
        })?;
        let mut retains = edge.node.retains.lock().unwrap_or_else(|e| e.into_inner());
        let me = Arc::as_ptr(&self.0);
        if !retains.iter().any(|(nr, t)| *nr == edge.nr && t.as_ptr() == me) {
            retains.push((edge.nr, Arc::downgrade(&self.0)));
        }
        Ok(())
    }
}

/// Adds `g` into the `.grad` of each tensor retaining output `nr` of `node`.
fn store_retained(node: &Node, nr: usize, g: &Tensor) -> Result<()> {
    let targets: Vec<Tensor> = node
        .retains
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(n, _)| *n == nr)
        .filter_map(|(_, t)| t.upgrade().map(Tensor))
        .collect();
    for t in targets {
        let acc = match t.grad() {
            Some(old) => crate::autograd::no_grad(|| old.add(g))?,
            // A copy: the flowing gradient may be a tensor the user holds (an
            // output gradient), which `.grad` must not alias.
            None => crate::autograd::no_grad(|| g.contiguous_copy())?,
        };
        t.store_grad(Some(acc));
    }
    Ok(())
}

/// Runs the hooks registered for output `nr` of `node` on `grad`.
pub(crate) fn run_hooks(node: &Node, nr: usize, mut grad: Tensor) -> Result<Tensor> {
    let hooks: Vec<super::hooks::Hook> = node
        .hooks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(_, n, _)| *n == nr)
        .map(|(_, _, h)| h.clone())
        .collect();
    for h in hooks {
        if let Some(new) = h(&grad) {
            if new.device() != grad.device() {
                return Err(Error::Device {
                    op: "register_hook",
                    found: format!(
                        "a gradient on {} returned by a hook, for a tensor on {}",
                        new.device(),
                        grad.device()
                    ),
                });
            }
            if new.shape() != grad.shape() || new.dtype() != grad.dtype() {
                let err = if new.dtype() != grad.dtype() { Error::dtype } else { Error::shape };
                return Err(err(
                    "register_hook",
                    format!(
                        "hook returned a gradient of shape {:?} and dtype {}, expected shape {:?} and dtype {}",
                        new.shape(),
                        new.dtype(),
                        grad.shape(),
                        grad.dtype()
                    ),
                ));
            }
            grad = new;
        }
    }
    store_retained(node, nr, &grad)?;
    Ok(grad)
}
