//! cpu-vs-gpu parity, generated from the registry (DESIGN principle 7): every
//! sample of every case of every op runs in f32 on the cpu and on the GPU
//! (inputs laid out as the sample says on each device: strided, expanded and
//! transposed views reach the GPU kernels as views); forward values must
//! agree, for differentiable ops so must the gradients of the weighted loss
//! sum(out * w) with respect to every float input, and for second-order ops
//! the second-order gradients (computed on each device, the GPU's read back).
//! Each op must have run every GPU check it owes (`missing_checks`). The check is
//! `skiff::testing::check_gpu_parity` (async, as the browser needs it); this
//! file blocks on it with pollster. All failures are reported together.
//! Without a GPU adapter the test prints a loud SKIPPED line and passes.
//! `SKIFF_OPS=name1,name2` narrows the run while debugging.
#![cfg(feature = "gpu")]

use crate::common;

use skiff::ops::{cases_of, registry, OpDef};
use skiff::testing::{check_gpu_parity, compare_gpu, missing_checks, Check, POISON};
use skiff::{DType, Device, Error, Tensor};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

fn gpu_or_skip() -> Option<Device> {
    let d = common::gpu()?;
    eprintln!("gpu parity: running on {}", d.describe());
    Some(d)
}

#[test]
fn every_registry_case_matches_the_cpu_on_the_gpu() {
    // Dropout's case re-seeds the global generator before it draws its mask
    // on each device: no other test may draw in between.
    if !common::own_process() {
        return;
    }
    let Some(gpu) = gpu_or_skip() else { return };
    let (mut failures, mut passed_ops, mut failed_ops, mut unchecked) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut checked = 0;
    // Note: the context keeps the first uncaptured wgpu error (e.g. a shader
    // that does not compile) and every later GPU op reports it, so one bad
    // kernel fails all cases after it: the report points at the first one.
    let mut poisoned: Option<String> = None;
    for def in selected() {
        let (mut ok, mut ran) = (true, HashSet::<Check>::new());
        for (k, case) in cases_of(def).iter().enumerate() {
            checked += 1;
            let r = catch_unwind(AssertUnwindSafe(|| pollster::block_on(check_gpu_parity(def, k, &gpu))))
                .map(|r| r.map_err(|e| e.to_string()))
                .unwrap_or_else(|p| Err(format!("{} / {}: panicked: {}", def.name, case.label(), panic_message(&p))));
            match r {
                Ok(checks) => ran.extend(checks),
                Err(e) => {
                    failures.push(match (&poisoned, e.contains(POISON)) {
                        (Some(_), true) => {
                            format!("{} / {}: (the GPU context's first failure, see NOTE)", def.name, case.label())
                        }
                        _ => e.clone(),
                    });
                    if poisoned.is_none() && e.contains(POISON) {
                        poisoned = Some(failures[failures.len() - 1].clone());
                    }
                    ok = false;
                }
            }
        }
        let missing = missing_checks(def, &ran, true);
        if ok && !missing.is_empty() {
            unchecked.push(format!("{}: no case ran {:?}", def.name, missing));
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
        "{} of {checked} case samples differ between cpu and GPU ({}):\n{}",
        failures.len(),
        gpu.describe(),
        failures.join("\n")
    );
    assert!(unchecked.is_empty(), "ops that skipped GPU checks they owe:\n{}", unchecked.join("\n"));
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default()
}

/// `to_dtype` between the dtypes that exist on the GPU (its registry case
/// needs f64, see `skiff::testing::GPU_DTYPE_ERROR`): every pair matches the
/// cpu, including truncation toward zero and the != 0 rule for masks.
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
                    Ok(g) => failures.extend(pollster::block_on(compare_gpu(&what, &g, &cpu, 0.0, 0.0, false)).err()),
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
