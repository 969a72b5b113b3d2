//! The whole capture pipeline (trace, the passes: CSE, DCE, fusion; the
//! memory plan; replay) against eager code on every case of the op
//! registry, on the cpu: each case's forward, and its gradients where the
//! op has them, are traced on one draw of inputs and replayed on another
//! draw of the same shapes and layouts; the replay must give eager's bits
//! (random ops too, from the same seed: one test in this file, as it seeds
//! the global generator).

use crate::common;
use skiff::autograd::GradOptions;
use skiff::ops::{cases_of, registry, OpKind};
use skiff::{enable_grad, jit, DType, Tensor};

fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(|v| v.to_bits() as u64).collect(),
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        DType::F16 => t.to_vec::<skiff::f16>().unwrap().into_iter().map(|v| v.to_bits() as u64).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(|v| v as u64).collect(),
        DType::Bool => t.to_vec::<u8>().unwrap().into_iter().map(u64::from).collect(),
    }
}

/// The case's forward and, for float inputs of a differentiable op, the
/// gradients of a weighted sum of its output with respect to them.
fn forward_and_grads(
    run: fn(&[Tensor]) -> skiff::Result<Tensor>,
    xs: &[Tensor],
    grads: bool,
) -> skiff::Result<Vec<Tensor>> {
    let y = run(xs)?;
    let mut out = vec![y.detach()];
    let floats: Vec<Tensor> = xs.iter().filter(|x| x.requires_grad()).cloned().collect();
    if grads && !floats.is_empty() && y.requires_grad() {
        let w = y.detach().mul_scalar(0.0)?.add_scalar(0.5)?; // any fixed weights
        let gs = skiff::grad(&[y], &floats, Some(&[w]), GradOptions { allow_unused: true, ..Default::default() })?;
        out.extend(gs.into_iter().flatten());
    }
    Ok(out)
}

fn inputs(case: &skiff::ops::Case, seed_name: &str, k: usize, grads: bool) -> Vec<Tensor> {
    case.make_inputs(seed_name, k, DType::F32)
        .unwrap()
        .into_iter()
        .map(|x| if grads && x.dtype().is_float() && x.is_leaf() { x.requires_grad_(true).unwrap() } else { x })
        .collect()
}

#[test]
fn every_registry_case_replays_as_eager_code_runs() {
    // Eager code and the replay each re-seed before they draw: no other
    // test may draw in between.
    if !common::own_process() {
        return;
    }
    let (mut checked, mut refused) = (0, Vec::new());
    for def in registry() {
        for (k, case) in cases_of(def).into_iter().enumerate() {
            let grads = def.kind != OpKind::NoGrad && case.max_order > 0;
            let label = format!("{} {}", def.name, case.label());
            enable_grad(|| {
                let xs = inputs(&case, def.name, k, grads);
                let traced = jit::trace(&xs, |i| forward_and_grads(case.run, i, grads));
                let (_, mut traced) = match traced {
                    Ok(t) => t,
                    Err(e) => {
                        // Only what a program cannot repeat may be refused.
                        assert!(e.to_string().contains("cannot be captured"), "{label}: {e}");
                        refused.push(label.clone());
                        return;
                    }
                };
                traced.optimize();
                // Another draw of the same shapes and layouts.
                let ys = inputs(&case, &format!("{}-replay", def.name), k, grads);
                // Random fills draw their seeds from the global generator at
                // every call, eager or replayed: the same seed, the same draws.
                // Dropout's cases seed it with 3 inside their run, host code a
                // replay does not repeat: seeding 3 before the replay matches.
                skiff::manual_seed(3);
                let Ok(want) = forward_and_grads(case.run, &ys, grads) else { return };
                skiff::manual_seed(3);
                let got =
                    traced.run(&ys).unwrap_or_else(|e| panic!("{label}: replay failed: {e}\n{}", traced.program()));
                assert_eq!(got.len(), want.len(), "{label}");
                for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g.shape(), w.shape(), "{label}: output {j}");
                    assert_eq!(bits(g), bits(w), "{label}: output {j} differs from eager\n{}", traced.program());
                }
                checked += 1;
            });
        }
    }
    assert!(checked > 500, "only {checked} cases checked");
    eprintln!("{checked} cases replayed as eager; refused at capture: {refused:?}");
    assert!(refused.len() * 20 < checked, "too many refusals: {refused:?}");
}
