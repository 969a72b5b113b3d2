//! The fused Adam/AdamW update (one pass over each parameter instead of the
//! dozen a tensor-op step makes; see `dispatch::optim`), one loop over the
//! four contiguous buffers.
//!
//! Its cost is the square root and the division per element, not memory: on
//! x86-64 the loop is also compiled with AVX (8 f32 lanes where the baseline
//! target has SSE2's 4) and picked at run time, which halves it. Every lane
//! does the same correctly rounded operations in the same order (no fused
//! multiply-add: the `fma` feature is not enabled, and Rust never contracts),
//! so the bits do not depend on the lanes, as deterministic mode needs.
//! Threads do not pay: the two halves of a large parameter on two cores took
//! longer than one core on this project's machine (shared divide units).

use num_traits::Float;

/// One step in place. `h` is `[lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled (0/1)]`.
pub fn adam<T: Float>(g: &[T], p: &mut [T], m: &mut [T], v: &mut [T], h: [f64; 8]) {
    let n = g.len();
    let (p, m, v) = (&mut p[..n], &mut m[..n], &mut v[..n]);
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the processor has AVX (checked above).
        unsafe { adam_avx(g, p, m, v, h) };
        return;
    }
    adam_body(g, p, m, v, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn adam_avx<T: Float>(g: &[T], p: &mut [T], m: &mut [T], v: &mut [T], h: [f64; 8]) {
    adam_body(g, p, m, v, h)
}

/// The loop, over slices of one length (so it compiles without bounds checks
/// and vectorises); AdamW and Adam get a loop each, with no branch inside.
#[inline(always)]
fn adam_body<T: Float>(g: &[T], p: &mut [T], m: &mut [T], v: &mut [T], h: [f64; 8]) {
    let c = |x: f64| T::from(x).expect("finite hyperparameter");
    let (b1, b2, eps, wd, bc2_sqrt) = (c(h[1]), c(h[2]), c(h[3]), c(h[4]), c(h[6]));
    let (step, shrink) = (c(h[0] / h[5]), c(1.0 - h[0] * h[4]));
    let one = T::one();
    let (c1, c2) = (one - b1, one - b2);
    #[inline(always)]
    fn update<T: Float>(p: T, g: T, m: &mut T, v: &mut T, [b1, b2, c1, c2, step, bc2_sqrt, eps]: [T; 7]) -> T {
        *m = b1 * *m + c1 * g;
        *v = b2 * *v + c2 * g * g;
        p - step * *m / (v.sqrt() / bc2_sqrt + eps)
    }
    let k = [b1, b2, c1, c2, step, bc2_sqrt, eps];
    let lanes = p.iter_mut().zip(m.iter_mut()).zip(v.iter_mut()).zip(g);
    if h[7] != 0.0 {
        for (((p, m), v), &g) in lanes {
            *p = update(*p * shrink, g, m, v, k);
        }
    } else {
        for (((p, m), v), &g) in lanes {
            *p = update(*p, g + wd * *p, m, v, k);
        }
    }
}
