//! One MLP training step, 784-256-128-10 with ReLU and cross-entropy: forward,
//! backward, and a plain SGD update written in tensor ops under `no_grad`
//! (in place). Batch 64 and 256; throughput counts samples.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use skiff::{manual_seed, no_grad, DType, Reduction, Result, Tensor};
use std::time::Duration;

const SAMPLES: usize = 10;
const LR: f64 = 0.01;

struct Mlp {
    params: Vec<Tensor>,
}

impl Mlp {
    fn new(sizes: &[usize]) -> Result<Mlp> {
        let mut params = Vec::new();
        for w in sizes.windows(2) {
            let scale = (2.0 / w[0] as f64).sqrt();
            params.push(Tensor::randn(&[w[0], w[1]], DType::F32).mul_scalar(scale)?.requires_grad_(true)?);
            params.push(Tensor::zeros(&[w[1]], DType::F32).requires_grad_(true)?);
        }
        Ok(Mlp { params })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let layers = self.params.len() / 2;
        let mut h = x.clone();
        for (i, wb) in self.params.chunks(2).enumerate() {
            h = h.matmul(&wb[0])?.add(&wb[1])?;
            if i + 1 < layers {
                h = h.relu()?;
            }
        }
        Ok(h)
    }

    fn train_step(&self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let loss = self.forward(x)?.cross_entropy(y, Reduction::Mean, 0.0)?;
        loss.backward()?;
        no_grad(|| {
            for p in &self.params {
                if let Some(g) = p.grad() {
                    p.sub_(&g.mul_scalar(LR)?)?;
                }
                p.zero_grad();
            }
            Ok::<_, skiff::Error>(())
        })?;
        Ok(loss)
    }
}

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
        let model = Mlp::new(&[784, 256, 128, 10]).expect("model");
        let x = Tensor::randn(&[batch, 784], DType::F32);
        let y = Tensor::randint(0, 10, &[batch]).expect("labels");
        group.throughput(Throughput::Elements(batch as u64));
        common::reset();
        group.bench_function(BenchmarkId::new("batch", batch), |b| {
            b.iter_custom(|iters| common::timed(iters, || model.train_step(&x, &y).expect("step")))
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
