//! In-place ops. Each computes its result out of place, writes it into the
//! tensor's storage and bumps the storage version, so any node that saved the
//! old values fails loudly in backward instead of using overwritten data.
//!
//! Note (history rewriting): when recording, the tensor's own history is
//! replaced by the op's (PyTorch's rebase): its old value is first copied
//! (`contiguous_copy`, a recorded identity) so the op's backward can still
//! read it, then the tensor's grad_fn becomes the op's node. Leaves that
//! require grad may only be written under `no_grad` (optimizer updates), and
//! views of tensors that require grad are rejected rather than given wrong
//! gradients.

use super::Tensor;
use crate::autograd::{is_grad_enabled, no_grad};
use crate::dispatch::elementwise::write_into;
use crate::error::{Error, Result};

impl Tensor {
    fn inplace(
        &self,
        op: &'static str,
        others: &[&Tensor],
        compute: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let l = self.layout();
        if l.shape.iter().zip(&l.strides).any(|(&d, &s)| d > 1 && s == 0) {
            return Err(Error::shape(
                op,
                format!(
                    "cannot write in place to an expanded view of shape {:?}: several of its elements share one memory \
                     location; write to a contiguous_copy() instead",
                    self.shape()
                ),
            ));
        }
        let recording = is_grad_enabled() && (self.requires_grad() || others.iter().any(|t| t.requires_grad()));
        if recording {
            if self.is_leaf() && self.requires_grad() {
                return Err(Error::autograd(
                    op,
                    format!(
                        "a leaf tensor that requires grad (shape {:?}) cannot be modified in place while recording; \
                         wrap the update in no_grad",
                        self.shape()
                    ),
                ));
            }
            if self.meta().is_grad_view {
                return Err(Error::autograd(
                    op,
                    format!("in-place write to a view (shape {:?}) of a tensor that requires grad; use contiguous_copy() first", self.shape()),
                ));
            }
        }
        let result = if recording { compute(&self.contiguous_copy()?) } else { no_grad(|| compute(self)) };
        let result = result.map_err(|e| e.renamed(op))?;
        if result.shape() != self.shape() {
            return Err(Error::shape(
                op,
                format!("the result has shape {:?} but the destination has shape {:?} (in-place ops cannot broadcast the destination)", result.shape(), self.shape()),
            ));
        }
        let result = if result.dtype() != self.dtype() { result.to_dtype(self.dtype())? } else { result };
        write_into(self, &result)?;
        self.storage().bump_version();
        if recording {
            let m = result.meta();
            let (node, nr) = (m.grad_fn.clone(), m.output_nr);
            drop(m);
            if let Some(node) = node {
                self.rebase_history(node, nr);
            }
        }
        Ok(self.clone())
    }

    /// `self += other` (other broadcasts to self's shape).
    pub fn add_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace("add_", &[other], |s| s.add(other))
    }
    /// `self -= other`.
    pub fn sub_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace("sub_", &[other], |s| s.sub(other))
    }
    /// `self *= other`.
    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace("mul_", &[other], |s| s.mul(other))
    }
    /// `self /= other`.
    pub fn div_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace("div_", &[other], |s| s.div(other))
    }
    /// `self += c`.
    pub fn add_scalar_(&self, c: f64) -> Result<Tensor> {
        self.inplace("add_scalar_", &[], |s| s.add_scalar(c))
    }
    /// `self *= c`.
    pub fn mul_scalar_(&self, c: f64) -> Result<Tensor> {
        self.inplace("mul_scalar_", &[], |s| s.mul_scalar(c))
    }
    /// Sets every element to `value`.
    pub fn fill_(&self, value: f64) -> Result<Tensor> {
        self.fill_as("fill_", value)
    }
    /// `fill_` reporting errors as `op` (so `zero_`'s errors name `zero_`).
    fn fill_as(&self, op: &'static str, value: f64) -> Result<Tensor> {
        let recording = is_grad_enabled() && self.requires_grad();
        self.inplace(op, &[], |s| {
            if recording {
                // Keeps the tensor in the graph with a zero gradient, as PyTorch does.
                s.replaced_in_graph(&s.full_like(value)?)
            } else {
                s.full_like(value)
            }
        })
    }
    /// Sets every element to zero.
    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_as("zero_", 0.0)
    }
    /// Copies `src` (broadcast to self's shape, converted to self's dtype and device) into self.
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        let src = src
            .to(&self.device())?
            .to_dtype(self.dtype())?
            .expand_dims(self.shape())
            .map_err(|e| e.renamed("copy_"))?;
        let keep_graph = is_grad_enabled() && self.requires_grad();
        self.inplace("copy_", &[&src], |s| if keep_graph { s.replaced_in_graph(&src) } else { src.contiguous_copy() })
    }
    /// `value` (broadcast to self's shape) recorded as a function of self with
    /// a zero gradient: where(false, self, value). (self * 0 + value would be
    /// NaN wherever self is NaN or infinite.)
    fn replaced_in_graph(&self, value: &Tensor) -> Result<Tensor> {
        let never = Tensor::full_on(&[], 0.0, crate::dtype::DType::Bool, &self.device())?;
        Tensor::where_(&never, self, value)
    }
}
