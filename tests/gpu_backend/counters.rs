//! The GPU execution model's steady state (DESIGN, "GPU execution model"):
//! once warm, every training step of an MLP does exactly the same GPU work:
//! it creates no buffers (the pool serves every allocation), compiles no
//! pipelines (the cache holds them), creates no bind groups (the pool hands
//! out the same buffers each step, so the cache hits), reads back once (its
//! loss) and submits once (that readback). The counts are exact, not upper
//! bounds: one extra readback or submit per step is the regression this test
//! exists to catch. Without a GPU adapter the test prints a loud SKIPPED line
//! and passes.
#![cfg(feature = "gpu")]

use crate::common;

use skiff::backend::gpu::runtime::BATCH_DISPATCHES;
use skiff::device::GpuCounters;
use skiff::{no_grad, DType, Device, Reduction, Result, Tensor};

/// Step 0 creates the buffers and pipelines; step 1 still creates bind groups
/// (its free set differs from step 0's, which started empty); from step 2 on
/// every step is the same.
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
            params.push(Tensor::randn(&[w[0], w[1]], DType::F32)?.mul_scalar(scale)?.to(gpu)?.requires_grad_(true)?);
            params.push(Tensor::zeros(&[w[1]], DType::F32)?.to(gpu)?.requires_grad_(true)?);
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

/// What one step did, from the counters before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StepCounts {
    buffers_created: u64,
    buffers_reused: u64,
    pipelines_compiled: u64,
    bind_groups_created: u64,
    dispatches: u64,
    submits: u64,
    readbacks: u64,
    uploads: u64,
}

impl StepCounts {
    fn between(a: &GpuCounters, b: &GpuCounters) -> StepCounts {
        StepCounts {
            buffers_created: b.buffers_created - a.buffers_created,
            buffers_reused: b.buffers_reused - a.buffers_reused,
            pipelines_compiled: b.pipelines_compiled - a.pipelines_compiled,
            bind_groups_created: b.bind_groups_created - a.bind_groups_created,
            dispatches: b.dispatches - a.dispatches,
            submits: b.submits - a.submits,
            readbacks: b.readbacks - a.readbacks,
            uploads: b.uploads - a.uploads,
        }
    }
}

#[test]
fn steady_training_steps_allocate_nothing_and_compile_nothing() {
    // The counters are the context's: a private one counts this test's work alone.
    let Some((gpu, _)) = common::private_gpu() else { return };
    eprintln!("gpu counters: running on {}", gpu.describe());
    let mlp = Mlp::new(&gpu).unwrap();
    // The data is created once and lives on the GPU.
    let x = Tensor::randn(&[BATCH, DIMS[0]], DType::F32).unwrap().to(&gpu).unwrap();
    let y = Tensor::randint(0, DIMS[3] as i32, &[BATCH]).unwrap().to(&gpu).unwrap();

    let mut losses = Vec::new();
    for _ in 0..WARMUP {
        losses.push(mlp.step(&x, &y).unwrap());
    }
    let mut steps = Vec::new();
    for _ in 0..STEPS {
        let before = counters(&gpu);
        losses.push(mlp.step(&x, &y).unwrap());
        steps.push(StepCounts::between(&before, &counters(&gpu)));
    }
    let first = steps[0];
    eprintln!("gpu counters per step: {first:?}; losses {:.4} -> {:.4}", losses[0], losses[losses.len() - 1]);

    // The kernels a step runs are fixed by the model; they fit in one batch,
    // so no submit happens because the batch filled up.
    assert!(first.dispatches > 0 && first.dispatches < BATCH_DISPATCHES as u64, "{first:?}");
    let want = StepCounts {
        // The pool serves every allocation of the step...
        buffers_created: 0,
        buffers_reused: first.buffers_reused,
        // ...the pipeline cache holds every kernel...
        pipelines_compiled: 0,
        // ...and the bind-group cache every (kernel, buffers) pair: the pool
        // hands out the same buffers in the same order each step.
        bind_groups_created: 0,
        dispatches: first.dispatches,
        // One readback: `loss.item()`. Nothing else reads back: the labels'
        // range check uses their host mirror (they never change).
        readbacks: 1,
        // One submit: the readback's, which submits the step's whole batch
        // with its copy. Uploads are recorded into the pending encoder and
        // dispatches stay below BATCH_DISPATCHES, so neither submits.
        submits: 1,
        // One upload: cross_entropy's backward scatters the gradient through
        // the labels (gather's adjoint), with a sorted plan built from their
        // host mirror, whose keys go up each step.
        uploads: 1,
    };
    for (i, got) in steps.iter().enumerate() {
        assert_eq!(*got, want, "steady step {i} of {STEPS} ({})", gpu.describe());
    }
    let (first_loss, last_loss) = (losses[0], losses[losses.len() - 1]);
    assert!(last_loss.is_finite() && last_loss < first_loss, "training did not reduce the loss: {losses:?}");
}
