//! `jit::compile`: a compiled training step trains exactly as eager steps
//! do (bit for bit on the cpu) while replaying, with every optimizer, a
//! learning-rate schedule changing between calls, gradient clipping and
//! gradient accumulation; guards recapture when what a program assumed
//! changes (input shapes, grad mode, a replaced parameter, a training flag)
//! and the log says why; the cache is bounded.

use crate::common;

use crate::common::mlp::{batch, forward, params, values};

use skiff::nn::{Dropout, Layer, Linear};
use skiff::optim::{
    clip_grad_norm_tensor_, Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, LrSchedule, Optimizer, RmsProp,
    RmsPropConfig, Sgd, SgdConfig, StepLR,
};
use skiff::{jit, no_grad, DType, Device, Reduction, Tensor};
use std::cell::RefCell;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

fn loss_of(p: &[Tensor], x: &Tensor, y: &Tensor) -> skiff::Result<Tensor> {
    forward(p, x)?.cross_entropy(y, Reduction::Mean, 0.0)
}

/// One training step; `clip` adds gradient clipping between backward and step.
fn step(p: &[Tensor], opt: &mut dyn Optimizer, x: &Tensor, y: &Tensor, clip: bool) -> skiff::Result<Tensor> {
    opt.zero_grad();
    let loss = loss_of(p, x, y)?;
    loss.backward()?;
    if clip {
        clip_grad_norm_tensor_(p, 0.05, 2.0)?;
    }
    opt.step()?;
    Ok(loss.detach())
}

/// `steps` compiled steps against as many eager ones on a copy of the same
/// parameters, with the learning rate halved every 3 steps (StepLR) between
/// calls: losses, parameters and `.grad` agree bit for bit, the optimizer
/// counts the same steps, and all but the first two calls replayed.
fn compiled_training_matches_eager(
    make: &dyn Fn(Vec<Tensor>) -> Box<dyn Optimizer>,
    device: &Device,
    clip: bool,
    steps: u64,
) {
    let (pa, pb) = (params(5, device), params(5, device));
    let oa = RefCell::new(make(pa.clone()));
    let mut ob = make(pb.clone());
    let (mut sa, mut sb) = (StepLR::new(3, 0.5).unwrap(), StepLR::new(3, 0.5).unwrap());
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![step(&pa, &mut **oa.borrow_mut(), &i[0], &i[1], clip)?]));
    for s in 0..steps {
        let (x, y) = batch(10 + s, 5, device);
        let got = compiled.call(&[x.clone(), y.clone()]).unwrap();
        let want = step(&pb, &mut *ob, &x, &y, clip).unwrap();
        assert_eq!(bits(&got[0]), bits(&want), "loss at step {s} on {device}\n{:#?}", compiled.log());
        sa.step(&mut **oa.borrow_mut()).unwrap();
        sb.step(&mut *ob).unwrap();
    }
    for (a, b) in pa.iter().zip(&pb) {
        assert_eq!(bits(a), bits(b), "parameters after {steps} steps on {device}");
        assert_eq!(bits(&a.grad().unwrap()), bits(&b.grad().unwrap()), "a replay leaves .grad as eager code does");
    }
    let (sa, sb) = (oa.borrow().state_dict().unwrap(), ob.state_dict().unwrap());
    let counts = |s: &skiff::optim::OptimState| s.state.iter().map(|p| p.as_ref().map(|p| p.step)).collect::<Vec<_>>();
    assert_eq!(counts(&sa), counts(&sb), "step counts");
    assert_eq!(counts(&sa)[0], Some(steps));
    assert_eq!(oa.borrow().lr(0), ob.lr(0));
    assert_eq!((compiled.captures(), compiled.replays()), (2, steps - 2), "{:#?}", compiled.log());
    // What a load would check holds for every captured program.
    compiled.programs().iter().for_each(|t| t.program().validate().unwrap());
    assert!(
        compiled.log()[0].contains("first call") && compiled.log()[0].contains("not kept"),
        "{:#?}",
        compiled.log()
    );
}

fn sgd(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    let c = SgdConfig { lr: 0.1, momentum: 0.9, dampening: 0.1, weight_decay: 0.01, nesterov: false };
    Box::new(Sgd::new(p, c).unwrap())
}
fn nesterov(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    let c = SgdConfig { lr: 0.1, momentum: 0.9, nesterov: true, ..Default::default() };
    Box::new(Sgd::new(p, c).unwrap())
}
fn adam(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    Box::new(Adam::new(p, AdamConfig { lr: 0.01, weight_decay: 0.01, ..Default::default() }).unwrap())
}
fn amsgrad(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    Box::new(Adam::new(p, AdamConfig { lr: 0.01, amsgrad: true, ..Default::default() }).unwrap())
}
fn adamw(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    Box::new(AdamW::new(p, AdamW::default_config()).unwrap())
}
fn rmsprop(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    let c = RmsPropConfig { momentum: 0.5, centered: true, weight_decay: 0.01, ..Default::default() };
    Box::new(RmsProp::new(p, c).unwrap())
}
fn adagrad(p: Vec<Tensor>) -> Box<dyn Optimizer> {
    Box::new(Adagrad::new(p, AdagradConfig { lr_decay: 0.1, weight_decay: 0.01, ..Default::default() }).unwrap())
}

#[test]
fn a_compiled_sgd_step_with_a_schedule_trains_as_eager_steps_do() {
    compiled_training_matches_eager(&sgd, &Device::Cpu, false, 10);
    compiled_training_matches_eager(&nesterov, &Device::Cpu, false, 8);
}

#[test]
fn a_compiled_adam_step_recomputes_its_bias_corrections_at_every_call() {
    // The fused Adam kernel: its learning rate and bias corrections are bound to host cells.
    compiled_training_matches_eager(&adam, &Device::Cpu, false, 10);
    compiled_training_matches_eager(&adamw, &Device::Cpu, false, 8);
    // AMSGrad takes the tensor-op path.
    compiled_training_matches_eager(&amsgrad, &Device::Cpu, false, 8);
}

#[test]
fn compiled_rmsprop_and_adagrad_steps_train_as_eager_steps_do() {
    compiled_training_matches_eager(&rmsprop, &Device::Cpu, false, 8);
    compiled_training_matches_eager(&adagrad, &Device::Cpu, false, 8);
}

#[test]
fn gradient_clipping_is_captured_with_the_step() {
    compiled_training_matches_eager(&adam, &Device::Cpu, true, 6);
}

#[test]
fn a_compiled_adam_step_trains_as_eager_steps_do_on_the_gpu() {
    if let Some(device) = common::gpu() {
        compiled_training_matches_eager(&adam, &device, true, 6);
        compiled_training_matches_eager(&sgd, &device, false, 6);
    }
}

#[test]
fn the_program_shows_the_host_numbers_it_recomputes() {
    let p = params(1, &Device::Cpu);
    let opt = RefCell::new(Adam::new(p.clone(), AdamConfig::default()).unwrap());
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![step(&p, &mut *opt.borrow_mut(), &i[0], &i[1], false)?]));
    for s in 0..2 {
        let (x, y) = batch(s, 5, &Device::Cpu);
        compiled.call(&[x, y]).unwrap();
    }
    let text = compiled.programs()[0].program().to_string();
    for want in [
        "$Adam.step[0] = ($Adam.step[0] + 1)  # Adam (host)",
        "p0 = $Adam.lr[0]",
        "p5 = (1 - ($Adam.beta1[0] ^ $Adam.step[0]))",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn gradients_accumulated_across_calls_are_read_from_dot_grad_at_every_call() {
    // No zero_grad inside: each call adds to the .grad the previous one left.
    let (pa, pb) = (params(3, &Device::Cpu), params(3, &Device::Cpu));
    let mut compiled = jit::compile(|i: &[Tensor]| {
        let loss = loss_of(&pa, &i[0], &i[1])?;
        loss.backward()?;
        Ok(vec![loss.detach()])
    });
    for s in 0..5 {
        let (x, y) = batch(s, 5, &Device::Cpu);
        compiled.call(&[x.clone(), y.clone()]).unwrap();
        loss_of(&pb, &x, &y).unwrap().backward().unwrap();
        for (a, b) in pa.iter().zip(&pb) {
            assert_eq!(bits(&a.grad().unwrap()), bits(&b.grad().unwrap()), "accumulated .grad after call {s}");
        }
    }
    // Call 1 found no .grad, call 2 found one (a guard miss); 3 to 5 replayed.
    assert_eq!((compiled.captures(), compiled.replays()), (2, 3), "{:#?}", compiled.log());
    assert!(compiled.log()[1].contains(".grad"), "{:#?}", compiled.log());
    // With the gradients cleared, the first program (made without them) fits again.
    pa.iter().chain(&pb).for_each(|t| t.zero_grad());
    let (x, y) = batch(9, 5, &Device::Cpu);
    compiled.call(&[x.clone(), y.clone()]).unwrap();
    loss_of(&pb, &x, &y).unwrap().backward().unwrap();
    for (a, b) in pa.iter().zip(&pb) {
        assert_eq!(bits(&a.grad().unwrap()), bits(&b.grad().unwrap()), "fresh .grad after zero_grad");
    }
    assert_eq!((compiled.captures(), compiled.replays()), (2, 4));
}

#[test]
fn a_shape_change_recaptures_and_says_why() {
    let p = params(2, &Device::Cpu);
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![forward(&p, &i[0])?]));
    for rows in [5, 5, 7, 5, 7] {
        let (x, _) = batch(rows as u64, rows, &Device::Cpu);
        let got = compiled.call(std::slice::from_ref(&x)).unwrap();
        assert_eq!(bits(&got[0]), bits(&forward(&p, &x).unwrap()), "{rows} rows");
        assert_eq!(got[0].shape(), &[rows, 3]);
    }
    // Both shapes stay cached: captures at calls 1 and 3 only.
    assert_eq!((compiled.captures(), compiled.replays()), (2, 3));
    let miss = &compiled.log()[1];
    assert!(miss.contains("input 0 is f32 [7, 4]") && miss.contains("instead of f32 [5, 4]"), "{miss}");
    // A transposed view has other strides: another program.
    let (x, _) = batch(1, 4, &Device::Cpu);
    let xt = x.reshape(&[4, 4]).unwrap().transpose(0, 1).unwrap();
    compiled.call(std::slice::from_ref(&xt)).unwrap();
    assert_eq!(compiled.captures(), 3);
    assert!(compiled.log()[2].contains("strides"), "{:#?}", compiled.log());
}

#[test]
fn the_cache_is_bounded_and_drops_the_least_recently_used_program() {
    let p = params(2, &Device::Cpu);
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![forward(&p, &i[0])?])).with_capacity(2);
    for rows in [1, 2, 3, 1] {
        let (x, _) = batch(1, rows, &Device::Cpu);
        compiled.call(&[x]).unwrap();
    }
    // 1, 2, then 3 evicts 1 (least recently used), so 1 captures again.
    assert_eq!(compiled.captures(), 4, "{:#?}", compiled.log());
    assert_eq!(compiled.programs().len(), 2);
    assert_eq!(compiled.log().iter().filter(|l| l.contains("dropped the least recently used")).count(), 2);
}

#[test]
fn outputs_of_two_calls_do_not_alias() {
    let w = Tensor::from_vec(values(4, 12), &[4, 3]).unwrap();
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![i[0].matmul(&w)?.mul_scalar(2.0)?]));
    let (x1, _) = batch(1, 2, &Device::Cpu);
    let (x2, _) = batch(2, 2, &Device::Cpu);
    let mut kept = Vec::new();
    for x in [&x1, &x1, &x2, &x1] {
        kept.push((compiled.call(std::slice::from_ref(x)).unwrap().remove(0), x.clone()));
    }
    for (out, x) in &kept {
        assert_eq!(
            bits(out),
            bits(&x.matmul(&w).unwrap().mul_scalar(2.0).unwrap()),
            "a later call overwrote an output"
        );
    }
    assert_eq!(compiled.replays(), 3);
}

#[test]
fn a_replaced_parameter_or_a_flipped_training_flag_recaptures() {
    let lin = Linear::new(4, 3).unwrap();
    let drop = Dropout::new(0.5).unwrap();
    let mut compiled = jit::compile(|i: &[Tensor]| no_grad(|| Ok(vec![drop.forward(&lin.forward(&i[0])?)?])));
    // 64 rows: two dropout masks over 192 values are never equal by chance.
    let (x, _) = batch(3, 64, &Device::Cpu);
    drop.eval();
    let eager = |x: &Tensor| no_grad(|| lin.forward(x)).unwrap();
    for _ in 0..2 {
        assert_eq!(bits(&compiled.call(std::slice::from_ref(&x)).unwrap()[0]), bits(&eager(&x)));
    }
    assert_eq!(compiled.captures(), 1);
    lin.weight.set(Tensor::from_vec(values(8, 12), &[3, 4]).unwrap().requires_grad_(true).unwrap());
    let got = compiled.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(bits(&got[0]), bits(&eager(&x)), "the replay used the replaced weight");
    assert_eq!(compiled.captures(), 2);
    assert!(
        compiled.log()[1].contains("parameter cell of shape [3, 4]: given another tensor"),
        "{:#?}",
        compiled.log()
    );
    // Training mode: dropout is on, a branch the eval-mode program never took.
    drop.train(true);
    let a = compiled.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(compiled.captures(), 3);
    assert!(compiled.log()[2].contains("training flag: set to training"), "{:#?}", compiled.log());
    let b = compiled.call(std::slice::from_ref(&x)).unwrap();
    assert_ne!(bits(&a[0]), bits(&b[0]), "dropout draws a fresh mask at every replay");
}

#[test]
fn grad_mode_and_requires_grad_are_part_of_the_guard() {
    let p = params(2, &Device::Cpu);
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![forward(&p, &i[0])?]));
    let (x, _) = batch(1, 3, &Device::Cpu);
    compiled.call(std::slice::from_ref(&x)).unwrap();
    no_grad(|| compiled.call(std::slice::from_ref(&x))).unwrap();
    assert!(compiled.log()[1].contains("grad mode is off instead of on"), "{:#?}", compiled.log());
    let xg = x.detach().requires_grad_(true).unwrap();
    compiled.call(&[xg]).unwrap();
    assert!(compiled.log()[2].contains("requires_grad=true"), "{:#?}", compiled.log());
    assert_eq!(compiled.captures(), 3);
}

#[test]
fn a_host_readback_inside_a_compiled_function_is_an_error_at_capture() {
    let mut compiled = jit::compile(|i: &[Tensor]| {
        let s = i[0].sum_all()?.item()?;
        Ok(vec![i[0].mul_scalar(s)?])
    });
    let Err(e) = compiled.call(&[Tensor::ones(&[3], DType::F32).unwrap()]) else { panic!("item() is refused") };
    assert!(e.to_string().contains("host_copy") && e.to_string().contains("cannot be captured"), "{e}");
}

#[test]
fn a_learning_rate_bound_inside_a_fused_kernel_follows_the_schedule() {
    // SGD's `p - lr * g` fuses into one kernel whose scalar stays bound to the cell.
    let make = |p: Vec<Tensor>| -> Box<dyn Optimizer> {
        Box::new(Sgd::new(p, SgdConfig { lr: 0.1, ..Default::default() }).unwrap())
    };
    let p = params(4, &Device::Cpu);
    let opt = RefCell::new(make(p.clone()));
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![step(&p, &mut **opt.borrow_mut(), &i[0], &i[1], false)?]));
    let (x, y) = batch(1, 5, &Device::Cpu);
    for _ in 0..2 {
        compiled.call(&[x.clone(), y.clone()]).unwrap();
    }
    let text = compiled.programs()[0].program().to_string();
    assert!(
        text.lines().any(|l| l.contains("= fused:") && l.contains("mul_scalar") && l.contains("= $SGD.lr[0]]")),
        "no fused kernel with a bound learning rate in\n{text}"
    );
    compiled_training_matches_eager(&make, &Device::Cpu, false, 8);
}

fn mlp_model() -> skiff::nn::Sequential {
    use skiff::nn::{Linear, ReLU, Sequential};
    Sequential::new().push(Linear::new(16, 32).unwrap()).push(ReLU::new()).push(Linear::new(32, 4).unwrap())
}

fn cnn_model() -> skiff::nn::Sequential {
    use skiff::nn::{Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential};
    Sequential::new()
        .push(Conv2d::new(1, 4, [3, 3]).unwrap())
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2]).unwrap())
        .push(Flatten::new())
        .push(Linear::new(4 * 2 * 2, 4).unwrap())
}

/// 100 Adam steps with a cosine schedule, compiled against eager on a copy
/// of the same model: losses and parameters bit for bit on the cpu, within
/// 1e-5 (relative) on a GPU.
fn hundred_steps(make: fn() -> skiff::nn::Sequential, input: &[usize], device: &Device) {
    use skiff::optim::CosineAnnealing;
    let (a, b) = (make(), make());
    b.load_state_dict(&a.state_dict(), true).unwrap();
    for m in [&a, &b] {
        m.to(device).unwrap();
    }
    let cfg = AdamConfig { lr: 0.01, weight_decay: 1e-4, ..Default::default() };
    let oa = RefCell::new(Adam::new(a.parameters(), cfg).unwrap());
    let mut ob = Adam::new(b.parameters(), cfg).unwrap();
    let (mut sa, mut sb) = (CosineAnnealing::new(5, 100, 1e-4).unwrap(), CosineAnnealing::new(5, 100, 1e-4).unwrap());
    let train = |m: &skiff::nn::Sequential, opt: &mut dyn Optimizer, x: &Tensor, y: &Tensor| -> skiff::Result<Tensor> {
        opt.zero_grad();
        let loss = m.forward(x)?.cross_entropy(y, Reduction::Mean, 0.0)?;
        loss.backward()?;
        clip_grad_norm_tensor_(&m.parameters(), 1.0, 2.0)?;
        opt.step()?;
        Ok(loss.detach())
    };
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![train(&a, &mut *oa.borrow_mut(), &i[0], &i[1])?]));
    let n: usize = input.iter().product();
    let close = |g: &[f32], w: &[f32], what: &str| {
        if device.is_gpu() {
            for (x, y) in g.iter().zip(w) {
                assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{what}: {x} vs {y}");
            }
        } else {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(g), bits(w), "{what}");
        }
    };
    for s in 0..100u64 {
        let x = Tensor::from_vec(values(s, n), input).unwrap().to(device).unwrap();
        let y: Vec<i32> = values(s + 500, input[0]).iter().map(|v| ((v + 1.0) * 2.0) as i32 % 4).collect();
        let y = Tensor::from_vec(y, &[input[0]]).unwrap().to(device).unwrap();
        let got = compiled.call(&[x.clone(), y.clone()]).unwrap();
        let want = train(&b, &mut ob, &x, &y).unwrap();
        close(&got[0].to_f32_vec().unwrap(), &want.to_f32_vec().unwrap(), &format!("loss at step {s} on {device}"));
        sa.step(&mut *oa.borrow_mut()).unwrap();
        sb.step(&mut ob).unwrap();
    }
    for (p, q) in a.parameters().iter().zip(b.parameters()) {
        close(&p.to_f32_vec().unwrap(), &q.to_f32_vec().unwrap(), "parameters after 100 steps");
    }
    assert_eq!(compiled.captures(), 2, "{:#?}", compiled.log());
}

#[test]
fn a_hundred_compiled_steps_train_an_mlp_and_a_cnn_as_eager_steps_do() {
    hundred_steps(mlp_model, &[8, 16], &Device::Cpu);
    hundred_steps(cnn_model, &[8, 1, 6, 6], &Device::Cpu);
}

#[test]
fn a_hundred_compiled_steps_on_the_gpu_stay_within_tolerance() {
    if let Some(device) = common::gpu() {
        hundred_steps(mlp_model, &[8, 16], &device);
        hundred_steps(cnn_model, &[8, 1, 6, 6], &device);
    }
}
