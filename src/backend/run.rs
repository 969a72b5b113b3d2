//! The storage-level entry points: run a `KernelSpec` over views of buffers.
//! This is the only place that picks a backend by buffer variant; each
//! backend's `run` matches on the spec.

use super::{Buffer, CpuBuffer, Storage};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::shape::Layout;

/// What a kernel reads: a buffer and the layout (shape, strides, offset) of
/// the view of it.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub buffer: &'a Buffer,
    pub layout: &'a Layout,
}

impl<'a> View<'a> {
    pub fn new(buffer: &'a Buffer, layout: &'a Layout) -> Self {
        View { buffer, layout }
    }
}

/// What an in-place kernel writes: a buffer (its storage's write guard) and
/// the layout of the view of it.
pub struct ViewMut<'a> {
    pub buffer: &'a mut Buffer,
    pub layout: &'a Layout,
}

impl<'a> ViewMut<'a> {
    pub fn new(buffer: &'a mut Buffer, layout: &'a Layout) -> Self {
        ViewMut { buffer, layout }
    }
}

/// The error for views a backend cannot run `spec` on (wrong device or dtype:
/// dispatch rules these out, so it names an internal mismatch).
pub(crate) fn mismatch(op: &'static str, spec: &KernelSpec) -> Error {
    Error::dtype(op, format!("internal dtype or device mismatch in {}", spec.name()))
}

/// The error for a spec handed to the wrong entry point (`run` for an
/// in-place kernel, `create` for one with inputs, ...).
pub(crate) fn wrong_entry(op: &'static str, spec: &KernelSpec) -> Error {
    Error::value(op, format!("internal: kernel {} is not run through this entry point", spec.name()))
}

/// Exactly `N` inputs, each on the backend `here` recognises, as (buffer,
/// layout) pairs; else `mismatch`. No allocation: this runs for every op.
pub(crate) fn typed_inputs<'a, B: 'a, const N: usize>(
    op: &'static str,
    spec: &KernelSpec,
    inputs: &[View<'a>],
    here: impl Fn(&'a Buffer) -> Option<&'a B>,
) -> Result<[(&'a B, &'a Layout); N]> {
    if inputs.len() != N || !inputs.iter().all(|v| here(v.buffer).is_some()) {
        return Err(mismatch(op, spec));
    }
    Ok(std::array::from_fn(|i| (here(inputs[i].buffer).expect("checked above"), inputs[i].layout)))
}

fn check_arity(op: &'static str, spec: &KernelSpec, inputs: &[View]) -> Result<()> {
    if inputs.len() != spec.arity() {
        return Err(Error::value(
            op,
            format!("internal: kernel {} takes {} inputs, got {}", spec.name(), spec.arity(), inputs.len()),
        ));
    }
    Ok(())
}

/// Runs `spec` on `inputs` (all on one device) into a new contiguous buffer
/// of `out_shape`, on the backend that holds the first input.
pub fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Buffer> {
    if super::events::watched() {
        return run_watched(op, spec, inputs, out_shape);
    }
    run_unwatched(op, spec, inputs, out_shape)
}

/// `run` while a profile records or origins are tracked: timed, and its op
/// noted for the storage it makes.
#[cold]
#[inline(never)]
fn run_watched(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Buffer> {
    let span = super::events::op(op);
    let out = run_unwatched(op, spec, inputs, out_shape);
    drop(span);
    super::census::note_op(op);
    out
}

#[inline]
fn run_unwatched(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Buffer> {
    check_arity(op, spec, inputs)?;
    if super::half::involved(spec, inputs, &[]) {
        return super::half::run(op, inputs, |wide| run_on_backend(op, spec, wide, out_shape));
    }
    run_on_backend(op, spec, inputs, out_shape)
}

fn run_on_backend(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Buffer> {
    match inputs[0].buffer {
        Buffer::Cpu(_) => super::cpu::run::run(op, spec, inputs, out_shape).map(Buffer::Cpu),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => super::gpu::run::run(op, spec, inputs, out_shape).map(Buffer::Gpu),
    }
}

/// An error naming `op` unless `device` can hold a new buffer of `n`
/// elements of `dtype` now, asked before a kernel allocates: on the cpu a
/// probe of the host allocator (`cpu/room.rs`: a failed allocation would
/// abort); a GPU allocation reports its own failure (the device's limits,
/// out of memory) as an error, so there is nothing to ask first.
pub fn room(op: &'static str, device: &Device, n: usize, dtype: crate::dtype::DType) -> Result<()> {
    match device {
        Device::Cpu => super::cpu::room::ensure(op, n, dtype),
        #[cfg(feature = "gpu")]
        Device::Gpu(_) => Ok(()),
    }
}

/// Runs a kernel without inputs (`KernelSpec::Fill`) into a new buffer of
/// `out_shape` on `device`.
pub fn create(op: &'static str, spec: &KernelSpec, device: &Device, out_shape: &[usize]) -> Result<Buffer> {
    let _span = super::events::op(op);
    check_arity(op, spec, &[])?;
    // f16 fills, sequences and draws are made in f32 and rounded once (`half`).
    if let Some(wide) = super::half::widened_creation(spec) {
        let made = create(op, &wide, device, out_shape)?;
        let all = Layout::contiguous(&[made.len()]);
        return run(op, &KernelSpec::Cast { to: DType::F16 }, &[View::new(&made, &all)], &all.shape);
    }
    let out = match device {
        Device::Cpu => super::cpu::run::create(op, spec, out_shape).map(Buffer::Cpu),
        #[cfg(feature = "gpu")]
        Device::Gpu(d) => super::gpu::run::create(op, spec, d.context(), out_shape).map(Buffer::Gpu),
    };
    super::census::note_op(op);
    out
}

/// Runs a range check (`KernelSpec::IndexCheck`) of the index view `layout`
/// of `index`: on the cpu at once (an error names the first bad value); on
/// a GPU recorded with the queued work, failing the next readback (the
/// storage remembers a check of all of it, so equal values are not checked
/// twice). Nothing is read back.
pub fn check(spec: &KernelSpec, index: &Storage, layout: &Layout) -> Result<()> {
    let _span = super::events::op("index_check");
    let KernelSpec::IndexCheck(c) = spec else { return Err(wrong_entry("check", spec)) };
    let g = index.read();
    match &*g {
        Buffer::Cpu(b) => super::cpu::create::check(c, b, layout),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => super::gpu::run::check(c, index, b, layout),
    }
}

/// Runs an in-place `spec` (`CopyInto`, `Adam`) reading `inputs` and writing
/// into `outputs`, on the backend that holds the first output.
pub fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
    let _span = super::events::op(op);
    check_arity(op, spec, inputs)?;
    if outputs.is_empty() {
        return Err(Error::value(op, format!("internal: kernel {} writes no output", spec.name())));
    }
    if super::half::involved(spec, inputs, outputs) {
        return super::half::run_into(op, inputs, outputs, |i, o| run_into_on_backend(op, spec, i, o));
    }
    run_into_on_backend(op, spec, inputs, outputs)
}

fn run_into_on_backend(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
    match outputs[0].buffer {
        Buffer::Cpu(_) => super::cpu::run::run_into(op, spec, inputs, outputs),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => super::gpu::run::run_into(op, spec, inputs, outputs),
    }
}

/// A contiguous host copy of `view` (natively a GPU readback blocks; in the
/// browser it is an error saying to await `start_download` instead).
pub fn download(view: View) -> Result<CpuBuffer> {
    let _span = super::events::op("download");
    match view.buffer {
        Buffer::Cpu(b) => Ok(
            crate::with_cpu_buffer!(b, v, T => <T as super::cpu::Elem>::wrap(super::cpu::gather_strided(v, view.layout))),
        ),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => super::gpu::elementwise::download(b, view.layout),
    }
}

/// A download started without blocking: finish it with `Pending::finish`.
pub enum Pending {
    Ready(CpuBuffer),
    #[cfg(feature = "gpu")]
    Gpu(super::gpu::readback::Readback, crate::dtype::DType),
}

impl Pending {
    /// The host copy, once the device has written it (the browser's map
    /// callback wakes this; natively the future waits for the device).
    pub async fn finish(self) -> Result<CpuBuffer> {
        match self {
            Pending::Ready(b) => Ok(b),
            #[cfg(feature = "gpu")]
            Pending::Gpu(readback, dtype) => {
                let bytes = super::gpu::readback::read(readback).await?;
                Ok(super::gpu::elementwise::decode(&bytes, dtype))
            }
        }
    }
}

/// Starts a contiguous host copy of `view`; nothing blocks.
pub fn start_download(view: View) -> Result<Pending> {
    let _span = super::events::op("download");
    match view.buffer {
        Buffer::Cpu(_) => download(view).map(Pending::Ready),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Ok(Pending::Gpu(super::gpu::elementwise::start_download(b, view.layout)?, b.dtype)),
    }
}

/// A host buffer, already contiguous, moved onto `device` (on the cpu it is
/// kept as it is: no copy).
pub fn upload_owned(host: CpuBuffer, device: &Device) -> Result<Buffer> {
    match device {
        Device::Cpu => Ok(Buffer::Cpu(host)),
        #[cfg(feature = "gpu")]
        Device::Gpu(_) => upload(&host, &Layout::contiguous(&[host.len()]), device),
    }
}

/// The elements of the host buffer `host` (viewed as `layout`) in a new
/// contiguous buffer on `device`.
pub fn upload(host: &CpuBuffer, layout: &Layout, device: &Device) -> Result<Buffer> {
    let _span = super::events::op("upload");
    super::census::note_op("to");
    match device {
        Device::Cpu => Ok(Buffer::Cpu(
            crate::with_cpu_buffer!(host, v, T => <T as super::cpu::Elem>::wrap(super::cpu::gather_strided(v, layout))),
        )),
        #[cfg(feature = "gpu")]
        Device::Gpu(d) => super::gpu::elementwise::upload(d.context(), host, layout).map(Buffer::Gpu),
    }
}

/// A compiler's error: the (line, column) of the whole source it points at, if any, and its text.
pub type CompileError = (Option<(usize, usize)>, String);

/// The errors `device`'s WGSL compiler reports for `source` (a custom
/// kernel's, checked at registration): the browser's compiler on WebGPU,
/// naga natively; none on the cpu, which compiles no WGSL.
pub async fn compile_errors(device: &Device, source: &str) -> Vec<CompileError> {
    match device {
        Device::Cpu => {
            let _ = source;
            Vec::new()
        }
        #[cfg(feature = "gpu")]
        Device::Gpu(d) => super::gpu::custom::compile_errors(d.context(), source).await,
    }
}

/// The GPU kernel times of profiling session `session` from every device
/// that timed dispatches in it (one readback each), and how many
/// dispatches went untimed (a session keeps 32,768 per device).
pub async fn kernel_times(session: u64) -> Result<(Vec<super::events::GpuTime>, u64)> {
    #[cfg(feature = "gpu")]
    return super::gpu::timing::collect(session).await;
    #[cfg(not(feature = "gpu"))]
    {
        let _ = session;
        Ok((Vec::new(), 0))
    }
}
