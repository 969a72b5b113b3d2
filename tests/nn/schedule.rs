//! Learning-rate schedules, gradient clipping and optimizer state dicts.

use crate::common::{assert_close, expect_err, leaf, t, vals, Kind};
use skiff::optim::{
    clip_grad_norm_, clip_grad_value_, Adam, AdamConfig, CosineAnnealing, ExponentialLR, LrSchedule, OneCycleLR,
    OptimState, Optimizer, ParamGroup, Sgd, SgdConfig, StepLR,
};
use std::f64::consts::PI;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "got {a}, want {b}");
}

#[test]
fn step_and_exponential() {
    let s = StepLR::new(3, 0.1).unwrap();
    for (step, want) in [(0, 0.5), (2, 0.5), (3, 0.05), (7, 0.005)] {
        close(s.lr_for(step, 0.5), want);
    }
    let e = ExponentialLR::new(0.5).unwrap();
    close(e.lr_for(0, 2.0), 2.0);
    close(e.lr_for(3, 2.0), 0.25);
    expect_err(StepLR::new(0, 0.1), Kind::Value, "StepLR", &["step_size must be > 0, got 0"]);
    expect_err(ExponentialLR::new(f64::NAN), Kind::Value, "ExponentialLR", &["gamma must be >= 0, got NaN"]);
}

#[test]
fn cosine_with_warmup() {
    let s = CosineAnnealing::new(10, 110, 0.01).unwrap();
    let base = 0.1;
    close(s.lr_for(0, base), 0.0);
    close(s.lr_for(5, base), 0.05); // half-way through the linear warm-up
    close(s.lr_for(10, base), 0.1); // end of warm-up: the base rate
    close(s.lr_for(35, base), 0.01 + 0.09 * 0.5 * (1.0 + (PI / 4.0).cos()));
    close(s.lr_for(60, base), 0.055); // mid-way: cos(pi/2) = 0
    close(s.lr_for(110, base), 0.01);
    close(s.lr_for(500, base), 0.01);
    let facts = ["warmup_steps (10) must be below total_steps (10)"];
    expect_err(CosineAnnealing::new(10, 10, 0.0), Kind::Value, "CosineAnnealing", &facts);
}

#[test]
fn one_cycle() {
    // max 1.0, 100 steps, pct_start 0.3: the peak is at step 0.3 * 100 - 1 = 29.
    let s = OneCycleLR::new(1.0, 100, 0.3, 25.0, 1e4).unwrap();
    let (initial, min) = (1.0 / 25.0, 1.0 / 25.0 / 1e4);
    close(s.lr_for(0, 123.0), initial);
    close(s.lr_for(29, 123.0), 1.0);
    close(s.lr_for(99, 123.0), min);
    close(s.lr_for(64, 123.0), min + (1.0 - min) / 2.0); // half of the way down
    close(s.lr_for(10, 0.0), 1.0 + (initial - 1.0) / 2.0 * ((PI * 10.0 / 29.0).cos() + 1.0));
    close(s.lr_for(150, 0.0), min);
    let r = OneCycleLR::new(1.0, 100, 1.5, 25.0, 1e4);
    expect_err(r, Kind::Value, "OneCycleLR", &["pct_start must be in (0, 1), got 1.5"]);
    let r = OneCycleLR::new(0.0, 100, 0.3, 25.0, 1e4);
    expect_err(r, Kind::Value, "OneCycleLR", &["max_lr must be > 0, got 0"]);
}

#[test]
fn schedules_drive_every_group() {
    let (a, b) = (leaf(&[0.0], &[1]), leaf(&[0.0], &[1]));
    let groups = vec![ParamGroup::new(vec![a]), ParamGroup::new(vec![b]).lr(0.2)];
    let mut opt = Sgd::new(groups, SgdConfig { lr: 1.0, ..Default::default() }).unwrap();
    let mut s = CosineAnnealing::new(4, 8, 0.0).unwrap();
    s.attach(&mut opt).unwrap();
    assert_eq!((opt.lr(0), opt.lr(1)), (Some(0.0), Some(0.0)));
    for _ in 0..2 {
        s.step(&mut opt).unwrap();
    }
    close(opt.lr(0).unwrap(), 0.5);
    close(opt.lr(1).unwrap(), 0.1);
    close(s.lr_at(4), 1.0);
    // A schedule that was never attached captures the base rates on its first step.
    let mut e = ExponentialLR::new(0.5).unwrap();
    e.step(&mut opt).unwrap();
    close(opt.lr(0).unwrap(), 0.25);
}

#[test]
fn clip_grad_norm_two_and_inf() {
    let (a, b) = (leaf(&[0.0, 0.0], &[2]), leaf(&[0.0], &[1]));
    let skipped = leaf(&[0.0], &[1]);
    a.set_grad(Some(t(&[3.0, 4.0], &[2]))).unwrap();
    b.set_grad(Some(t(&[12.0], &[1]))).unwrap();
    let params = [a.clone(), b.clone(), skipped];
    let total = clip_grad_norm_(&params, 6.5, 2.0).unwrap();
    close(total, 13.0);
    let c = 6.5 / (13.0 + 1e-6);
    assert_close(&vals(&a.grad().unwrap()), &[3.0 * c, 4.0 * c], 1e-12);
    assert_close(&vals(&b.grad().unwrap()), &[12.0 * c], 1e-12);

    a.set_grad(Some(t(&[3.0, -4.0], &[2]))).unwrap();
    b.set_grad(Some(t(&[-12.0], &[1]))).unwrap();
    close(clip_grad_norm_(&params, 24.0, f64::INFINITY).unwrap(), 12.0); // below max: unchanged
    assert_close(&vals(&a.grad().unwrap()), &[3.0, -4.0], 0.0);
    close(clip_grad_norm_(&params, 6.0, f64::INFINITY).unwrap(), 12.0);
    assert_close(&vals(&b.grad().unwrap()), &[-12.0 * 6.0 / (12.0 + 1e-6)], 1e-12);
    // L1 norm of the grads clipped just above: (3 + 4 + 12) * 6 / (12 + 1e-6).
    close(clip_grad_norm_(&params, 100.0, 1.0).unwrap(), 19.0 * 6.0 / (12.0 + 1e-6));
    let clip = "clip_grad_norm_";
    expect_err(clip_grad_norm_(&params, 1.0, 0.0), Kind::Value, clip, &["norm_type must be > 0 or infinity, got 0"]);
    expect_err(clip_grad_norm_(&params, -1.0, 2.0), Kind::Value, clip, &["max_norm must be >= 0, got -1"]);
}

/// The device-side variant on the cpu: the norm comes back as a 0-d tensor on
/// the gradients' device (f64 here, like the gradients), the gradients are
/// scaled in place, and without gradients there is no norm.
#[test]
fn clip_grad_norm_tensor_returns_the_norm_as_a_tensor() {
    use skiff::optim::clip_grad_norm_tensor_;
    let (a, b) = (leaf(&[0.0, 0.0], &[2]), leaf(&[0.0, 0.0], &[2]));
    a.set_grad(Some(t(&[1.0, -2.0], &[2]))).unwrap();
    b.set_grad(Some(t(&[2.0, 4.0], &[2]))).unwrap();
    let total = clip_grad_norm_tensor_(&[a.clone(), b.clone()], 2.5, 2.0).unwrap().expect("a norm");
    assert_eq!((total.shape(), total.dtype(), total.device()), (&[][..], skiff::DType::F64, skiff::Device::Cpu));
    close(total.item().unwrap(), 5.0);
    let c = 2.5 / (5.0 + 1e-6);
    assert_close(&vals(&a.grad().unwrap()), &[c, -2.0 * c], 1e-12);
    assert_close(&vals(&b.grad().unwrap()), &[2.0 * c, 4.0 * c], 1e-12);
    // p = 3: (1 + 8 + 8 + 64)^(1/3) of the unclipped gradients = 81^(1/3).
    a.set_grad(Some(t(&[1.0, -2.0], &[2]))).unwrap();
    b.set_grad(Some(t(&[2.0, 4.0], &[2]))).unwrap();
    let total = clip_grad_norm_tensor_(&[a.clone(), b.clone()], 100.0, 3.0).unwrap().unwrap();
    close(total.item().unwrap(), 81f64.powf(1.0 / 3.0));
    assert_close(&vals(&a.grad().unwrap()), &[1.0, -2.0], 0.0);
    assert!(clip_grad_norm_tensor_(&[leaf(&[1.0], &[1])], 1.0, 2.0).unwrap().is_none(), "no gradients, no norm");
}

#[test]
fn clip_grad_value() {
    let a = leaf(&[0.0, 0.0, 0.0], &[3]);
    a.set_grad(Some(t(&[-3.0, 0.5, 7.0], &[3]))).unwrap();
    clip_grad_value_(std::slice::from_ref(&a), 1.0).unwrap();
    assert_close(&vals(&a.grad().unwrap()), &[-1.0, 0.5, 1.0], 0.0);
    expect_err(clip_grad_value_(&[a], f64::NAN), Kind::Value, "clip_grad_value_", &["clip must be >= 0, got NaN"]);
}

fn adam_pair() -> (Vec<skiff::Tensor>, Adam) {
    let params = vec![leaf(&[1.0, -2.0], &[2]), leaf(&[0.5], &[1]), leaf(&[3.0], &[1])];
    let groups = vec![ParamGroup::new(params[..2].to_vec()), ParamGroup::new(params[2..].to_vec()).lr(0.05)];
    let cfg = AdamConfig { lr: 0.1, amsgrad: true, weight_decay: 0.01, ..Default::default() };
    (params.clone(), Adam::new(groups, cfg).unwrap())
}

fn step_with(params: &[skiff::Tensor], opt: &mut Adam, k: usize) {
    for (i, p) in params.iter().enumerate() {
        // The third parameter has no gradient on odd steps: it keeps its own step count.
        if i == 2 && k % 2 == 1 {
            p.set_grad(None).unwrap();
            continue;
        }
        let g: Vec<f64> = (0..p.numel()).map(|j| ((k * 7 + i * 3 + j) as f64).sin()).collect();
        p.set_grad(Some(t(&g, p.shape()))).unwrap();
    }
    opt.step().unwrap();
}

#[test]
fn state_dict_round_trip_continues_identically() {
    let (pa, mut a) = adam_pair();
    for k in 0..3 {
        step_with(&pa, &mut a, k);
    }
    let flat = a.state_dict().unwrap().to_flat();
    assert!(flat.iter().any(|(n, _)| n == "state.0.exp_avg"));
    assert!(flat.iter().any(|(n, t)| n == "param_groups.1.lr" && t.item().unwrap() == 0.05));
    assert!(flat.iter().any(|(n, t)| n == "state.2.step" && t.item().unwrap() == 2.0));

    let (pb, mut b) = adam_pair();
    for (x, y) in pb.iter().zip(&pa) {
        skiff::no_grad(|| x.copy_(y)).unwrap();
    }
    b.load_state_dict(&OptimState::from_flat(&flat).unwrap()).unwrap();
    for k in 3..6 {
        step_with(&pa, &mut a, k);
        step_with(&pb, &mut b, k);
        for (x, y) in pa.iter().zip(&pb) {
            assert_eq!(vals(x), vals(y));
        }
    }
}

#[test]
fn state_dict_mismatches_are_errors() {
    let (pa, mut a) = adam_pair();
    step_with(&pa, &mut a, 0);
    let state = a.state_dict().unwrap();
    // Other parameter counts or shapes.
    let mut c = Adam::new(vec![leaf(&[1.0, 2.0], &[2])], AdamConfig::default()).unwrap();
    expect_err(
        c.load_state_dict(&state),
        Kind::Value,
        "Adam",
        &["load_state_dict: the state has 2 groups, the optimizer 1"],
    );
    let groups = vec![
        ParamGroup::new(vec![leaf(&[1.0, 2.0, 3.0], &[3]), leaf(&[0.5], &[1])]),
        ParamGroup::new(vec![leaf(&[0.0], &[1])]),
    ];
    let mut d = Adam::new(groups, AdamConfig::default()).unwrap();
    let facts = ["load_state_dict: state.0.exp_avg has shape [2] but parameter 0 has shape [3]"];
    expect_err(d.load_state_dict(&state), Kind::Shape, "Adam", &facts);
    // The same groups with other parameter counts.
    let groups = vec![ParamGroup::new(vec![leaf(&[1.0, 2.0], &[2])]), ParamGroup::new(vec![leaf(&[0.0], &[1])])];
    let mut e = Adam::new(groups, AdamConfig::default()).unwrap();
    let facts = ["load_state_dict: group 0 has 2 parameters in the state, 1 in the optimizer"];
    expect_err(e.load_state_dict(&state), Kind::Value, "Adam", &facts);
    // Another optimizer's options, in groups of the same sizes.
    let same_groups = vec![ParamGroup::new(pa[..2].to_vec()), ParamGroup::new(pa[2..].to_vec())];
    let mut s = Sgd::new(same_groups, SgdConfig::default()).unwrap();
    expect_err(
        s.load_state_dict(&a.state_dict().unwrap()),
        Kind::Value,
        "SGD",
        &["group 0 options", "differ from this optimizer's"],
    );
    // Malformed flat names.
    let bad = vec![("state.x.exp_avg".to_string(), t(&[1.0], &[1]))];
    let from_flat = "OptimState::from_flat";
    expect_err(OptimState::from_flat(&bad), Kind::Value, from_flat, &["state.x.exp_avg: \"x\" is not an index"]);
    let orphan = vec![("state.0.step".to_string(), t(&[1.0], &[]))];
    // No groups: parameter 0 does not exist.
    expect_err(OptimState::from_flat(&orphan), Kind::Value, from_flat, &["state.0 is beyond the 0 parameters"]);
}
