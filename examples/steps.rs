//! Runs N Adam training steps of the benchmark MLP (784-256-128-10) or CNN
//! (conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3, ReLU, max-pool 2, linear
//! 400->10) at batch 64 on the cpu, eagerly or through `jit::compile`, and
//! prints the ms per step: one side of a whole-process comparison with a
//! peer (`benches/peers/torch_steps.py` runs the same steps in PyTorch):
//!
//!     cargo build --release --example steps
//!     farm-bench --vs 'python benches/peers/torch_steps.py mlp 400' -- target/release/examples/steps mlp compiled 400
//!
//! Arguments: `mlp|cnn`, `eager|compiled|amp` (amp: eager under
//! `amp::autocast` with a `GradScaler`), the step count (after 3 warm-up
//! steps), and `cpu` (the default) or `gpu` (the first adapter: lavapipe
//! here). On a GPU it also prints the device memory the run allocated (the
//! buffer pool's high-water mark: parameters, optimizer state, activations).
//! A fifth argument `profile` then runs 10 more steps under `skiff::profile`
//! and prints its table: per op, the host time and, on an adapter with
//! timestamp queries (lavapipe), the GPU time, summed over those 10 steps.

#[path = "../benches/common/mod.rs"]
mod common;

use skiff::amp::{autocast, GradScaler, GradScalerConfig};
use skiff::nn::{Layer, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{jit, manual_seed, DType, Device, Reduction, Result, Tensor};
use std::cell::RefCell;
use std::time::Instant;

/// The model and its input shape at batch 64 (the benchmarks' own, benches/common).
fn model(name: &str) -> Result<(Sequential, Vec<usize>)> {
    Ok(match name {
        "mlp" => (common::mlp_layers()?, vec![64, 784]),
        "tiny" => (
            Sequential::new()
                .push(skiff::nn::Linear::new(2, 16)?)
                .push(skiff::nn::ReLU::new())
                .push(skiff::nn::Linear::new(16, 2)?),
            vec![64, 2],
        ),
        _ => (skiff::models::mnist_cnn()?, vec![64, 1, 28, 28]),
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (name, mode) = (args.get(1).map_or("mlp", |s| s.as_str()), args.get(2).map_or("eager", |s| s.as_str()));
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let device = if args.get(4).map(|s| s.as_str()) == Some("gpu") { Device::gpu()? } else { Device::Cpu };
    manual_seed(0);
    let (net, shape) = model(name)?;
    net.to(&device)?;
    let opt = RefCell::new(Adam::new(net.parameters(), AdamConfig::default())?);
    let x = Tensor::randn(&shape, DType::F32)?.to(&device)?;
    let y = Tensor::randint(0, if name == "tiny" { 2 } else { 10 }, &[64])?.to(&device)?;
    let scaler = RefCell::new(GradScaler::new(GradScalerConfig::default())?);
    let step = |i: &[Tensor]| -> Result<Vec<Tensor>> {
        let mut opt = opt.borrow_mut();
        opt.zero_grad();
        let forward = || net.forward(&i[0])?.cross_entropy(&i[1], Reduction::Mean, 0.0);
        if mode == "amp" {
            let loss = autocast(forward)?;
            let mut scaler = scaler.borrow_mut();
            scaler.scale(&loss)?.backward()?;
            scaler.step(&mut *opt)?;
            scaler.update()?;
            return Ok(vec![loss.detach()]);
        }
        let loss = forward()?;
        loss.backward()?;
        opt.step()?;
        Ok(vec![loss.detach()])
    };
    let mut compiled = jit::compile(step);
    let mut run = |i: &[Tensor]| if mode == "compiled" { compiled.call(i) } else { step(i) };
    for _ in 0..3 {
        run(&[x.clone(), y.clone()])?;
    }
    let start = Instant::now();
    let mut loss = Vec::new();
    for _ in 0..steps {
        loss = run(&[x.clone(), y.clone()])?;
        // Each step waits for the device, as the criterion benchmarks do.
        device.synchronize()?;
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let mut table = String::new();
    if args.get(5).map(|s| s.as_str()) == Some("profile") {
        let (out, profile) = skiff::profile::profile(|| -> Result<()> {
            for _ in 0..10 {
                run(&[x.clone(), y.clone()])?;
            }
            device.synchronize()
        })?;
        out?;
        table = format!("10 more steps, profiled:\n{}", profile.table());
    }
    let kernels: Vec<usize> = compiled.programs().iter().map(|t| t.program().kernels()).collect();
    let memory = match &device {
        #[cfg(feature = "gpu")]
        Device::Gpu(g) => {
            format!(", device memory allocated {:.2} MiB", g.counters().bytes_allocated as f64 / 1048576.0)
        }
        _ => String::new(),
    };
    println!("{name} {mode}: {ms:.3} ms/step, loss {}, compiled kernels per step {kernels:?}{memory}", loss[0].item()?);
    print!("{table}");
    Ok(())
}
