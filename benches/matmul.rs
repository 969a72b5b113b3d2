//! f32 matrix products, n x n by n x n for n = 256 and 1024. Criterion's
//! throughput counts 2 n^3 floating-point operations per product, so its
//! "elem/s" reads as FLOP/s; GFLOP/s is also printed directly.
//!
//! `matmul_modes`: the training steps' products (the MLP's forward and its
//! weight gradient, a convolution's, 512^3) in the default mode and in
//! deterministic mode (`skiff::set_deterministic`), one after the other.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use skiff::{manual_seed, DType, Tensor};
use std::time::Duration;

const SAMPLES: usize = 10;

fn bench_matmul(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul_f32");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    manual_seed(0);
    let sizes: &[usize] = if common::full_run() { &[256, 1024] } else { &[256] };
    for &n in sizes {
        let a = Tensor::randn(&[n, n], DType::F32).unwrap();
        let b = Tensor::randn(&[n, n], DType::F32).unwrap();
        let flops = 2 * n * n * n;
        group.throughput(Throughput::Elements(flops as u64));
        common::reset();
        group.bench_function(BenchmarkId::from_parameter(format!("{n}x{n}x{n}")), |bch| {
            bch.iter_custom(|iters| common::timed(iters, || a.matmul(&b).expect("matmul")))
        });
        if common::full_run() {
            if let Some(s) = common::median_seconds(SAMPLES) {
                println!("matmul {n}^3: {} per product, {:.1} GFLOP/s", common::fmt_secs(s), flops as f64 / s / 1e9);
            }
        }
    }
    group.finish();
}

fn bench_modes(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul_modes");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    manual_seed(0);
    // (m, k, n, a transposed): a [k, m] tensor read as its transpose, as a weight gradient's.
    let products = [(64, 784, 256, false), (784, 64, 256, true), (16, 72, 121, false), (512, 512, 512, false)];
    for (m, k, n, transposed) in products {
        let a = if transposed {
            Tensor::randn(&[k, m], DType::F32).unwrap().transpose(0, 1).unwrap()
        } else {
            Tensor::randn(&[m, k], DType::F32).unwrap()
        };
        let b = Tensor::randn(&[k, n], DType::F32).unwrap();
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        for deterministic in [false, true] {
            skiff::set_deterministic(deterministic);
            let mode = if deterministic { "deterministic" } else { "default" };
            let t = if transposed { "^T" } else { "" };
            group.bench_function(BenchmarkId::from_parameter(format!("{m}x{k}{t}x{n} {mode}")), |bch| {
                bch.iter(|| a.matmul(&b).expect("matmul"))
            });
        }
    }
    skiff::set_deterministic(false);
    group.finish();
}

criterion_group!(benches, bench_matmul, bench_modes);
criterion_main!(benches);
