//! Device dispatch for the index family. The index operand is range-checked
//! here, before any kernel runs, so a bad index is an `Error` naming the op and
//! shapes (never an out-of-bounds panic in a kernel, nor an out-of-bounds
//! access on a GPU). Values the host holds (cpu tensors, and the host mirror
//! of indices uploaded to a GPU) are checked at once; values that exist only
//! on a GPU are never read back for it (the browser cannot block): the check
//! is a kernel spec (`KernelSpec::IndexCheck`) that the index's backend runs
//! (`backend::check`): the cpu at once, a GPU with the op, reporting at the
//! next readback.

use crate::backend::{self, View};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{CheckWhat, Effect, IndexCheck, KernelSpec};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// An index operand after its range check.
enum Checked {
    /// The values, read on the host from a device index's host mirror and
    /// checked to lie in `0..dim` (a device scatter plans from them).
    Host(Vec<usize>),
    /// Checked by the index's own backend (`KernelSpec::IndexCheck`: at once
    /// on the cpu; on a GPU recorded with the op, reporting at the next
    /// readback), or known to lie in `0..dim` (a storage bound written by
    /// argmax or max-pool's window argmax, or a device check passed before).
    /// Nothing was read back.
    Backend,
}

/// Whether `index`'s values are known to lie in `0..dim` without a check. A
/// capture trusts neither the bound nor the host values of a storage from
/// outside the function (a run of the program sees new indices, which may
/// carry neither), nor a bound a check found (a run's values may differ).
/// The bound of a storage the captured function made itself, by a kernel
/// that guarantees it (max-pool's window argmax, argmax), holds in every
/// run: each makes it again with that kernel.
fn trusted_bound(index: &Tensor, dim: usize) -> bool {
    let Some(facts) = index.storage().index_facts().filter(|f| f.bound <= dim) else { return false };
    !super::record::active() || (facts.by_kernel && super::record::computed(index.storage()))
}

/// Checks every value of `index` against `0..check.dim`: from the host
/// mirror of a GPU index when it has one, else through its backend; values
/// with a known bound are not checked again.
fn checked(check: IndexCheck, index: &Tensor) -> Result<Checked> {
    if index.dtype() != DType::I32 {
        return Err(Error::dtype(
            check.op,
            format!("index must be i32, got {} of shape {:?}", index.dtype(), index.shape()),
        ));
    }
    let capturing = super::record::active();
    if trusted_bound(index, check.dim) {
        return Ok(Checked::Backend);
    }
    if !capturing {
        if let Some(v) = index.storage().mirrored(index.layout()) {
            check.verify(&v)?;
            return Ok(Checked::Host(v.into_iter().map(|i| i as usize).collect()));
        }
    }
    let spec = KernelSpec::IndexCheck(check);
    backend::check(&spec, index.storage(), index.layout())?;
    if capturing {
        super::record::check(&spec, index.storage(), index.layout());
    }
    Ok(Checked::Backend)
}

/// The range check of an index op's operand (see `checked`).
fn checked_indices(
    op: &'static str,
    index: &Tensor,
    dim: usize,
    axis: usize,
    data_shape: &[usize],
    effect: Effect,
) -> Result<Checked> {
    let what = CheckWhat::Index { axis, data_shape: data_shape.to_vec(), index_shape: index.dims().to_vec(), effect };
    checked(IndexCheck { op, dim, what }, index)
}

/// For composites that index with `index` (the class losses): checks its
/// values against `0..check.dim` under the composite's own name, wherever
/// they are (see `checked`).
pub(crate) fn check_range(check: IndexCheck, index: &Tensor) -> Result<()> {
    checked(check, index).map(|_| ())
}

/// For composites that index with `index` (embedding): when its values
/// exist only on a device (no host mirror), records their check there under
/// the composite's own name (so a failure names the op the caller called,
/// and the inner index op's check is covered by it) and returns true; also
/// true when they carry a bound within `0..dim`. False when the host holds
/// the values (cpu tensors, GPU tensors with a mirror): the inner op checks them.
pub(crate) fn check_on_device(check: IndexCheck, index: &Tensor) -> Result<bool> {
    if trusted_bound(index, check.dim) {
        return Ok(true);
    }
    if !index.device().is_gpu() || index.storage().mirrored(index.layout()).is_some() {
        return Ok(false);
    }
    checked(check, index).map(|_| true)
}

/// Runs an index `spec` over `inputs` into a new tensor of `out_shape`.
fn run<const N: usize>(
    op: &'static str,
    spec: KernelSpec,
    inputs: [(&Tensor, &Layout); N],
    out_shape: &[usize],
) -> Result<Tensor> {
    let guards = inputs.map(|(t, _)| t.storage().read());
    let views: [View; N] = std::array::from_fn(|i| View::new(&guards[i], inputs[i].1));
    let out = backend::run(op, &spec, &views, out_shape)?;
    drop(guards);
    let out = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        let views: Vec<_> = inputs.iter().map(|(t, l)| (t.storage(), *l)).collect();
        super::record::run_views(op, &spec, &views, &out);
    }
    Ok(out)
}

/// The index operand of a scatter on a device: the host-checked values as a
/// cpu tensor (the backend plans the scatter from them), else the device
/// index itself. On the cpu, the index tensor (already checked).
fn scatter_index(index: &Tensor, idx: &Checked) -> Result<Tensor> {
    match idx {
        Checked::Host(v) => Tensor::from_vec(v.iter().map(|&i| i as i32).collect::<Vec<i32>>(), index.shape()),
        Checked::Backend => Ok(index.clone()),
    }
}

/// Slices of `x` along `axis` at the positions in 1-D `index`.
pub fn index_select(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    let mut shape = x.dims();
    shape[axis] = index.numel();
    super::room_for(op, x, &shape, x.dtype())?;
    checked_indices(op, index, x.shape()[axis], axis, x.shape(), Effect::ReadsZero)?;
    run(op, KernelSpec::IndexSelect { axis }, [(x, x.layout()), (index, index.layout())], &shape)
}

/// A copy of `base` with the slices of `src` along `axis` added at `index`.
pub fn index_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    super::room_for(op, base, base.shape(), base.dtype())?;
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape(), Effect::AddsNothing)?;
    let index = scatter_index(index, &idx)?;
    let inputs = [(base, base.layout()), (&index, index.layout()), (src, src.layout())];
    run(op, KernelSpec::IndexAdd { axis }, inputs, base.shape())
}

/// Elements of `x` picked along `axis` by `index` (same rank, PyTorch's gather).
pub fn gather(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    super::room_for(op, x, index.shape(), x.dtype())?;
    checked_indices(op, index, x.shape()[axis], axis, x.shape(), Effect::ReadsZero)?;
    run(op, KernelSpec::Gather { axis }, [(x, x.layout()), (index, index.layout())], index.shape())
}

/// A copy of `base` with `src[p]` added at `p` with `p[axis] = index[p]`.
pub fn scatter_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    super::room_for(op, base, base.shape(), base.dtype())?;
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape(), Effect::AddsNothing)?;
    let windows = match idx {
        Checked::Backend if index.device().is_gpu() => pool_windows(index, axis, base.shape()[axis]),
        _ => None,
    };
    let index = scatter_index(index, &idx)?;
    let inputs = [(base, base.layout()), (&index, index.layout()), (src, src.layout())];
    run(op, KernelSpec::ScatterAdd { axis, windows }, inputs, base.shape())
}

/// The window geometry a device scatter may visit instead of scanning whole
/// index lines: `index` holds a max-pool argmax (each window's value lies
/// inside that window) viewed with the windows of one plane along the last
/// axis, `axis`, each line starting at a plane, and the target axis is the
/// [h, w] plane flattened (max-pool's backward; see `scatter_add_window`).
fn pool_windows(index: &Tensor, axis: usize, dim: usize) -> Option<crate::kernel::PoolWindows> {
    let pw = index.storage().index_facts()?.windows?;
    let l = index.layout();
    let per_plane = pw.out_h * pw.out_w;
    let aligned = |x: usize| x % per_plane == 0;
    let fits = axis + 1 == l.shape.len()
        && l.shape[axis] == per_plane
        && (l.strides[axis] == 1 || per_plane == 1)
        && dim == pw.h * pw.w
        && aligned(l.offset)
        && l.shape[..axis].iter().zip(&l.strides[..axis]).all(|(&n, &st)| n == 1 || aligned(st));
    fits.then_some(pw)
}
