//! The GPU backend (`Device::gpu()`): per-op overhead of 1,000 chained
//! 1-element adds (with and without autograd), dispatch rate of a chain of
//! small elementwise ops, f32 matmul GFLOP/s (256^3 and 1024^3; 2048^3 and
//! 4096^3 too on a real GPU), the CNN's
//! convolution products as an implicit GEMM and as unfold + matmul, and one
//! 784-256-128-10 MLP SGD training step at batch 64 with everything on the
//! GPU. Every timed call ends in `synchronize()`, so the figures include the
//! GPU's work, not just the recording. Without a GPU adapter it prints why
//! and measures nothing.

mod common;

use common::Mlp;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use skiff::{manual_seed, DType, Device, Result, Tensor};
use std::time::Duration;

const CHAIN: usize = 1000;
const SAMPLES: usize = 10;

fn device() -> Option<Device> {
    match Device::gpu() {
        Ok(d) => Some(d),
        Err(e) => {
            println!("gpu bench: SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

fn print(label: &str, f: impl FnOnce(f64) -> String) {
    if common::full_run() {
        if let Some(s) = common::median_seconds(SAMPLES) {
            println!("gpu {label}: {}", f(s));
        }
    }
}

/// (dispatches, readbacks) recorded so far on the device.
fn counts(dev: &Device) -> (u64, u64) {
    match dev {
        #[cfg(feature = "gpu")]
        Device::Gpu(g) => (g.counters().dispatches, g.counters().readbacks),
        _ => (0, 0),
    }
}

fn bench_overhead(c: &mut Criterion) {
    let Some(dev) = device() else { return };
    println!("gpu bench device: {}", dev.describe());
    let mut group = c.benchmark_group("gpu_overhead");
    group.throughput(Throughput::Elements(CHAIN as u64));
    group.sample_size(SAMPLES).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let one = Tensor::ones(&[1], DType::F32).unwrap().to(&dev).expect("upload");
    for (label, requires_grad) in [("no_grad", false), ("autograd", true)] {
        let x = Tensor::ones(&[1], DType::F32)
            .unwrap()
            .to(&dev)
            .and_then(|t| t.requires_grad_(requires_grad))
            .expect("leaf");
        let step = || -> Result<Tensor> {
            let mut y = x.clone();
            for _ in 0..CHAIN {
                y = y.add(&one)?;
            }
            dev.synchronize()?;
            Ok(y)
        };
        common::reset();
        group.bench_function(BenchmarkId::new("add_chain_1000", label), |b| {
            b.iter_custom(|iters| common::timed(iters, || step().expect("add chain")))
        });
        print(&format!("overhead/{label}"), |s| {
            format!("{} per op ({CHAIN} chained 1-element adds, synchronized)", common::fmt_secs(s / CHAIN as f64))
        });
        // Host-side cost alone: a chain shorter than one submission batch,
        // timed without waiting for the device (the wait happens outside).
        let host = || -> Result<Tensor> {
            let mut y = x.clone();
            for _ in 0..HOST_CHAIN {
                y = y.add(&one)?;
            }
            Ok(y)
        };
        common::reset();
        group.bench_function(BenchmarkId::new("add_chain_host_only", label), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += common::timed(1, || host().expect("add chain"));
                    dev.synchronize().expect("sync");
                }
                total
            })
        });
        print(&format!("overhead/{label}/host"), |s| {
            format!(
                "{} per op host-side (recording + binding, {HOST_CHAIN} chained adds, no wait)",
                common::fmt_secs(s / HOST_CHAIN as f64)
            )
        });
    }
    group.finish();
}

/// Shorter than one submission batch (256 dispatches), so no submit is timed.
const HOST_CHAIN: usize = 200;

fn bench_dispatch_rate(c: &mut Criterion) {
    let Some(dev) = device() else { return };
    let mut group = c.benchmark_group("gpu_dispatch");
    group.throughput(Throughput::Elements(CHAIN as u64));
    group.sample_size(SAMPLES).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let x = Tensor::randn(&[4096], DType::F32).unwrap().to(&dev).expect("upload");
    // Four kinds of kernel (one dispatch each), so the pipeline changes every op.
    let step = || -> Result<Tensor> {
        let mut y = x.clone();
        for _ in 0..CHAIN / 4 {
            y = y.mul_scalar(0.5)?.add(&x)?.tanh()?.relu()?;
        }
        dev.synchronize()?;
        Ok(y)
    };
    let before = counts(&dev).0;
    step().expect("elementwise chain");
    let per_chain = counts(&dev).0 - before;
    common::reset();
    group.bench_function(BenchmarkId::new("elementwise_chain_1000", 4096), |b| {
        b.iter_custom(|iters| common::timed(iters, || step().expect("elementwise chain")))
    });
    print("dispatch", |s| {
        format!(
            "{:.0} dispatches/s ({per_chain} dispatches per chain of {CHAIN} 4096-element ops, {} per op)",
            per_chain as f64 / s,
            common::fmt_secs(s / CHAIN as f64)
        )
    });
    group.finish();
}

fn bench_matmul(c: &mut Criterion) {
    let Some(dev) = device() else { return };
    let mut group = c.benchmark_group("gpu_matmul_f32");
    group.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES).warm_up_time(Duration::from_millis(500));
    manual_seed(0);
    // 2048^3 and 4096^3 on real GPUs only (a software adapter takes minutes).
    let real = !dev.is_software();
    let sizes: &[usize] = match (common::full_run(), real) {
        (true, true) => &[256, 1024, 2048, 4096],
        (true, false) => &[256, 1024],
        (false, _) => &[64],
    };
    for &n in sizes {
        let a = Tensor::randn(&[n, n], DType::F32).unwrap().to(&dev).expect("upload");
        let b = Tensor::randn(&[n, n], DType::F32).unwrap().to(&dev).expect("upload");
        let flops = 2 * n * n * n;
        let product = || -> Result<Tensor> {
            let c = a.matmul(&b)?;
            dev.synchronize()?;
            Ok(c)
        };
        product().expect("warm-up product");
        group.throughput(Throughput::Elements(flops as u64));
        group.measurement_time(Duration::from_secs(if n >= 1024 { 10 } else { 3 }));
        common::reset();
        group.bench_function(BenchmarkId::from_parameter(format!("{n}x{n}x{n}")), |bch| {
            bch.iter_custom(|iters| common::timed(iters, || product().expect("matmul")))
        });
        print(&format!("matmul {n}^3"), |s| {
            format!("{} per product, {:.2} GFLOP/s", common::fmt_secs(s), flops as f64 / s / 1e9)
        });
    }
    group.finish();
}

/// The benchmark CNN's two convolution products at batch 64 (3x3, no
/// padding): the implicit GEMM (`KernelSpec::ConvGemm`, the image read
/// through the window) against unfold2d's columns and then the product.
fn bench_conv_gemm(c: &mut Criterion) {
    let Some(dev) = device() else { return };
    let mut group = c.benchmark_group("gpu_conv_gemm");
    group.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES).warm_up_time(Duration::from_millis(500));
    manual_seed(0);
    for (channels, side, out_channels) in [(1, 28, 8), (8, 13, 16)] {
        let out = side - 2;
        let g = skiff::kernel::Window2d {
            n: 64,
            c: channels,
            h: side,
            w: side,
            kernel: [3, 3],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            out_h: out,
            out_w: out,
        };
        let x = Tensor::randn(&[64, channels, side, side], DType::F32).unwrap().to(&dev).expect("upload");
        let w = Tensor::randn(&[out_channels, channels * 9], DType::F32).unwrap().to(&dev).expect("upload");
        let implicit = || -> Result<Tensor> {
            let y = skiff::dispatch::conv::conv_gemm("conv_gemm", &w, &x, &g)?;
            dev.synchronize()?;
            Ok(y)
        };
        let explicit = || -> Result<Tensor> {
            let y = w.matmul(&x.unfold2d(g.kernel, g.stride, g.padding, g.dilation)?)?;
            dev.synchronize()?;
            Ok(y)
        };
        let shape = format!("[64,{channels},{side},{side}]x{out_channels}");
        for (name, run) in [("implicit", &implicit as &dyn Fn() -> Result<Tensor>), ("unfold+matmul", &explicit)] {
            run().expect("warm-up");
            group.measurement_time(Duration::from_secs(3));
            common::reset();
            group.bench_function(BenchmarkId::new(name, &shape), |b| {
                b.iter_custom(|iters| common::timed(iters, || run().expect("convolution product")))
            });
            print(&format!("{name} {shape}"), |s| format!("{} per product", common::fmt_secs(s)));
        }
    }
    group.finish();
}

fn bench_mlp(c: &mut Criterion) {
    let Some(dev) = device() else { return };
    let mut group = c.benchmark_group("gpu_mlp_784_256_128_10_sgd_step");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    manual_seed(0);
    let batch = 64;
    let setup = || -> Result<(Mlp, Tensor, Tensor)> {
        let model = Mlp::new(&[784, 256, 128, 10], &dev)?;
        let x = Tensor::randn(&[batch, 784], DType::F32).unwrap().to(&dev)?;
        let y = Tensor::randint(0, 10, &[batch])?.to(&dev)?;
        model.train_step(&x, &y, &dev)?; // compiles the pipelines, fills the pool
        Ok((model, x, y))
    };
    let (model, x, y) = match setup() {
        Ok(s) => s,
        Err(e) => {
            println!("gpu mlp step: SKIPPED: the training step does not run on the GPU yet: {e}");
            return;
        }
    };
    let before = counts(&dev);
    model.train_step(&x, &y, &dev).expect("step");
    let after = counts(&dev);
    let (calls, reads) = (after.0 - before.0, after.1 - before.1);
    group.throughput(Throughput::Elements(batch as u64));
    common::reset();
    group.bench_function(BenchmarkId::new("batch", batch), |b| {
        b.iter_custom(|iters| common::timed(iters, || model.train_step(&x, &y, &dev).expect("step")))
    });
    print(&format!("mlp step, batch {batch}"), |s| {
        format!("{} per step ({calls} dispatches, {reads} readbacks per step)", common::fmt_secs(s))
    });
    group.finish();
}

criterion_group!(benches, bench_overhead, bench_dispatch_rate, bench_matmul, bench_conv_gemm, bench_mlp);
criterion_main!(benches);
