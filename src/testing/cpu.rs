//! The cpu checks of one case sample: forward against the reference in f64
//! and f32, the f64 gradcheck, and gradgradcheck (see `mod.rs`).

use super::compare::{compare_values, expect_output};
use super::{
    case_of, fail, float_positions, Check, CheckResult, EPS, GRAD_ATOL, GRAD_RTOL, REFERENCE_F32, REFERENCE_F64,
    SECOND_ATOL, SECOND_RTOL,
};
use crate::autograd::{enable_grad, grad, GradOptions};
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::{case_seed, Case, Host, Input, OpDef, OpKind, Reference};
use crate::random::Generator;
use crate::tensor::Tensor;

type Outcome<T> = std::result::Result<T, String>;

/// Runs the cpu checks of sample `k` of `def` (`ops::cases_of`): forward in
/// f64 and f32 against the reference, then for differentiable ops the f64
/// gradcheck, and gradgradcheck where the op is marked. Returns the checks
/// that ran (in order). Gradients are recorded whatever the caller's grad mode.
pub fn check_cpu(def: &OpDef, k: usize) -> CheckResult<Vec<Check>> {
    let case = case_of(def, k)?;
    let fail = fail(def, &case);
    enable_grad(|| cpu_checks(def, &case, k)).map_err(fail)
}

fn cpu_checks(def: &OpDef, case: &Case, k: usize) -> Outcome<Vec<Check>> {
    let inputs = |dtype| case.make_inputs(def.name, k, dtype).map_err(|e| format!("inputs: {e}"));
    let xs = inputs(DType::F64)?;
    let out64 = (case.run)(&xs).map_err(|e| format!("forward f64 failed: {e}"))?;
    against_reference("f64 forward", case, &xs, &out64, DType::F64, REFERENCE_F64)?;
    let x32 = inputs(DType::F32)?;
    let out32 = (case.run)(&x32).map_err(|e| format!("forward f32 failed: {e}"))?;
    against_reference("f32 forward", case, &x32, &out32, DType::F32, REFERENCE_F32)?;
    let mut ran = vec![Check::Reference];
    if def.kind == OpKind::NoGrad || case.max_order == 0 || !out64.dtype().is_float() || float_positions(&xs).is_empty()
    {
        return Ok(ran);
    }
    let w = weights(out64.shape(), DType::F64, case_seed(def.name, k)).map_err(|e| format!("weights: {e}"))?;
    first_order(case, &xs, &w)?;
    ran.push(Check::Gradcheck);
    if def.second_order && case.max_order >= 2 {
        second_order(case, &xs, &w, case_seed(def.name, k))?;
        ran.push(Check::SecondOrder);
    }
    Ok(ran)
}

/// Checks `out` (computed from `xs` in `float`) against the case's reference.
fn against_reference(
    what: &str,
    case: &Case,
    xs: &[Tensor],
    out: &Tensor,
    float: DType,
    tol: (f64, f64),
) -> Outcome<()> {
    let hosts: Vec<Host> =
        xs.iter().map(Host::from_tensor).collect::<Result<_>>().map_err(|e| format!("{what}: reading inputs: {e}"))?;
    match case.reference {
        Some(Reference::Values(f)) => expect_output(what, out, &f(&hosts), float, tol, case.nonfinite),
        Some(Reference::Property(p)) => {
            let got = Host::from_tensor(out).map_err(|e| format!("{what}: reading the output: {e}"))?;
            if out.dtype() != float || (!case.nonfinite && got.data.iter().any(|v| !v.is_finite())) {
                return Err(format!("{what}: a {} output with non-finite values or the wrong dtype", out.dtype()));
            }
            p(&hosts, &got).map_err(|e| format!("{what}: {e}"))
        }
        None => Err("the case has no reference".into()),
    }
}

/// The weights w of the loss sum(out * w): uniform in [-1, 1), seeded per case.
pub(super) fn weights(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
    Input::Uniform(shape.to_vec(), -1.0, 1.0).generate(dtype, &mut Generator::new(seed ^ 7))
}

/// Random directions v_i for the second-order checks, one per gradient.
pub(super) fn directions(xs: &[Tensor], dtype: DType, seed: u64) -> Result<Vec<Tensor>> {
    let mut g = Generator::new(seed ^ 11);
    float_positions(xs)
        .iter()
        .map(|&i| Input::Uniform(xs[i].shape().to_vec(), -1.0, 1.0).generate(dtype, &mut g))
        .collect()
}

/// sum(run(x) * w): a scalar whose gradient exercises every output element.
fn weighted_loss(case: &Case, xs: &[Tensor], w: &Tensor) -> Result<Tensor> {
    (case.run)(xs)?.mul(w)?.sum_all()
}

/// `xs` (detached) with element `j` of input `i` moved by `delta` (a fresh
/// contiguous tensor: finite differences do not depend on the layout).
fn with_element(xs: &[Tensor], i: usize, j: usize, delta: f64) -> Result<Vec<Tensor>> {
    let mut out: Vec<Tensor> = xs.iter().map(|t| t.detach()).collect();
    let mut v = xs[i].to_vec::<f64>()?;
    v[j] += delta;
    out[i] = Tensor::from_vec(v, xs[i].shape())?;
    Ok(out)
}

/// Fresh leaves for the float inputs and the gradients of the weighted loss
/// with respect to them (zeros where unused). With `create_graph` the
/// gradients are differentiable (in the inputs, and in `w` if it requires grad).
pub(super) fn first_grads(
    case: &Case,
    xs: &[Tensor],
    w: &Tensor,
    create_graph: bool,
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
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

/// sum_i <g_i, v_i> (on the gradients' device; 0 without gradients).
pub(super) fn dot_directions(gs: &[Tensor], vs: &[Tensor]) -> Result<Tensor> {
    let mut s: Option<Tensor> = None;
    for (g, v) in gs.iter().zip(vs) {
        let t = g.mul(v)?.sum_all()?;
        s = Some(match s {
            Some(s) => s.add(&t)?,
            None => t,
        });
    }
    Ok(s.unwrap_or_else(|| Tensor::scalar(0.0, DType::F64)))
}

/// The central difference of `f` in element `j`: (f(+eps) - f(-eps)) / 2 eps.
fn central(eps: f64, f: impl Fn(f64) -> Outcome<f64>) -> Outcome<f64> {
    Ok((f(eps)? - f(-eps)?) / (2.0 * eps))
}

/// Analytic first-order gradients against central differences (f64).
fn first_order(case: &Case, xs: &[Tensor], w: &Tensor) -> Outcome<()> {
    let (_, analytic) = first_grads(case, xs, w, false).map_err(|e| format!("backward failed: {e}"))?;
    let eps = case.eps.unwrap_or(EPS);
    for (gi, &i) in float_positions(xs).iter().enumerate() {
        let a = analytic[gi].to_vec::<f64>().map_err(|e| format!("reading the grad of input {i} failed: {e}"))?;
        let numeric = (0..a.len())
            .map(|j| {
                central(eps, |d| {
                    with_element(xs, i, j, d)
                        .and_then(|p| weighted_loss(case, &p, w)?.item())
                        .map_err(|e| format!("input {i} element {j}: perturbed forward failed: {e}"))
                })
            })
            .collect::<Outcome<Vec<f64>>>()?;
        let (atol, rtol) = (GRAD_ATOL * case.tol, GRAD_RTOL * case.tol);
        compare_values(&format!("grad of input {i} (analytic vs numeric)"), &a, &numeric, atol, rtol, false)?;
    }
    Ok(())
}

/// gradgradcheck: with s(x, w) = sum_i <grad_i(x, w), v_i>, checks ds/dx and
/// ds/dw (w, the incoming gradient of the output, perturbed too) against
/// central differences of first-order gradients.
fn second_order(case: &Case, xs: &[Tensor], w: &Tensor, seed: u64) -> Outcome<()> {
    let pos = float_positions(xs);
    let vs = directions(xs, DType::F64, seed).map_err(|e| format!("second order directions: {e}"))?;
    let s_at = |xs: &[Tensor], w: &Tensor| {
        first_grads(case, xs, w, false).and_then(|(_, gs)| dot_directions(&gs, &vs)?.item())
    };
    let w_leaf = w.detach().requires_grad_(true).map_err(|e| e.to_string())?;
    let (leaves, gs) =
        first_grads(case, xs, &w_leaf, true).map_err(|e| format!("create_graph backward failed: {e}"))?;
    let s = dot_directions(&gs, &vs).map_err(|e| format!("second order: sum of <grad, v> failed: {e}"))?;
    let mut wrt: Vec<Tensor> = pos.iter().map(|&i| leaves[i].clone()).collect();
    wrt.push(w_leaf);
    let analytic = if s.requires_grad() {
        grad(&[s], &wrt, None, GradOptions { create_graph: false, retain_graph: None, allow_unused: true })
            .map_err(|e| format!("second-order backward failed: {e}"))?
    } else {
        vec![None; wrt.len()]
    };
    let eps = case.eps.unwrap_or(EPS);
    let (atol, rtol) = (SECOND_ATOL * case.tol, SECOND_RTOL * case.tol);
    for (gi, target) in wrt.iter().enumerate() {
        let is_w = gi == pos.len();
        let what = if is_w { "the incoming gradient w".to_string() } else { format!("input {}", pos[gi]) };
        let a = match &analytic[gi] {
            Some(t) => t.to_vec::<f64>().map_err(|e| format!("reading the second-order grad of {what}: {e}"))?,
            None => vec![0.0; target.numel()],
        };
        let numeric = (0..a.len())
            .map(|j| {
                central(eps, |d| {
                    let r = if is_w {
                        with_element(std::slice::from_ref(w), 0, j, d).and_then(|p| s_at(xs, &p[0]))
                    } else {
                        with_element(xs, pos[gi], j, d).and_then(|p| s_at(&p, w))
                    };
                    r.map_err(|e| format!("second order, {what} element {j}: perturbed backward failed: {e}"))
                })
            })
            .collect::<Outcome<Vec<f64>>>()?;
        compare_values(
            &format!("second-order grad w.r.t. {what} (analytic vs numeric)"),
            &a,
            &numeric,
            atol,
            rtol,
            false,
        )?;
    }
    Ok(())
}
