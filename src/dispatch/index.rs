//! Device dispatch for the index family. The index operand is range-checked
//! here, before any kernel runs, so a bad index is an `Error` naming the op and
//! shapes (never an out-of-bounds panic in a kernel, nor an out-of-bounds
//! access on a GPU). Values the host holds (cpu tensors, and the host mirror
//! of indices uploaded to a GPU) are checked at once; values that exist only
//! on a GPU are never read back for it (the browser cannot block): a device
//! check runs with the op and reports at the next readback (`gpu::checks`).

use crate::backend::cpu::index as k;
use crate::backend::cpu::{gather_strided, CpuBuffer, Elem};
#[cfg(feature = "gpu")]
use crate::backend::gpu::index as gk;
use crate::backend::Buffer;
#[cfg(feature = "gpu")]
use crate::dtype::DType;
use crate::error::{Error, Result};
#[cfg(feature = "gpu")]
use crate::shape::Dims;
use crate::shape::Layout;
use crate::tensor::Tensor;
use std::borrow::Cow;

fn cpu_of(buf: &Buffer) -> Result<&CpuBuffer> {
    match buf {
        Buffer::Cpu(b) => Ok(b),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => Err(Error::value("index", "internal: a GPU buffer reached a cpu index kernel")),
    }
}

/// The elements of a layout in row-major order, borrowed when already contiguous.
fn contiguous<'a, T: Elem>(v: &'a [T], l: &Layout) -> Cow<'a, [T]> {
    if l.is_contiguous() {
        Cow::Borrowed(&v[l.offset..l.offset + l.numel()])
    } else {
        Cow::Owned(gather_strided(v, l))
    }
}

/// An index operand after its range check.
enum Checked {
    /// The values, read on the host and checked to lie in `0..dim`.
    Host(Vec<usize>),
    /// A GPU index the host does not hold: its storage carries a bound within
    /// `0..dim` (written by argmax or max-pool's window argmax, or checked
    /// on the device before), or its check was recorded on the device and
    /// reports at the next readback. Nothing was read back.
    #[cfg(feature = "gpu")]
    Device,
}

impl Checked {
    /// The host values (`Trusted` only arises for GPU indices, which the cpu
    /// kernels never see).
    fn host(&self, op: &'static str) -> Result<&[usize]> {
        #[cfg(not(feature = "gpu"))]
        let _ = op;
        match self {
            Checked::Host(v) => Ok(v),
            #[cfg(feature = "gpu")]
            Checked::Device => Err(Error::value(op, "internal: a GPU index reached a cpu index kernel")),
        }
    }
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
    let CpuBuffer::I32(v) = cpu_of(&g)? else { return Err(not_i32()) };
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
    let Buffer::Gpu(ib) = &*g else { return Err(Error::value(desc.op, "internal: a cpu index on the GPU path")) };
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

/// (outer, dim, inner) of `shape` around `axis`.
fn split3(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

fn internal(op: &'static str, what: &str) -> Error {
    Error::dtype(op, format!("operands must share one float or i32 dtype ({what})"))
}

/// Runs `$body` with `$x`/`$y` bound to the typed slices of two same-dtype
/// buffers of an addable dtype (f32, f64, i32), wrapping the Vec it returns.
macro_rules! addable_pair {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (CpuBuffer::F32($x), CpuBuffer::F32($y)) => CpuBuffer::F32($body),
            (CpuBuffer::F64($x), CpuBuffer::F64($y)) => CpuBuffer::F64($body),
            (CpuBuffer::I32($x), CpuBuffer::I32($y)) => CpuBuffer::I32($body),
            _ => return Err(internal($op, "add")),
        }
    };
}

/// Slices of `x` along `axis` at the positions in 1-D `index`.
pub fn index_select(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    let mut shape = x.dims();
    shape[axis] = index.numel();
    super::room_for(op, x, &shape, x.dtype())?;
    let idx = checked_indices(op, index, x.shape()[axis], axis, x.shape(), Effect::ReadsZero)?;
    #[cfg(feature = "gpu")]
    if on_gpu(x) {
        // The 1-D index viewed in the output's shape, broadcast along every other dim.
        let il = index.layout();
        let mut strides: Dims = smallvec::smallvec![0; shape.len()];
        strides[axis] = il.strides[0];
        return gpu_gather(op, x, axis, index, &Layout { shape: shape.clone(), strides, offset: il.offset });
    }
    let (outer, dim, inner) = split3(x.shape(), axis);
    let g = x.storage().read();
    let out = crate::with_cpu_buffer!(cpu_of(&g)?, v, T => {
        T::wrap(k::index_select(&contiguous(v, x.layout()), outer, dim, inner, idx.host(op)?))
    });
    Ok(Tensor::from_buffer(Buffer::Cpu(out), &shape))
}

/// A copy of `base` with the slices of `src` along `axis` added at `index`.
pub fn index_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    super::room_for(op, base, base.shape(), base.dtype())?;
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape(), Effect::AddsNothing)?;
    #[cfg(feature = "gpu")]
    if on_gpu(base) {
        let plan = match &idx {
            Checked::Host(v) => gk::ScatterPlan::index_add(v, base.shape()),
            Checked::Device => {
                // The 1-D index seen from every output position: its stride on the axis, 0 elsewhere.
                let il = index.layout();
                let mut strides: Dims = smallvec::smallvec![0; base.ndim()];
                strides[axis] = il.strides[0];
                let view = Layout { shape: base.dims(), strides, offset: il.offset };
                gk::ScatterPlan::device_index(index.numel(), base.shape(), view)
            }
        };
        return gpu_scatter_add(op, base, axis, src, Some(index), &plan);
    }
    let (outer, dim, inner) = split3(base.shape(), axis);
    let (gb, gs) = (base.storage().read(), src.storage().read());
    let out = addable_pair!(op, cpu_of(&gb)?, cpu_of(&gs)?, |b, s| {
        let mut out = gather_strided(b, base.layout());
        k::index_add(&mut out, outer, dim, inner, idx.host(op)?, &contiguous(s, src.layout()));
        out
    });
    Ok(Tensor::from_buffer(Buffer::Cpu(out), base.shape()))
}

/// Elements of `x` picked along `axis` by `index` (same rank, PyTorch's gather).
pub fn gather(op: &'static str, x: &Tensor, axis: usize, index: &Tensor) -> Result<Tensor> {
    super::room_for(op, x, index.shape(), x.dtype())?;
    let idx = checked_indices(op, index, x.shape()[axis], axis, x.shape(), Effect::ReadsZero)?;
    #[cfg(feature = "gpu")]
    if on_gpu(x) {
        return gpu_gather(op, x, axis, index, index.layout());
    }
    let g = x.storage().read();
    let out = crate::with_cpu_buffer!(cpu_of(&g)?, v, T => T::wrap(k::gather(v, x.layout(), axis, idx.host(op)?, index.shape())));
    Ok(Tensor::from_buffer(Buffer::Cpu(out), index.shape()))
}

/// A copy of `base` with `src[p]` added at `p` with `p[axis] = index[p]`.
pub fn scatter_add(op: &'static str, base: &Tensor, axis: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    super::room_for(op, base, base.shape(), base.dtype())?;
    let idx = checked_indices(op, index, base.shape()[axis], axis, base.shape(), Effect::AddsNothing)?;
    #[cfg(feature = "gpu")]
    if on_gpu(base) {
        let plan = match &idx {
            Checked::Host(v) => gk::ScatterPlan::scatter(v, index.shape(), axis),
            Checked::Device => {
                let mut plan =
                    gk::ScatterPlan::device_index(index.shape()[axis], index.shape(), index.layout().clone());
                plan.windows = pool_windows(index, axis, base.shape()[axis]);
                plan
            }
        };
        return gpu_scatter_add(op, base, axis, src, Some(index), &plan);
    }
    let (gb, gs) = (base.storage().read(), src.storage().read());
    let out = addable_pair!(op, cpu_of(&gb)?, cpu_of(&gs)?, |b, s| {
        let mut out = gather_strided(b, base.layout());
        k::scatter_add(&mut out, base.shape(), axis, idx.host(op)?, index.shape(), s, src.layout());
        out
    });
    Ok(Tensor::from_buffer(Buffer::Cpu(out), base.shape()))
}

/// The window geometry a device scatter may visit instead of scanning whole
/// index lines: `index` holds a max-pool argmax (each window's value lies
/// inside that window) viewed with the windows of one plane along the last
/// axis, `axis`, each line starting at a plane, and the target axis is the
/// [h, w] plane flattened (max-pool's backward; see `scatter_add_window`).
#[cfg(feature = "gpu")]
fn pool_windows(index: &Tensor, axis: usize, dim: usize) -> Option<crate::backend::PoolWindows> {
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

#[cfg(feature = "gpu")]
fn on_gpu(x: &Tensor) -> bool {
    matches!(x.device(), crate::device::Device::Gpu(_))
}

#[cfg(feature = "gpu")]
fn mixed(op: &'static str, a: &Tensor, b: &Tensor) -> Error {
    Error::Device { op, found: format!("{} and {}", a.device(), b.device()) }
}

/// `x` gathered at `il`, the index viewed in the output's shape (`il.shape`).
#[cfg(feature = "gpu")]
fn gpu_gather(op: &'static str, x: &Tensor, axis: usize, index: &Tensor, il: &Layout) -> Result<Tensor> {
    let (gx, gi) = (x.storage().read(), index.storage().read());
    let (Buffer::Gpu(xb), Buffer::Gpu(ib)) = (&*gx, &*gi) else { return Err(mixed(op, x, index)) };
    let out = gk::gather(op, xb, x.layout(), axis, ib, il)?;
    Ok(Tensor::from_buffer(Buffer::Gpu(out), &il.shape))
}

#[cfg(feature = "gpu")]
fn gpu_scatter_add(
    op: &'static str,
    base: &Tensor,
    axis: usize,
    src: &Tensor,
    index: Option<&Tensor>,
    plan: &gk::ScatterPlan,
) -> Result<Tensor> {
    let (gb, gs) = (base.storage().read(), src.storage().read());
    let (Buffer::Gpu(bb), Buffer::Gpu(sb)) = (&*gb, &*gs) else { return Err(mixed(op, base, src)) };
    if bb.dtype != sb.dtype || !matches!(bb.dtype, DType::F32 | DType::I32) {
        return Err(internal(op, "add"));
    }
    let gi = index.map(|i| i.storage().read());
    let ib = match gi.as_deref() {
        Some(Buffer::Gpu(ib)) => Some(ib),
        Some(_) => return Err(mixed(op, base, index.expect("read above"))),
        None => None,
    };
    let out = gk::scatter_add(op, (bb, base.layout()), (sb, src.layout()), axis, plan, ib)?;
    Ok(Tensor::from_buffer(Buffer::Gpu(out), base.shape()))
}
