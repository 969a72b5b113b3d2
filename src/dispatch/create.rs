//! Dispatch for kernels without inputs (fills, sequences, random draws):
//! room for the result on the named device, then `backend::create`.

use crate::backend;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::{Distribution, KernelSpec};
use crate::random::with_generator;
use crate::shape::check_size;
use crate::tensor::Tensor;

/// The element count of a new tensor of `shape` and `dtype` on `device`,
/// once the count is valid (`shape::check_size`) and the device has room
/// for it (`backend::room`).
pub(crate) fn room_on(op: &'static str, device: &Device, shape: &[usize], dtype: DType) -> Result<usize> {
    let n = check_size(op, shape)?;
    backend::room(op, device, n, dtype)?;
    Ok(n)
}

/// Runs the input-less `spec` into a new tensor of `shape` on `device`
/// (the caller checked its arguments and the room).
pub fn create(op: &'static str, spec: &KernelSpec, shape: &[usize], device: &Device) -> Result<Tensor> {
    let out = Tensor::from_buffer(backend::create(op, spec, device, shape)?, shape);
    if super::record::active() {
        super::record::create(op, spec, &out);
    }
    Ok(out)
}

/// A tensor of `shape` and `dtype` on `device` drawn from `dist` (the
/// caller checked its arguments): the spec's seed is drawn from the global
/// generator (`manual_seed`) once per call, after the room check, so a call
/// that fails there leaves the generator as it was.
pub fn random(op: &'static str, dist: Distribution, dtype: DType, shape: &[usize], device: &Device) -> Result<Tensor> {
    room_on(op, device, shape, dtype)?;
    let seed = with_generator(|g| g.next_u64());
    create(op, &KernelSpec::Random { dist, dtype, seed }, shape, device)
}
