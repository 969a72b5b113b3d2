//! Optimizer updates against PyTorch's formulas, written out in f64: each
//! optimizer's first three steps on a small parameter with a fixed gradient.

use crate::common;

use crate::common::{assert_close, expect_err, leaf, t, vals, Kind};
use skiff::optim::{
    Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, Optimizer, ParamGroup, RmsProp, RmsPropConfig, Sgd, SgdConfig,
};
use skiff::Tensor;

const P0: [f64; 3] = [1.0, -2.0, 0.5];
const G: [f64; 3] = [0.5, 0.3, -1.0];

fn param() -> Tensor {
    leaf(&P0, &[3])
}

/// Runs three steps with gradient G, checking the parameter after each step
/// against `reference(p, g, step, state)` applied per element.
fn check<O: Optimizer>(mut opt: O, p: &Tensor, mut reference: impl FnMut(&mut [f64; 3], usize)) {
    let mut want = P0;
    for step in 1..=3 {
        p.set_grad(Some(t(&G, &[3]))).unwrap();
        opt.step().unwrap();
        reference(&mut want, step);
        assert_close(&vals(p), &want, 1e-12);
    }
}

fn sgd_reference(lr: f64, mom: f64, damp: f64, wd: f64, nesterov: bool) -> impl FnMut(&mut [f64; 3], usize) {
    let mut buf = [0.0; 3];
    move |p, step| {
        for i in 0..3 {
            let mut g = G[i] + wd * p[i];
            if mom != 0.0 {
                buf[i] = if step == 1 { g } else { mom * buf[i] + (1.0 - damp) * g };
                g = if nesterov { g + mom * buf[i] } else { buf[i] };
            }
            p[i] -= lr * g;
        }
    }
}

#[test]
fn sgd_variants() {
    for (mom, damp, wd, nesterov) in
        [(0.0, 0.0, 0.0, false), (0.9, 0.0, 0.0, false), (0.9, 0.1, 0.01, false), (0.9, 0.0, 0.1, true)]
    {
        let p = param();
        let cfg = SgdConfig { lr: 0.1, momentum: mom, dampening: damp, weight_decay: wd, nesterov };
        check(Sgd::new(vec![p.clone()], cfg).unwrap(), &p, sgd_reference(0.1, mom, damp, wd, nesterov));
    }
}

fn adam_reference(cfg: AdamConfig, decoupled: bool) -> impl FnMut(&mut [f64; 3], usize) {
    let (mut m, mut v, mut vmax) = ([0.0f64; 3], [0.0f64; 3], [0.0f64; 3]);
    let (b1, b2) = cfg.betas;
    move |p, step| {
        let t = step as f64;
        for i in 0..3 {
            let mut g = G[i];
            if decoupled {
                p[i] *= 1.0 - cfg.lr * cfg.weight_decay;
            } else {
                g += cfg.weight_decay * p[i];
            }
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            vmax[i] = vmax[i].max(v[i]);
            let second = if cfg.amsgrad { vmax[i] } else { v[i] };
            let denom = second.sqrt() / (1.0 - b2.powf(t)).sqrt() + cfg.eps;
            p[i] -= cfg.lr / (1.0 - b1.powf(t)) * m[i] / denom;
        }
    }
}

#[test]
fn adam_variants() {
    for (wd, amsgrad) in [(0.0, false), (0.1, false), (0.0, true), (0.05, true)] {
        let cfg = AdamConfig { lr: 0.01, betas: (0.8, 0.9), eps: 1e-6, weight_decay: wd, amsgrad };
        let p = param();
        check(Adam::new(vec![p.clone()], cfg).unwrap(), &p, adam_reference(cfg, false));
    }
}

#[test]
fn amsgrad_keeps_the_largest_second_moment() {
    // A shrinking gradient makes v decrease, so v_max and v differ at step 3.
    let cfg = AdamConfig { lr: 0.1, amsgrad: true, ..Default::default() };
    let p = leaf(&[1.0], &[1]);
    let mut opt = Adam::new(vec![p.clone()], cfg).unwrap();
    let (b1, b2) = cfg.betas;
    let (mut want, mut m, mut v, mut vmax) = (1.0f64, 0.0, 0.0, 0.0f64);
    for (step, g) in [(1, 1.0f64), (2, 0.01), (3, 0.01)] {
        p.set_grad(Some(t(&[g], &[1]))).unwrap();
        opt.step().unwrap();
        m = b1 * m + (1.0 - b1) * g;
        v = b2 * v + (1.0 - b2) * g * g;
        vmax = vmax.max(v);
        let t = step as f64;
        want -= cfg.lr / (1.0 - b1.powf(t)) * m / (vmax.sqrt() / (1.0 - b2.powf(t)).sqrt() + cfg.eps);
        assert_close(&vals(&p), &[want], 1e-12);
    }
    assert!(vmax > v);
}

#[test]
fn adamw_decouples_weight_decay() {
    for amsgrad in [false, true] {
        let cfg = AdamConfig { lr: 0.01, weight_decay: 0.1, amsgrad, ..AdamW::default_config() };
        let p = param();
        check(AdamW::new(vec![p.clone()], cfg).unwrap(), &p, adam_reference(cfg, true));
    }
    assert_eq!(AdamW::default_config().weight_decay, 0.01);
}

fn rmsprop_reference(cfg: RmsPropConfig) -> impl FnMut(&mut [f64; 3], usize) {
    let (mut sq, mut ga, mut buf) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    let a = cfg.alpha;
    move |p, _step| {
        for i in 0..3 {
            let g = G[i] + cfg.weight_decay * p[i];
            sq[i] = a * sq[i] + (1.0 - a) * g * g;
            let avg = if cfg.centered {
                ga[i] = a * ga[i] + (1.0 - a) * g;
                (sq[i] - ga[i] * ga[i]).sqrt() + cfg.eps
            } else {
                sq[i].sqrt() + cfg.eps
            };
            if cfg.momentum > 0.0 {
                buf[i] = cfg.momentum * buf[i] + g / avg;
                p[i] -= cfg.lr * buf[i];
            } else {
                p[i] -= cfg.lr * g / avg;
            }
        }
    }
}

#[test]
fn rmsprop_variants() {
    for (wd, momentum, centered) in [(0.0, 0.0, false), (0.1, 0.9, false), (0.0, 0.0, true), (0.01, 0.5, true)] {
        let cfg = RmsPropConfig { lr: 0.01, alpha: 0.9, eps: 1e-8, weight_decay: wd, momentum, centered };
        let p = param();
        check(RmsProp::new(vec![p.clone()], cfg).unwrap(), &p, rmsprop_reference(cfg));
    }
}

#[test]
fn adagrad_variants() {
    for (lr_decay, wd, init) in [(0.0, 0.0, 0.0), (0.1, 0.05, 0.5)] {
        let cfg = AdagradConfig { lr: 0.1, lr_decay, weight_decay: wd, initial_accumulator_value: init, eps: 1e-10 };
        let p = param();
        let mut sum = [init; 3];
        check(Adagrad::new(vec![p.clone()], cfg).unwrap(), &p, move |p, step| {
            let clr = cfg.lr / (1.0 + (step as f64 - 1.0) * lr_decay);
            for i in 0..3 {
                let g = G[i] + wd * p[i];
                sum[i] += g * g;
                p[i] -= clr * g / (sum[i].sqrt() + cfg.eps);
            }
        });
    }
}

#[test]
fn per_group_learning_rates_and_skipped_params() {
    let (a, b, c) = (leaf(&[1.0], &[1]), leaf(&[1.0], &[1]), leaf(&[1.0], &[1]));
    let groups = vec![ParamGroup::new(vec![a.clone(), c.clone()]), ParamGroup::new(vec![b.clone()]).lr(0.5)];
    let mut opt = Sgd::new(groups, SgdConfig { lr: 0.1, ..Default::default() }).unwrap();
    assert_eq!((opt.lr(0), opt.lr(1), opt.lr(2)), (Some(0.1), Some(0.5), None));
    a.set_grad(Some(t(&[1.0], &[1]))).unwrap();
    b.set_grad(Some(t(&[1.0], &[1]))).unwrap();
    opt.step().unwrap(); // c has no grad: skipped
    assert_close(&vals(&a), &[0.9], 1e-15);
    assert_close(&vals(&b), &[0.5], 1e-15);
    assert_close(&vals(&c), &[1.0], 0.0);
    opt.set_lr(0, 0.2).unwrap();
    opt.step().unwrap();
    assert_close(&vals(&a), &[0.7], 1e-15);
    expect_err(opt.set_lr(5, 0.1), Kind::Value, "SGD", &["group 5 is out of range (2 groups)"]);
    expect_err(opt.set_lr(0, -1.0), Kind::Value, "SGD", &["group 0: lr must be a finite value >= 0, got -1"]);
    let facts = ["group 0: unknown option \"betas\"", "\"momentum\""];
    expect_err(opt.set_option(0, "betas", 0.1), Kind::Value, "SGD", &facts);
    opt.zero_grad();
    assert!(a.grad().is_none() && b.grad().is_none());
}

#[test]
fn construction_errors() {
    let p = || vec![param()];
    let bad = SgdConfig { lr: 0.1, nesterov: true, ..Default::default() };
    expect_err(Sgd::new(p(), bad), Kind::Value, "SGD", &["group 0: Nesterov momentum requires a momentum > 0"]);
    let r = Sgd::new(p(), SgdConfig { lr: -0.1, ..Default::default() });
    expect_err(r, Kind::Value, "SGD", &["group 0: lr must be a finite value >= 0, got -0.1"]);
    let r = Adam::new(p(), AdamConfig { betas: (1.0, 0.9), ..Default::default() });
    expect_err(r, Kind::Value, "Adam", &["group 0: beta1 must be in [0, 1), got 1"]);
    let r = Adam::new(ParamGroup::new(p()).with("momentum", 0.9), AdamConfig::default());
    expect_err(r, Kind::Value, "Adam", &["group 0: unknown option \"momentum\"", "\"beta1\""]);
    expect_err(
        Sgd::new(Vec::<ParamGroup>::new(), SgdConfig::default()),
        Kind::Value,
        "SGD",
        &["at least one parameter group"],
    );
    let ints = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let facts = ["group 0, parameter 0: parameters must be floating-point, got i32"];
    expect_err(Sgd::new(vec![ints], SgdConfig::default()), Kind::DType, "SGD", &facts);
    let dup = param();
    let r = Sgd::new(vec![ParamGroup::new(vec![dup.clone()]), ParamGroup::new(vec![dup])], SgdConfig::default());
    expect_err(r, Kind::Value, "SGD", &["parameters 0 and 1 are the same tensor"]);
    // A gradient of the wrong dtype, shape or device cannot even be set
    // (set_grad checks it, PyTorch's "assigned grad has data of a different
    // type/size/device"), so a step never sees one.
    let q = param();
    let mut opt = Sgd::new(vec![q.clone()], SgdConfig::default()).unwrap();
    let f32_grad = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    expect_err(q.set_grad(Some(f32_grad)), Kind::DType, "set_grad", &["the gradient is a f32 tensor", "is f64"]);
    expect_err(
        q.set_grad(Some(t(&[1.0], &[1]))),
        Kind::Shape,
        "set_grad",
        &["shape [1] does not fit a tensor of shape [3]"],
    );
    assert!(q.grad().is_none(), "a refused gradient is not stored");
    opt.step().unwrap();
    assert_eq!(vals(&q), vals(&param()), "no gradient, no update");
    // A non-leaf or a tensor that does not require grad is no parameter
    // (PyTorch: "can't optimize a non-leaf Tensor").
    let w = param();
    let facts = ["group 0, parameter 0: can't optimize a non-leaf tensor (shape [3], made by mul_scalar)"];
    expect_err(Adam::new(vec![w.mul_scalar(2.0).unwrap()], AdamConfig::default()), Kind::Value, "Adam", &facts);
    let frozen = t(&[1.0, 2.0], &[2]);
    let facts = ["group 0, parameter 1: a tensor of shape [2] that does not require grad"];
    expect_err(Sgd::new(vec![param(), frozen], SgdConfig::default()), Kind::Value, "SGD", &facts);
    // On another device, when there is a GPU.
    let Some(gpu) = common::gpu() else { return };
    let on_gpu = t(&[1.0, 2.0, 3.0], &[3]).to_dtype(skiff::DType::F32).unwrap().to(&gpu).unwrap();
    let p32 = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().requires_grad_(true).unwrap();
    let facts = [format!("a gradient on {} for a tensor on cpu", gpu.describe())];
    expect_err(p32.set_grad(Some(on_gpu)), Kind::Device, "set_grad", &[&facts[0]]);
}
