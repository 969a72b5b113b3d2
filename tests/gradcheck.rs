//! Tests generated from the registry (DESIGN principle 7): every case of every
//! op runs forward in f32 and f64 (which must agree), and differentiable ops
//! are gradchecked in f64 against central differences, to second order where
//! the op is marked so. `SKIFF_OPS=name1,name2` narrows the run while debugging.

use skiff::ops::{case_seed, registry, Case, Input, OpDef, OpKind};
use skiff::random::Generator;
use skiff::{grad, DType, GradOptions, Result, Tensor};

const EPS: f64 = 1e-6;

fn make_input(spec: &Input, dtype: DType, g: &mut Generator) -> Tensor {
    spec.generate(dtype, g).expect("registry input spec")
}

fn close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    (a - b).abs() <= atol + rtol * b.abs() || (a.is_nan() && b.is_nan())
}

/// sum(run(x) * w): a scalar whose gradient exercises every output element.
fn weighted_loss(case: &Case, xs: &[Tensor], w: &Tensor) -> Result<Tensor> {
    (case.run)(xs)?.mul(w)?.sum_all()
}

fn float_positions(xs: &[Tensor]) -> Vec<usize> {
    (0..xs.len()).filter(|&i| xs[i].dtype().is_float()).collect()
}

fn with_element(xs: &[Tensor], i: usize, j: usize, delta: f64) -> Vec<Tensor> {
    let mut out: Vec<Tensor> = xs.iter().map(|t| t.detach()).collect();
    let mut v = xs[i].to_vec::<f64>().unwrap();
    v[j] += delta;
    out[i] = Tensor::from_vec(v, xs[i].shape()).unwrap();
    out
}

fn first_grads(case: &Case, xs: &[Tensor], w: &Tensor, create_graph: bool) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let pos = float_positions(xs);
    let xs: Vec<Tensor> = xs
        .iter()
        .enumerate()
        .map(|(i, t)| if pos.contains(&i) { t.detach().requires_grad_(true).unwrap() } else { t.clone() })
        .collect();
    let loss = weighted_loss(case, &xs, w)?;
    let wrt: Vec<Tensor> = pos.iter().map(|&i| xs[i].clone()).collect();
    let opts = GradOptions { create_graph, retain_graph: None, allow_unused: true };
    let gs = grad(&[loss], &wrt, None, opts)?;
    let gs = gs.into_iter().zip(&wrt).map(|(g, x)| g.unwrap_or_else(|| x.zeros_like().unwrap())).collect();
    Ok((xs, gs))
}

fn check_case(def: &OpDef, case: &Case, k: usize) -> std::result::Result<(), String> {
    let seed = case_seed(def.name, k);
    let xs = case.make_inputs(def.name, k, DType::F64).map_err(|e| format!("inputs: {e}"))?;
    let out64 = (case.run)(&xs).map_err(|e| format!("forward f64 failed: {e}"))?;
    let out32 = (case.run)(&case.make_inputs(def.name, k, DType::F32).map_err(|e| format!("inputs: {e}"))?)
        .map_err(|e| format!("forward f32 failed: {e}"))?;
    if out32.shape() != out64.shape() {
        return Err(format!("f32 shape {:?} != f64 shape {:?}", out32.shape(), out64.shape()));
    }
    for (a, b) in out32.to_f64_vec().unwrap().iter().zip(out64.to_f64_vec().unwrap()) {
        if !close(*a, b, 1e-4, 1e-4) {
            return Err(format!("f32 forward {a} differs from f64 {b}"));
        }
    }
    if def.kind == OpKind::NoGrad || !out64.dtype().is_float() || float_positions(&xs).is_empty() {
        return Ok(());
    }
    let w = make_input(&Input::Uniform(out64.shape().to_vec(), -1.0, 1.0), DType::F64, &mut Generator::new(seed ^ 7));
    let (_, analytic) = first_grads(case, &xs, &w, false).map_err(|e| format!("backward failed: {e}"))?;
    let pos = float_positions(&xs);
    for (gi, &i) in pos.iter().enumerate() {
        let a = analytic[gi].to_vec::<f64>().unwrap();
        for (j, aj) in a.iter().enumerate() {
            let lp = weighted_loss(case, &with_element(&xs, i, j, EPS), &w).unwrap().item().unwrap();
            let lm = weighted_loss(case, &with_element(&xs, i, j, -EPS), &w).unwrap().item().unwrap();
            let num = (lp - lm) / (2.0 * EPS);
            if !close(*aj, num, 1e-5 * case.tol, 1e-4 * case.tol) {
                return Err(format!("input {i} element {j}: analytic grad {aj} vs numeric {num}"));
            }
        }
    }
    if def.second_order {
        second_order(case, &xs, &w, seed)?;
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
        .collect();
    let s_of = |gs: &[Tensor]| -> Result<Tensor> {
        let mut s = Tensor::scalar(0.0, DType::F64);
        for (gi, v) in gs.iter().zip(&vs) {
            s = s.add(&gi.mul(v)?.sum_all()?)?;
        }
        Ok(s)
    };
    let (leaves, gs) = first_grads(case, xs, w, true).map_err(|e| format!("create_graph backward failed: {e}"))?;
    let s = s_of(&gs).unwrap();
    let wrt: Vec<Tensor> = pos.iter().map(|&i| leaves[i].clone()).collect();
    let analytic = if s.requires_grad() {
        grad(&[s], &wrt, None, GradOptions { create_graph: false, retain_graph: None, allow_unused: true })
            .map_err(|e| format!("second-order backward failed: {e}"))?
    } else {
        vec![None; wrt.len()]
    };
    for (gi, &i) in pos.iter().enumerate() {
        let a = analytic[gi].as_ref().map(|t| t.to_vec::<f64>().unwrap()).unwrap_or_else(|| vec![0.0; xs[i].numel()]);
        for (j, aj) in a.iter().enumerate() {
            let sp =
                s_of(&first_grads(case, &with_element(xs, i, j, EPS), w, false).unwrap().1).unwrap().item().unwrap();
            let sm =
                s_of(&first_grads(case, &with_element(xs, i, j, -EPS), w, false).unwrap().1).unwrap().item().unwrap();
            let num = (sp - sm) / (2.0 * EPS);
            if !close(*aj, num, 1e-4 * case.tol, 1e-3 * case.tol) {
                return Err(format!("second order, input {i} element {j}: analytic {aj} vs numeric {num}"));
            }
        }
    }
    Ok(())
}

fn selected() -> Vec<&'static OpDef> {
    let filter = std::env::var("SKIFF_OPS").ok();
    registry().into_iter().filter(|d| filter.as_ref().is_none_or(|f| f.split(',').any(|n| n == d.name))).collect()
}

#[test]
fn every_op_has_cases_and_primitives_have_backward() {
    let mut names = std::collections::HashSet::new();
    for def in registry() {
        assert!(names.insert(def.name), "op '{}' is registered twice", def.name);
        assert!(!(def.cases)().is_empty(), "op '{}' has no test cases", def.name);
        if def.kind == OpKind::Primitive {
            assert!(def.backward.is_some(), "primitive op '{}' has no backward rule", def.name);
        }
    }
}

#[test]
fn gradcheck_every_registry_op() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for def in selected() {
        for (k, case) in (def.cases)().iter().enumerate() {
            checked += 1;
            if let Err(e) = check_case(def, case, k) {
                failures.push(format!("{} / {}: {e}", def.name, case.name));
            }
        }
    }
    assert!(checked > 0, "no cases ran");
    assert!(failures.is_empty(), "{} of {checked} cases failed:\n{}", failures.len(), failures.join("\n"));
    eprintln!("gradcheck: {checked} cases passed");
}
