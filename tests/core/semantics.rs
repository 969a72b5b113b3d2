//! Semantics PyTorch documents and skiff must share: clamp's edge cases
//! (forward and backward, cpu and GPU), when `retain_grad` stores `.grad`
//! relative to other hooks, and what `set_grad` accepts.

use crate::common;

use crate::common::{expect_err, grad_of, leaf, t, vals, Kind};
use skiff::{DType, Tensor};

const NAN: f64 = f64::NAN;

/// Forward values and the gradient of sum(clamp(x) * w) with respect to x.
fn clamp_and_grad(x: &Tensor, min: Option<f64>, max: Option<f64>, w: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let x = x.detach().requires_grad_(true).unwrap();
    let y = x.clamp(min, max).unwrap();
    y.mul(w).unwrap().sum(&[], false).unwrap().backward().unwrap();
    let g = x.grad().unwrap();
    (y.to_f64_vec().unwrap(), g.to_f64_vec().unwrap())
}

/// Equal element by element, NaN matching NaN.
fn same(what: &str, got: &[f64], want: &[f64]) {
    let ok = got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g == w || (g.is_nan() && w.is_nan()));
    assert!(ok, "{what}: got {got:?}, want {want:?}");
}

/// x hits both bounds exactly, lies between and outside them, and is NaN.
const X: [f64; 7] = [-2.0, -1.0, -0.5, 0.0, 1.0, 1.5, NAN];
/// The incoming gradient: distinct values, so each element's own is seen.
const W: [f64; 7] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];

type ClampRow = (Option<f64>, Option<f64>, [f64; 7], [f64; 7]);

/// (min, max, forward, gradient) as PyTorch gives them for x = X, weights W:
/// the gradient passes where min <= x <= max, bounds included (clamp_backward).
fn clamp_table() -> Vec<ClampRow> {
    vec![
        (Some(-1.0), Some(1.0), [-1.0, -1.0, -0.5, 0.0, 1.0, 1.0, NAN], [0.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0]),
        (Some(-1.0), None, [-1.0, -1.0, -0.5, 0.0, 1.0, 1.5, NAN], [0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0]),
        (None, Some(1.0), [-2.0, -1.0, -0.5, 0.0, 1.0, 1.0, NAN], [1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0]),
        // min > max: every element becomes max (torch.clamp's documentation);
        // no x satisfies min <= x <= max, so no gradient passes.
        (Some(1.0), Some(-1.0), [-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, NAN], [0.0; 7]),
        // min == max: the single value, and the gradient only at x == it.
        (Some(1.0), Some(1.0), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, NAN], [0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0]),
        // A NaN bound makes every element NaN and passes no gradient.
        (Some(NAN), Some(1.0), [NAN; 7], [0.0; 7]),
        (Some(-1.0), Some(NAN), [NAN; 7], [0.0; 7]),
        (Some(NAN), None, [NAN; 7], [0.0; 7]),
        (None, Some(NAN), [NAN; 7], [0.0; 7]),
    ]
}

#[test]
fn clamp_matches_pytorch_at_bounds_min_above_max_and_nan() {
    for dtype in [DType::F64, DType::F32] {
        let x = t(&X, &[7]).to_dtype(dtype).unwrap();
        let w = t(&W, &[7]).to_dtype(dtype).unwrap();
        for (min, max, want_y, want_g) in clamp_table() {
            let (y, g) = clamp_and_grad(&x, min, max, &w);
            same(&format!("{dtype} clamp({min:?}, {max:?})"), &y, &want_y);
            same(&format!("{dtype} clamp({min:?}, {max:?}) gradient"), &g, &want_g);
        }
    }
}

#[test]
fn clamp_backward_selects_rather_than_multiplies() {
    // PyTorch's backward is where(min <= x <= max, g, 0): an infinite or NaN
    // incoming gradient where x is clamped gives 0, not inf * 0 = NaN.
    let x = leaf(&[-2.0, 0.0, 2.0], &[3]);
    let y = x.clamp(Some(-1.0), Some(1.0)).unwrap();
    y.backward_with(Some(&t(&[f64::INFINITY, 1.0, NAN], &[3])), Default::default()).unwrap();
    same("gradient", &grad_of(&x), &[0.0, 1.0, 0.0]);
}

#[test]
fn clamp_second_derivative_is_zero_and_flows_to_the_incoming_gradient() {
    // d/dg of the backward where(mask, g, 0) is the mask: the double
    // backward of sum(grad_x * v) with respect to the incoming gradient.
    let x = leaf(&[-2.0, -1.0, 0.5, 1.0, 3.0], &[5]);
    let g = leaf(&[1.0; 5], &[5]);
    let y = x.clamp(Some(-1.0), Some(1.0)).unwrap();
    let opts = skiff::GradOptions { create_graph: true, ..Default::default() };
    let gx =
        skiff::grad(&[y], std::slice::from_ref(&x), Some(std::slice::from_ref(&g)), opts).unwrap().remove(0).unwrap();
    let v = t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let dg = skiff::grad(&[gx.mul(&v).unwrap().sum(&[], false).unwrap()], &[g], None, Default::default()).unwrap();
    same("d/dg", &vals(dg[0].as_ref().unwrap()), &[0.0, 2.0, 3.0, 4.0, 0.0]);
}

#[test]
fn clamp_on_the_gpu_matches_the_cpu_at_the_edges() {
    let Some(gpu) = common::gpu() else { return };
    let x = t(&X, &[7]).to_dtype(DType::F32).unwrap();
    let w = t(&W, &[7]).to_dtype(DType::F32).unwrap();
    let (xg, wg) = (x.to(&gpu).unwrap(), w.to(&gpu).unwrap());
    for (min, max, want_y, want_g) in clamp_table() {
        let (y, g) = clamp_and_grad(&xg, min, max, &wg);
        same(&format!("GPU clamp({min:?}, {max:?})"), &y, &want_y);
        same(&format!("GPU clamp({min:?}, {max:?}) gradient"), &g, &want_g);
        let (yc, gc) = clamp_and_grad(&x, min, max, &w);
        same("cpu vs GPU forward", &y, &yc);
        same("cpu vs GPU gradient", &g, &gc);
    }
}

/// A non-leaf y = x * 2 with x a leaf of ones, and z = y * 3, summed.
fn graph() -> (Tensor, Tensor, Tensor) {
    let x = leaf(&[1.0, 1.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul_scalar(3.0).unwrap().sum(&[], false).unwrap();
    (x, y, z)
}

fn doubling(g: &Tensor) -> Option<Tensor> {
    Some(g.mul_scalar(2.0).unwrap())
}

#[test]
fn retain_grad_stores_the_gradient_after_every_hook() {
    // PyTorch runs the retains_grad hook after the tensor's other hooks,
    // whatever the registration order: y.grad is dz/dy = 3 doubled either way.
    for hook_first in [true, false] {
        let (x, y, z) = graph();
        if hook_first {
            y.register_hook(doubling).unwrap();
            y.retain_grad().unwrap();
        } else {
            y.retain_grad().unwrap();
            y.register_hook(doubling).unwrap();
        }
        z.backward().unwrap();
        same(&format!("y.grad (hook first: {hook_first})"), &vals(&y.grad().unwrap()), &[6.0, 6.0]);
        same("x.grad", &grad_of(&x), &[12.0, 12.0]);
    }
    // Calling retain_grad twice stores once; a second backward accumulates.
    let (_, y, z) = graph();
    y.retain_grad().unwrap();
    y.retain_grad().unwrap();
    z.backward_with(None, skiff::BackwardOptions { retain_graph: true, ..Default::default() }).unwrap();
    same("y.grad after retain_grad twice", &vals(&y.grad().unwrap()), &[3.0, 3.0]);
    z.backward().unwrap();
    same("y.grad after a second backward", &vals(&y.grad().unwrap()), &[6.0, 6.0]);
    // The stored gradient is a copy of the flowing one: a hook that later
    // writes into the tensor it was handed does not reach y.grad.
    let (_, y, z) = graph();
    y.retain_grad().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    y.register_hook(move |g| {
        *keep.lock().unwrap() = Some(g.clone());
        None
    })
    .unwrap();
    z.backward().unwrap();
    let flowed = seen.lock().unwrap().take().unwrap();
    skiff::no_grad(|| flowed.fill_(100.0)).unwrap();
    same("y.grad is not the flowing tensor", &vals(&y.grad().unwrap()), &[3.0, 3.0]);
    // An in-place write after retain_grad: .grad is the gradient of the new
    // value (PyTorch moves the retains_grad hook to the new grad_fn), here 1
    // for y = (x * 2) * 3 summed; a hook registered before stays with the old
    // value, whose gradient is 3.
    let x = leaf(&[1.0, 1.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    y.retain_grad().unwrap();
    let old_seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = old_seen.clone();
    y.register_hook(move |g| {
        keep.lock().unwrap().extend(g.to_f64_vec().unwrap());
        None
    })
    .unwrap();
    y.mul_(&t(&[3.0], &[1])).unwrap();
    y.sum(&[], false).unwrap().backward().unwrap();
    same("y.grad after y *= 3", &vals(&y.grad().unwrap()), &[1.0, 1.0]);
    same("the old value's hook", &old_seen.lock().unwrap(), &[3.0, 3.0]);
    same("x.grad", &grad_of(&x), &[6.0, 6.0]);
    // Leaves keep their gradient anyway; a tensor without grad cannot retain one.
    leaf(&[1.0], &[1]).retain_grad().unwrap();
    let facts = ["cannot retain the grad of a tensor of shape [1] that does not require grad"];
    expect_err(t(&[1.0], &[1]).retain_grad(), Kind::Autograd, "retain_grad", &facts);
}

#[test]
fn set_grad_refuses_a_gradient_that_does_not_fit() {
    let w = leaf(&[1.0, 2.0], &[2]);
    let ints = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    expect_err(w.set_grad(Some(ints)), Kind::DType, "set_grad", &["the gradient is a i32 tensor", "is f64"]);
    let f32s = t(&[1.0, 2.0], &[2]).to_dtype(DType::F32).unwrap();
    expect_err(w.set_grad(Some(f32s)), Kind::DType, "set_grad", &["the gradient is a f32 tensor"]);
    expect_err(
        w.set_grad(Some(t(&[1.0], &[1]))),
        Kind::Shape,
        "set_grad",
        &["shape [1] does not fit a tensor of shape [2]"],
    );
    expect_err(w.set_grad(Some(t(&[1.0; 2], &[2, 1]))), Kind::Shape, "set_grad", &["[2, 1]"]);
    assert!(w.grad().is_none(), "nothing refused is stored");
    w.set_grad(Some(t(&[3.0, 4.0], &[2]))).unwrap();
    same("a fitting gradient is stored", &grad_of(&w), &[3.0, 4.0]);
    w.set_grad(None).unwrap();
    assert!(w.grad().is_none(), "None clears");
    // A cpu gradient for a GPU tensor (and the reverse).
    let Some(gpu) = common::gpu() else { return };
    let on_gpu = t(&[1.0, 2.0], &[2]).to_dtype(DType::F32).unwrap().to(&gpu).unwrap().requires_grad_(true).unwrap();
    let cpu_grad = t(&[1.0, 2.0], &[2]).to_dtype(DType::F32).unwrap();
    let fact = format!("a gradient on cpu (ndarray) for a tensor on {}", gpu.describe());
    expect_err(on_gpu.set_grad(Some(cpu_grad.clone())), Kind::Device, "set_grad", &[&fact]);
    let on_cpu = cpu_grad.requires_grad_(true).unwrap();
    let gpu_grad = on_gpu.detach();
    expect_err(on_cpu.set_grad(Some(gpu_grad)), Kind::Device, "set_grad", &["for a tensor on cpu"]);
}

/// PyTorch's subgradient: the norm of a zero vector has gradient 0 for every
/// p, where differentiating the root naively gives NaN; and to second order.
#[test]
fn norm_of_zeros_has_zero_gradient() {
    for p in [2.0, 3.0, 0.5] {
        let x = Tensor::zeros(&[2, 3], DType::F64).unwrap().requires_grad_(true).unwrap();
        let n = x.norm(p, &[1], false).unwrap();
        assert_eq!(n.to_vec::<f64>().unwrap(), vec![0.0, 0.0]);
        let create = skiff::GradOptions { create_graph: true, ..Default::default() };
        let g =
            skiff::grad(&[n.sum_all().unwrap()], std::slice::from_ref(&x), None, create).unwrap().remove(0).unwrap();
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![0.0; 6], "p = {p}");
        let unused = skiff::GradOptions { allow_unused: true, ..Default::default() };
        let gg = skiff::grad(&[g.sum_all().unwrap()], std::slice::from_ref(&x), None, unused).unwrap().remove(0);
        assert!(gg.is_none_or(|t| t.to_vec::<f64>().unwrap().iter().all(|v| *v == 0.0)), "p = {p}");
    }
    // PyTorch 2.15 for p = 0.5 and a row holding a zero: 0 there, not inf.
    let x = Tensor::from_vec(vec![1.0f64, 0.0, 2.0], &[3]).unwrap().requires_grad_(true).unwrap();
    x.norm(0.5, &[], false).unwrap().backward().unwrap();
    common::assert_close(&grad_of(&x), &[2.414213562373095, 0.0, 1.7071067811865472], 1e-14);
    // A row with nonzeros keeps the analytic gradient x / |x|.
    let x = Tensor::from_vec(vec![3.0f64, 4.0, 0.0, 0.0], &[2, 2]).unwrap().requires_grad_(true).unwrap();
    x.norm(2.0, &[1], false).unwrap().sum_all().unwrap().backward().unwrap();
    common::assert_close(&grad_of(&x), &[0.6, 0.8, 0.0, 0.0], 1e-15);
}

/// An overwrite with repeated targets keeps the last source in index order
/// (PyTorch leaves it undefined; skiff fixes it on every backend), and only
/// that source gets a gradient. amax's gradient is split evenly between
/// every tied candidate, the element itself included, as PyTorch's.
#[test]
fn scatters_keep_the_last_duplicate_and_split_ties() {
    let index = Tensor::from_vec(vec![1i32, 0, 1, 1], &[4]).unwrap();
    let x = Tensor::from_vec(vec![0.0f64, 0.0, 7.0], &[3]).unwrap().requires_grad_(true).unwrap();
    let src = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]).unwrap().requires_grad_(true).unwrap();
    let y = x.scatter(0, &index, &src).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![2.0, 4.0, 7.0]);
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![0.0, 0.0, 1.0]);
    assert_eq!(grad_of(&src), vec![0.0, 1.0, 0.0, 1.0]);

    let x = Tensor::from_vec(vec![2.0f64, 5.0], &[2]).unwrap().requires_grad_(true).unwrap();
    let src = Tensor::from_vec(vec![2.0f64, 1.0, 2.0], &[3]).unwrap().requires_grad_(true).unwrap();
    let index = Tensor::from_vec(vec![0i32, 0, 0], &[3]).unwrap();
    let y = x.scatter_reduce(0, &index, &src, skiff::ScatterReduce::Amax, true).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![2.0, 5.0]);
    y.sum_all().unwrap().backward().unwrap();
    common::assert_close(&grad_of(&x), &[1.0 / 3.0, 1.0], 1e-15);
    common::assert_close(&grad_of(&src), &[1.0 / 3.0, 0.0, 1.0 / 3.0], 1e-15);

    // index_put without accumulate: the last of the repeated (1, 0) wins.
    let x = Tensor::zeros(&[2, 2], DType::F64).unwrap();
    let (i, j) = (Tensor::from_vec(vec![1i32, 0, 1], &[3]).unwrap(), Tensor::from_vec(vec![0i32, 1, 0], &[3]).unwrap());
    let v = Tensor::from_vec(vec![5.0f64, 6.0, 8.0], &[3]).unwrap();
    assert_eq!(
        x.index_put(&[i.clone(), j.clone()], &v, false).unwrap().to_vec::<f64>().unwrap(),
        vec![0.0, 6.0, 8.0, 0.0]
    );
    assert_eq!(x.index_put(&[i, j], &v, true).unwrap().to_vec::<f64>().unwrap(), vec![0.0, 6.0, 13.0, 0.0]);
}
