//! Every registry case in f16 (`skiff::testing::check_half`): forward from
//! f16 inputs against the case's f64 reference, gradients against the same
//! graph in f32, within f16 tolerances; on the cpu, and on the GPU where the
//! adapter has shader-f16 (lavapipe does). All failures are reported together.
//! `SKIFF_OPS=name1,name2` narrows the run while debugging.

use crate::common;

use skiff::ops::{cases_of, registry, OpDef};
use skiff::testing::{check_half, Check};
use skiff::Device;
use std::collections::HashSet;

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

/// Runs every case on `device`: the failures, and the ops that ran no f16 forward check.
fn run_all(device: &Device) -> (Vec<String>, Vec<&'static str>) {
    let (mut failures, mut unchecked) = (Vec::new(), Vec::new());
    for def in selected() {
        let mut ran = HashSet::new();
        for k in 0..cases_of(def).len() {
            match check_half(def, k, device) {
                Ok(c) => ran.extend(c),
                Err(e) => failures.push(e.to_string()),
            }
        }
        if !ran.contains(&Check::HalfForward) {
            unchecked.push(def.name);
        }
    }
    (failures, unchecked)
}

fn report(device: &Device, (failures, unchecked): (Vec<String>, Vec<&'static str>)) {
    assert!(failures.is_empty(), "{} f16 failures on {}:\n{}", failures.len(), device.describe(), failures.join("\n"));
    eprintln!("f16 on {}: ops without an f16 forward check: {unchecked:?}", device.describe());
}

#[test]
fn every_registry_case_runs_in_f16_on_the_cpu() {
    // Dropout's case re-seeds the global generator before it draws: no other
    // test may draw in between.
    if !common::own_process() {
        return;
    }
    report(&Device::Cpu, run_all(&Device::Cpu));
}

#[cfg(feature = "gpu")]
#[test]
fn every_registry_case_runs_in_f16_on_the_gpu() {
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let Device::Gpu(g) = &gpu else { unreachable!() };
    if !g.shader_f16() {
        eprintln!("SKIPPED: {} has no shader-f16", g.name());
        return;
    }
    report(&gpu, run_all(&gpu));
}
