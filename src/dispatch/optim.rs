//! Fused optimizer updates. An Adam step written with tensor ops makes about a
//! dozen passes over each parameter (and a dozen dispatches on the GPU); the
//! fused kernel makes one. Used by `optim::Adam`/`AdamW` when the parameter,
//! gradient and state tensors are contiguous and share a device and dtype;
//! other cases (and AMSGrad) take the tensor-op path.

use crate::backend::cpu::CpuBuffer;
use crate::backend::Buffer;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use num_traits::Float;

/// Hyperparameters of one step: [lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled (0/1)].
pub type AdamHyper = [f64; 8];

fn adam_cpu<T: Float>(g: &[T], p: &mut [T], m: &mut [T], v: &mut [T], h: AdamHyper) {
    let c = |x: f64| T::from(x).expect("finite hyperparameter");
    let (b1, b2, eps, wd, bc2_sqrt) = (c(h[1]), c(h[2]), c(h[3]), c(h[4]), c(h[6]));
    let (step, shrink, decoupled) = (c(h[0] / h[5]), c(1.0 - h[0] * h[4]), h[7] != 0.0);
    let one = T::one();
    for i in 0..p.len() {
        let mut g = g[i];
        if decoupled {
            p[i] = p[i] * shrink;
        } else {
            g = g + wd * p[i];
        }
        m[i] = b1 * m[i] + (one - b1) * g;
        v[i] = b2 * v[i] + (one - b2) * g * g;
        p[i] = p[i] - step * m[i] / (v[i].sqrt() / bc2_sqrt + eps);
    }
}

/// Whether `adam_step` can run on these tensors.
pub fn adam_fusable(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor) -> bool {
    let ts = [p, g, m, v];
    ts.iter().all(|t| t.is_contiguous() && t.layout().offset == 0 && t.shape() == p.shape())
        && ts.iter().all(|t| t.dtype() == p.dtype() && t.device() == p.device())
        && [g, m, v].iter().all(|t| !std::sync::Arc::ptr_eq(t.storage(), p.storage()))
        && !std::sync::Arc::ptr_eq(m.storage(), v.storage())
}

/// One fused Adam/AdamW step, in place on `p`, `m` and `v` (bumping their versions).
pub fn adam_step(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor, h: AdamHyper) -> Result<()> {
    if !adam_fusable(p, g, m, v) {
        return Err(Error::value("adam_step", "fused update needs contiguous, distinct tensors of one shape"));
    }
    let n = p.numel();
    {
        let gg = g.storage().read();
        let mut gp = p.storage().write();
        let mut gm = m.storage().write();
        let mut gv = v.storage().write();
        match (&*gg, &mut *gp, &mut *gm, &mut *gv) {
            (
                Buffer::Cpu(CpuBuffer::F32(g)),
                Buffer::Cpu(CpuBuffer::F32(p)),
                Buffer::Cpu(CpuBuffer::F32(m)),
                Buffer::Cpu(CpuBuffer::F32(v)),
            ) => adam_cpu(&g[..n], &mut p[..n], &mut m[..n], &mut v[..n], h),
            (
                Buffer::Cpu(CpuBuffer::F64(g)),
                Buffer::Cpu(CpuBuffer::F64(p)),
                Buffer::Cpu(CpuBuffer::F64(m)),
                Buffer::Cpu(CpuBuffer::F64(v)),
            ) => adam_cpu(&g[..n], &mut p[..n], &mut m[..n], &mut v[..n], h),
            #[cfg(feature = "gpu")]
            (Buffer::Gpu(g), Buffer::Gpu(p), Buffer::Gpu(m), Buffer::Gpu(v)) => {
                crate::backend::gpu::optim::adam_step(g, p, m, v, n, h)?
            }
            _ => {
                return Err(Error::dtype("adam_step", format!("unsupported dtype {} for the fused update", p.dtype())))
            }
        }
    }
    for t in [p, m, v] {
        t.storage().bump_version();
    }
    Ok(())
}
