//! MNIST with autocast and GradScaler reaches the test accuracy of the same
//! training in f32 (within 0.5 points): an MLP and a CNN, one epoch each on
//! the digits `npm run data` converts (8000 training, 2000 test), on the cpu
//! (f16 storage, f32 kernels) and on a GPU with shader-f16 (lavapipe).
//! Both runs start from the same weights and see the same batches.

use crate::common;

use skiff::amp::{autocast, GradScaler, GradScalerConfig};
use skiff::io::{DataLoader, Mnist};
use skiff::nn::{Flatten, Layer, Linear, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, models, no_grad, DType, Device, Reduction, Result};
use std::path::PathBuf;

fn mlp() -> Result<Sequential> {
    Ok(Sequential::new()
        .push(Flatten::new())
        .push(Linear::new(784, 128)?)
        .push(ReLU::new())
        .push(Linear::new(128, 10)?))
}

/// Test accuracy after one epoch, in f32 or with autocast + GradScaler.
fn train(make: fn() -> Result<Sequential>, mixed: bool, device: &Device, dir: &PathBuf) -> Result<f64> {
    manual_seed(11);
    let model = make()?;
    model.to(device)?;
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 2e-3, ..Default::default() })?;
    let mut scaler = GradScaler::new(GradScalerConfig { enabled: mixed, ..Default::default() })?;
    let train = DataLoader::new(Mnist::load(dir, true)?.dataset()?, 64)?.shuffle(3).device(device);
    let (mut skipped, mut steps) = (0, 0);
    for batch in train.epoch(0) {
        let (x, y) = batch?;
        opt.zero_grad();
        let run = || model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0);
        let loss = if mixed { autocast(run)? } else { run()? };
        scaler.scale(&loss)?.backward()?;
        skipped += usize::from(!scaler.step(&mut opt)?);
        scaler.update()?;
        steps += 1;
    }
    // Dynamic scaling skips a few steps while it finds its scale, no more.
    assert!(skipped <= 5, "{skipped} of {steps} steps skipped");
    assert!(model.parameters().iter().all(|p| p.dtype() == DType::F32), "master weights stay f32");
    model.eval();
    let test = DataLoader::new(Mnist::load(dir, false)?.dataset()?, 500)?.device(device);
    let (mut right, mut total) = (0.0, 0usize);
    for batch in test.epoch(0) {
        let (x, y) = batch?;
        let run = || no_grad(|| model.forward(&x));
        let logits = if mixed { autocast(run)? } else { run()? };
        right += logits.argmax(Some(1), false)?.eq(&y)?.to_dtype(DType::F32)?.sum_all()?.item()?;
        total += y.numel();
    }
    Ok(100.0 * right / total as f64)
}

fn same_accuracy(name: &str, make: fn() -> Result<Sequential>, device: &Device) {
    let Some(dir) = common::mnist_dir() else { return };
    let full = train(make, false, device, &dir).unwrap();
    let mixed = train(make, true, device, &dir).unwrap();
    eprintln!("{name} on {}: test accuracy f32 {full:.2}%, autocast + GradScaler {mixed:.2}%", device.describe());
    assert!(full > 85.0, "{name}: the f32 run learned too little ({full:.2}%)");
    assert!((full - mixed).abs() <= 0.5, "{name}: f32 {full:.2}% vs mixed {mixed:.2}%");
}

#[test]
fn mlp_with_autocast_matches_f32_accuracy_on_the_cpu() {
    // f32 and mixed precision start from the same seeded model.
    if !common::own_process() {
        return;
    }
    same_accuracy("MLP", mlp, &Device::Cpu);
}

#[test]
fn cnn_with_autocast_matches_f32_accuracy_on_the_cpu() {
    // f32 and mixed precision start from the same seeded model.
    if !common::own_process() {
        return;
    }
    same_accuracy("CNN", models::mnist_cnn, &Device::Cpu);
}

#[cfg(feature = "gpu")]
#[test]
fn mlp_and_cnn_with_autocast_match_f32_accuracy_on_the_gpu() {
    // f32 and mixed precision start from the same seeded model.
    if !common::own_process() {
        return;
    }
    let Some(dev) = common::gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!() };
    if !g.shader_f16() {
        eprintln!("SKIPPED: {} has no shader-f16", g.name());
        return;
    }
    same_accuracy("MLP", mlp, &dev);
    same_accuracy("CNN", models::mnist_cnn, &dev);
}
