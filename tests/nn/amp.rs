//! Mixed precision (`skiff::amp`): which ops autocast runs in f16 and which
//! in f32, gradients reaching f32 master weights, and GradScaler's dynamic
//! loss scaling (skipped steps, backoff, growth, unscaled gradients).

use crate::common;

use skiff::amp::{autocast, is_autocast_enabled, AutocastGuard, GradScaler, GradScalerConfig};
use skiff::nn::{Conv2d, Layer, Linear};
use skiff::optim::{Optimizer, Sgd, SgdConfig};
use skiff::{DType, Device, Reduction, Tensor};

use crate::common::{expect_err, Kind};

fn ramp(shape: &[usize], salt: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37 + salt * 11) % 29) as f32 / 14.0 - 1.0).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// The dtypes autocast gives on `device`, with `half` the dtype of its f16 ops there.
fn check_op_lists(device: &Device, half: DType) {
    let x = ramp(&[4, 8], 1).to(device).unwrap();
    let w = ramp(&[8, 3], 2).to(device).unwrap();
    autocast(|| {
        let y = x.matmul(&w).unwrap();
        assert_eq!(y.dtype(), half, "matmul is an f16 op");
        assert_eq!(y.relu().unwrap().dtype(), half, "relu keeps its input's dtype");
        assert_eq!(y.softmax(1).unwrap().dtype(), DType::F32, "softmax is an f32 op");
        assert_eq!(y.log_softmax(1).unwrap().dtype(), DType::F32);
        assert_eq!(y.exp().unwrap().dtype(), DType::F32, "exp is an f32 op");
        assert_eq!(y.sum_all().unwrap().dtype(), DType::F32, "sum is an f32 op");
        assert_eq!(y.max(&[1], false).unwrap().dtype(), half, "max is exact in f16");
        assert_eq!(y.cumsum(1).unwrap().dtype(), DType::F32, "cumsum is an f32 op");
        assert_eq!(y.cumprod(0).unwrap().dtype(), DType::F32, "cumprod is an f32 op");
        assert_eq!(y.prod(&[1], false).unwrap().dtype(), DType::F32, "prod is an f32 op");
        assert_eq!(y.sort(1, false, true).unwrap().0.dtype(), half, "sort is exact in f16");
        let b = ramp(&[3], 3).to(device).unwrap();
        assert_eq!(y.add(&b).unwrap().dtype(), DType::F32, "mixed f16 and f32 promote to f32");
        let labels = Tensor::from_vec(vec![0i32, 1, 2, 0], &[4]).unwrap().to(device).unwrap();
        assert_eq!(y.cross_entropy(&labels, Reduction::Mean, 0.0).unwrap().dtype(), DType::F32);
        let layer = Linear::new(8, 3).unwrap();
        layer.to(device).unwrap();
        assert_eq!(layer.forward(&x).unwrap().dtype(), half, "Linear adds its bias in f16");
        let conv = Conv2d::new(2, 3, [3, 3]).unwrap();
        conv.to(device).unwrap();
        let img = ramp(&[1, 2, 5, 5], 4).to(device).unwrap();
        assert_eq!(conv.forward(&img).unwrap().dtype(), half, "conv2d is an f16 op");
        // Parameters stay f32: the casts are per call.
        assert!(layer.parameters().iter().all(|p| p.dtype() == DType::F32));
    });
    // Outside autocast nothing changes.
    assert_eq!(x.matmul(&w).unwrap().dtype(), DType::F32);
}

#[test]
fn autocast_runs_products_in_f16_and_reductions_in_f32() {
    check_op_lists(&Device::Cpu, DType::F16);
}

#[cfg(feature = "gpu")]
#[test]
fn autocast_uses_f16_on_a_gpu_with_shader_f16() {
    let Some(dev) = common::gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!() };
    let half = if g.shader_f16() { DType::F16 } else { DType::F32 };
    check_op_lists(&dev, half);
    assert_eq!(skiff::amp::lower_dtype(&dev), half);
}

#[test]
fn autocast_is_scoped_and_restored_after_errors() {
    assert!(!is_autocast_enabled());
    let r: skiff::Result<()> = autocast(|| {
        assert!(is_autocast_enabled());
        {
            let _off = AutocastGuard::new(false);
            assert!(!is_autocast_enabled());
        }
        assert!(is_autocast_enabled());
        Tensor::from_vec(vec![1.0f32], &[2]).map(|_| ())
    });
    assert!(r.is_err());
    assert!(!is_autocast_enabled());
}

#[test]
fn gradients_reach_the_f32_weights_in_f32() {
    let x = ramp(&[6, 8], 5);
    let labels = Tensor::from_vec(vec![0i32, 1, 2, 0, 1, 2], &[6]).unwrap();
    skiff::manual_seed(4);
    let layer = Linear::new(8, 3).unwrap();
    let grads = |cast: bool| -> Vec<Vec<f64>> {
        for p in layer.parameters() {
            p.zero_grad();
        }
        let run = || layer.forward(&x)?.cross_entropy(&labels, Reduction::Mean, 0.0);
        let loss = if cast { autocast(run) } else { run() }.unwrap();
        assert_eq!(loss.dtype(), DType::F32);
        loss.backward().unwrap();
        layer
            .parameters()
            .iter()
            .map(|p| {
                let g = p.grad().unwrap();
                assert_eq!(g.dtype(), DType::F32, "a master weight's gradient is f32");
                g.to_f64_vec().unwrap()
            })
            .collect()
    };
    let (full, mixed) = (grads(false), grads(true));
    for (f, m) in full.iter().zip(&mixed) {
        for (a, b) in f.iter().zip(m) {
            // f16 operands (11 significant bits) of a product accumulated in f32.
            assert!((a - b).abs() <= 2e-3 * (1.0 + a.abs()), "{a} vs {b}");
        }
    }
}

fn sgd(layer: &Linear) -> Sgd {
    Sgd::new(layer.parameters(), SgdConfig { lr: 0.5, ..Default::default() }).unwrap()
}

fn weights(layer: &Linear) -> Vec<Vec<f32>> {
    layer.parameters().iter().map(|p| p.to_vec::<f32>().unwrap()).collect()
}

#[test]
fn the_scaler_unscales_before_stepping() {
    let x = ramp(&[4, 3], 6);
    skiff::manual_seed(5);
    let (a, b) = (Linear::new(3, 2).unwrap(), Linear::new(3, 2).unwrap());
    b.load_state_dict(&a.state_dict(), true).unwrap();
    let (mut oa, mut ob) = (sgd(&a), sgd(&b));
    let mut scaler = GradScaler::new(GradScalerConfig { init_scale: 1024.0, ..Default::default() }).unwrap();
    assert_eq!(scaler.get_scale(), 1024.0);
    let loss = |l: &Linear| l.forward(&x).unwrap().pow_scalar(2.0).unwrap().mean(&[0, 1], false).unwrap();
    let scaled = scaler.scale(&loss(&a)).unwrap();
    assert_eq!(scaled.item().unwrap(), loss(&a).item().unwrap() * 1024.0);
    scaled.backward().unwrap();
    assert!(scaler.step(&mut oa).unwrap());
    scaler.update().unwrap();
    loss(&b).backward().unwrap();
    ob.step().unwrap();
    // Scaling by a power of two and back is exact: the same step as without the scaler.
    assert_eq!(weights(&a), weights(&b));
}

#[test]
fn a_step_with_inf_or_nan_gradients_is_skipped_and_the_scale_backs_off() {
    let layer = Linear::new(3, 2).unwrap();
    let mut opt = sgd(&layer);
    let mut scaler = GradScaler::new(GradScalerConfig { growth_interval: 3, ..Default::default() }).unwrap();
    let start = scaler.get_scale();
    for bad in [f32::INFINITY, f32::NAN] {
        let before = weights(&layer);
        let x = Tensor::from_vec(vec![1.0, bad, 2.0], &[1, 3]).unwrap();
        scaler.scale(&layer.forward(&x).unwrap().sum_all().unwrap()).unwrap().backward().unwrap();
        assert!(!scaler.step(&mut opt).unwrap(), "a {bad} gradient must not step");
        scaler.update().unwrap();
        assert_eq!(weights(&layer), before, "the weights did not move");
        opt.zero_grad();
    }
    assert_eq!(scaler.get_scale(), start * 0.25);
    // Three good steps in a row double it.
    let x = ramp(&[2, 3], 7);
    for k in 0..3 {
        scaler.scale(&layer.forward(&x).unwrap().sum_all().unwrap()).unwrap().backward().unwrap();
        assert!(scaler.step(&mut opt).unwrap());
        scaler.update().unwrap();
        opt.zero_grad();
        let want = if k == 2 { start * 0.5 } else { start * 0.25 };
        assert_eq!(scaler.get_scale(), want, "after good step {k}");
    }
}

#[test]
fn scaler_misuse_and_bad_settings_are_errors() {
    let bad = |c: GradScalerConfig, fact: &str| expect_err(GradScaler::new(c), Kind::Value, "GradScaler", &[fact]);
    let d = GradScalerConfig::default();
    bad(GradScalerConfig { init_scale: 0.0, ..d }, "init_scale must be finite and > 0, got 0");
    bad(GradScalerConfig { growth_factor: 1.0, ..d }, "growth_factor must be finite and > 1, got 1");
    bad(GradScalerConfig { backoff_factor: 1.5, ..d }, "backoff_factor must be in (0, 1), got 1.5");
    bad(GradScalerConfig { growth_interval: 0, ..d }, "growth_interval must be at least 1");
    let mut scaler = GradScaler::new(d).unwrap();
    expect_err(scaler.update(), Kind::Value, "GradScaler", &["no step or unscale_ since the last update"]);
    let layer = Linear::new(2, 1).unwrap();
    let opt = sgd(&layer);
    scaler.scale(&layer.forward(&ramp(&[1, 2], 8)).unwrap().sum_all().unwrap()).unwrap().backward().unwrap();
    assert!(!scaler.unscale_(&opt).unwrap());
    expect_err(scaler.unscale_(&opt), Kind::Value, "GradScaler", &["unscale_ was already called"]);
    let labels = Tensor::from_vec(vec![1i32], &[1]).unwrap();
    expect_err(scaler.scale(&labels), Kind::DType, "GradScaler", &["scale expects a float loss, got i32"]);
    // Disabled, it passes everything through.
    let off = GradScaler::new(GradScalerConfig { enabled: false, ..d }).unwrap();
    assert_eq!(off.get_scale(), 1.0);
}

#[test]
fn autocast_and_the_scaler_train_like_f32() {
    // Both runs start from the same seeded layer.
    if !common::own_process() {
        return;
    }
    let x = ramp(&[32, 8], 9);
    // Learnable labels: which of the first three features is largest.
    let xs = x.to_vec::<f32>().unwrap();
    let argmax3 = |r: &[f32]| (0..3).fold(0, |best, j| if r[j] > r[best] { j } else { best }) as i32;
    let labels = Tensor::from_vec(xs.chunks(8).map(argmax3).collect(), &[32]).unwrap();
    let train = |mixed: bool| -> f64 {
        skiff::manual_seed(6);
        let layer = Linear::new(8, 3).unwrap();
        let mut opt = sgd(&layer);
        let mut scaler = GradScaler::new(GradScalerConfig { enabled: mixed, ..Default::default() }).unwrap();
        let mut last = 0.0;
        for _ in 0..60 {
            opt.zero_grad();
            let run = || layer.forward(&x)?.cross_entropy(&labels, Reduction::Mean, 0.0);
            let loss = if mixed { autocast(run) } else { run() }.unwrap();
            scaler.scale(&loss).unwrap().backward().unwrap();
            assert!(scaler.step(&mut opt).unwrap());
            scaler.update().unwrap();
            last = loss.item().unwrap();
        }
        last
    };
    let (full, mixed) = (train(false), train(true));
    assert!(full < 0.9, "f32 training made progress: {full}");
    assert!((full - mixed).abs() <= 0.01 * full.max(0.1), "f32 loss {full} vs mixed {mixed}");
}

#[cfg(feature = "gpu")]
#[test]
fn the_scaler_reads_back_one_number_per_step_on_a_gpu() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let layer = Linear::new(8, 3).unwrap();
    layer.to(&dev).unwrap();
    let mut opt = sgd(&layer);
    let mut scaler = GradScaler::new(GradScalerConfig::default()).unwrap();
    let x = ramp(&[4, 8], 10).to(&dev).unwrap();
    // A mean: a sum's gradient times the first scale (2^16) would overflow f16 and skip the step.
    let loss = autocast(|| layer.forward(&x)?.mean(&[0, 1], false)).unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    let before = g.counters().readbacks;
    assert!(scaler.step(&mut opt).unwrap());
    assert_eq!(g.counters().readbacks - before, 1, "the finite check is one readback");
    scaler.update().unwrap();
}
