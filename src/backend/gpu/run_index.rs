//! The GPU backend's index kernels as `KernelSpec`s. Dispatch has checked
//! every index value before any of these runs: on the host (then a scatter's
//! index arrives as a cpu buffer of those values, and the scatter is planned
//! from them) or on the device (then the index arrives as the device buffer,
//! read where it lies).

use super::index::{self as gk, ScatterPlan};
use super::GpuBuffer;
use crate::backend::{Buffer, View};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::KernelSpec;
use crate::shape::{Dims, Layout};

fn on_gpu<'a>(op: &'static str, v: &View<'a>) -> Result<(&'a GpuBuffer, &'a Layout)> {
    match v.buffer {
        Buffer::Gpu(b) => Ok((b, v.layout)),
        Buffer::Cpu(_) => Err(Error::value(op, "internal: a cpu buffer reached a GPU index kernel")),
    }
}

/// The 1-D `index` (stride on `axis`, 0 elsewhere) seen from every position of `shape`.
fn broadcast_on_axis(index: &Layout, shape: &[usize], axis: usize) -> Layout {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    strides[axis] = index.strides[0];
    Layout { shape: shape.into(), strides, offset: index.offset }
}

/// Host-checked values of a cpu index buffer (contiguous, as dispatch makes them).
fn host_values(op: &'static str, index: &crate::backend::CpuBuffer, layout: &Layout) -> Result<Vec<usize>> {
    match index {
        crate::backend::CpuBuffer::I32(v) => {
            Ok(crate::backend::cpu::gather_strided(v, layout).into_iter().map(|i| i as usize).collect())
        }
        other => Err(Error::dtype(op, format!("index must be i32, got {}", other.dtype()))),
    }
}

pub fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<GpuBuffer> {
    match (spec, inputs) {
        (KernelSpec::IndexSelect { axis }, [x, index]) => {
            let ((xb, xl), (ib, il)) = (on_gpu(op, x)?, on_gpu(op, index)?);
            gk::gather(op, xb, xl, *axis, ib, &broadcast_on_axis(il, out_shape, *axis))
        }
        (KernelSpec::Gather { axis }, [x, index]) => {
            let ((xb, xl), (ib, il)) = (on_gpu(op, x)?, on_gpu(op, index)?);
            gk::gather(op, xb, xl, *axis, ib, il)
        }
        (KernelSpec::IndexAdd { axis } | KernelSpec::ScatterAdd { axis, .. }, [base, index, src]) => {
            let ((bb, bl), (sb, sl)) = (on_gpu(op, base)?, on_gpu(op, src)?);
            if bb.dtype != sb.dtype || !matches!(bb.dtype, DType::F32 | DType::F16 | DType::I32) {
                return Err(Error::dtype(op, "operands must share one float or i32 dtype (add)"));
            }
            let add = matches!(spec, KernelSpec::IndexAdd { .. });
            let il = index.layout;
            let (plan, device_index) = match index.buffer {
                Buffer::Cpu(host) => {
                    let v = host_values(op, host, il)?;
                    let plan = if add {
                        ScatterPlan::index_add(&v, &bl.shape)
                    } else {
                        ScatterPlan::scatter(&v, &il.shape, *axis)
                    };
                    (plan, None)
                }
                Buffer::Gpu(ib) if add => {
                    let view = broadcast_on_axis(il, &bl.shape, *axis);
                    (ScatterPlan::device_index(il.numel(), &bl.shape, view), Some(ib))
                }
                Buffer::Gpu(ib) => {
                    let mut plan = ScatterPlan::device_index(il.shape[*axis], &il.shape, il.clone());
                    if let KernelSpec::ScatterAdd { windows, .. } = spec {
                        plan.windows = *windows;
                    }
                    (plan, Some(ib))
                }
            };
            gk::scatter_add(op, (bb, bl), (sb, sl), *axis, &plan, device_index)
        }
        _ => Err(Error::value(op, format!("internal: {} is not an index kernel", spec.name()))),
    }
}
