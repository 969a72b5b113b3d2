//! cpu-vs-gpu parity, generated from the registry (DESIGN principle 7): every
//! case of every op runs in f32 on the cpu and on the GPU (inputs moved with
//! `.to(&gpu)`); forward values must agree, and for differentiable ops so must
//! the gradients of the weighted loss sum(out * w) with respect to every float
//! input (computed on each device, the GPU's read back). All failures are
//! reported together. Without a GPU adapter the test prints a loud SKIPPED
//! line and passes. `SKIFF_OPS=name1,name2` narrows the run while debugging.
#![cfg(feature = "gpu")]

use skiff::ops::{case_seed, registry, Case, Input, OpDef, OpKind};
use skiff::random::Generator;
use skiff::{grad, DType, Device, Error, GradOptions, Result, Tensor};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// Cases draw from the global generator (dropout re-seeds it inside its case):
/// tests in this file that run cases hold this lock.
static RNG: Mutex<()> = Mutex::new(());

// ---- inputs: the generation logic of tests/gradcheck.rs, in f32 ----------

fn make_input(spec: &Input, dtype: DType, g: &mut Generator) -> Tensor {
    spec.generate(dtype, g).expect("registry input spec")
}

fn float_positions(xs: &[Tensor]) -> Vec<usize> {
    (0..xs.len()).filter(|&i| xs[i].dtype().is_float()).collect()
}

// ---- tolerances ------------------------------------------------------------

/// f32 parity tolerances: |gpu - cpu| <= atol + rtol * |cpu|, scaled by the case's `tol`.
const DEFAULT_ATOL: f64 = 1e-4;
const DEFAULT_RTOL: f64 = 1e-3;

/// Per-op exceptions, each with its reason. Only what an accuracy bound of
/// the WGSL spec (https://www.w3.org/TR/WGSL/#floating-point-accuracy) allows
/// a conforming adapter to differ by; never a measured discrepancy.
const TOLERANCES: &[(&str, f64, f64)] = &[
    // WGSL's sin and cos only promise an absolute error of 2^-11 on [-pi, pi]
    // (the cases draw from [-3, 3]); the default atol is 5x tighter than that.
    ("sin", 4.9e-4, DEFAULT_RTOL),
    ("cos", 4.9e-4, DEFAULT_RTOL),
];

fn tolerance(op: &str, case: &Case) -> (f64, f64) {
    let (a, r) = TOLERANCES.iter().find(|t| t.0 == op).map(|t| (t.1, t.2)).unwrap_or((DEFAULT_ATOL, DEFAULT_RTOL));
    (a * case.tol, r * case.tol)
}

/// How the context reports the first uncaptured wgpu error, at every later op.
const POISON: &str = "a GPU command failed";

/// Cases whose GPU run must fail with a dtype error instead of matching the
/// cpu: f64 does not exist on the GPU (DType docs), so a case that converts
/// to f64 must say so clearly rather than compute in f32 behind the user's back.
const GPU_DTYPE_ERROR: &[(&str, &str)] = &[("to_dtype", "to_dtype f32 round trip")];

// ---- comparison ----------------------------------------------------------

/// Compares two tensors elementwise; the error names the first mismatch and how many there are.
fn compare(what: &str, gpu: &Tensor, cpu: &Tensor, atol: f64, rtol: f64) -> std::result::Result<(), String> {
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
    let g = gpu.to_f64_vec().map_err(|e| format!("{what}: reading the GPU result back failed: {e}"))?;
    let c = cpu.to_f64_vec().unwrap();
    // Indices and masks must match exactly.
    let (atol, rtol) = if cpu.dtype().is_float() { (atol, rtol) } else { (0.0, 0.0) };
    let bad: Vec<usize> = (0..c.len())
        .filter(|&i| !((g[i] - c[i]).abs() <= atol + rtol * c[i].abs() || (g[i].is_nan() && c[i].is_nan())))
        .collect();
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
fn grads(case: &Case, xs: &[Tensor], w: &Tensor) -> Result<Vec<Tensor>> {
    let pos = float_positions(xs);
    let xs: Vec<Tensor> = xs
        .iter()
        .enumerate()
        .map(|(i, t)| if pos.contains(&i) { t.detach().requires_grad_(true) } else { Ok(t.clone()) })
        .collect::<Result<_>>()?;
    let loss = (case.run)(&xs)?.mul(w)?.sum_all()?;
    let wrt: Vec<Tensor> = pos.iter().map(|&i| xs[i].clone()).collect();
    let gs = grad(&[loss], &wrt, None, GradOptions { create_graph: false, retain_graph: None, allow_unused: true })?;
    gs.into_iter().zip(&wrt).map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok)).collect()
}

fn check_case(def: &OpDef, case: &Case, k: usize, gpu: &Device) -> std::result::Result<(), String> {
    let seed = case_seed(def.name, k);
    let xs = case.make_inputs(def.name, k, DType::F32).expect("registry input spec");
    let xg: Vec<Tensor> =
        xs.iter().map(|t| t.to(gpu)).collect::<Result<_>>().map_err(|e| format!("moving inputs failed: {e}"))?;
    let out_c = (case.run)(&xs).map_err(|e| format!("cpu forward failed: {e}"))?;
    let out_g = (case.run)(&xg);
    if GPU_DTYPE_ERROR.contains(&(def.name, case.name)) {
        return match out_g {
            Err(Error::DType { .. }) => Ok(()),
            Err(e) => Err(format!("expected a dtype error (no f64 on the GPU), got another error: {e}")),
            Ok(t) => Err(format!("expected a dtype error (no f64 on the GPU), got a {} tensor", t.dtype())),
        };
    }
    let out_g = out_g.map_err(|e| format!("gpu forward failed: {e}"))?;
    let (atol, rtol) = tolerance(def.name, case);
    compare("forward", &out_g, &out_c, atol, rtol)?;
    if def.kind == OpKind::NoGrad || !out_c.dtype().is_float() || float_positions(&xs).is_empty() {
        return Ok(());
    }
    let w = make_input(&Input::Uniform(out_c.shape().to_vec(), -1.0, 1.0), DType::F32, &mut Generator::new(seed ^ 7));
    let wg = w.to(gpu).map_err(|e| format!("moving w failed: {e}"))?;
    let gc = grads(case, &xs, &w).map_err(|e| format!("cpu backward failed: {e}"))?;
    let gg = grads(case, &xg, &wg).map_err(|e| format!("gpu backward failed: {e}"))?;
    for ((g_gpu, g_cpu), i) in gg.iter().zip(&gc).zip(float_positions(&xs)) {
        compare(&format!("grad of input {i}"), g_gpu, g_cpu, atol, rtol)?;
    }
    Ok(())
}

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

fn gpu_or_skip() -> Option<Device> {
    match Device::gpu() {
        Ok(d) => {
            eprintln!("gpu parity: running on {}", d.describe());
            Some(d)
        }
        Err(e) => {
            eprintln!("\n!!!!!!!! SKIPPED: no GPU adapter ({e}); cpu-vs-gpu parity was NOT checked !!!!!!!!\n");
            None
        }
    }
}

#[test]
fn every_registry_case_matches_the_cpu_on_the_gpu() {
    let Some(gpu) = gpu_or_skip() else { return };
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let (mut failures, mut passed_ops, mut failed_ops) = (Vec::new(), Vec::new(), Vec::new());
    let mut checked = 0;
    // Note: the context keeps the first uncaptured wgpu error (e.g. a shader
    // that does not compile) and every later GPU op reports it, so one bad
    // kernel fails all cases after it: the report points at the first one.
    let mut poisoned: Option<String> = None;
    for def in selected() {
        let mut ok = true;
        for (k, case) in (def.cases)().iter().enumerate() {
            checked += 1;
            let r = catch_unwind(AssertUnwindSafe(|| check_case(def, case, k, &gpu)))
                .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&p))));
            if let Err(e) = r {
                failures.push(match (&poisoned, e.contains(POISON)) {
                    (Some(_), true) => {
                        format!("{} / {}: (the GPU context's first failure, see NOTE)", def.name, case.name)
                    }
                    _ => format!("{} / {}: {e}", def.name, case.name),
                });
                if poisoned.is_none() && e.contains(POISON) {
                    poisoned = Some(failures[failures.len() - 1].clone());
                }
                ok = false;
            }
        }
        if ok { &mut passed_ops } else { &mut failed_ops }.push(def.name);
    }
    eprintln!("gpu parity: {} ops pass: {}", passed_ops.len(), passed_ops.join(", "));
    eprintln!("gpu parity: {} ops fail: {}", failed_ops.len(), failed_ops.join(", "));
    if let Some(first) = poisoned {
        failures.insert(
            0,
            format!("NOTE: the GPU context failed first in this case; later cases repeat its error:\n  {first}"),
        );
    }
    assert!(checked > 0, "no cases ran");
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ between cpu and GPU ({}):\n{}",
        failures.len(),
        gpu.describe(),
        failures.join("\n")
    );
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default()
}

/// `to_dtype` between the dtypes that exist on the GPU (its registry case
/// needs f64, see GPU_DTYPE_ERROR): every pair matches the cpu, including
/// truncation toward zero and the != 0 rule for masks.
#[test]
fn casts_between_gpu_dtypes_match_the_cpu() {
    let Some(gpu) = gpu_or_skip() else { return };
    let f = Tensor::from_vec(vec![-2.7f32, -1.0, -0.5, 0.0, 0.25, 1.0, 1.5, 3.9], &[2, 4]).unwrap();
    let sources = [f.clone(), f.to_dtype(DType::I32).unwrap(), f.to_dtype(DType::Bool).unwrap()];
    let mut failures = Vec::new();
    for src in &sources {
        for view in [src.clone(), src.transpose(0, 1).unwrap()] {
            for to in [DType::F32, DType::I32, DType::Bool] {
                let what = format!("{} {:?} -> {to}", src.dtype(), view.shape());
                let cpu = view.to_dtype(to).unwrap();
                match view.to(&gpu).and_then(|g| g.to_dtype(to)) {
                    Ok(g) => failures.extend(compare(&what, &g, &cpu, 0.0, 0.0).err()),
                    Err(e) => failures.push(format!("{what}: {e}")),
                }
            }
        }
    }
    let f64_err = f.to(&gpu).and_then(|g| g.to_dtype(DType::F64));
    if !matches!(f64_err, Err(Error::DType { .. })) {
        failures.push(format!("f32 -> f64 on the GPU must be a dtype error, got {f64_err:?}"));
    }
    assert!(failures.is_empty(), "casts differ:\n{}", failures.join("\n"));
}
