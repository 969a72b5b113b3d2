//! The GPU execution model's steady state (DESIGN, "GPU execution model"):
//! once warm, a training step of an MLP creates no buffers (the pool serves
//! every allocation), compiles no pipelines (the cache holds them), and
//! submits at most twice per step besides the submit each readback needs.
//! Without a GPU adapter the test prints a loud SKIPPED line and passes.
#![cfg(feature = "gpu")]

mod common;

use skiff::device::GpuCounters;
use skiff::{no_grad, DType, Device, Reduction, Result, Tensor};

const WARMUP: usize = 3;
const STEPS: usize = 20;
/// Layer widths: 784-256-128-10 (MNIST-sized), batch 32.
const DIMS: [usize; 4] = [784, 256, 128, 10];
const BATCH: usize = 32;
const LR: f64 = 0.05;

struct Mlp {
    params: Vec<Tensor>,
}

impl Mlp {
    fn new(gpu: &Device) -> Result<Mlp> {
        skiff::manual_seed(0);
        let mut params = Vec::new();
        for w in DIMS.windows(2) {
            let scale = (2.0 / w[0] as f64).sqrt();
            params.push(Tensor::randn(&[w[0], w[1]], DType::F32).mul_scalar(scale)?.to(gpu)?.requires_grad_(true)?);
            params.push(Tensor::zeros(&[w[1]], DType::F32).to(gpu)?.requires_grad_(true)?);
        }
        Ok(Mlp { params })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        let layers = self.params.len() / 2;
        for (l, p) in self.params.chunks(2).enumerate() {
            h = h.matmul(&p[0])?.add(&p[1])?;
            if l + 1 < layers {
                h = h.relu()?;
            }
        }
        Ok(h)
    }

    /// One SGD step; returns the loss, read back once.
    fn step(&self, x: &Tensor, y: &Tensor) -> Result<f64> {
        let loss = self.forward(x)?.cross_entropy(y, Reduction::Mean, 0.0)?;
        loss.backward()?;
        no_grad(|| -> Result<()> {
            for p in &self.params {
                let g = p.grad().expect("every parameter gets a gradient");
                p.sub_(&g.mul_scalar(LR)?)?;
                p.zero_grad();
            }
            Ok(())
        })?;
        loss.item()
    }
}

fn counters(gpu: &Device) -> GpuCounters {
    match gpu {
        Device::Gpu(g) => g.counters(),
        Device::Cpu => unreachable!("only called with a GPU"),
    }
}

#[test]
fn steady_training_steps_allocate_nothing_and_compile_nothing() {
    let Some(gpu) = common::gpu() else { return };
    eprintln!("gpu counters: running on {}", gpu.describe());
    let mlp = Mlp::new(&gpu).unwrap();
    // The data is created once and lives on the GPU.
    let x = Tensor::randn(&[BATCH, DIMS[0]], DType::F32).to(&gpu).unwrap();
    let y = Tensor::randint(0, DIMS[3] as i32, &[BATCH]).unwrap().to(&gpu).unwrap();

    let mut losses = Vec::new();
    for _ in 0..WARMUP {
        losses.push(mlp.step(&x, &y).unwrap());
    }
    let before = counters(&gpu);
    for _ in 0..STEPS {
        losses.push(mlp.step(&x, &y).unwrap());
    }
    let after = counters(&gpu);

    let d = |f: fn(&GpuCounters) -> u64| f(&after) - f(&before);
    let (created, compiled) = (d(|c| c.buffers_created), d(|c| c.pipelines_compiled));
    let (submits, readbacks, dispatches) = (d(|c| c.submits), d(|c| c.readbacks), d(|c| c.dispatches));
    let steps = STEPS as u64;
    eprintln!(
        "gpu counters over {STEPS} steps: {created} buffers created, {} reused, {compiled} pipelines compiled, \
         {dispatches} dispatches ({} per step), {} bind groups, {submits} submits, {readbacks} readbacks; \
         losses {:.4} -> {:.4}",
        d(|c| c.buffers_reused),
        dispatches / steps,
        d(|c| c.bind_groups_created),
        losses[0],
        losses[losses.len() - 1],
    );
    let mut problems = Vec::new();
    if created != 0 {
        problems.push(format!("{created} buffers created after warm-up (the pool should serve every allocation)"));
    }
    if compiled != 0 {
        problems.push(format!("{compiled} pipelines compiled after warm-up (the cache should hold them all)"));
    }
    if submits > 2 * steps + readbacks {
        problems.push(format!(
            "{submits} submits for {STEPS} steps and {readbacks} readbacks: more than 2 per step plus one per readback"
        ));
    }
    if readbacks < steps {
        problems.push(format!("{readbacks} readbacks for {STEPS} steps: each step reads its loss"));
    }
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    if last.is_nan() || last >= first {
        problems.push(format!("training did not reduce the loss: {losses:?}"));
    }
    assert!(problems.is_empty(), "GPU steady state ({}):\n{}", gpu.describe(), problems.join("\n"));
}
