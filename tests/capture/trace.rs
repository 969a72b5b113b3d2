//! Tracing eager code into a program and replaying it (`skiff::jit`):
//! a replay computes bit for bit what eager code computes on the cpu (and
//! on the GPU, when an adapter exists), a traced training step keeps
//! training the captured parameters in place, random fills draw anew, and
//! what a program cannot repeat is an error at trace time.

use crate::common;

use crate::common::mlp::{batch, forward, params, step};

use skiff::optim::{Sgd, SgdConfig};
use skiff::{jit, DType, Device, Tensor};

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

fn replay_matches_eager(device: &Device) {
    let p = params(1, device);
    let (x0, _) = batch(2, 5, device);
    let (out, traced) =
        jit::trace(std::slice::from_ref(&x0), |xs| Ok(vec![forward(&p, &xs[0])?.softmax(-1)?])).unwrap();
    assert_eq!(bits(&out[0]), bits(&forward(&p, &x0).unwrap().softmax(-1).unwrap()));
    for seed in [3, 4] {
        let (x, _) = batch(seed, 5, device);
        let replayed = traced.run(std::slice::from_ref(&x)).unwrap();
        let eager = forward(&p, &x).unwrap().softmax(-1).unwrap();
        assert_eq!(replayed[0].shape(), &[5, 3]);
        assert_eq!(bits(&replayed[0]), bits(&eager), "replay differs from eager on {device}");
        assert!(!replayed[0].requires_grad(), "a replay records no history");
    }
}

#[test]
fn a_replay_computes_what_eager_code_does() {
    replay_matches_eager(&Device::Cpu);
}

#[test]
fn a_replay_computes_what_eager_code_does_on_the_gpu() {
    if let Some(device) = common::gpu() {
        replay_matches_eager(&device);
    }
}

#[test]
fn the_program_prints_its_slots_and_kernels() {
    let p = params(1, &Device::Cpu);
    let (x, _) = batch(2, 5, &Device::Cpu);
    let (_, traced) = jit::trace(&[x], |xs| Ok(vec![forward(&p, &xs[0])?])).unwrap();
    let text = traced.program().to_string();
    assert!(text.starts_with("program(%0: f32[20] input 0) {"), "{text}");
    for want in ["%1: f32[32] captured on cpu", "= matmul(%0, %1)  # matmul", "= unary:relu(", "  return %"] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // Two matmuls, two adds, one relu: nothing else dispatches.
    assert_eq!(traced.program().kernels(), 5, "{text}");
    assert_eq!(traced.program().inputs(), 1);
}

fn traced_training_matches_eager(device: &Device) {
    let sgd = |p: &[Tensor]| Sgd::new(p.to_vec(), SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() }).unwrap();
    let (pa, pb) = (params(5, device), params(5, device));
    let (mut oa, mut ob) = (sgd(&pa), sgd(&pb));
    // One eager step first: the momentum buffers exist from then on, and the
    // traced step is the steady one (host control flow is traced as taken).
    let (x, y) = batch(10, 5, device);
    step(&pa, &mut oa, &x, &y).unwrap();
    step(&pb, &mut ob, &x, &y).unwrap();
    let (x, y) = batch(11, 5, device);
    let (loss, mut traced) =
        jit::trace(&[x.clone(), y.clone()], |i| Ok(vec![step(&pa, &mut oa, &i[0], &i[1])?])).unwrap();
    let eager = step(&pb, &mut ob, &x, &y).unwrap();
    assert_eq!(bits(&loss[0]), bits(&eager));
    // The replays below run the optimised program: the passes keep its meaning.
    let before = traced.program().kernels();
    let stats = traced.optimize();
    assert_eq!(traced.program().kernels(), before - stats.removed(), "{stats:?}\n{}", traced.program());
    for seed in 12..17 {
        let (x, y) = batch(seed, 5, device);
        let replayed = traced.run(&[x.clone(), y.clone()]).unwrap();
        let eager = step(&pb, &mut ob, &x, &y).unwrap();
        assert_eq!(bits(&replayed[0]), bits(&eager), "loss at step {seed} on {device}");
    }
    for (a, b) in pa.iter().zip(&pb) {
        assert_eq!(bits(a), bits(b), "the replayed steps updated the parameters in place as eager steps did");
    }
}

#[test]
fn a_traced_training_step_keeps_training() {
    traced_training_matches_eager(&Device::Cpu);
}

#[test]
fn a_traced_training_step_keeps_training_on_the_gpu() {
    if let Some(device) = common::gpu() {
        traced_training_matches_eager(&device);
    }
}

#[test]
fn random_fills_draw_anew_at_every_run() {
    let x = Tensor::ones(&[1000], DType::F32).unwrap();
    let (_, traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![xs[0].dropout(0.5, true)?])).unwrap();
    let (a, b) = (traced.run(std::slice::from_ref(&x)).unwrap(), traced.run(&[x]).unwrap());
    assert_ne!(bits(&a[0]), bits(&b[0]), "two runs kept the same mask");
    let kept = a[0].to_f32_vec().unwrap();
    assert!(kept.iter().all(|&v| v == 0.0 || v == 2.0), "dropout scales what it keeps by 1 / (1 - p)");
    let n = kept.iter().filter(|&&v| v == 2.0).count();
    assert!((400..600).contains(&n), "kept {n} of 1000 with p = 0.5");
}

#[test]
fn what_a_program_cannot_repeat_is_an_error_at_trace_time() {
    let x = Tensor::ones(&[3], DType::F32).unwrap();
    let e = jit::trace(std::slice::from_ref(&x), |xs| {
        let s = xs[0].sum(&[], false)?.item()?;
        Ok(vec![xs[0].mul_scalar(s)?])
    })
    .err()
    .expect("item() inside a trace is refused");
    assert!(e.to_string().contains("cannot be captured"), "{e}");
    let nested =
        jit::trace(std::slice::from_ref(&x), |xs| Ok(jit::trace(&[xs[0].clone()], |ys| Ok(vec![ys[0].neg()?]))?.0));
    assert!(nested.err().expect("traces do not nest").to_string().contains("do not nest"));
    // After a failed trace, eager code runs as before and a new trace works.
    assert_eq!(x.neg().unwrap().to_f32_vec().unwrap(), vec![-1.0; 3]);
    assert!(jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![xs[0].neg()?])).is_ok());
}

#[test]
fn inputs_must_match_the_traced_ones() {
    let x = Tensor::ones(&[2, 3], DType::F32).unwrap();
    let (_, traced) = jit::trace(&[x], |xs| Ok(vec![xs[0].exp()?])).unwrap();
    let e = traced.run(&[Tensor::ones(&[3, 2], DType::F32).unwrap()]).err().unwrap().to_string();
    assert!(e.contains("input 0") && e.contains("[3, 2]") && e.contains("[2, 3]"), "{e}");
    let t = Tensor::ones(&[3, 2], DType::F32).unwrap().transpose(0, 1).unwrap();
    assert!(traced.run(&[t]).is_err(), "a transposed view has other strides");
    assert!(traced.run(&[]).is_err());
}
