//! Dispatch for data movement that views cannot express.

use crate::backend::{self, View, ViewMut};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{KernelSpec, Scalar};
use crate::shape::Layout;
use crate::tensor::Tensor;

/// Builds a new contiguous tensor of `shape` filled with `fill`, then writes
/// each piece into its region (a strided sub-layout of the new tensor).
/// Concat, pad and the backward of slice are all this one primitive: a
/// `Fill` kernel, then one `CopyInto` per piece.
pub fn assemble(
    op: &'static str,
    shape: &[usize],
    dtype: DType,
    fill: f64,
    pieces: &[(Layout, &Tensor)],
) -> Result<Tensor> {
    let device = match pieces.first() {
        Some((_, first)) => {
            super::room_for(op, first, shape, dtype)?;
            first.device()
        }
        None => crate::device::Device::Cpu,
    };
    let fill_spec = KernelSpec::Fill { dtype, value: Scalar(fill) };
    let mut out = backend::create(op, &fill_spec, &device, shape)?;
    let mut written = Vec::new();
    for (region, src) in pieces {
        if src.device() != device {
            return Err(Error::Device { op, found: format!("pieces on {} and {}", device, src.device()) });
        }
        if src.dtype() != dtype {
            return Err(Error::dtype(op, format!("pieces must share one dtype, got {} and {}", dtype, src.dtype())));
        }
        // CopyInto reads a contiguous source.
        let src = if src.is_contiguous() { (*src).clone() } else { super::elementwise::copy(src)? };
        {
            let g = src.storage().read();
            let views = [View::new(&g, src.layout())];
            backend::run_into(op, &KernelSpec::CopyInto, &views, &mut [ViewMut::new(&mut out, region)])?;
        }
        if super::record::active() {
            written.push((src, region));
        }
    }
    let out = Tensor::from_buffer(out, shape);
    if super::record::active() {
        super::record::create(op, &fill_spec, &out);
        for (src, region) in &written {
            super::record::into(
                op,
                &KernelSpec::CopyInto,
                &[(src.storage(), src.layout())],
                &[(out.storage(), *region)],
            );
        }
    }
    Ok(out)
}
