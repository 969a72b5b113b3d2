//! Fused optimizer updates. An Adam step written with tensor ops makes about a
//! dozen passes over each parameter (and a dozen dispatches on the GPU); the
//! fused kernel makes one. Used by `optim::Adam`/`AdamW` when the parameter,
//! gradient and state tensors are contiguous and share a device and dtype;
//! other cases (and AMSGrad) take the tensor-op path.

use crate::backend::{self, View, ViewMut};
use crate::error::{Error, Result};
use crate::kernel::{KernelSpec, Scalar};
use crate::tensor::Tensor;

/// Hyperparameters of one step: [lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled (0/1)].
pub type AdamHyper = [f64; 8];

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
    {
        let gg = g.storage().read();
        let (mut gp, mut gm, mut gv) = (p.storage().write(), m.storage().write(), v.storage().write());
        let mut outputs =
            [ViewMut::new(&mut gp, p.layout()), ViewMut::new(&mut gm, m.layout()), ViewMut::new(&mut gv, v.layout())];
        let spec = KernelSpec::Adam { hyper: h.map(Scalar) };
        backend::run_into("adam_step", &spec, &[View::new(&gg, g.layout())], &mut outputs)?;
        drop((gg, gp, gm, gv));
        if super::record::active() {
            let targets = [p, m, v].map(|t| (t.storage(), t.layout()));
            super::record::into("adam_step", &spec, &[(g.storage(), g.layout())], &targets);
        }
    }
    for t in [p, m, v] {
        t.storage().bump_version();
    }
    Ok(())
}
