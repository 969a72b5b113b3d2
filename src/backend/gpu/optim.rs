//! Fused optimizer updates on the GPU: one dispatch per parameter instead of
//! a dozen elementwise ones (see `dispatch::optim`).

use super::kernels::{workgroups, PRELUDE};
use super::GpuBuffer;
use crate::error::Result;

pub const ADAM: &str = include_str!("../../../shaders/adam.wgsl");

pub fn adam_source() -> String {
    format!("{PRELUDE}\n{ADAM}")
}

/// `h` = [lr, b1, b2, eps, wd, bc1, sqrt(bc2), decoupled].
pub fn adam_step(g: &GpuBuffer, p: &GpuBuffer, m: &GpuBuffer, v: &GpuBuffer, n: usize, h: [f64; 8]) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let ctx = p.ctx().clone();
    let mut params = vec![n as u32];
    params.extend(h[..7].iter().map(|&x| (x as f32).to_bits()));
    params.push((h[7] != 0.0) as u32);
    let pipeline = ctx.pipeline("optim:adam:f32", adam_source)?;
    ctx.dispatch(&pipeline, &params, &[g.raw(), p.raw(), m.raw(), v.raw()], workgroups(n));
    Ok(())
}
