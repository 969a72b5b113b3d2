//! Fused optimizer updates on the GPU: one dispatch per parameter instead of
//! a dozen elementwise ones (see `dispatch::optim`).

use super::kernels::{workgroups, PRELUDE};
use super::GpuBuffer;
use crate::error::Result;
use crate::kernel::wgsl_text::wgsl_file;

pub const ADAM: &str = wgsl_file!(include_str!("../../../shaders/adam.wgsl"));

/// The update's source, one element (`f32`) or four (`vec4<f32>`) per invocation.
pub fn adam_source(elem: &str) -> String {
    format!("{PRELUDE}\n{}", ADAM.replace("{ELEM}", elem))
}

/// Below this, a length that is not a multiple of 4 runs one element per
/// invocation only: a second dispatch for its tail would cost more than the
/// vec4 form saves (a bias of 10).
const SPLIT_FROM: usize = 1024;

/// `h` = [lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled].
pub fn adam_step(g: &GpuBuffer, p: &GpuBuffer, m: &GpuBuffer, v: &GpuBuffer, n: usize, h: [f64; 8]) -> Result<()> {
    let ctx = p.ctx().clone();
    let mut params = vec![0u32];
    params.extend(h[..7].iter().map(|&x| (x as f32).to_bits()));
    params.push((h[7] != 0.0) as u32);
    params.push(0);
    let buffers = [g.raw(), p.raw(), m.raw(), v.raw()];
    // Elements [0, split) go four to an invocation, [split, n) one.
    let split = if n % 4 == 0 || n >= SPLIT_FROM { n / 4 * 4 } else { 0 };
    if split > 0 {
        let pipeline = ctx.pipeline("optim:adam4:f32", || adam_source("vec4<f32>"))?;
        params[0] = (split / 4) as u32;
        ctx.dispatch(&pipeline, &params, &buffers, workgroups(split / 4));
    }
    if split < n {
        let pipeline = ctx.pipeline("optim:adam:f32", || adam_source("f32"))?;
        (params[0], params[9]) = (n as u32, split as u32);
        ctx.dispatch(&pipeline, &params, &buffers, workgroups(n - split));
    }
    Ok(())
}
