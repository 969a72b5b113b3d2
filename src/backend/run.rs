//! The storage-level entry points: run a `KernelSpec` over views of buffers.
//! What every kernel gets here, whichever backend runs it: the arity check,
//! the profiler's span, the f16 widening (`half.rs`); `pick.rs` then hands it
//! to the backend that holds the buffers.

use super::api::{wrong_entry, View, ViewMut};
use super::{pick, Buffer, CpuBuffer, Storage};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::shape::Layout;

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
        return super::half::run(op, inputs, |wide| pick::run(op, spec, wide, out_shape));
    }
    pick::run(op, spec, inputs, out_shape)
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
    let out = pick::create(op, spec, device, out_shape);
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
    pick::check(c, index, &index.read(), layout)
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
        return super::half::run_into(op, inputs, outputs, |i, o| pick::run_into(op, spec, i, o));
    }
    pick::run_into(op, spec, inputs, outputs)
}

/// A contiguous host copy of `view` (natively a GPU readback blocks; in the
/// browser it is an error saying to await `start_download` instead).
pub fn download(view: View) -> Result<CpuBuffer> {
    let _span = super::events::op("download");
    pick::download(view)
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
    pick::upload(host, layout, device)
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
