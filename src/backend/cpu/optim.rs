//! The fused Adam/AdamW update (one pass over each parameter instead of the
//! dozen a tensor-op step makes; see `dispatch::optim`), one `Zip` over the
//! four contiguous buffers.

use ndarray::{ArrayView1, ArrayViewMut1, Zip};
use num_traits::Float;

/// One step in place. `h` is `[lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled (0/1)]`.
pub fn adam<T: Float>(g: &[T], p: &mut [T], m: &mut [T], v: &mut [T], h: [f64; 8]) {
    let c = |x: f64| T::from(x).expect("finite hyperparameter");
    let (b1, b2, eps, wd, bc2_sqrt) = (c(h[1]), c(h[2]), c(h[3]), c(h[4]), c(h[6]));
    let (step, shrink, decoupled) = (c(h[0] / h[5]), c(1.0 - h[0] * h[4]), h[7] != 0.0);
    let one = T::one();
    let (p, m, v) = (ArrayViewMut1::from(p), ArrayViewMut1::from(m), ArrayViewMut1::from(v));
    Zip::from(p).and(m).and(v).and(&ArrayView1::from(g)).for_each(|p, m, v, &g| {
        let mut g = g;
        if decoupled {
            *p = *p * shrink;
        } else {
            g = g + wd * *p;
        }
        *m = b1 * *m + (one - b1) * g;
        *v = b2 * *v + (one - b2) * g * g;
        *p = *p - step * *m / (v.sqrt() / bc2_sqrt + eps);
    });
}
