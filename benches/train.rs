//! Training steps with `nn` layers and the Adam optimizer, on the cpu and (when
//! an adapter exists) on the GPU: the small MNIST CNN of issue 4 (batch 64,
//! 1x28x28: conv 1->8 k3, ReLU, maxpool 2, conv 8->16 k3, ReLU, maxpool 2,
//! linear 400->10) and the 784-256-128-10 MLP (batch 64).

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use skiff::nn::{Layer, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, DType, Device, Reduction, Result, Tensor};
use std::time::Duration;

const SAMPLES: usize = 10;

/// A benchmarked model: its name, how to build it, and its input shape.
type ModelSpec = (&'static str, fn() -> Result<Sequential>, &'static [usize]);
const BATCH: usize = 64;

fn devices() -> Vec<(&'static str, Device)> {
    let mut v = vec![("cpu", Device::Cpu)];
    match Device::gpu() {
        Ok(g) => v.push(("gpu", g)),
        Err(e) => println!("train bench: no GPU adapter ({e}); cpu only"),
    }
    v
}

fn bench_steps(c: &mut Criterion) {
    manual_seed(0);
    let mut group = c.benchmark_group("train_step_adam");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(BATCH as u64));
    let models: [ModelSpec; 2] =
        [("cnn", common::cnn, &[BATCH, 1, 28, 28]), ("mlp", common::mlp_layers, &[BATCH, 784])];
    for (dev_name, dev) in devices() {
        for (name, build, shape) in models {
            let model = build().expect("model");
            model.to(&dev).expect("to device");
            let mut opt = Adam::new(model.parameters(), AdamConfig::default()).expect("optimizer");
            let x = Tensor::randn(shape, DType::F32).unwrap().to(&dev).expect("input");
            let y = Tensor::randint(0, 10, &[BATCH]).and_then(|t| t.to(&dev)).expect("labels");
            let mut step = || -> Result<()> {
                let loss = model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
                opt.zero_grad();
                loss.backward()?;
                opt.step()?;
                dev.synchronize()
            };
            step().expect("warm-up step");
            common::reset();
            group.bench_function(BenchmarkId::new(format!("{name}/{dev_name}"), BATCH), |b| {
                b.iter_custom(|iters| common::timed(iters, || step().expect("step")))
            });
            if common::full_run() {
                if let Some(s) = common::median_seconds(SAMPLES) {
                    println!("{name} Adam step on {dev_name}, batch {BATCH}: {} per step", common::fmt_secs(s));
                }
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_steps);
criterion_main!(benches);
