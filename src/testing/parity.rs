//! cpu-vs-GPU parity of one case sample, forward, first and second order
//! (see `mod.rs`). Async: GPU tensors are read only through
//! `host_copy_async`, so this runs in a browser too.

use super::compare::compare_values;
use super::cpu::{directions, dot_directions, first_grads, weights};
use super::{
    case_of, fail, float_positions, Check, CheckResult, GPU_DTYPE_ERROR, PARITY_ATOL, PARITY_RTOL, PARITY_TOLERANCES,
};
use crate::autograd::{enable_grad, grad, GradOptions};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{case_seed, Case, OpDef, OpKind};
use crate::tensor::Tensor;

type Outcome<T> = std::result::Result<T, String>;

/// The parity tolerances (atol, rtol) of `op`'s case.
pub fn parity_tolerance(op: &str, case: &Case) -> (f64, f64) {
    let (a, r) = PARITY_TOLERANCES.iter().find(|t| t.0 == op).map(|t| (t.1, t.2)).unwrap_or((PARITY_ATOL, PARITY_RTOL));
    (a * case.tol, r * case.tol)
}

/// The elements of `t` as f64, read without blocking (GPU tensors through
/// `host_copy_async`).
async fn values_async(t: &Tensor) -> Result<Vec<f64>> {
    let host = crate::dispatch::host_copy_async(t).await?;
    Ok(crate::with_cpu_buffer!(&host, v, T => v.iter().map(|&x| crate::backend::Elem::to_f64(x)).collect()))
}

/// Compares a GPU result with the cpu's: same shape and dtype, floats within
/// `atol + rtol * |cpu|`, indices and masks exactly, non-finite values only
/// with `nonfinite` (and then exactly). The error names the first mismatch
/// and how many there are. Reads the GPU tensor with `host_copy_async`.
pub async fn compare_gpu(what: &str, gpu: &Tensor, cpu: &Tensor, atol: f64, rtol: f64, nonfinite: bool) -> Outcome<()> {
    if !gpu.device().is_gpu() {
        return Err(format!("{what}: the GPU result lives on {} (expected the GPU)", gpu.device()));
    }
    if gpu.shape() != cpu.shape() || gpu.dtype() != cpu.dtype() {
        return Err(format!(
            "{what}: gpu gives {} {:?}, cpu gives {} {:?}",
            gpu.dtype(),
            gpu.shape(),
            cpu.dtype(),
            cpu.shape()
        ));
    }
    let g = values_async(gpu).await.map_err(|e| format!("{what}: reading the GPU result back failed: {e}"))?;
    let c = values_async(cpu).await.map_err(|e| format!("{what}: reading the cpu result failed: {e}"))?;
    let (atol, rtol) = if cpu.dtype().is_float() { (atol, rtol) } else { (0.0, 0.0) };
    compare_values(&format!("{what} (gpu vs cpu)"), &g, &c, atol, rtol, nonfinite)
}

/// Runs sample `k` of `def` in f32 on the cpu and on `gpu`, each with its
/// inputs laid out on its own device: forward values must agree, and for
/// differentiable ops the gradients of sum(out * w) with respect to every
/// float input, and for second-order ops the gradients of
/// sum_i <grad_i, v_i> with respect to the inputs and w. Cases in
/// `GPU_DTYPE_ERROR` must instead fail on the GPU with a dtype error.
/// Returns the checks that ran.
pub async fn check_gpu_parity(def: &OpDef, k: usize, gpu: &Device) -> CheckResult<Vec<Check>> {
    let case = case_of(def, k)?;
    let fail = fail(def, &case);
    gpu_parity(def, &case, k, gpu).await.map_err(fail)
}

async fn gpu_parity(def: &OpDef, case: &Case, k: usize, gpu: &Device) -> Outcome<Vec<Check>> {
    if !gpu.is_gpu() {
        return Err(format!("the parity check needs a GPU device, got {gpu}"));
    }
    let seed = case_seed(def.name, k);
    let xs = case.make_inputs(def.name, k, DType::F32).map_err(|e| format!("inputs: {e}"))?;
    let xg = case.make_inputs_on(def.name, k, DType::F32, gpu).map_err(|e| format!("inputs on the GPU: {e}"))?;
    let out_c = (case.run)(&xs).map_err(|e| format!("cpu forward failed: {e}"))?;
    let out_g = (case.run)(&xg);
    if GPU_DTYPE_ERROR.contains(&(def.name, case.name)) {
        return match out_g {
            Err(Error::DType { .. }) => Ok(vec![Check::GpuDtypeError]),
            Err(e) => Err(format!("expected a dtype error (no f64 on the GPU), got another error: {e}")),
            Ok(t) => Err(format!("expected a dtype error (no f64 on the GPU), got a {} tensor", t.dtype())),
        };
    }
    let out_g = out_g.map_err(|e| format!("gpu forward failed: {e}"))?;
    let (atol, rtol) = parity_tolerance(def.name, case);
    compare_gpu("forward", &out_g, &out_c, atol, rtol, case.nonfinite).await?;
    let mut ran = vec![Check::GpuForward];
    if def.kind == OpKind::NoGrad || case.max_order == 0 || !out_c.dtype().is_float() || float_positions(&xs).is_empty()
    {
        return Ok(ran);
    }
    let w = weights(out_c.shape(), DType::F32, seed).map_err(|e| format!("weights: {e}"))?;
    let wg = w.to(gpu).map_err(|e| format!("moving w failed: {e}"))?;
    let grads = |xs: &[Tensor], w: &Tensor| enable_grad(|| first_grads(case, xs, w, false).map(|(_, gs)| gs));
    let gc = grads(&xs, &w).map_err(|e| format!("cpu backward failed: {e}"))?;
    let gg = grads(&xg, &wg).map_err(|e| format!("gpu backward failed: {e}"))?;
    for ((g_gpu, g_cpu), i) in gg.iter().zip(&gc).zip(float_positions(&xs)) {
        compare_gpu(&format!("grad of input {i}"), g_gpu, g_cpu, atol, rtol, false).await?;
    }
    ran.push(Check::GpuGradients);
    if def.second_order && case.max_order >= 2 {
        let vc = directions(&xs, DType::F32, seed).map_err(|e| format!("second order directions: {e}"))?;
        let vg: Vec<Tensor> = vc.iter().map(|v| v.to(gpu)).collect::<Result<_>>().map_err(|e| e.to_string())?;
        let sc = second_grads(case, &xs, &w, &vc).map_err(|e| format!("cpu second-order backward failed: {e}"))?;
        let sg = second_grads(case, &xg, &wg, &vg).map_err(|e| format!("gpu second-order backward failed: {e}"))?;
        let pos = float_positions(&xs);
        for (j, (g_gpu, g_cpu)) in sg.iter().zip(&sc).enumerate() {
            let what =
                pos.get(j).map_or("second-order grad of w".to_string(), |i| format!("second-order grad of input {i}"));
            compare_gpu(&what, g_gpu, g_cpu, atol, rtol, false).await?;
        }
        ran.push(Check::GpuSecondOrder);
    }
    Ok(ran)
}

/// The gradients of s = sum_i <grad_i(x, w), v_i> with respect to the float
/// inputs and to w (zeros where s does not depend on one), on xs' device.
fn second_grads(case: &Case, xs: &[Tensor], w: &Tensor, vs: &[Tensor]) -> Result<Vec<Tensor>> {
    enable_grad(|| {
        let w_leaf = w.detach().requires_grad_(true)?;
        let (leaves, gs) = first_grads(case, xs, &w_leaf, true)?;
        let s = dot_directions(&gs, vs)?;
        let mut wrt: Vec<Tensor> = float_positions(xs).iter().map(|&i| leaves[i].clone()).collect();
        wrt.push(w_leaf);
        let found = if s.requires_grad() {
            grad(&[s], &wrt, None, GradOptions { create_graph: false, retain_graph: None, allow_unused: true })?
        } else {
            vec![None; wrt.len()]
        };
        found.into_iter().zip(&wrt).map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok)).collect()
    })
}
