//! Device dispatch for the index family. The index operand is range-checked
//! here, before any kernel runs, so a bad index is an `Error` naming the op and
//! shapes (never an out-of-bounds panic in a kernel, nor an out-of-bounds
//! access on a GPU). Values the host holds (cpu tensors, and the host mirror
//! of indices uploaded to a GPU) are checked at once; values that exist only
//! on a GPU are never read back for it (the browser cannot block): a device
//! check runs with the op and reports at the next readback (`gpu::checks`).

use crate::backend::cpu::{contiguous, CpuBuffer};
use crate::backend::{self, View};
#[cfg(feature = "gpu")]
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::shape::Layout;
use crate::tensor::Tensor;

/// An index operand after its range check.
enum Checked {
    /// The values, read on the host and checked to lie in `0..dim`.
    /// (Read to plan GPU scatters; the cpu kernels read the index itself.)
    Host(#[cfg_attr(not(feature = "gpu"), allow(dead_code))] Vec<usize>),
    /// A GPU index the host does not hold: its storage carries a bound within
    /// `0..dim` (written by argmax or max-pool's window argmax, or checked
    /// on the device before), or its check was recorded on the device and
    /// reports at the next readback. Nothing was read back.
    #[cfg(feature = "gpu")]
    Device,
}

/// Checks every value of `index` (I32, checked by the caller) is in
/// `0..dim`: on the host when it holds the values, else on the device (see
/// `Checked::Device`). Values with a known bound are not checked again.
fn checked_indices(
    op: &'static str,
    index: &Tensor,
    dim: usize,
    axis: usize,
    data_shape: &[usize],
    #[cfg_attr(not(feature = "gpu"), allow(unused_variables))] effect: Effect,
) -> Result<Checked> {
    let not_i32 = || Error::dtype(op, format!("index must be i32, got {} of shape {:?}", index.dtype(), index.shape()));
    let trusted = index.storage().index_bound().is_some_and(|b| b <= dim);
    #[cfg(feature = "gpu")]
    if let crate::device::Device::Gpu(_) = index.device() {
        if trusted {
            return Ok(Checked::Device);
        }
        if let Some(v) = index.storage().mirrored(index.layout()) {
            return in_range(op, &v, dim, axis, data_shape, index.shape()).map(Checked::Host);
        }
        let what =
            CheckWhat::Index { axis, data_shape: data_shape.to_vec(), index_shape: index.dims().to_vec(), effect };
        device_check(CheckDesc { op, dim, what }, index)?;
        return Ok(Checked::Device);
    }
    let g = index.storage().read();
    let host = g.as_cpu().ok_or_else(|| Error::value(op, "internal: a GPU index on the host path"))?;
    let CpuBuffer::I32(v) = host else { return Err(not_i32()) };
    let v = contiguous(v, index.layout());
    if trusted {
        return Ok(Checked::Host(v.iter().map(|&i| i as usize).collect()));
    }
    in_range(op, &v, dim, axis, data_shape, index.shape()).map(Checked::Host)
}

/// What an out-of-range index does to the result of a device-checked op.
#[cfg(feature = "gpu")]
use crate::backend::gpu::checks::Effect;
#[cfg(not(feature = "gpu"))]
#[derive(Clone, Copy)]
enum Effect {
    ReadsZero,
    AddsNothing,
}

#[cfg(feature = "gpu")]
use crate::backend::gpu::checks::{CheckDesc, CheckWhat};

/// Records the device range check of the GPU index `index` (see `gpu::checks`).
#[cfg(feature = "gpu")]
fn device_check(desc: CheckDesc, index: &Tensor) -> Result<()> {
    let g = index.storage().read();
    let crate::backend::Buffer::Gpu(ib) = &*g else {
        return Err(Error::value(desc.op, "internal: a cpu index on the GPU path"));
    };
    if ib.dtype != DType::I32 {
        return Err(Error::dtype(desc.op, format!("index must be i32, got {} of shape {:?}", ib.dtype, index.shape())));
    }
    crate::backend::gpu::checks::check_indices(desc, index.storage(), ib, index.layout())
}

/// For composites that index with `index` (embedding, the class losses):
/// when its values exist only on a GPU, records their device range check
/// under the composite's own name (so a failure names the op the caller
/// called, and the inner index op's check is covered by it) and returns
/// true; also true when they carry a bound within `0..dim`. False when the
/// host can check them (cpu tensors, GPU tensors with a host mirror).
#[cfg(feature = "gpu")]
pub(crate) fn check_on_device(op: &'static str, index: &Tensor, dim: usize, what: CheckWhat) -> Result<bool> {
    if index.storage().index_bound().is_some_and(|b| b <= dim) {
        return Ok(true);
    }
    if !matches!(index.device(), crate::device::Device::Gpu(_)) || index.storage().mirrored(index.layout()).is_some() {
        return Ok(false);
    }
    device_check(CheckDesc { op, dim, what }, index)?;
    Ok(true)
}

fn in_range(
    op: &'static str,
    vals: &[i32],
    dim: usize,
    axis: usize,
    data_shape: &[usize],
    index_shape: &[usize],
) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(vals.len());
    for &i in vals {
        if i < 0 || i as usize >= dim {
            return Err(Error::value(
                op,
                format!(
                    "index {i} is out of range for axis {axis} of size {dim} (input shape {data_shape:?}, index shape {index_shape:?})"
                ),
            ));
        }
        out.push(i as usize);
    }
    Ok(out)
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
    Ok(Tensor::from_buffer(out, out_shape))
}

/// The index operand of a scatter on a device: the host-checked values as a
/// cpu tensor (the backend plans the scatter from them), else the device
/// index itself. On the cpu, the index tensor (already checked).
fn scatter_index(index: &Tensor, idx: &Checked) -> Result<Tensor> {
    match idx {
        #[cfg(feature = "gpu")]
        Checked::Host(v) if index.device().is_gpu() => {
            Tensor::from_vec(v.iter().map(|&i| i as i32).collect::<Vec<i32>>(), index.shape())
        }
        _ => Ok(index.clone()),
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
    #[cfg(feature = "gpu")]
    let windows = match idx {
        Checked::Device => pool_windows(index, axis, base.shape()[axis]),
        Checked::Host(_) => None,
    };
    #[cfg(not(feature = "gpu"))]
    let windows = None;
    let index = scatter_index(index, &idx)?;
    let inputs = [(base, base.layout()), (&index, index.layout()), (src, src.layout())];
    run(op, KernelSpec::ScatterAdd { axis, windows }, inputs, base.shape())
}

/// The window geometry a device scatter may visit instead of scanning whole
/// index lines: `index` holds a max-pool argmax (each window's value lies
/// inside that window) viewed with the windows of one plane along the last
/// axis, `axis`, each line starting at a plane, and the target axis is the
/// [h, w] plane flattened (max-pool's backward; see `scatter_add_window`).
#[cfg(feature = "gpu")]
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
