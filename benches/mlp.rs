//! One MLP training step, 784-256-128-10 with ReLU and cross-entropy: forward,
//! backward, and a plain SGD update written in tensor ops under `no_grad`
//! (in place). Batch 64 and 256; throughput counts samples.

mod common;

use common::Mlp;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use skiff::{manual_seed, DType, Device, Tensor};
use std::time::Duration;

const SAMPLES: usize = 10;

fn bench_mlp(c: &mut Criterion) {
    let mut group = c.benchmark_group("mlp_784_256_128_10_sgd_step");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    manual_seed(0);
    let batches: &[usize] = if common::full_run() { &[64, 256] } else { &[64] };
    for &batch in batches {
        let model = Mlp::new(&[784, 256, 128, 10], &Device::Cpu).expect("model");
        let x = Tensor::randn(&[batch, 784], DType::F32).unwrap();
        let y = Tensor::randint(0, 10, &[batch]).expect("labels");
        group.throughput(Throughput::Elements(batch as u64));
        common::reset();
        group.bench_function(BenchmarkId::new("batch", batch), |b| {
            b.iter_custom(|iters| common::timed(iters, || model.train_step(&x, &y, &Device::Cpu).expect("step")))
        });
        if common::full_run() {
            if let Some(s) = common::median_seconds(SAMPLES) {
                println!("mlp step, batch {batch}: {} per step", common::fmt_secs(s));
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_mlp);
criterion_main!(benches);
