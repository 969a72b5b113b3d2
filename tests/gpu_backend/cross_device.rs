//! Backward through `to()`: graphs that cross between the cpu and the GPU
//! must give the same gradients as the all-cpu computation, each on its
//! leaf's device, to first and second order; mixing devices without `to()`
//! is an error naming the op and both devices.
//!
//! Losses are sum(out * w) with random w (not `sum_all`). Tolerance:
//! |got - want| <= 1e-4 * (1 + |want|), as in `nn_gpu.rs`: the cross-device
//! and the all-cpu runs differ only in the f32 GPU kernels' summation order
//! and transcendental functions (a few ulp on these small sums), while a
//! gradient lost or doubled at a device boundary moves results by O(0.1).
#![cfg(feature = "gpu")]

use crate::common;

use crate::common::gradcheck::uniform;
use skiff::{grad, DType, Device, Error, Function, FunctionCtx, GradOptions, Result, Tensor};
use std::sync::Arc;

const TOL: f64 = 1e-4;

fn close(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= TOL * (1.0 + b.abs()), "{what}: element {i}: got {a}, want {b}");
    }
    assert!(w.iter().any(|v| v.abs() > 1e-3), "{what}: degenerate reference {w:?}");
}

fn rand32(shape: &[usize], seed: u64) -> Tensor {
    uniform(shape, -1.0, 1.0, seed).to_dtype(DType::F32).unwrap()
}

/// A leaf on `device` holding `t`'s values.
fn leaf_on(t: &Tensor, device: &Device) -> Tensor {
    t.to(device).unwrap().detach().requires_grad_(true).unwrap()
}

fn grad_on(what: &str, leaf: &Tensor, device: &Device) -> Tensor {
    let g = leaf.grad().unwrap_or_else(|| panic!("{what}: no gradient"));
    assert_eq!(&g.device(), device, "{what}: the gradient lives on its leaf's device");
    g
}

/// tanh(2x) on the cpu, moved to `dev`, times `w` there, back to the cpu,
/// plus `b`, sigmoid, weighted sum. `move_to` does the moves.
fn there_and_back(
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    dev: &Device,
    move_to: &dyn Fn(&Tensor, &Device) -> Tensor,
) -> Tensor {
    let h = move_to(&x.mul_scalar(2.0).unwrap().tanh().unwrap(), dev);
    let z = move_to(&h.matmul(w).unwrap(), &Device::Cpu);
    let out = z.add(b).unwrap().sigmoid().unwrap();
    out.mul(&rand32(out.shape(), 9)).unwrap().sum_all().unwrap()
}

/// Runs `there_and_back` across devices (with `move_to`) and on the cpu alone.
fn check_there_and_back(gpu: &Device, move_to: &dyn Fn(&Tensor, &Device) -> Tensor) {
    let (x0, w0, b0) = (rand32(&[3, 4], 1), rand32(&[4, 5], 2), rand32(&[5], 3));
    let (x, w, b) = (leaf_on(&x0, &Device::Cpu), leaf_on(&w0, gpu), leaf_on(&b0, &Device::Cpu));
    there_and_back(&x, &w, &b, gpu, move_to).backward().unwrap();
    let (xr, wr, br) = (leaf_on(&x0, &Device::Cpu), leaf_on(&w0, &Device::Cpu), leaf_on(&b0, &Device::Cpu));
    there_and_back(&xr, &wr, &br, &Device::Cpu, move_to).backward().unwrap();
    close("x (cpu)", &grad_on("x", &x, &Device::Cpu), &xr.grad().unwrap());
    close("w (gpu)", &grad_on("w", &w, gpu), &wr.grad().unwrap());
    close("b (cpu)", &grad_on("b", &b, &Device::Cpu), &br.grad().unwrap());
}

#[test]
fn cpu_to_gpu_and_back() {
    let Some(gpu) = common::gpu() else { return };
    check_there_and_back(&gpu, &|t, d| t.to(d).unwrap());
}

#[test]
fn to_async_is_recorded_too() {
    let Some(gpu) = common::gpu() else { return };
    check_there_and_back(&gpu, &|t, d| {
        let moved = pollster::block_on(t.to_async(d)).unwrap();
        assert_eq!(&moved.device(), d);
        assert_eq!(moved.requires_grad(), t.requires_grad(), "to_async keeps the history");
        moved
    });
}

/// exp on `dev`, to the cpu, matmul with a cpu weight, back to `dev`, weighted sum there.
fn gpu_to_cpu_and_back(x: &Tensor, w: &Tensor, dev: &Device) -> Tensor {
    let h = x.exp().unwrap().to(&Device::Cpu).unwrap().matmul(w).unwrap().to(dev).unwrap();
    h.mul(&rand32(h.shape(), 8).to(dev).unwrap()).unwrap().sum_all().unwrap()
}

#[test]
fn gpu_to_cpu_and_back_again() {
    let Some(gpu) = common::gpu() else { return };
    let (x0, w0) = (rand32(&[2, 3], 1), rand32(&[3, 4], 2));
    let (x, w) = (leaf_on(&x0, &gpu), leaf_on(&w0, &Device::Cpu));
    let loss = gpu_to_cpu_and_back(&x, &w, &gpu);
    assert_eq!(loss.device(), gpu);
    loss.backward().unwrap();
    let (xr, wr) = (leaf_on(&x0, &Device::Cpu), leaf_on(&w0, &Device::Cpu));
    gpu_to_cpu_and_back(&xr, &wr, &Device::Cpu).backward().unwrap();
    close("x (gpu)", &grad_on("x", &x, &gpu), &xr.grad().unwrap());
    close("w (cpu)", &grad_on("w", &w, &Device::Cpu), &wr.grad().unwrap());
}

/// sin on the cpu -> `a` on d1 -> `c` and exp on d2 -> weighted sum on d3.
fn chain(x: &Tensor, a: &Tensor, c: &Tensor, d: [&Device; 3]) -> Tensor {
    let y = x.sin().unwrap().to(d[0]).unwrap().mul(a).unwrap();
    let y = y.to(d[1]).unwrap().mul(c).unwrap().exp().unwrap().to(d[2]).unwrap();
    y.mul(&rand32(y.shape(), 7).to(d[2]).unwrap()).unwrap().sum_all().unwrap()
}

#[test]
fn chain_cpu_gpu_cpu_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = Device::Cpu;
    let (x0, a0, c0) = (rand32(&[2, 3], 1), rand32(&[2, 3], 2), rand32(&[3], 3));
    let (x, a, c) = (leaf_on(&x0, &cpu), leaf_on(&a0, &gpu), leaf_on(&c0, &cpu));
    chain(&x, &a, &c, [&gpu, &cpu, &gpu]).backward().unwrap();
    let (xr, ar, cr) = (leaf_on(&x0, &cpu), leaf_on(&a0, &cpu), leaf_on(&c0, &cpu));
    chain(&xr, &ar, &cr, [&cpu, &cpu, &cpu]).backward().unwrap();
    close("x (cpu)", &grad_on("x", &x, &cpu), &xr.grad().unwrap());
    close("a (gpu)", &grad_on("a", &a, &gpu), &ar.grad().unwrap());
    close("c (cpu, broadcast)", &grad_on("c", &c, &cpu), &cr.grad().unwrap());
}

#[test]
fn a_leaf_used_on_both_devices_accumulates() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = Device::Cpu;
    let (w1, w2) = (rand32(&[2, 3], 2), rand32(&[2, 3], 3));
    // A cpu leaf: sum(a * w1) on the cpu + sum(a^2 * w2) on the GPU.
    let loss_of = |a: &Tensor, dev: &Device| {
        let ad = a.to(dev).unwrap();
        let there = ad.mul(&ad).unwrap().mul(&w2.to(dev).unwrap()).unwrap().sum_all().unwrap();
        a.mul(&w1).unwrap().sum_all().unwrap().add(&there.to(&cpu).unwrap()).unwrap()
    };
    let a0 = rand32(&[2, 3], 1);
    let (a, ar) = (leaf_on(&a0, &cpu), leaf_on(&a0, &cpu));
    loss_of(&a, &gpu).backward().unwrap();
    loss_of(&ar, &cpu).backward().unwrap();
    let want = w1.add(&a0.mul(&w2).unwrap().mul_scalar(2.0).unwrap()).unwrap();
    close("cpu leaf", &grad_on("a", &a, &cpu), &want);
    close("cpu leaf vs all-cpu", &a.grad().unwrap(), &ar.grad().unwrap());
    // A second backward adds to .grad.
    loss_of(&a, &gpu).backward().unwrap();
    close("cpu leaf, twice", &grad_on("a", &a, &cpu), &want.mul_scalar(2.0).unwrap());

    // A GPU leaf: sum(tanh(p) * w1) on the cpu + sum(p * w2) on the GPU.
    let p = leaf_on(&a0, &gpu);
    let on_cpu = p.to(&cpu).unwrap().tanh().unwrap().mul(&w1).unwrap().sum_all().unwrap();
    let on_gpu = p.mul(&w2.to(&gpu).unwrap()).unwrap().sum_all().unwrap();
    on_cpu.to(&gpu).unwrap().add(&on_gpu).unwrap().backward().unwrap();
    let t = a0.tanh().unwrap();
    let sech2 = t.mul(&t).unwrap().neg().unwrap().add_scalar(1.0).unwrap();
    close("gpu leaf", &grad_on("p", &p, &gpu), &sech2.mul(&w1).unwrap().add(&w2).unwrap());
}

/// sum(tanh(x @ w) * c) with the matmul and tanh on `dev`, the loss on the
/// cpu; returns d/d(x, w) of <grad, v> (second order through both `to`s).
fn second_order(x: &Tensor, w: &Tensor, dev: &Device) -> Vec<Tensor> {
    let y = x.to(dev).unwrap().matmul(w).unwrap().tanh().unwrap().to(&Device::Cpu).unwrap();
    let loss = y.mul(&rand32(y.shape(), 5)).unwrap().sum_all().unwrap();
    let opts = GradOptions { create_graph: true, retain_graph: None, allow_unused: false };
    let gs = grad(&[loss], &[x.clone(), w.clone()], None, opts).unwrap();
    let (gx, gw) = (gs[0].clone().unwrap(), gs[1].clone().unwrap());
    assert_eq!(gx.device(), x.device(), "first-order gradient on its leaf's device");
    assert_eq!(gw.device(), w.device(), "first-order gradient on its leaf's device");
    let gw_cpu = gw.to(&Device::Cpu).unwrap();
    let s = gx.mul(&rand32(gx.shape(), 6)).unwrap().sum_all().unwrap();
    let s = s.add(&gw_cpu.mul(&rand32(gw.shape(), 4)).unwrap().sum_all().unwrap()).unwrap();
    let opts = GradOptions { create_graph: false, retain_graph: None, allow_unused: false };
    grad(&[s], &[x.clone(), w.clone()], None, opts).unwrap().into_iter().map(Option::unwrap).collect()
}

#[test]
fn second_order_through_to() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = Device::Cpu;
    let (x0, w0) = (rand32(&[3, 4], 1), rand32(&[4, 2], 2));
    let got = second_order(&leaf_on(&x0, &cpu), &leaf_on(&w0, &gpu), &gpu);
    let want = second_order(&leaf_on(&x0, &cpu), &leaf_on(&w0, &cpu), &cpu);
    assert_eq!(got[0].device(), cpu);
    assert_eq!(got[1].device(), gpu);
    close("second order x", &got[0], &want[0]);
    close("second order w", &got[1], &want[1]);
}

/// A model split across devices (PyTorch's "model parallel"): a Linear and a
/// LayerNorm on the cpu, a Linear on the GPU; every parameter's gradient
/// matches the all-cpu twin's, on its own device.
#[test]
fn a_model_split_across_devices() {
    use skiff::nn::{Layer, LayerNorm, Linear};
    let Some(gpu) = common::gpu() else { return };
    let cpu = Device::Cpu;
    let make = || -> (Linear, LayerNorm, Linear) {
        let layers = (Linear::new(4, 6).unwrap(), LayerNorm::new(&[6]).unwrap(), Linear::new(6, 3).unwrap());
        for (k, (_, p)) in
            layers.0.state_dict().into_iter().chain(layers.1.state_dict()).chain(layers.2.state_dict()).enumerate()
        {
            skiff::no_grad(|| p.copy_(&rand32(p.shape(), 20 + k as u64))).unwrap();
        }
        layers
    };
    let run = |(a, n, b): &(Linear, LayerNorm, Linear), dev: &Device| {
        let h = n.forward(&a.forward(&rand32(&[5, 4], 1)).unwrap()).unwrap().tanh().unwrap();
        let y = b.forward(&h.to(dev).unwrap()).unwrap().to(&cpu).unwrap();
        y.mul(&rand32(y.shape(), 2)).unwrap().sum_all().unwrap().backward().unwrap();
    };
    let (split, all_cpu) = (make(), make());
    split.2.to(&gpu).unwrap();
    run(&split, &gpu);
    run(&all_cpu, &cpu);
    let params = |m: &(Linear, LayerNorm, Linear)| [m.0.parameters(), m.1.parameters(), m.2.parameters()].concat();
    for (i, (p, q)) in params(&split).iter().zip(params(&all_cpu)).enumerate() {
        let dev = if i >= 4 { &gpu } else { &cpu };
        close(&format!("parameter {i}"), &grad_on("parameter", p, dev), &q.grad().unwrap());
    }
}

fn assert_device_error(r: Result<Tensor>, op: &str) {
    match r {
        Err(e @ Error::Device { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(op) && msg.contains("cpu") && msg.contains("gpu"), "{op}: {msg}");
        }
        other => panic!("{op}: expected a device error, got {:?}", other.map(|t| t.device())),
    }
}

#[test]
fn mixing_devices_without_to_is_an_error() {
    let Some(gpu) = common::gpu() else { return };
    let a = rand32(&[2, 2], 1);
    let b = rand32(&[2, 2], 2).to(&gpu).unwrap();
    assert_device_error(a.add(&b), "add");
    assert_device_error(b.mul(&a), "mul");
    assert_device_error(a.matmul(&b), "matmul");
    assert_device_error(Tensor::concat(&[a.clone(), b.clone()], 0), "concat");
    assert_device_error(Tensor::where_(&a.gt_scalar(0.0).unwrap(), &a, &b), "where");
    let img = rand32(&[1, 1, 3, 3], 3);
    assert_device_error(img.conv2d(&b.reshape_dims(&[1, 1, 2, 2]).unwrap(), None, [1, 1], [0, 0], [1, 1], 1), "conv2d");
    // A layer on the GPU given a cpu input.
    use skiff::nn::{Layer, Linear};
    let l = Linear::new(2, 2).unwrap();
    l.to(&gpu).unwrap();
    assert_device_error(l.forward(&a), "matmul");
    // An output gradient on another device than the output.
    let y = leaf_on(&a, &gpu).mul_scalar(2.0).unwrap();
    let e = y.backward_with(Some(&a), Default::default()).unwrap_err();
    assert!(matches!(e, Error::Device { op: "backward", .. }) && e.to_string().contains("gradient on cpu"), "{e}");
}

/// A custom function whose backward hands back the gradient on the wrong
/// device (the cpu, for a GPU input).
struct WrongDevice;
impl Function for WrongDevice {
    fn name(&self) -> String {
        "WrongDevice".to_string()
    }
    fn forward(&self, _ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(&self, _ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(grads[0].mul_scalar(2.0)?.to(&Device::Cpu)?)])
    }
}

#[test]
fn a_gradient_on_the_wrong_device_is_an_error() {
    let Some(gpu) = common::gpu() else { return };
    // A GPU leaf must never receive a cpu .grad: a custom backward ...
    let x = leaf_on(&rand32(&[2, 3], 1), &gpu);
    let y = skiff::autograd::apply_function(Arc::new(WrongDevice), std::slice::from_ref(&x)).unwrap();
    let e = y[0].sum_all().unwrap().backward().unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::Device { .. }) && msg.contains("WrongDevice") && msg.contains("gpu") && msg.contains("cpu"),
        "{msg}"
    );
    assert!(x.grad().is_none(), "no gradient was accumulated");
    // ... or a hook replacing the gradient.
    let y = x.mul_scalar(3.0).unwrap();
    y.register_hook(|g| Some(g.to(&Device::Cpu).unwrap())).unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::Device { op: "register_hook", .. }) && msg.contains("gpu") && msg.contains("cpu"),
        "{msg}"
    );
    assert!(x.grad().is_none(), "no gradient was accumulated");
}
