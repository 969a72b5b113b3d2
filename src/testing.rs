//! The registry checks (DESIGN principle 7), in the crate so that the native
//! test drivers (`tests/gradcheck.rs`, `tests/gpu_parity.rs`) and the browser
//! (`web::testing`, `registryCases`/`checkCase`) run the same code.
//!
//! For case `k` of an op:
//! - **forward**: the case runs in f32 and in f64, and the two must agree;
//! - **gradcheck**: for differentiable ops, the gradient of the weighted loss
//!   sum(out * w) with respect to every float input is checked in f64 on the
//!   cpu against central differences;
//! - **second order**: where the op is marked, d/dx sum_i <grad_i(x), v_i> is
//!   checked against central differences of first-order gradients;
//! - **GPU parity**: the case runs in f32 on the cpu and on a GPU (inputs moved
//!   with `.to(gpu)`); forward values and gradients must agree. It is `async`
//!   and reads GPU tensors only through `host_copy_async` (the browser cannot
//!   block on a readback).
//!
//! Inputs come from `Case::make_inputs` (seeded by `case_seed`), so every run
//! of a case, on any target, draws the same values. Failures are `Failure`s
//! naming the op, the case and the first failing element.

use crate::autograd::{enable_grad, grad, GradOptions};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{case_seed, registry, Case, Input, OpDef, OpKind};
use crate::random::Generator;
use crate::tensor::Tensor;
use std::fmt;

/// The central-difference step of the gradchecks (f64).
pub const EPS: f64 = 1e-6;
/// f32 forward vs f64 forward: |f32 - f64| <= atol + rtol * |f64|.
pub const FORWARD_ATOL: f64 = 1e-4;
pub const FORWARD_RTOL: f64 = 1e-4;
/// First-order gradcheck tolerances (scaled by the case's `tol`).
pub const GRAD_ATOL: f64 = 1e-5;
pub const GRAD_RTOL: f64 = 1e-4;
/// Second-order gradcheck tolerances (scaled by the case's `tol`).
pub const SECOND_ATOL: f64 = 1e-4;
pub const SECOND_RTOL: f64 = 1e-3;

/// f32 parity tolerances: |gpu - cpu| <= atol + rtol * |cpu|, scaled by the case's `tol`.
pub const PARITY_ATOL: f64 = 1e-4;
pub const PARITY_RTOL: f64 = 1e-3;

/// Per-op exceptions to the parity tolerances, each with its reason. Only what
/// an accuracy bound of the WGSL spec
/// (https://www.w3.org/TR/WGSL/#floating-point-accuracy) allows a conforming
/// adapter to differ by; never a measured discrepancy.
pub const PARITY_TOLERANCES: &[(&str, f64, f64)] = &[
    // WGSL's sin and cos only promise an absolute error of 2^-11 on [-pi, pi]
    // (the cases draw from [-3, 3]); the default atol is 5x tighter than that.
    ("sin", 4.9e-4, PARITY_RTOL),
    ("cos", 4.9e-4, PARITY_RTOL),
];

/// Cases whose GPU run must fail with a dtype error instead of matching the
/// cpu: f64 does not exist on the GPU (DType docs), so a case that converts
/// to f64 must say so clearly rather than compute in f32 behind the user's back.
pub const GPU_DTYPE_ERROR: &[(&str, &str)] = &[("to_dtype", "to_dtype f32 round trip")];

/// How the GPU context reports the first uncaptured wgpu error, at every later op.
pub const POISON: &str = "a GPU command failed";

/// A check that ran (what `check_cpu` / `check_gpu_parity` report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// f32 and f64 forward values agree.
    Forward,
    /// First-order gradients match central differences (f64, cpu).
    Gradcheck,
    /// Second-order gradients match central differences (f64, cpu).
    SecondOrder,
    /// GPU forward values match the cpu (f32).
    GpuForward,
    /// GPU gradients match the cpu (f32).
    GpuGradients,
    /// The GPU run failed with the expected dtype error (no f64 on the GPU).
    GpuDtypeError,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Forward => "forward f32/f64",
            Check::Gradcheck => "gradcheck",
            Check::SecondOrder => "gradcheck second order",
            Check::GpuForward => "gpu forward",
            Check::GpuGradients => "gpu gradients",
            Check::GpuDtypeError => "gpu dtype error",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed check: `op / case: message`.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub op: &'static str,
    /// The case's name (or `case #k` when `k` is out of range).
    pub case: String,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {}: {}", self.op, self.case, self.message)
    }
}

impl std::error::Error for Failure {}

/// What every check returns.
pub type CheckResult<T> = std::result::Result<T, Failure>;

/// The registry entry named `op`.
pub fn find_op(op: &str) -> Option<&'static OpDef> {
    registry().into_iter().find(|d| d.name == op)
}

/// Breaks of the registry's rules: an op registered twice, an op without
/// cases (an op without cases fails the suite), two cases of an op with one
/// name, a primitive without a backward rule. Empty when the registry is sound.
pub fn registry_problems() -> Vec<String> {
    let mut names = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for def in registry() {
        if !names.insert(def.name) {
            problems.push(format!("op '{}' is registered twice", def.name));
        }
        let cases = (def.cases)();
        if cases.is_empty() {
            problems.push(format!("op '{}' has no test cases", def.name));
        }
        // Case names identify cases in reports and in the JS tests' tables.
        let mut case_names = std::collections::HashSet::new();
        for case in &cases {
            if !case_names.insert(case.name) {
                problems.push(format!("op '{}' has two cases named {:?}", def.name, case.name));
            }
        }
        if def.kind == OpKind::Primitive && def.backward.is_none() {
            problems.push(format!("primitive op '{}' has no backward rule", def.name));
        }
    }
    problems
}

/// Case `k` of `def`, or a failure saying it does not exist.
pub fn case_of(def: &OpDef, k: usize) -> CheckResult<Case> {
    let mut cases = (def.cases)();
    let n = cases.len();
    if k >= n {
        return Err(Failure {
            op: def.name,
            case: format!("case #{k}"),
            message: format!("out of range: the op has {n} case{}", if n == 1 { "" } else { "s" }),
        });
    }
    Ok(cases.swap_remove(k))
}

fn fail(def: &OpDef, case: &Case) -> impl Fn(String) -> Failure {
    let (op, case) = (def.name, case.name.to_string());
    move |message| Failure { op, case: case.clone(), message }
}

fn close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    (a - b).abs() <= atol + rtol * b.abs() || (a.is_nan() && b.is_nan())
}

fn float_positions(xs: &[Tensor]) -> Vec<usize> {
    (0..xs.len()).filter(|&i| xs[i].dtype().is_float()).collect()
}

/// A tensor from an input spec (uniform weights and directions).
fn make_input(spec: &Input, dtype: DType, g: &mut Generator) -> Result<Tensor> {
    spec.generate(dtype, g)
}

// ---- cpu checks: forward, gradcheck, second order -------------------------

/// Runs the cpu checks of case `k` of `def`: forward in f32 and f64, then for
/// differentiable ops the f64 gradcheck, and the second-order check where the
/// op is marked. Returns the checks that ran (in order). Gradients are
/// recorded whatever the caller's grad mode.
pub fn check_cpu(def: &OpDef, k: usize) -> CheckResult<Vec<Check>> {
    let case = case_of(def, k)?;
    let fail = fail(def, &case);
    enable_grad(|| cpu_checks(def, &case, k)).map_err(fail)
}

fn cpu_checks(def: &OpDef, case: &Case, k: usize) -> std::result::Result<Vec<Check>, String> {
    let seed = case_seed(def.name, k);
    let xs = case.make_inputs(def.name, k, DType::F64).map_err(|e| format!("inputs: {e}"))?;
    let out64 = (case.run)(&xs).map_err(|e| format!("forward f64 failed: {e}"))?;
    let out32 = (case.run)(&case.make_inputs(def.name, k, DType::F32).map_err(|e| format!("inputs: {e}"))?)
        .map_err(|e| format!("forward f32 failed: {e}"))?;
    if out32.shape() != out64.shape() {
        return Err(format!("f32 shape {:?} != f64 shape {:?}", out32.shape(), out64.shape()));
    }
    let v32 = out32.to_f64_vec().map_err(|e| format!("reading the f32 output failed: {e}"))?;
    let v64 = out64.to_f64_vec().map_err(|e| format!("reading the f64 output failed: {e}"))?;
    for (j, (a, b)) in v32.iter().zip(&v64).enumerate() {
        if !close(*a, *b, FORWARD_ATOL, FORWARD_RTOL) {
            return Err(format!("forward element {j}: f32 {a} differs from f64 {b}"));
        }
    }
    let mut ran = vec![Check::Forward];
    if def.kind == OpKind::NoGrad || !out64.dtype().is_float() || float_positions(&xs).is_empty() {
        return Ok(ran);
    }
    let w = make_input(&Input::Uniform(out64.shape().to_vec(), -1.0, 1.0), DType::F64, &mut Generator::new(seed ^ 7))
        .map_err(|e| format!("weights: {e}"))?;
    first_order(case, &xs, &w)?;
    ran.push(Check::Gradcheck);
    if def.second_order {
        second_order(case, &xs, &w, seed)?;
        ran.push(Check::SecondOrder);
    }
    Ok(ran)
}

/// sum(run(x) * w): a scalar whose gradient exercises every output element.
fn weighted_loss(case: &Case, xs: &[Tensor], w: &Tensor) -> Result<Tensor> {
    (case.run)(xs)?.mul(w)?.sum_all()
}

/// `xs` (detached) with element `j` of input `i` moved by `delta`.
fn with_element(xs: &[Tensor], i: usize, j: usize, delta: f64) -> Result<Vec<Tensor>> {
    let mut out: Vec<Tensor> = xs.iter().map(|t| t.detach()).collect();
    let mut v = xs[i].to_vec::<f64>()?;
    v[j] += delta;
    out[i] = Tensor::from_vec(v, xs[i].shape())?;
    Ok(out)
}

/// Fresh leaves for the float inputs and the gradients of the weighted loss
/// with respect to them (zeros where unused).
fn first_grads(case: &Case, xs: &[Tensor], w: &Tensor, create_graph: bool) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let pos = float_positions(xs);
    let xs: Vec<Tensor> = xs
        .iter()
        .enumerate()
        .map(|(i, t)| if pos.contains(&i) { t.detach().requires_grad_(true) } else { Ok(t.clone()) })
        .collect::<Result<_>>()?;
    let loss = weighted_loss(case, &xs, w)?;
    let wrt: Vec<Tensor> = pos.iter().map(|&i| xs[i].clone()).collect();
    let opts = GradOptions { create_graph, retain_graph: None, allow_unused: true };
    let gs = grad(&[loss], &wrt, None, opts)?;
    let gs = gs.into_iter().zip(&wrt).map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok)).collect::<Result<_>>()?;
    Ok((xs, gs))
}

/// Analytic first-order gradients against central differences (f64).
fn first_order(case: &Case, xs: &[Tensor], w: &Tensor) -> std::result::Result<(), String> {
    let (_, analytic) = first_grads(case, xs, w, false).map_err(|e| format!("backward failed: {e}"))?;
    let loss_at = |i: usize, j: usize, delta: f64| -> std::result::Result<f64, String> {
        with_element(xs, i, j, delta)
            .and_then(|p| weighted_loss(case, &p, w)?.item())
            .map_err(|e| format!("input {i} element {j}: perturbed forward failed: {e}"))
    };
    for (gi, &i) in float_positions(xs).iter().enumerate() {
        let a = analytic[gi].to_vec::<f64>().map_err(|e| format!("reading the grad of input {i} failed: {e}"))?;
        for (j, aj) in a.iter().enumerate() {
            let num = (loss_at(i, j, EPS)? - loss_at(i, j, -EPS)?) / (2.0 * EPS);
            if !close(*aj, num, GRAD_ATOL * case.tol, GRAD_RTOL * case.tol) {
                return Err(format!("input {i} element {j}: analytic grad {aj} vs numeric {num}"));
            }
        }
    }
    Ok(())
}

/// Checks d/dx [sum_i <grad_i(x), v_i>] against central differences of first-order grads.
fn second_order(case: &Case, xs: &[Tensor], w: &Tensor, seed: u64) -> std::result::Result<(), String> {
    let pos = float_positions(xs);
    let mut g = Generator::new(seed ^ 11);
    let vs: Vec<Tensor> = pos
        .iter()
        .map(|&i| make_input(&Input::Uniform(xs[i].shape().to_vec(), -1.0, 1.0), DType::F64, &mut g))
        .collect::<Result<_>>()
        .map_err(|e| format!("second order directions: {e}"))?;
    let s_of = |gs: &[Tensor]| -> Result<Tensor> {
        let mut s = Tensor::scalar(0.0, DType::F64);
        for (gi, v) in gs.iter().zip(&vs) {
            s = s.add(&gi.mul(v)?.sum_all()?)?;
        }
        Ok(s)
    };
    let (leaves, gs) = first_grads(case, xs, w, true).map_err(|e| format!("create_graph backward failed: {e}"))?;
    let s = s_of(&gs).map_err(|e| format!("second order: sum of <grad, v> failed: {e}"))?;
    let wrt: Vec<Tensor> = pos.iter().map(|&i| leaves[i].clone()).collect();
    let analytic = if s.requires_grad() {
        grad(&[s], &wrt, None, GradOptions { create_graph: false, retain_graph: None, allow_unused: true })
            .map_err(|e| format!("second-order backward failed: {e}"))?
    } else {
        vec![None; wrt.len()]
    };
    let s_at = |i: usize, j: usize, delta: f64| -> std::result::Result<f64, String> {
        with_element(xs, i, j, delta)
            .and_then(|p| s_of(&first_grads(case, &p, w, false)?.1)?.item())
            .map_err(|e| format!("second order, input {i} element {j}: perturbed backward failed: {e}"))
    };
    for (gi, &i) in pos.iter().enumerate() {
        let a = match &analytic[gi] {
            Some(t) => t.to_vec::<f64>().map_err(|e| format!("reading the second-order grad of input {i}: {e}"))?,
            None => vec![0.0; xs[i].numel()],
        };
        for (j, aj) in a.iter().enumerate() {
            let num = (s_at(i, j, EPS)? - s_at(i, j, -EPS)?) / (2.0 * EPS);
            if !close(*aj, num, SECOND_ATOL * case.tol, SECOND_RTOL * case.tol) {
                return Err(format!("second order, input {i} element {j}: analytic {aj} vs numeric {num}"));
            }
        }
    }
    Ok(())
}

// ---- GPU parity -----------------------------------------------------------

/// The parity tolerances (atol, rtol) of `op`'s case.
pub fn parity_tolerance(op: &str, case: &Case) -> (f64, f64) {
    let (a, r) = PARITY_TOLERANCES.iter().find(|t| t.0 == op).map(|t| (t.1, t.2)).unwrap_or((PARITY_ATOL, PARITY_RTOL));
    (a * case.tol, r * case.tol)
}

/// The elements of `t` as f64, read without blocking (GPU tensors through
/// `host_copy_async`).
async fn values_async(t: &Tensor) -> Result<Vec<f64>> {
    let host = crate::backend::host_copy_async(t).await?;
    Ok(crate::with_cpu_buffer!(&host, v, T => v.iter().map(|&x| crate::backend::cpu::Elem::to_f64(x)).collect()))
}

/// Compares a GPU result with the cpu's elementwise (floats within
/// `atol + rtol * |cpu|`, indices and masks exactly); the error names the
/// first mismatch and how many there are. Reads the GPU tensor with `host_copy_async`.
pub async fn compare_gpu(
    what: &str,
    gpu: &Tensor,
    cpu: &Tensor,
    atol: f64,
    rtol: f64,
) -> std::result::Result<(), String> {
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
    if g.len() != c.len() {
        return Err(format!("{what}: gpu gives {} elements, cpu gives {}", g.len(), c.len()));
    }
    // Indices and masks must match exactly.
    let (atol, rtol) = if cpu.dtype().is_float() { (atol, rtol) } else { (0.0, 0.0) };
    let bad: Vec<usize> = (0..c.len()).filter(|&i| !close(g[i], c[i], atol, rtol)).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{what}: {} of {} elements differ (atol {atol:e}, rtol {rtol:e}); first at flat index {i}: gpu {} vs cpu {} \
             (|diff| {:e})",
            bad.len(),
            c.len(),
            g[i],
            c[i],
            (g[i] - c[i]).abs()
        )),
    }
}

/// The gradients of sum(run(xs) * w) w.r.t. every float input (on xs' device).
fn parity_grads(case: &Case, xs: &[Tensor], w: &Tensor) -> Result<Vec<Tensor>> {
    enable_grad(|| first_grads(case, xs, w, false).map(|(_, gs)| gs))
}

/// Runs case `k` of `def` in f32 on the cpu and on `gpu`: forward values must
/// agree, and for differentiable ops so must the gradients of sum(out * w)
/// with respect to every float input. Cases in `GPU_DTYPE_ERROR` must instead
/// fail on the GPU with a dtype error. Returns the checks that ran. GPU
/// tensors are read only with `host_copy_async`, so this runs in a browser.
pub async fn check_gpu_parity(def: &OpDef, k: usize, gpu: &Device) -> CheckResult<Vec<Check>> {
    let case = case_of(def, k)?;
    let fail = fail(def, &case);
    gpu_parity(def, &case, k, gpu).await.map_err(fail)
}

async fn gpu_parity(def: &OpDef, case: &Case, k: usize, gpu: &Device) -> std::result::Result<Vec<Check>, String> {
    if !gpu.is_gpu() {
        return Err(format!("the parity check needs a GPU device, got {gpu}"));
    }
    let seed = case_seed(def.name, k);
    let xs = case.make_inputs(def.name, k, DType::F32).map_err(|e| format!("inputs: {e}"))?;
    let xg: Vec<Tensor> =
        xs.iter().map(|t| t.to(gpu)).collect::<Result<_>>().map_err(|e| format!("moving inputs failed: {e}"))?;
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
    compare_gpu("forward", &out_g, &out_c, atol, rtol).await?;
    let mut ran = vec![Check::GpuForward];
    if def.kind == OpKind::NoGrad || !out_c.dtype().is_float() || float_positions(&xs).is_empty() {
        return Ok(ran);
    }
    let w = make_input(&Input::Uniform(out_c.shape().to_vec(), -1.0, 1.0), DType::F32, &mut Generator::new(seed ^ 7))
        .map_err(|e| format!("weights: {e}"))?;
    let wg = w.to(gpu).map_err(|e| format!("moving w failed: {e}"))?;
    let gc = parity_grads(case, &xs, &w).map_err(|e| format!("cpu backward failed: {e}"))?;
    let gg = parity_grads(case, &xg, &wg).map_err(|e| format!("gpu backward failed: {e}"))?;
    for ((g_gpu, g_cpu), i) in gg.iter().zip(&gc).zip(float_positions(&xs)) {
        compare_gpu(&format!("grad of input {i}"), g_gpu, g_cpu, atol, rtol).await?;
    }
    ran.push(Check::GpuGradients);
    Ok(ran)
}
