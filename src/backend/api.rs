//! What a backend offers (DESIGN principle 4): the [`Backend`] trait the cpu
//! and GPU backends implement, the views of buffers their kernels read and
//! write, and the errors for internal mismatches.
//!
//! The backends import this file and nothing above it; `run.rs` (the entry
//! points) reaches them only through `pick.rs`, which calls this trait. So a
//! backend never depends on the entry points that call it, and adding one
//! means implementing this trait and adding a `Buffer` variant.

use super::{Buffer, CpuBuffer, Storage};
use crate::error::{Error, Result};
use crate::kernel::{IndexCheck, KernelSpec};
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

/// A backend: how to run kernel specs over its own buffers. Every call is an
/// associated function (a backend keeps its state in its buffers and device
/// contexts, not in a value of this type). The entry points have already
/// checked arity, picked this backend by the buffers' variant, and widened
/// f16 operands where the backend runs a kernel in f32 (`half.rs`).
pub(crate) trait Backend {
    /// The backend's buffer (`CpuBuffer`, `GpuBuffer`).
    type Buffer;
    /// Where new buffers go: nothing on the cpu, a device's context on a GPU.
    type Place: ?Sized;

    /// `spec` over `inputs` into a new contiguous buffer of `out_shape`.
    fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<Self::Buffer>;
    /// The in-place `spec` (`CopyInto`, `Adam`): reads `inputs`, writes `outputs`.
    fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()>;
    /// A kernel without inputs (fills, sequences, random draws) into a new
    /// buffer of `out_shape` at `place`.
    fn create(op: &'static str, spec: &KernelSpec, place: &Self::Place, out_shape: &[usize]) -> Result<Self::Buffer>;
    /// The range check of the index view `layout` of `index` (`storage`'s buffer).
    fn check(check: &IndexCheck, storage: &Storage, index: &Self::Buffer, layout: &Layout) -> Result<()>;
    /// The elements of `layout` over `buffer`, contiguous on the host.
    fn download(buffer: &Self::Buffer, layout: &Layout) -> Result<CpuBuffer>;
    /// The elements of `layout` over the host buffer `host`, contiguous at `place`.
    fn upload(place: &Self::Place, host: &CpuBuffer, layout: &Layout) -> Result<Self::Buffer>;
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
