//! Integration tests for the autograd semantics (DESIGN.md, "Autograd
//! semantics"): recording and pruning, backward and grad(), accumulation,
//! retain_graph, the iterative engine and device placement. In-place ops and
//! hooks live in autograd_inplace.rs; custom functions and higher-order
//! gradients in autograd_higher.rs.

use skiff::autograd::is_grad_enabled;
use skiff::{enable_grad, grad, no_grad, BackwardOptions, DType, Device, GradOptions, Result, Tensor};

use crate::common::{assert_close, expect_err, grad_of, leaf, t, Kind};

const X: [f64; 3] = [0.5, -1.25, 2.0];

#[test]
fn leaves_do_not_require_grad_unless_asked() -> Result<()> {
    let a = t(&X, &[3]);
    assert!(!a.requires_grad() && a.is_leaf() && a.grad().is_none());
    let b = a.mul(&a)?.exp()?;
    assert!(!b.requires_grad(), "ops on constants record nothing");
    assert_eq!(b.grad_fn_name(), None);
    assert!(b.is_leaf());
    // Nothing to differentiate.
    expect_err(
        b.sum_all()?.backward(),
        Kind::Autograd,
        "backward",
        &["shape [] does not require grad and has no grad_fn"],
    );

    let x = leaf(&X, &[3]);
    assert!(x.requires_grad() && x.is_leaf() && x.grad_fn_name().is_none());
    let y = x.mul(&a)?;
    assert!(y.requires_grad() && !y.is_leaf());
    assert_eq!(y.grad_fn_name().as_deref(), Some("mul"));
    assert_eq!(y.exp()?.grad_fn_name().as_deref(), Some("exp"));
    // requires_grad_(false) on a leaf turns tracking off again.
    let z = leaf(&X, &[3]).requires_grad_(false)?;
    assert!(!z.mul_scalar(2.0)?.requires_grad());
    Ok(())
}

#[test]
fn no_grad_prunes_the_graph_and_enable_grad_reenables_it() -> Result<()> {
    let x = leaf(&X, &[3]);
    assert!(is_grad_enabled());
    let (y, inner) = no_grad(|| {
        assert!(!is_grad_enabled());
        let y = x.mul(&x).unwrap().sin().unwrap().sum_all().unwrap();
        let inner = enable_grad(|| {
            assert!(is_grad_enabled());
            x.mul_scalar(3.0).unwrap()
        });
        assert!(!is_grad_enabled(), "enable_grad restores the outer mode");
        (y, inner)
    });
    assert!(is_grad_enabled(), "no_grad restores the outer mode");
    assert!(!y.requires_grad());
    assert_eq!(y.grad_fn_name(), None);
    expect_err(y.backward(), Kind::Autograd, "backward", &["shape [] does not require grad and has no grad_fn"]);
    assert_eq!(inner.grad_fn_name().as_deref(), Some("mul_scalar"));
    inner.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[3.0; 3], 1e-12);

    // A no_grad branch mixed into a recorded graph contributes no gradient.
    let x = leaf(&X, &[3]);
    let c = no_grad(|| x.mul(&x)).unwrap();
    x.mul(&c)?.sum_all()?.backward()?; // d/dx (x * const) = const = x^2
    let want: Vec<f64> = X.iter().map(|v| v * v).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    Ok(())
}

#[test]
fn detach_cuts_history_but_shares_storage() -> Result<()> {
    let x = leaf(&X, &[3]);
    let d = x.detach();
    assert!(!d.requires_grad() && d.is_leaf());
    assert_eq!(d.to_vec::<f64>()?, X.to_vec());
    // Shares storage: an in-place write through the detached alias is visible.
    no_grad(|| d.add_scalar_(1.0)).unwrap();
    assert_close(&x.to_vec::<f64>()?, &[1.5, -0.25, 3.0], 0.0);

    let x = leaf(&X, &[3]);
    x.mul(&x.detach())?.sum_all()?.backward()?; // only one factor carries a gradient
    assert_close(&grad_of(&x), &X, 1e-12);
    Ok(())
}

#[test]
fn backward_of_a_scalar_gives_analytic_gradients() -> Result<()> {
    let x = leaf(&X, &[3]);
    let w = leaf(&[2.0, 3.0, -1.0], &[3]);
    // f = sum(x^3 * w + sin(x))
    let f = x.pow_scalar(3.0)?.mul(&w)?.add(&x.sin()?)?.sum_all()?;
    assert_eq!(f.shape(), &[] as &[usize]);
    f.backward()?;
    let wv = [2.0, 3.0, -1.0];
    let want: Vec<f64> = X.iter().zip(wv).map(|(x, w)| 3.0 * x * x * w + x.cos()).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    let want_w: Vec<f64> = X.iter().map(|x| x * x * x).collect();
    assert_close(&grad_of(&w), &want_w, 1e-12);
    Ok(())
}

#[test]
fn backward_with_an_explicit_output_gradient() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.mul(&x)?;
    let v = t(&[1.0, 10.0, 100.0], &[3]);
    y.backward_with(Some(&v), BackwardOptions::default())?;
    assert_close(&grad_of(&x), &[1.0, -25.0, 400.0], 1e-12); // 2 x v

    // A one-element non-scalar output can be seeded implicitly.
    let x = leaf(&[3.0], &[1, 1]);
    x.mul(&x)?.backward()?;
    assert_close(&grad_of(&x), &[6.0], 1e-12);
    Ok(())
}

#[test]
fn grad_returns_gradients_without_touching_dot_grad() -> Result<()> {
    let x = leaf(&X, &[3]);
    let w = leaf(&[2.0, 3.0, -1.0], &[3]);
    let f = x.mul(&w)?.mul(&x)?.sum_all()?; // sum(w x^2)
    let g = grad(&[f], &[x.clone(), w.clone()], None, GradOptions::default())?;
    let gx = g[0].as_ref().unwrap().to_vec::<f64>()?;
    let gw = g[1].as_ref().unwrap().to_vec::<f64>()?;
    assert_close(&gx, &[2.0, -7.5, -4.0], 1e-12);
    assert_close(&gw, &[0.25, 1.5625, 4.0], 1e-12);
    assert!(x.grad().is_none() && w.grad().is_none(), "grad() must not accumulate into .grad");
    assert!(!g[0].as_ref().unwrap().requires_grad(), "without create_graph the result is a constant");

    // With explicit grad_outputs, for a non-scalar output.
    let x = leaf(&X, &[3]);
    let y = x.exp()?;
    let g = grad(&[y], std::slice::from_ref(&x), Some(&[t(&[1.0, 2.0, 3.0], &[3])]), GradOptions::default())?;
    let want: Vec<f64> = X.iter().zip([1.0, 2.0, 3.0]).map(|(x, v)| x.exp() * v).collect();
    assert_close(&g[0].as_ref().unwrap().to_vec::<f64>()?, &want, 1e-12);
    assert!(x.grad().is_none());

    // Gradients with respect to an intermediate (non-leaf) tensor.
    let x = leaf(&X, &[3]);
    let h = x.mul_scalar(2.0)?;
    let f = h.mul(&h)?.sum_all()?;
    let g = grad(&[f], std::slice::from_ref(&h), None, GradOptions::default())?;
    let want: Vec<f64> = X.iter().map(|x| 4.0 * x).collect(); // 2h
    assert_close(&g[0].as_ref().unwrap().to_vec::<f64>()?, &want, 1e-12);
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn grad_of_several_outputs_sums_their_contributions() -> Result<()> {
    let x = leaf(&X, &[3]);
    let a = x.mul_scalar(2.0)?.sum_all()?;
    let b = x.mul(&x)?.sum_all()?;
    let g = grad(&[a, b], std::slice::from_ref(&x), None, GradOptions::default())?;
    let want: Vec<f64> = X.iter().map(|x| 2.0 + 2.0 * x).collect();
    assert_close(&g[0].as_ref().unwrap().to_vec::<f64>()?, &want, 1e-12);
    Ok(())
}

#[test]
fn allow_unused_returns_none_for_unused_inputs() -> Result<()> {
    let x = leaf(&X, &[3]);
    let unused = leaf(&[1.0], &[1]);
    let f = || x.mul_scalar(2.0).unwrap().sum_all().unwrap();
    let r = grad(&[f()], &[x.clone(), unused.clone()], None, GradOptions::default());
    expect_err(r, Kind::Autograd, "grad", &["input 1", "allow_unused"]);
    let opts = GradOptions { allow_unused: true, ..Default::default() };
    let g = grad(&[f()], &[x.clone(), unused.clone()], None, opts)?;
    assert_close(&g[0].as_ref().unwrap().to_vec::<f64>()?, &[2.0; 3], 1e-12);
    assert!(g[1].is_none());
    Ok(())
}

#[test]
fn gradients_accumulate_across_backward_calls_until_zero_grad() -> Result<()> {
    let x = leaf(&X, &[3]);
    x.mul(&x)?.sum_all()?.backward()?;
    x.mul_scalar(3.0)?.sum_all()?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| 2.0 * x + 3.0).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    x.zero_grad();
    assert!(x.grad().is_none());
    x.mul_scalar(5.0)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[5.0; 3], 1e-12);
    Ok(())
}

#[test]
fn a_leaf_used_twice_receives_the_sum_of_both_paths() -> Result<()> {
    let x = leaf(&X, &[3]);
    // f = sum(sin(x) * cos(x) + x): both branches of the diamond reach x.
    let f = x.sin()?.mul(&x.cos()?)?.add(&x)?.sum_all()?;
    f.backward()?;
    let want: Vec<f64> = X.iter().map(|x| (2.0 * x).cos() + 1.0).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    Ok(())
}

#[test]
fn retain_graph_allows_a_second_backward() -> Result<()> {
    let x = leaf(&X, &[3]);
    let f = x.mul(&x)?.sin()?.sum_all()?;
    f.backward_with(None, BackwardOptions { retain_graph: true, create_graph: false })?;
    f.backward()?;
    let want: Vec<f64> = X.iter().map(|x| 2.0 * 2.0 * x * (x * x).cos()).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    // The graph is now freed: a third backward fails clearly.
    // The first node the third pass reaches is the sum's.
    expect_err(f.backward(), Kind::Autograd, "sum", &["second time (node 'sum')", "retain_graph=true"]);
    Ok(())
}

#[test]
fn second_backward_without_retain_graph_is_a_clear_error() -> Result<()> {
    let x = leaf(&X, &[3]);
    let f = x.exp()?.sum_all()?;
    f.backward()?;
    expect_err(f.backward(), Kind::Autograd, "sum", &["second time (node 'sum')", "retain_graph=true"]);
    // The first backward's result is intact.
    let want: Vec<f64> = X.iter().map(|x| x.exp()).collect();
    assert_close(&grad_of(&x), &want, 1e-12);

    // The same holds for grad() without retain_graph.
    let x = leaf(&X, &[3]);
    let f = x.exp()?.sum_all()?;
    grad(std::slice::from_ref(&f), std::slice::from_ref(&x), None, GradOptions::default())?;
    let r = grad(&[f], &[x], None, GradOptions::default());
    expect_err(r, Kind::Autograd, "sum", &["second time (node 'sum')", "retain_graph=true"]);
    Ok(())
}

/// Runs `f` on a thread with a 256 KiB stack: a recursive engine (or a
/// recursive graph drop) would overflow it on a 10,000-op chain.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().expect("thread panicked")
}

#[test]
fn a_10000_op_chain_backpropagates_iteratively() {
    let (g, n) = on_small_stack(|| {
        let x = leaf(&[1.0], &[1]);
        let mut y = x.clone();
        let n = 5_000; // two ops per step: 10,000 nodes
        for _ in 0..n {
            y = y.mul_scalar(1.0001).unwrap().add_scalar(0.0).unwrap();
        }
        y.sum_all().unwrap().backward().unwrap();
        drop(y);
        (grad_of(&x)[0], n)
    });
    let want = 1.0001f64.powi(n);
    assert!((g - want).abs() < 1e-9 * want, "got {g}, want {want}");
}

#[test]
fn a_10000_op_sin_chain_gives_the_product_of_cosines() {
    let (g, want) = on_small_stack(|| {
        let x = leaf(&[0.7], &[1]);
        let mut y = x.clone();
        let (mut v, mut want) = (0.7f64, 1.0f64);
        for _ in 0..10_000 {
            y = y.sin().unwrap();
            want *= v.cos();
            v = v.sin();
        }
        assert!((y.item().unwrap() - v).abs() < 1e-12);
        let g = grad(&[y.sum_all().unwrap()], std::slice::from_ref(&x), None, GradOptions::default()).unwrap();
        (g[0].as_ref().unwrap().item().unwrap(), want)
    });
    assert!((g - want).abs() <= 1e-9 * want.abs(), "got {g}, want {want}");
}

#[test]
fn dropping_a_deep_graph_without_backward_does_not_overflow() {
    on_small_stack(|| {
        let x = leaf(&[1.0], &[1]);
        let mut y = x.clone();
        for _ in 0..10_000 {
            y = y.mul_scalar(1.0).unwrap();
        }
        drop(y); // the chain of nodes is released here
    });
}

#[test]
fn gradient_accumulation_order_is_deterministic() -> Result<()> {
    // The same graph run twice gives bit-identical gradients.
    let run = || -> Result<Vec<f64>> {
        let x = leaf(&[0.1, 0.2, 0.3], &[3]);
        let mut acc = x.mul_scalar(1e-8)?;
        for k in 1..50 {
            acc = acc.add(&x.mul_scalar(k as f64 * 0.37)?.sin()?)?;
        }
        acc.sum_all()?.backward()?;
        Ok(grad_of(&x))
    };
    assert_eq!(run()?, run()?);
    Ok(())
}

#[test]
fn to_cpu_keeps_values_and_history() -> Result<()> {
    let x = leaf(&X, &[3]);
    assert_eq!(x.device(), Device::Cpu);
    let y = x.mul_scalar(2.0)?;
    let z = y.to(&Device::Cpu)?;
    assert_eq!(z.device(), Device::Cpu);
    assert_eq!(z.to_vec::<f64>()?, vec![1.0, -2.5, 4.0]);
    assert!(z.requires_grad());
    assert_eq!(z.grad_fn_name(), y.grad_fn_name());
    z.mul(&z)?.sum_all()?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| 8.0 * x).collect();
    assert_close(&grad_of(&x), &want, 1e-12);
    // A leaf moved to its own device is still a leaf that requires grad.
    let l = x.to(&Device::Cpu)?;
    assert!(l.requires_grad() && l.is_leaf());
    assert_eq!(Tensor::zeros(&[2], DType::F32)?.device(), Device::Cpu);
    Ok(())
}

#[test]
fn grad_edge_cases_dependent_outputs_repeated_inputs_and_leaf_roots() -> Result<()> {
    // One output depends on the other: both contributions arrive.
    let x = leaf(&X, &[3]);
    let y = x.mul(&x)?.sum_all()?;
    let z = y.mul_scalar(3.0)?;
    let g = grad(&[y, z], std::slice::from_ref(&x), None, GradOptions::default())?;
    assert_close(&g[0].as_ref().unwrap().to_vec::<f64>()?, &X.iter().map(|x| 8.0 * x).collect::<Vec<_>>(), 1e-12);
    // The same input asked for twice gets its gradient twice.
    let x = leaf(&X, &[3]);
    let g = grad(&[x.exp()?.sum_all()?], &[x.clone(), x.clone()], None, GradOptions::default())?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, g[1].as_ref().unwrap().to_vec::<f64>()?);
    // Backward from a scalar leaf itself.
    let s = leaf(&[2.0], &[]);
    s.backward()?;
    assert_eq!(grad_of(&s), vec![1.0]);
    // An in-place update of a non-leaf under no_grad keeps its recorded history.
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    no_grad(|| y.add_scalar_(1.0)).unwrap();
    assert_eq!(y.grad_fn_name().as_deref(), Some("mul_scalar"));
    y.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[2.0; 3], 0.0);
    Ok(())
}

#[test]
fn a_deep_chain_of_inplace_updates_backpropagates_and_drops_on_a_small_stack() {
    let g = on_small_stack(|| {
        let x = leaf(&[0.5], &[1]);
        let y = x.mul_scalar(1.0).unwrap();
        for _ in 0..3_000 {
            y.mul_scalar_(1.0001).unwrap(); // each update records a copy and the op
        }
        y.sum_all().unwrap().backward().unwrap();
        grad_of(&x)[0]
    });
    let want = 1.0001f64.powi(3_000);
    assert!((g - want).abs() < 1e-9 * want, "got {g}, want {want}");
}

#[test]
fn grad_mode_is_per_thread() {
    let x = leaf(&X, &[3]);
    no_grad(|| {
        let x2 = x.clone();
        let recorded = std::thread::spawn(move || x2.mul_scalar(2.0).unwrap().requires_grad()).join().unwrap();
        assert!(recorded, "no_grad on this thread does not affect another thread");
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
    });
}
