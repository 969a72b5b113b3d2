//! Per-op dispatch overhead: 1,000 chained `add`s on 1-element tensors, with
//! and without autograd recording. Criterion's throughput is 1,000 elements
//! (ops) per iteration; the per-op time is also printed directly.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use skiff::{DType, Tensor};
use std::time::Duration;

const CHAIN: usize = 1000;
const SAMPLES: usize = 20;

fn chain(x: &Tensor, one: &Tensor) -> Tensor {
    let mut y = x.clone();
    for _ in 0..CHAIN {
        y = y.add(one).expect("add");
    }
    y
}

fn bench_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("overhead");
    group.throughput(Throughput::Elements(CHAIN as u64));
    group.sample_size(SAMPLES).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    let one = Tensor::ones(&[1], DType::F32).unwrap();
    for (label, requires_grad) in [("no_grad", false), ("autograd", true)] {
        let x = Tensor::ones(&[1], DType::F32).unwrap().requires_grad_(requires_grad).expect("leaf");
        common::reset();
        // With autograd the recorded graph is dropped inside the timing too,
        // as it is in a real training step.
        group.bench_function(BenchmarkId::new("add_chain_1000", label), |b| {
            b.iter_custom(|iters| common::timed(iters, || chain(&x, &one)))
        });
        if common::full_run() {
            if let Some(s) = common::median_seconds(SAMPLES) {
                println!(
                    "overhead/{label}: {} per op ({CHAIN} chained 1-element adds)",
                    common::fmt_secs(s / CHAIN as f64)
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_overhead);
criterion_main!(benches);
