//! Short training runs: linear regression y = 3x + 2 + noise fitted with
//! SGD + momentum and with Adam, on the cpu and (when an adapter exists) the GPU.

use crate::common;

use skiff::optim::{clip_grad_norm_, Adam, AdamConfig, CosineAnnealing, LrSchedule, Optimizer, Sgd, SgdConfig};
use skiff::{manual_seed, DType, Device, Reduction, Tensor};

/// Fits w, b for `steps` steps; returns (final loss, w, b). The noise has
/// standard deviation 0.1, so the best reachable loss is about 0.01.
fn fit(device: &Device, make: impl Fn(Vec<Tensor>) -> Box<dyn Optimizer>, steps: usize) -> (f64, f64, f64) {
    manual_seed(7);
    let x = Tensor::uniform(&[128, 1], -1.0, 1.0, DType::F32).unwrap();
    let noise = Tensor::randn(&[128, 1], DType::F32).unwrap().mul_scalar(0.1).unwrap();
    let y = x.mul_scalar(3.0).unwrap().add_scalar(2.0).unwrap().add(&noise).unwrap();
    let (x, y) = (x.to(device).unwrap(), y.to(device).unwrap());
    let w = Tensor::full_on(&[1, 1], 0.0, DType::F32, device).unwrap().requires_grad_(true).unwrap();
    let b = Tensor::full_on(&[1], 0.0, DType::F32, device).unwrap().requires_grad_(true).unwrap();
    let mut opt = make(vec![w.clone(), b.clone()]);
    let mut loss = f64::INFINITY;
    for _ in 0..steps {
        opt.zero_grad();
        let l = x.matmul(&w).unwrap().add(&b).unwrap().mse_loss(&y, Reduction::Mean).unwrap();
        l.backward().unwrap();
        loss = l.item().unwrap();
        opt.step().unwrap();
    }
    assert_eq!(w.device(), *device);
    (loss, w.item().unwrap(), b.item().unwrap())
}

fn check_fit(device: &Device) {
    let sgd = |p: Vec<Tensor>| -> Box<dyn Optimizer> {
        Box::new(Sgd::new(p, SgdConfig { lr: 0.05, momentum: 0.9, ..Default::default() }).unwrap())
    };
    let (loss, w, b) = fit(device, sgd, 200);
    assert!(loss < 0.015 && (w - 3.0).abs() < 0.1 && (b - 2.0).abs() < 0.1, "SGD: loss {loss}, w {w}, b {b}");

    let adam = |p: Vec<Tensor>| -> Box<dyn Optimizer> {
        Box::new(Adam::new(p, AdamConfig { lr: 0.1, ..Default::default() }).unwrap())
    };
    let (loss, w, b) = fit(device, adam, 300);
    assert!(loss < 0.015 && (w - 3.0).abs() < 0.1 && (b - 2.0).abs() < 0.1, "Adam: loss {loss}, w {w}, b {b}");
}

#[test]
fn linear_regression_cpu() {
    check_fit(&Device::Cpu);
}

#[test]
fn linear_regression_gpu() {
    if let Some(device) = common::gpu() {
        check_fit(&device)
    }
}

#[test]
fn scheduled_clipped_training_cpu() {
    // The pieces together: a warm-up cosine schedule and gradient clipping.
    manual_seed(3);
    let x = Tensor::uniform(&[64, 1], -1.0, 1.0, DType::F32).unwrap();
    let y = x.mul_scalar(3.0).unwrap().add_scalar(2.0).unwrap();
    let w = Tensor::zeros(&[1, 1], DType::F32).unwrap().requires_grad_(true).unwrap();
    let b = Tensor::zeros(&[1], DType::F32).unwrap().requires_grad_(true).unwrap();
    let params = vec![w.clone(), b.clone()];
    let mut opt = Adam::new(params.clone(), AdamConfig { lr: 0.2, ..Default::default() }).unwrap();
    let mut sched = CosineAnnealing::new(20, 300, 0.001).unwrap();
    sched.attach(&mut opt).unwrap();
    let mut loss = f64::INFINITY;
    for _ in 0..300 {
        opt.zero_grad();
        let l = x.matmul(&w).unwrap().add(&b).unwrap().mse_loss(&y, Reduction::Mean).unwrap();
        l.backward().unwrap();
        loss = l.item().unwrap();
        clip_grad_norm_(&params, 1.0, 2.0).unwrap();
        opt.step().unwrap();
        sched.step(&mut opt).unwrap();
    }
    assert!(loss < 1e-3, "loss {loss}");
    assert!((opt.lr(0).unwrap() - 0.001).abs() < 1e-12);
}

#[test]
fn gpu_state_stays_on_the_device_and_loads_across_devices() {
    let Some(device) = common::gpu() else { return };
    let cpu_p = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap().requires_grad_(true).unwrap();
    let gpu_p = cpu_p.detach().to(&device).unwrap().requires_grad_(true).unwrap();
    let cfg = AdamConfig { lr: 0.1, amsgrad: true, ..Default::default() };
    let mut gpu_opt = Adam::new(vec![gpu_p.clone()], cfg).unwrap();
    let mut cpu_opt = Adam::new(vec![cpu_p.clone()], cfg).unwrap();
    for k in 0..3 {
        let g = Tensor::from_vec(vec![0.5f32 * k as f32, -0.25], &[2]).unwrap();
        gpu_p.set_grad(Some(g.to(&device).unwrap())).unwrap();
        cpu_p.set_grad(Some(g)).unwrap();
        gpu_opt.step().unwrap();
        cpu_opt.step().unwrap();
    }
    let state = gpu_opt.state_dict().unwrap();
    let buffers = &state.state[0].as_ref().unwrap().buffers;
    assert_eq!(buffers.len(), 3);
    assert!(buffers.values().all(|t| t.device() == device));
    let (g, c) = (gpu_p.to_vec::<f32>().unwrap(), cpu_p.to_vec::<f32>().unwrap());
    assert!(g.iter().zip(&c).all(|(a, b)| (a - b).abs() < 1e-5), "gpu {g:?} vs cpu {c:?}");
    // GPU state loads into a cpu optimizer (tensors move to the parameter's device).
    let fresh = Tensor::from_vec(c, &[2]).unwrap().requires_grad_(true).unwrap();
    let mut restored = Adam::new(vec![fresh.clone()], cfg).unwrap();
    restored.load_state_dict(&state).unwrap();
    let reloaded = restored.state_dict().unwrap();
    assert!(reloaded.state[0].as_ref().unwrap().buffers.values().all(|t| t.device() == Device::Cpu));
}

/// The fused Adam/AdamW kernel (contiguous params, no AMSGrad) agrees across
/// devices and with the tensor-op path (AMSGrad off vs a non-contiguous grad).
#[test]
fn fused_adam_matches_across_devices_and_the_unfused_path() {
    use skiff::optim::AdamW;
    // Without an adapter the cpu paths are still compared (common::gpu says so loudly).
    let gpu = common::gpu();
    for decoupled in [false, true] {
        let cfg = AdamConfig { lr: 0.05, weight_decay: 0.1, ..Default::default() };
        let start = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0], &[2, 2]).unwrap();
        let make = |p: &Tensor| -> Box<dyn Optimizer> {
            if decoupled {
                Box::new(AdamW::new(vec![p.clone()], cfg).unwrap())
            } else {
                Box::new(Adam::new(vec![p.clone()], cfg).unwrap())
            }
        };
        // Separate storages (detach() alone would share one between both).
        let fused_p = start.contiguous_copy().unwrap().requires_grad_(true).unwrap();
        let plain_p = start.contiguous_copy().unwrap().requires_grad_(true).unwrap();
        let mut fused = make(&fused_p);
        let mut plain = make(&plain_p);
        let gpu_p = gpu.as_ref().map(|d| start.to(d).unwrap().requires_grad_(true).unwrap());
        let mut on_gpu = gpu_p.as_ref().map(&make);
        for k in 0..3 {
            let g = Tensor::from_vec(vec![0.5f32 * k as f32, -0.25, 1.5, -1.0 + k as f32], &[2, 2]).unwrap();
            fused_p.set_grad(Some(g.clone())).unwrap();
            // A transposed view is not contiguous: this step takes the tensor-op path.
            plain_p.set_grad(Some(g.transpose(0, 1).unwrap().contiguous().unwrap().transpose(0, 1).unwrap())).unwrap();
            if let (Some(p), Some(d)) = (&gpu_p, &gpu) {
                p.set_grad(Some(g.to(d).unwrap())).unwrap();
            }
            fused.step().unwrap();
            plain.step().unwrap();
            if let Some(o) = on_gpu.as_mut() {
                o.step().unwrap();
            }
        }
        let want = plain_p.to_vec::<f32>().unwrap();
        let mut got = vec![("fused cpu", fused_p.to_vec::<f32>().unwrap())];
        if let Some(p) = &gpu_p {
            got.push(("fused gpu", p.to_vec::<f32>().unwrap()));
        }
        for (what, v) in got {
            assert!(
                v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5),
                "{what} (decoupled {decoupled}): {v:?} vs {want:?}"
            );
        }
    }
}

/// The GPU's fused update runs four elements per invocation over a length's
/// multiple of 4 and one per invocation over the rest (or alone, for a short
/// length that is not a multiple of 4): every element of every such length
/// must get the cpu's update, for Adam and AdamW.
#[test]
fn fused_adam_on_the_gpu_updates_every_element_of_every_length() {
    use skiff::optim::AdamW;
    let Some(gpu) = common::gpu() else { return };
    manual_seed(11);
    for n in [1, 3, 4, 10, 1023, 1024, 1027, 4099] {
        for decoupled in [false, true] {
            let cfg = AdamConfig { lr: 0.05, weight_decay: 0.1, ..Default::default() };
            let make = |p: &Tensor| -> Box<dyn Optimizer> {
                if decoupled {
                    Box::new(AdamW::new(vec![p.clone()], cfg).unwrap())
                } else {
                    Box::new(Adam::new(vec![p.clone()], cfg).unwrap())
                }
            };
            let start = Tensor::randn(&[n], DType::F32).unwrap();
            let cpu_p = start.contiguous_copy().unwrap().requires_grad_(true).unwrap();
            let gpu_p = start.to(&gpu).unwrap().requires_grad_(true).unwrap();
            let (mut on_cpu, mut on_gpu) = (make(&cpu_p), make(&gpu_p));
            for _ in 0..3 {
                let g = Tensor::randn(&[n], DType::F32).unwrap();
                gpu_p.set_grad(Some(g.to(&gpu).unwrap())).unwrap();
                cpu_p.set_grad(Some(g)).unwrap();
                on_cpu.step().unwrap();
                on_gpu.step().unwrap();
            }
            let (want, got) = (cpu_p.to_vec::<f32>().unwrap(), gpu_p.to_vec::<f32>().unwrap());
            let moved = start.to_vec::<f32>().unwrap();
            for (i, ((w, g), s)) in want.iter().zip(&got).zip(&moved).enumerate() {
                assert!(w != s, "n {n}: the cpu update left element {i} unchanged");
                assert!(
                    (w - g).abs() <= 1e-6 * (1.0 + w.abs()),
                    "n {n}, decoupled {decoupled}, element {i}: gpu {g} vs cpu {w}"
                );
            }
        }
    }
}
