//! Tests generated from the registry (DESIGN principle 7): every case of every
//! op runs forward in f32 and f64 (which must agree), and differentiable ops
//! are gradchecked in f64 against central differences, to second order where
//! the op is marked so. The checks themselves live in `skiff::testing` (the
//! browser runs the same code through `checkCase`); this file drives them.
//! `SKIFF_OPS=name1,name2` narrows the run while debugging.

use skiff::ops::{registry, OpDef};
use skiff::testing::{check_cpu, registry_problems};

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

#[test]
fn every_op_has_cases_and_primitives_have_backward() {
    // An op registered twice, an op without cases, or a primitive without a
    // backward rule fails the suite.
    let problems = registry_problems();
    assert!(problems.is_empty(), "the registry breaks its rules:\n{}", problems.join("\n"));
}

#[test]
fn gradcheck_every_registry_op() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for def in selected() {
        for k in 0..(def.cases)().len() {
            checked += 1;
            if let Err(e) = check_cpu(def, k) {
                failures.push(e.to_string());
            }
        }
    }
    assert!(checked > 0, "no cases ran");
    assert!(failures.is_empty(), "{} of {checked} cases failed:\n{}", failures.len(), failures.join("\n"));
    eprintln!("gradcheck: {checked} cases passed");
}
