//! Which backend runs a kernel: the one that holds its buffers (or, for a
//! kernel without inputs, the device asked for). The only place that maps a
//! `Buffer` variant or a `Device` to a [`Backend`]; everything above calls
//! these, everything below is a backend.

use super::api::{Backend, View, ViewMut};
use super::cpu::Cpu;
#[cfg(feature = "gpu")]
use super::gpu::Gpu;
use super::{Buffer, CpuBuffer, Storage};
use crate::device::Device;
use crate::error::Result;
use crate::kernel::{IndexCheck, KernelSpec};
use crate::shape::Layout;

/// `spec` over `inputs` on the backend of the first input.
pub(crate) fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Buffer> {
    match inputs[0].buffer {
        Buffer::Cpu(_) => Cpu::run(op, spec, inputs, out_shape).map(Buffer::Cpu),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => Gpu::run(op, spec, inputs, out_shape).map(Buffer::Gpu),
    }
}

/// The in-place `spec` on the backend of the first output.
pub(crate) fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
    match outputs[0].buffer {
        Buffer::Cpu(_) => Cpu::run_into(op, spec, inputs, outputs),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(_) => Gpu::run_into(op, spec, inputs, outputs),
    }
}

/// A kernel without inputs on `device`.
pub(crate) fn create(op: &'static str, spec: &KernelSpec, device: &Device, out_shape: &[usize]) -> Result<Buffer> {
    match device {
        Device::Cpu => Cpu::create(op, spec, &(), out_shape).map(Buffer::Cpu),
        #[cfg(feature = "gpu")]
        Device::Gpu(d) => Gpu::create(op, spec, d.context(), out_shape).map(Buffer::Gpu),
    }
}

/// The range check of `index` (`storage`'s buffer, already read-locked) on its backend.
pub(crate) fn check(check: &IndexCheck, storage: &Storage, index: &Buffer, layout: &Layout) -> Result<()> {
    match index {
        Buffer::Cpu(b) => Cpu::check(check, storage, b, layout),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Gpu::check(check, storage, b, layout),
    }
}

/// A contiguous host copy of `view`.
pub(crate) fn download(view: View) -> Result<CpuBuffer> {
    match view.buffer {
        Buffer::Cpu(b) => Cpu::download(b, view.layout),
        #[cfg(feature = "gpu")]
        Buffer::Gpu(b) => Gpu::download(b, view.layout),
    }
}

/// The host buffer `host` (viewed as `layout`) in a new contiguous buffer on `device`.
pub(crate) fn upload(host: &CpuBuffer, layout: &Layout, device: &Device) -> Result<Buffer> {
    match device {
        Device::Cpu => Cpu::upload(&(), host, layout).map(Buffer::Cpu),
        #[cfg(feature = "gpu")]
        Device::Gpu(d) => Gpu::upload(d.context(), host, layout).map(Buffer::Gpu),
    }
}
