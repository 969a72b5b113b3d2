//! Eager against compiled (`skiff::jit::compile`) training steps, in one run
//! on one machine: the 784-256-128-10 MLP and the MNIST CNN (batch 64, Adam),
//! on the cpu and, when an adapter exists, the GPU. For each, the kernels
//! per step (the captured program before and after the passes), the step
//! times, and the matmul part: the step's products (its matmuls and, on a GPU
//! with the window kernels, its convolutions' implicit GEMMs; same shapes
//! and views) run alone, so `step - matmul` is the rest, which capture can shorten,
//! and the optimizer update alone (the same fused Adam kernels in both modes,
//! so a floor under the compiled rest; the last two columns are its time and
//! its share of the eager rest).
//!
//!     cargo bench --bench jit
//!
//! (`SKIFF_BENCH_FULL=1` also prints the medians as a table row.)

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use skiff::kernel::KernelSpec;
use skiff::nn::{Layer, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::program::Instr;
use skiff::{jit, manual_seed, DType, Device, Reduction, Result, Tensor};
use std::cell::RefCell;

const SAMPLES: usize = 10;
const BATCH: usize = 64;

fn step(model: &Sequential, opt: &mut Adam, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    opt.zero_grad();
    let loss = model.forward(x)?.cross_entropy(y, Reduction::Mean, 0.0)?;
    loss.backward()?;
    opt.step()?;
    Ok(loss.detach())
}

fn is_product(spec: &KernelSpec) -> bool {
    match spec {
        KernelSpec::Matmul { .. } | KernelSpec::ConvGemm(_) | KernelSpec::ConvWeightGemm(_) => true,
        KernelSpec::Epilogue(e) => matches!(e.head, KernelSpec::Matmul { .. }),
        _ => false,
    }
}

/// One product of a program with fresh operands: a matmul, or a convolution's
/// implicit GEMM (GPUs with the window kernels: forward, input or weight gradient).
struct Product {
    spec: KernelSpec,
    a: Tensor,
    b: Tensor,
}

impl Product {
    fn run(&self) -> Result<Tensor> {
        use skiff::dispatch::conv::{conv_gemm, conv_weight_gemm};
        match &self.spec {
            KernelSpec::ConvGemm(g) => conv_gemm("bench", &self.a, &self.b, g),
            KernelSpec::ConvWeightGemm(g) => conv_weight_gemm("bench", &self.a, &self.b, g),
            _ => self.a.matmul(&self.b),
        }
    }
}

/// The operands of every product of a program, as fresh tensors with the
/// same shapes and strides.
fn products(p: &skiff::program::Program, dev: &Device) -> Vec<Product> {
    let operand = |layout: &skiff::shape::Layout| -> Tensor {
        // A contiguous buffer permuted into the same strides (transposed views stay transposed).
        let mut order: Vec<usize> = (0..layout.shape.len()).collect();
        order.sort_by_key(|&d| std::cmp::Reverse(layout.strides[d]));
        let shape: Vec<usize> = order.iter().map(|&d| layout.shape[d]).collect();
        let t = Tensor::randn(&shape, DType::F32).unwrap().to(dev).unwrap();
        let mut back = vec![0isize; order.len()];
        for (i, &d) in order.iter().enumerate() {
            back[d] = i as isize;
        }
        t.permute(&back).unwrap()
    };
    p.instrs
        .iter()
        .filter_map(|i| match i {
            // A product with a fused epilogue counts as its product (its first two inputs).
            Instr::Run { spec, inputs, .. } if is_product(spec) => {
                Some(Product { spec: spec.clone(), a: operand(&inputs[0].layout), b: operand(&inputs[1].layout) })
            }
            _ => None,
        })
        .collect()
}

fn bench_jit(c: &mut Criterion) {
    manual_seed(0);
    let mut group = common::step_group(c, "jit_train_step_adam", SAMPLES, BATCH);
    let devices = common::devices("jit");
    type Build = fn() -> Result<Sequential>;
    let models: [(&str, Build, &[usize]); 2] =
        [("mlp", common::mlp_layers, &[BATCH, 784]), ("cnn", skiff::models::mnist_cnn, &[BATCH, 1, 28, 28])];
    for (dev_name, dev) in devices {
        for (name, build, shape) in models {
            let x = Tensor::randn(shape, DType::F32).unwrap().to(&dev).unwrap();
            let y = Tensor::randint(0, 10, &[BATCH]).and_then(|t| t.to(&dev)).unwrap();
            // Eager.
            let model = build().unwrap();
            model.to(&dev).unwrap();
            let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
            step(&model, &mut opt, &x, &y).unwrap();
            // Kernels per step: the capture as recorded (what eager dispatches) and after the passes.
            let (_, mut traced) =
                jit::trace(&[x.clone(), y.clone()], |i| Ok(vec![step(&model, &mut opt, &i[0], &i[1])?])).unwrap();
            let eager_kernels = traced.program().kernels();
            let stats = traced.optimize();
            let compiled_kernels = traced.program().kernels();
            let plan = traced.memory_plan();
            println!(
                "{name} on {dev_name}: {eager_kernels} kernels eager, {compiled_kernels} compiled ({} merged, {} dead, {} fused); \
                 intermediates {} KiB unplanned, arena {} KiB",
                stats.merged,
                stats.dead,
                stats.fused,
                plan.unplanned_bytes / 1024,
                plan.arena_bytes / 1024
            );
            let pairs = products(traced.program(), &dev);
            drop(traced);
            common::reset();
            group.bench_function(BenchmarkId::new(format!("{name}/{dev_name}/eager"), BATCH), |b| {
                b.iter_custom(|iters| {
                    common::timed(iters, || {
                        step(&model, &mut opt, &x, &y).unwrap();
                        dev.synchronize().unwrap()
                    })
                })
            });
            let eager = common::median_seconds(SAMPLES);
            // The optimizer update alone (the gradients of the last step are in
            // place): the same fused Adam kernels run in both modes, so this is a
            // floor under the compiled step's non-matmul part.
            common::reset();
            group.bench_function(BenchmarkId::new(format!("{name}/{dev_name}/adam"), BATCH), |b| {
                b.iter_custom(|iters| {
                    common::timed(iters, || {
                        opt.step().unwrap();
                        dev.synchronize().unwrap()
                    })
                })
            });
            let adam = common::median_seconds(SAMPLES);
            // Compiled, on a second model.
            let model = build().unwrap();
            model.to(&dev).unwrap();
            let opt = RefCell::new(Adam::new(model.parameters(), AdamConfig::default()).unwrap());
            let mut compiled =
                jit::compile(|i: &[Tensor]| Ok(vec![step(&model, &mut opt.borrow_mut(), &i[0], &i[1])?]));
            for _ in 0..3 {
                compiled.call(&[x.clone(), y.clone()]).unwrap();
            }
            common::reset();
            group.bench_function(BenchmarkId::new(format!("{name}/{dev_name}/compiled"), BATCH), |b| {
                b.iter_custom(|iters| {
                    common::timed(iters, || {
                        compiled.call(&[x.clone(), y.clone()]).unwrap();
                        dev.synchronize().unwrap()
                    })
                })
            });
            let jit_time = common::median_seconds(SAMPLES);
            assert_eq!(compiled.captures(), 2, "the timed calls replayed: {:#?}", compiled.log());
            // The products alone.
            common::reset();
            group.bench_function(BenchmarkId::new(format!("{name}/{dev_name}/matmuls"), BATCH), |b| {
                b.iter_custom(|iters| {
                    common::timed(iters, || {
                        for product in &pairs {
                            product.run().unwrap();
                        }
                        dev.synchronize().unwrap()
                    })
                })
            });
            let mm = common::median_seconds(SAMPLES);
            if let (Some(e), Some(j), Some(m), Some(a)) = (eager, jit_time, mm, adam) {
                let rest_eager = (e - m).max(1e-12);
                println!(
                    "| {name} | {dev_name} | {eager_kernels} / {compiled_kernels} | {} | {} | {:.2} | {} | {} | {} | {:.2} | {} | {:.2} |",
                    common::fmt_secs(e),
                    common::fmt_secs(j),
                    j / e,
                    common::fmt_secs(m),
                    common::fmt_secs(rest_eager),
                    common::fmt_secs((j - m).max(0.0)),
                    (j - m).max(0.0) / rest_eager,
                    common::fmt_secs(a),
                    a / rest_eager,
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_jit);
criterion_main!(benches);
