//! Tests generated from the registry (DESIGN principle 7): every sample of
//! every case of every op (`skiff::ops::cases_of`: contiguous, transposed,
//! strided, expanded, empty, 0-d) runs forward in f64 and f32 against the
//! case's reference, and differentiable ops are gradchecked in f64 against
//! central differences, with gradgradcheck where the op is marked. Each op
//! must have passed every check it owes (`skiff::testing::missing_checks`),
//! so no op drops to forward-only silently. The checks live in
//! `skiff::testing` (the browser runs the same code through `checkCase`);
//! this file drives them. `SKIFF_OPS=name1,name2` narrows the run while debugging.

use crate::common;
use skiff::ops::{cases_of, registry, OpDef};
use skiff::testing::{check_cpu, missing_checks, registry_problems, Check};
use std::collections::HashSet;

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

#[test]
fn every_op_has_cases_and_primitives_have_backward() {
    // An op registered twice, a signature that does not parse, a doc
    // that is not one line, an op without cases, a case without a
    // reference, or a primitive without a backward rule fails the suite.
    let problems = registry_problems();
    assert!(problems.is_empty(), "the registry breaks its rules:\n{}", problems.join("\n"));
}

#[test]
fn gradcheck_every_registry_op() {
    // Dropout's case re-seeds the global generator at every evaluation: no
    // other test may draw between the seed and the mask.
    if !common::own_process() {
        return;
    }
    let (mut failures, mut unchecked) = (Vec::new(), Vec::new());
    let mut checked = 0;
    for def in selected() {
        let mut ran = HashSet::<Check>::new();
        for k in 0..cases_of(def).len() {
            checked += 1;
            match check_cpu(def, k) {
                Ok(checks) => ran.extend(checks),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let missing = missing_checks(def, &ran, false);
        if !missing.is_empty() {
            unchecked.push(format!("{}: no case ran {:?}", def.name, missing));
        }
    }
    assert!(checked > 0, "no cases ran");
    assert!(failures.is_empty(), "{} of {checked} case samples failed:\n{}", failures.len(), failures.join("\n"));
    assert!(unchecked.is_empty(), "ops that skipped checks they owe:\n{}", unchecked.join("\n"));
    eprintln!("gradcheck: {checked} case samples passed");
}
