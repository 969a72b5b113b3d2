//! The user-facing tensor handle. Cloning is cheap (an `Arc`); views share
//! storage; autograd bookkeeping lives in `AutogradMeta`.

mod create;
mod display;
mod inplace;

use crate::autograd::node::Node;
use crate::backend::{cpu, Buffer, Storage};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{Dims, Layout};
use std::sync::{Arc, Mutex, MutexGuard};

/// An n-dimensional array on a device, optionally tracked by autograd.
///
/// Tensors are created on the cpu (`from_vec`, `zeros`, `full`, `arange`,
/// `randn`, ...) and moved with [`Tensor::to`]. Ops run at once and return a
/// new tensor or an [`Error`] naming the op and the shapes; views
/// (`reshape`, `transpose`, `slice`, ...) share storage. A leaf marked with
/// `requires_grad_(true)` records the ops computed from it, and
/// [`Tensor::backward`] fills its `.grad`.
///
/// ```
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// // Creation: from row-major data, or filled.
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
/// let ones = Tensor::ones(&[3], DType::F32)?;
/// assert_eq!((x.shape(), x.dtype()), (&[2, 3][..], DType::F32));
///
/// // Ops broadcast like NumPy: the `[3]` row is added to both rows of x.
/// let row_sums = x.add(&ones)?.sum(&[1], false)?;
/// assert_eq!(row_sums.to_vec::<f32>()?, vec![9.0, 18.0]);
/// let xt = x.transpose(0, 1)?; // a view: no data moves
/// assert_eq!(x.matmul(&xt)?.to_vec::<f32>()?, vec![14.0, 32.0, 32.0, 77.0]);
///
/// // Autograd: a leaf that requires grad, a scalar loss, backward.
/// let w = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3])?.requires_grad_(true)?;
/// let loss = x.mul(&w)?.sum_all()?; // sum over i, j of x[i, j] * w[j]
/// loss.backward()?;
/// // d loss / d w[j] is the sum of column j of x.
/// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, vec![5.0, 7.0, 9.0]);
///
/// // Reading values: `item` for one element (as f64), `to_vec` for all of them
/// // (its element type must match the dtype).
/// assert_eq!(loss.item()?, 13.5);
/// assert!(loss.to_vec::<f64>().is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

pub(crate) struct TensorImpl {
    pub(crate) storage: Storage,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    pub(crate) meta: Mutex<AutogradMeta>,
}

/// Autograd state of one tensor (see `autograd` for the semantics).
#[derive(Default)]
pub(crate) struct AutogradMeta {
    pub requires_grad: bool,
    /// The node that produced this tensor (None for leaves).
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    /// Leaves that require grad own their gradient-accumulation node, created
    /// lazily; it holds the tensor weakly (no cycle) and carries leaf hooks.
    pub accumulator: Option<Arc<Node>>,
    pub grad: Option<Tensor>,
    /// Produced by a view op from a tensor that requires grad: in-place
    /// writes through it would need history rewriting of the base, which
    /// skiff rejects with an error instead of computing wrong gradients.
    pub is_grad_view: bool,
    /// The storage's history epoch this tensor's history belongs to (None
    /// for detached tensors, which are constants whatever happens to their
    /// storage). A recorded in-place write through another tensor of the
    /// storage moves the epoch on: then this tensor's history no longer
    /// describes its values (`autograd::stale`).
    pub history_epoch: Option<u64>,
}

impl Tensor {
    /// Wraps a fresh contiguous buffer.
    pub(crate) fn from_buffer(buf: Buffer, shape: &[usize]) -> Tensor {
        let dtype = buf.dtype();
        Tensor::from_storage(crate::backend::new_storage(buf), Layout::contiguous(shape), dtype)
    }

    pub(crate) fn from_storage(storage: Storage, layout: Layout, dtype: DType) -> Tensor {
        let meta = AutogradMeta { history_epoch: Some(storage.history_epoch()), ..AutogradMeta::default() };
        Tensor(Arc::new(TensorImpl { storage, layout, dtype, meta: Mutex::new(meta) }))
    }

    /// A tensor that shares this one's storage with another layout (no autograd history).
    pub(crate) fn alias_with_layout(&self, layout: Layout) -> Tensor {
        Tensor::from_storage(self.0.storage.clone(), layout, self.0.dtype)
    }

    pub(crate) fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.meta.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub(crate) fn storage(&self) -> &Storage {
        &self.0.storage
    }

    /// The dimension sizes.
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }
    pub(crate) fn dims(&self) -> Dims {
        self.0.layout.shape.clone()
    }
    /// Size of one axis (negative counts from the end).
    pub fn size(&self, axis: isize) -> Result<usize> {
        let a = crate::shape::normalize_axis("size", axis, self.shape())?;
        Ok(self.shape()[a])
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.shape.len()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn device(&self) -> Device {
        self.0.storage.device().clone()
    }
    /// True when the elements are laid out row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    /// True when both handles refer to the same tensor object.
    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// The storage version (bumped by each in-place write to it or to a view of it).
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    // ---- autograd accessors -------------------------------------------------

    pub fn requires_grad(&self) -> bool {
        self.meta().requires_grad
    }
    /// Marks a leaf as requiring (or not) gradients. Only float tensors can.
    pub fn requires_grad_(&self, on: bool) -> Result<Tensor> {
        if on && !self.dtype().is_float() {
            return Err(Error::dtype(
                "requires_grad_",
                format!(
                    "only floating-point tensors can require gradients, got {} tensor of shape {:?}",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        let mut m = self.meta();
        if m.grad_fn.is_some() && !on {
            return Err(Error::autograd(
                "requires_grad_",
                "cannot turn off requires_grad on a non-leaf tensor; use detach()",
            ));
        }
        m.requires_grad = on;
        drop(m);
        Ok(self.clone())
    }
    /// True for tensors created by the user (no recorded history).
    pub fn is_leaf(&self) -> bool {
        self.meta().grad_fn.is_none()
    }
    /// The accumulated gradient of a leaf (or of a non-leaf after `retain_grad`).
    pub fn grad(&self) -> Option<Tensor> {
        let g = self.meta().grad.clone();
        if crate::dispatch::record::active() {
            crate::dispatch::record::grad_read(self, g.as_ref());
        }
        g
    }
    /// Replaces (or clears) `.grad`. The gradient must have this tensor's
    /// shape, dtype and device (PyTorch's "assigned grad has data of a
    /// different ..." errors): optimizers and accumulation rely on it.
    pub fn set_grad(&self, g: Option<Tensor>) -> Result<()> {
        if let Some(g) = &g {
            self.check_grad_fits("set_grad", g)?;
        }
        self.store_grad(g);
        Ok(())
    }
    /// Checks that `g` can be this tensor's `.grad`; `op` names the caller.
    pub(crate) fn check_grad_fits(&self, op: &'static str, g: &Tensor) -> Result<()> {
        if g.dtype() != self.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "the gradient is a {} tensor but the tensor of shape {:?} is {}",
                    g.dtype(),
                    self.shape(),
                    self.dtype()
                ),
            ));
        }
        if g.shape() != self.shape() {
            return Err(Error::shape(
                op,
                format!("a gradient of shape {:?} does not fit a tensor of shape {:?}", g.shape(), self.shape()),
            ));
        }
        if g.device() != self.device() {
            return Err(Error::Device {
                op,
                found: format!("a gradient on {} for a tensor on {}", g.device().describe(), self.device().describe()),
            });
        }
        Ok(())
    }
    /// Sets `.grad` without checks: for the engine, whose gradients already
    /// match their tensors.
    pub(crate) fn store_grad(&self, g: Option<Tensor>) {
        if crate::dispatch::record::active() {
            crate::dispatch::record::grad_written(self, g.as_ref());
        }
        self.meta().grad = g;
    }
    /// Clears `.grad` (PyTorch's `set_to_none=True` behaviour).
    pub fn zero_grad(&self) {
        self.store_grad(None);
    }
    /// Name of the op that produced this tensor, if recorded.
    pub fn grad_fn_name(&self) -> Option<String> {
        self.meta().grad_fn.as_ref().map(|n| n.name().to_string())
    }
    /// A tensor sharing storage with this one but cut from the graph.
    pub fn detach(&self) -> Tensor {
        let t = self.alias_with_layout(self.0.layout.clone());
        t.meta().history_epoch = None;
        t
    }

    // ---- readback -----------------------------------------------------------

    /// Copies the elements out in row-major order. `T` must match the dtype.
    pub fn to_vec<T: cpu::Elem>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                "to_vec",
                format!("requested {} elements from a {} tensor of shape {:?}", T::DTYPE, self.dtype(), self.shape()),
            ));
        }
        let host = crate::dispatch::host_copy(self)?;
        T::unwrap(host).ok_or_else(|| Error::dtype("to_vec", format!("internal: {} storage", self.dtype())))
    }
    /// `to_vec` without blocking: awaits the GPU readback (the only way to
    /// read GPU data in the browser; natively it also works under any executor).
    pub async fn to_vec_async<T: cpu::Elem>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                "to_vec_async",
                format!("requested {} elements from a {} tensor of shape {:?}", T::DTYPE, self.dtype(), self.shape()),
            ));
        }
        let host = crate::dispatch::host_copy_async(self).await?;
        T::unwrap(host).ok_or_else(|| Error::dtype("to_vec", format!("internal: {} storage", self.dtype())))
    }
    /// The elements converted to f64 (any dtype; masks give 0/1). Reads back
    /// from a GPU (blocking natively), which can fail if the device was lost.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        let host = crate::dispatch::host_copy(self)?;
        Ok(crate::with_cpu_buffer!(&host, v, T => v.iter().map(|&x| cpu::Elem::to_f64(x)).collect()))
    }
    /// The elements as f32 (floats converted; integer and mask dtypes too).
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        Ok(self.to_f64_vec()?.into_iter().map(|x| x as f32).collect())
    }
    /// The single value of a one-element tensor, as f64.
    pub fn item(&self) -> Result<f64> {
        if self.numel() != 1 {
            return Err(Error::shape("item", format!("needs a one-element tensor, got shape {:?}", self.shape())));
        }
        Ok(self.to_f64_vec()?[0])
    }
}
