//! Custom functions (user forward and backward) and higher-order gradients
//! (`create_graph`): analytic second and third derivatives, and
//! Hessian-vector products checked against finite differences of the first
//! gradient.

use skiff::autograd::apply_function;
use skiff::{grad, BackwardOptions, DType, Function, FunctionCtx, GradOptions, Result, Tensor};
use std::sync::Arc;

use crate::common::{assert_close, expect_err, leaf, t, vals, Kind};

const CREATE: GradOptions = GradOptions { create_graph: true, retain_graph: None, allow_unused: false };

/// d(sum(y))/dx, recorded so it can be differentiated again.
fn d(y: &Tensor, x: &Tensor) -> Tensor {
    grad(&[y.sum_all().unwrap()], std::slice::from_ref(x), None, CREATE).unwrap().remove(0).unwrap()
}

const X: [f64; 4] = [0.3, -0.8, 1.1, 0.05];

// ---- custom functions -------------------------------------------------------

/// x^3 with a hand-written backward in tensor code (so it is differentiable).
struct Cube;
impl Function for Cube {
    fn name(&self) -> String {
        "Cube".into()
    }
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        ctx.save_for_backward(&[x]);
        Ok(vec![x.mul(x)?.mul(x)?])
    }
    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()[0];
        Ok(vec![Some(grads[0].mul(&x.mul(x)?.mul_scalar(3.0)?)?)])
    }
}

fn cube(x: &Tensor) -> Tensor {
    apply_function(Arc::new(Cube), std::slice::from_ref(x)).unwrap().remove(0)
}

/// exp(x), saving its own output for backward.
struct MyExp;
impl Function for MyExp {
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let y = inputs[0].exp()?;
        ctx.save_for_backward(&[&y]);
        Ok(vec![y])
    }
    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(grads[0].mul(&ctx.saved_tensors()[0])?)])
    }
}

/// Two outputs: (sin x, cos x).
struct SinCos;
impl Function for SinCos {
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].sin()?, inputs[0].cos()?])
    }
    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()[0];
        Ok(vec![Some(grads[0].mul(&x.cos()?)?.sub(&grads[1].mul(&x.sin()?)?)?)])
    }
}

/// Two inputs: a * b + b; reports which inputs it was asked to differentiate.
struct MulAdd(std::sync::Mutex<Vec<bool>>);
impl Function for MulAdd {
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0], &inputs[1]]);
        Ok(vec![inputs[0].mul(&inputs[1])?.add(&inputs[1])?])
    }
    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        *self.0.lock().unwrap() = vec![ctx.needs_input_grad(0), ctx.needs_input_grad(1)];
        let (a, b) = (&ctx.saved_tensors()[0], &ctx.saved_tensors()[1]);
        let ga = if ctx.needs_input_grad(0) { Some(grads[0].mul(b)?) } else { None };
        let gb = if ctx.needs_input_grad(1) { Some(grads[0].mul(&a.add_scalar(1.0)?)?) } else { None };
        Ok(vec![ga, gb])
    }
}

#[test]
fn custom_function_in_the_middle_of_a_graph() -> Result<()> {
    let x = leaf(&X, &[4]);
    let c = cube(&x.mul_scalar(2.0)?);
    assert_eq!(c.grad_fn_name().as_deref(), Some("Cube"));
    let z = c.sin()?;
    assert_close(&vals(&z), &X.iter().map(|x| (8.0 * x * x * x).sin()).collect::<Vec<_>>(), 1e-12);
    z.sum_all()?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| (8.0 * x * x * x).cos() * 24.0 * x * x).collect();
    assert_close(&vals(&x.grad().unwrap()), &want, 1e-12);

    // Without any input requiring grad, nothing is recorded.
    let y = cube(&t(&X, &[4]));
    assert!(!y.requires_grad() && y.grad_fn_name().is_none());
    Ok(())
}

#[test]
fn custom_function_backward_is_differentiable_with_create_graph() -> Result<()> {
    let x = leaf(&X, &[4]);
    let g1 = d(&cube(&x), &x);
    assert_close(&vals(&g1), &X.iter().map(|x| 3.0 * x * x).collect::<Vec<_>>(), 1e-12);
    assert!(g1.requires_grad());
    let g2 = d(&g1, &x);
    assert_close(&vals(&g2), &X.iter().map(|x| 6.0 * x).collect::<Vec<_>>(), 1e-12);
    let g3 = d(&g2, &x);
    assert_close(&vals(&g3), &[6.0; 4], 1e-12);

    // A saved output reconnects to its own node: d2/dx2 exp = exp.
    let x = leaf(&X, &[4]);
    let y = apply_function(Arc::new(MyExp), std::slice::from_ref(&x))?.remove(0);
    let g2 = d(&d(&y, &x), &x);
    assert_close(&vals(&g2), &X.iter().map(|x| x.exp()).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

#[test]
fn custom_function_with_two_outputs() -> Result<()> {
    let x = leaf(&X, &[4]);
    let out = apply_function(Arc::new(SinCos), std::slice::from_ref(&x))?;
    assert_eq!(out.len(), 2);
    assert_close(&vals(&out[1]), &X.iter().map(|x| x.cos()).collect::<Vec<_>>(), 1e-12);
    out[0].sum_all()?.add(&out[1].mul_scalar(2.0)?.sum_all()?)?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| x.cos() - 2.0 * x.sin()).collect();
    assert_close(&vals(&x.grad().unwrap()), &want, 1e-12);

    // Only one output used: the other output's gradient is zero.
    let x = leaf(&X, &[4]);
    let out = apply_function(Arc::new(SinCos), std::slice::from_ref(&x))?;
    out[1].sum_all()?.backward()?;
    assert_close(&vals(&x.grad().unwrap()), &X.iter().map(|x| -x.sin()).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

#[test]
fn custom_function_with_two_inputs_sees_needs_input_grad() -> Result<()> {
    let a = leaf(&[1.0, 2.0], &[2]);
    let b = t(&[3.0, -4.0], &[2]);
    let f = Arc::new(MulAdd(Default::default()));
    let y = apply_function(f.clone(), &[a.clone(), b.clone()])?.remove(0);
    assert_eq!(vals(&y), vec![6.0, -12.0]);
    y.sum_all()?.backward()?;
    assert_eq!(*f.0.lock().unwrap(), vec![true, false]);
    assert_eq!(vals(&a.grad().unwrap()), vec![3.0, -4.0]);

    let b = leaf(&[3.0, -4.0], &[2]);
    let y = apply_function(f.clone(), &[a.clone(), b.clone()])?.remove(0);
    let g = grad(&[y.sum_all()?], &[a.clone(), b.clone()], None, GradOptions::default())?;
    assert_eq!(*f.0.lock().unwrap(), vec![true, true]);
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![3.0, -4.0]);
    assert_eq!(vals(g[1].as_ref().unwrap()), vec![2.0, 3.0]);
    Ok(())
}

/// Returns a gradient of the wrong shape, count or dtype from backward.
enum Broken {
    Shape,
    Count,
    DType,
}
impl Function for Broken {
    fn forward(&self, _: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(&self, _: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        match self {
            Broken::Shape => Ok(vec![Some(grads[0].sum_all()?)]),
            Broken::Count => Ok(vec![]),
            Broken::DType => Ok(vec![Some(grads[0].to_dtype(DType::F32)?)]),
        }
    }
}

#[test]
fn a_custom_backward_returning_bad_gradients_is_an_error() -> Result<()> {
    let x = leaf(&X, &[4]);
    let y = apply_function(Arc::new(Broken::Shape), std::slice::from_ref(&x))?.remove(0);
    // Custom nodes report as "custom function" and name the Function in the message.
    let custom = "custom function";
    expect_err(
        y.sum_all()?.backward(),
        Kind::Autograd,
        custom,
        &[
            "backward of 'CustomFunction' returned a gradient of shape [] and dtype f64",
            "for input 0 of shape [4] and dtype f64",
        ],
    );
    let y = apply_function(Arc::new(Broken::Count), std::slice::from_ref(&x))?.remove(0);
    expect_err(
        y.sum_all()?.backward(),
        Kind::Autograd,
        custom,
        &["'CustomFunction' returned 0 gradients for 1 inputs"],
    );
    let y = apply_function(Arc::new(Broken::DType), std::slice::from_ref(&x))?.remove(0);
    expect_err(
        y.sum_all()?.backward(),
        Kind::Autograd,
        custom,
        &["shape [4] and dtype f32 for input 0 of shape [4] and dtype f64"],
    );
    assert!(x.grad().is_none(), "a wrong-dtype gradient never reaches .grad");
    Ok(())
}

// ---- higher-order gradients ---------------------------------------------------

#[test]
fn seed_example_gradient_of_a_gradient() -> Result<()> {
    // y = x*x; dx = grad(y, x, create_graph); z = y + dx; z.backward() => 2x + 2
    let x = leaf(&X, &[4]);
    let y = x.mul(&x)?;
    let dx = grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[y.ones_like().unwrap()]), CREATE)?
        .remove(0)
        .unwrap();
    assert_close(&vals(&dx), &X.iter().map(|x| 2.0 * x).collect::<Vec<_>>(), 1e-12);
    assert!(x.grad().is_none());
    let z = y.add(&dx)?;
    z.sum_all()?.backward()?;
    assert_close(&vals(&x.grad().unwrap()), &X.iter().map(|x| 2.0 * x + 2.0).collect::<Vec<_>>(), 1e-12);

    // The same through backward(create_graph): .grad itself is differentiable.
    let x = leaf(&X, &[4]);
    x.pow_scalar(3.0)?.sum_all()?.backward_with(None, BackwardOptions { retain_graph: false, create_graph: true })?;
    let g = x.grad().unwrap();
    assert!(g.requires_grad());
    assert_close(&vals(&g), &X.iter().map(|x| 3.0 * x * x).collect::<Vec<_>>(), 1e-12);
    assert_close(&vals(&d(&g, &x)), &X.iter().map(|x| 6.0 * x).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

#[test]
fn second_derivatives_of_elementwise_functions() -> Result<()> {
    type Case = (&'static str, fn(&Tensor) -> Result<Tensor>, fn(f64) -> f64, fn(f64) -> f64);
    let cases: [Case; 5] = [
        ("tanh", |x| x.tanh(), |x| 1.0 - x.tanh().powi(2), |x| -2.0 * x.tanh() * (1.0 - x.tanh().powi(2))),
        ("sigmoid", |x| x.sigmoid(), |x| sig(x) * (1.0 - sig(x)), |x| sig(x) * (1.0 - sig(x)) * (1.0 - 2.0 * sig(x))),
        ("exp", |x| x.exp(), f64::exp, f64::exp),
        (
            "log",
            |x| x.abs()?.add_scalar(0.5)?.log(),
            |x| x.signum() / (x.abs() + 0.5),
            |x| -1.0 / (x.abs() + 0.5).powi(2),
        ),
        ("sin", |x| x.sin(), f64::cos, |x| -x.sin()),
    ];
    for (name, f, d1, d2) in cases {
        let x = leaf(&X, &[4]);
        let g1 = d(&f(&x)?, &x);
        assert_close(&vals(&g1), &X.map(d1), 1e-12);
        let g2 = d(&g1, &x);
        let got = vals(&g2);
        for (i, (g, w)) in got.iter().zip(X.map(d2)).enumerate() {
            assert!((g - w).abs() < 1e-12 * (1.0 + w.abs()), "{name}'' at {}: got {g}, want {w}", X[i]);
        }
    }
    Ok(())
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn third_derivatives() -> Result<()> {
    let x = leaf(&X, &[4]);
    let g3 = d(&d(&d(&x.pow_scalar(3.0)?, &x), &x), &x);
    assert_close(&vals(&g3), &[6.0; 4], 1e-12);
    let g3 = d(&d(&d(&x.mul(&x)?.mul(&x)?, &x), &x), &x);
    assert_close(&vals(&g3), &[6.0; 4], 1e-12);
    let g3 = d(&d(&d(&x.mul_scalar(2.0)?.exp()?, &x), &x), &x);
    assert_close(&vals(&g3), &X.iter().map(|x| 8.0 * (2.0 * x).exp()).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

/// Checks the Hessian-vector product `grad(<grad f(x), u>, x)` against the
/// central difference of the first gradient along `u`.
fn check_hvp(f: impl Fn(&Tensor) -> Result<Tensor>, x0: &[f64], shape: &[usize], u: &[f64]) -> Result<()> {
    let first = |v: &[f64], create: bool| -> Result<Tensor> {
        let x = leaf(v, shape);
        let opts = GradOptions { create_graph: create, ..Default::default() };
        Ok(grad(&[f(&x)?], std::slice::from_ref(&x), None, opts)?.remove(0).unwrap())
    };
    let x = leaf(x0, shape);
    let g = grad(&[f(&x)?], std::slice::from_ref(&x), None, CREATE)?.remove(0).unwrap();
    let hvp = grad(&[g.mul(&t(u, shape))?.sum_all()?], std::slice::from_ref(&x), None, GradOptions::default())?
        .remove(0)
        .unwrap();
    let eps = 1e-5;
    let shifted = |s: f64| x0.iter().zip(u).map(|(x, u)| x + s * u).collect::<Vec<f64>>();
    let (gp, gm) = (vals(&first(&shifted(eps), false)?), vals(&first(&shifted(-eps), false)?));
    let fd: Vec<f64> = gp.iter().zip(&gm).map(|(p, m)| (p - m) / (2.0 * eps)).collect();
    assert_close(&vals(&hvp), &fd, 1e-6);
    Ok(())
}

#[test]
fn matmul_chain_second_derivative_matches_finite_differences() -> Result<()> {
    // f(x) = sum(tanh(x @ W) @ v)
    let w = t(&[0.5, -0.3, 0.8, 0.2, 0.1, -0.7, -0.4, 0.9, 0.3, 0.6, -0.2, 0.05], &[3, 4]);
    let v = t(&[1.0, -2.0, 0.5, 1.5], &[4, 1]);
    let x0 = [0.2, -0.5, 0.9, 1.1, 0.3, -0.6];
    let u = [0.7, -0.1, 0.4, -0.9, 0.5, 0.2];
    check_hvp(|x| x.matmul(&w)?.tanh()?.matmul(&v)?.sum_all(), &x0, &[2, 3], &u)?;
    // And with respect to W, through a batched matmul.
    let xb = t(&[0.2, -0.5, 0.9, 1.1, 0.3, -0.6, 0.4, 0.1, -0.3, 0.8, -0.2, 0.5], &[2, 2, 3]);
    let w0 = vals(&w);
    let uw: Vec<f64> = (0..12).map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.3).collect();
    check_hvp(|w| xb.matmul(w)?.tanh()?.matmul(&v)?.pow_scalar(2.0)?.sum_all(), &w0, &[3, 4], &uw)
}

#[test]
fn softmax_first_and_second_derivatives() -> Result<()> {
    let x0 = [0.1, -0.4, 0.9, 0.3, 1.2, -1.0];
    let wv = [1.0, -2.0, 0.5, 0.3, 0.7, -1.1];
    let w = t(&wv, &[2, 3]);
    let f = |x: &Tensor| x.softmax(-1)?.mul(&w)?.sum_all();
    // Analytic first gradient: s_i (w_i - sum_j s_j w_j), per row.
    let x = leaf(&x0, &[2, 3]);
    let g = grad(&[f(&x)?], std::slice::from_ref(&x), None, GradOptions::default())?.remove(0).unwrap();
    let mut want = Vec::new();
    for r in 0..2 {
        let e: Vec<f64> = x0[3 * r..3 * r + 3].iter().map(|v| v.exp()).collect();
        let s: Vec<f64> = e.iter().map(|v| v / e.iter().sum::<f64>()).collect();
        let sw: f64 = s.iter().zip(&wv[3 * r..]).map(|(s, w)| s * w).sum();
        want.extend(s.iter().zip(&wv[3 * r..]).map(|(s, w)| s * (w - sw)));
    }
    assert_close(&vals(&g), &want, 1e-12);
    check_hvp(f, &x0, &[2, 3], &[0.3, -0.2, 0.5, 0.9, -0.4, 0.1])?;
    // log_softmax + cross-entropy-style objective, along axis 0.
    check_hvp(|x| x.log_softmax(0)?.mul(&w)?.sum_all(), &x0, &[2, 3], &[0.3, -0.2, 0.5, 0.9, -0.4, 0.1])
}

#[test]
fn create_graph_in_f32_also_works() -> Result<()> {
    let x = Tensor::from_slice(&[0.5f32, -1.0], &[2])?.requires_grad_(true)?;
    let g2 = d(&d(&x.tanh()?, &x), &x);
    assert_eq!(g2.dtype(), DType::F32);
    let want: Vec<f64> = [0.5f64, -1.0].iter().map(|x| -2.0 * x.tanh() * (1.0 - x.tanh().powi(2))).collect();
    assert_close(&g2.to_f64_vec().unwrap(), &want, 1e-6);
    Ok(())
}

#[test]
fn custom_function_errors_name_the_function() -> Result<()> {
    let x = leaf(&X, &[4]);
    let h = x.mul_scalar(1.0)?;
    let y = cube(&h); // saves h
    h.add_scalar_(1.0)?;
    let facts = ["saved tensor 0 of 'Cube' (shape [4], dtype f64)", "in-place", "version 1 now, 0 when saved"];
    expect_err(y.sum_all()?.backward(), Kind::Autograd, "custom function", &facts);
    let x = leaf(&X, &[4]);
    let y = cube(&x);
    let ones = y.ones_like().unwrap();
    y.backward_with(Some(&ones), BackwardOptions::default())?;
    let r = y.backward_with(Some(&ones), BackwardOptions::default());
    expect_err(r, Kind::Autograd, "custom function", &["second time (node 'Cube')", "retain_graph=true"]);
    Ok(())
}

#[test]
fn hooks_on_one_output_of_a_multi_output_function() -> Result<()> {
    let x = leaf(&X, &[4]);
    let out = apply_function(Arc::new(SinCos), std::slice::from_ref(&x))?;
    out[1].register_hook(|g| Some(g.mul_scalar(3.0).unwrap()))?;
    out[0].add(&out[1])?.sum_all()?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| x.cos() - 3.0 * x.sin()).collect();
    assert_close(&vals(&x.grad().unwrap()), &want, 1e-12);
    Ok(())
}
