//! Training steps with `nn` layers and the Adam optimizer, on the cpu and (when
//! an adapter exists) on the GPU: the small MNIST CNN of issue 4 (batch 64,
//! 1x28x28: conv 1->8 k3, ReLU, maxpool 2, conv 8->16 k3, ReLU, maxpool 2,
//! linear 400->10) and the 784-256-128-10 MLP (batch 64).

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use skiff::nn::{Layer, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, DType, Reduction, Result, Tensor};

const SAMPLES: usize = 10;

/// A benchmarked model: its name, how to build it, and its input shape.
type ModelSpec = (&'static str, fn() -> Result<Sequential>, &'static [usize]);
const BATCH: usize = 64;

fn bench_steps(c: &mut Criterion) {
    manual_seed(0);
    let mut group = common::step_group(c, "train_step_adam", SAMPLES, BATCH);
    let models: [ModelSpec; 2] =
        [("cnn", skiff::models::mnist_cnn, &[BATCH, 1, 28, 28]), ("mlp", common::mlp_layers, &[BATCH, 784])];
    for (dev_name, dev) in common::devices("train") {
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
