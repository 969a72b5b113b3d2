//! Helpers shared by the benchmarks (not a bench target itself: cargo only
//! discovers `benches/*.rs` and `benches/*/main.rs`).

#![allow(dead_code)]

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// True under `cargo bench`; false when `cargo test --all-targets` runs the
/// benches once as a smoke test (criterion's test mode), where the largest
/// sizes are skipped to keep debug builds fast.
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

thread_local! {
    static SAMPLES: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Times `iters` calls of `f` for criterion's `iter_custom`, and keeps the
/// per-call time of each sample so `median_seconds` can print derived units
/// (GFLOP/s, per-op time) from the very measurements criterion reports.
pub fn timed<R>(iters: u64, mut f: impl FnMut() -> R) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(f());
    }
    let d = start.elapsed();
    SAMPLES.with(|s| s.borrow_mut().push(d.as_secs_f64() / iters.max(1) as f64));
    d
}

/// Forgets the samples of the previous benchmark.
pub fn reset() {
    SAMPLES.with(|s| s.borrow_mut().clear());
}

/// Median per-call seconds over the last `n` samples since `reset` (None if
/// none). Pass the group's sample size: criterion's warm-up calls come first.
pub fn median_seconds(n: usize) -> Option<f64> {
    SAMPLES.with(|s| {
        let all = s.borrow();
        let mut v = all[all.len().saturating_sub(n)..].to_vec();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        Some(v[v.len() / 2])
    })
}

/// Human-readable seconds.
pub fn fmt_secs(s: f64) -> String {
    if s < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if s < 1e-3 {
        format!("{:.2} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// The cpu, and the default GPU when an adapter exists (`bench` names the
/// benchmark in the note printed without one).
pub fn devices(bench: &str) -> Vec<(&'static str, skiff::Device)> {
    let mut v = vec![("cpu", skiff::Device::Cpu)];
    match skiff::Device::gpu() {
        Ok(g) => v.push(("gpu", g)),
        Err(e) => println!("{bench} bench: no GPU adapter ({e}); cpu only"),
    }
    v
}

/// A criterion group for whole training steps: flat sampling, `samples`
/// samples of about 3 s after 0.5 s of warm-up, throughput in samples of `batch`.
pub fn step_group<'a>(
    c: &'a mut criterion::Criterion,
    name: &str,
    samples: usize,
    batch: usize,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sampling_mode(criterion::SamplingMode::Flat)
        .sample_size(samples)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(criterion::Throughput::Elements(batch as u64));
    group
}

/// The 784-256-128-10 MLP of the training benchmarks, as `nn` layers.
pub fn mlp_layers() -> skiff::Result<skiff::nn::Sequential> {
    use skiff::nn::{Linear, ReLU, Sequential};
    Ok(Sequential::new()
        .push(Linear::new(784, 256)?)
        .push(ReLU::new())
        .push(Linear::new(256, 128)?)
        .push(ReLU::new())
        .push(Linear::new(128, 10)?))
}

/// The benchmark MLP (784-256-128-10 by default): Kaiming-scaled weights,
/// ReLU, cross-entropy, and a plain SGD update written in tensor ops.
pub struct Mlp {
    params: Vec<skiff::Tensor>,
}

/// SGD learning rate of the benchmark step.
pub const LR: f64 = 0.01;

impl Mlp {
    pub fn new(sizes: &[usize], dev: &skiff::Device) -> skiff::Result<Mlp> {
        use skiff::{DType, Tensor};
        let mut params = Vec::new();
        for w in sizes.windows(2) {
            let scale = (2.0 / w[0] as f64).sqrt();
            params.push(Tensor::randn(&[w[0], w[1]], DType::F32)?.mul_scalar(scale)?.to(dev)?.requires_grad_(true)?);
            params.push(Tensor::zeros(&[w[1]], DType::F32)?.to(dev)?.requires_grad_(true)?);
        }
        Ok(Mlp { params })
    }

    pub fn forward(&self, x: &skiff::Tensor) -> skiff::Result<skiff::Tensor> {
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

    /// Forward, backward and the in-place SGD update under `no_grad`; waits
    /// for the device so the timing includes the work.
    pub fn train_step(
        &self,
        x: &skiff::Tensor,
        y: &skiff::Tensor,
        dev: &skiff::Device,
    ) -> skiff::Result<skiff::Tensor> {
        let loss = self.forward(x)?.cross_entropy(y, skiff::Reduction::Mean, 0.0)?;
        loss.backward()?;
        skiff::no_grad(|| {
            for p in &self.params {
                if let Some(g) = p.grad() {
                    p.sub_(&g.mul_scalar(LR)?)?;
                }
                p.zero_grad();
            }
            Ok::<_, skiff::Error>(())
        })?;
        dev.synchronize()?;
        Ok(loss)
    }
}
