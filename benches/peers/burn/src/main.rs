//! The Burn side of skiff's `examples/steps.rs`: N Adam training steps of the
//! same MLP (784-256-128-10) or CNN (conv 1->8 k3, ReLU, max-pool 2, conv
//! 8->16 k3, ReLU, max-pool 2, linear 400->10) at batch 64, in Burn (from
//! crates.io), printing the ms per step, so skiff's steps can be compared with
//! Burn's in one sitting on the same machine. A standalone cargo project (its
//! own `[workspace]`, its own Cargo.lock), not part of skiff's package nor of
//! `npm test`.
//!
//!     CARGO_TARGET_DIR=/work/burn-target cargo build --release --manifest-path benches/peers/burn/Cargo.toml
//!     /work/burn-target/release/burn-steps cnn wgpu 20
//!
//! Arguments: `mlp|cnn`, `ndarray|wgpu`, and the step count (default 100,
//! timed after 3 warm-up steps). Each step is forward, cross-entropy (mean)
//! against random labels in 0..10, backward and an Adam step (lr 1e-3, betas
//! 0.9/0.999, eps 1e-8: Burn's own default eps is 1e-5, so it is set), on one
//! seeded normal input batch reused every step, as in steps.rs; then the
//! device is synchronized (`Device::sync`), as steps.rs does after every step.
//!
//! Devices: `ndarray` is Burn's `Device::ndarray()` (deprecated in Burn 0.22
//! in favour of `flex`, but the long-standing pure-Rust CPU backend).
//! `wgpu` is `Device::wgpu(DeviceKind::Cpu)`: the wgpu adapter whose type is
//! `Cpu`, i.e. a software rasterizer. Here that is lavapipe (Mesa's software
//! Vulkan driver; Burn reports it as `llvmpipe (LLVM 15.0.6, 256 bits)`),
//! which is also what skiff's `Device::gpu()` (the first adapter) gets here.
//! `DeviceKind::Cpu` rather than `DefaultDevice` so that the software adapter
//! is chosen by kind, not by wgpu's power preference (on a machine with a real
//! GPU this still measures lavapipe). Run with `BURN_STEPS_VERBOSE=1` to print
//! the adapter's name and the labels to stderr.
//! Before running on wgpu: `export XDG_RUNTIME_DIR=/tmp/xdg` (an existing
//! directory with mode 700).
//!
//! Features: Burn's default features are off (`default-features = false`),
//! so the plain build has no rayon threads or SIMD kernels in ndarray and no
//! kernel fusion or autotuning on wgpu. `--features burn-defaults` turns those
//! four on (a second build of the Burn crates, about half an hour on 2 cores):
//!
//!     CARGO_TARGET_DIR=/work/burn-target cargo build --release --features burn-defaults --manifest-path benches/peers/burn/Cargo.toml
//!
//! With autotuning, each wgpu run first benchmarks kernel candidates (tens of
//! seconds on lavapipe, inside the warm-up steps, so not in the timing).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, DeviceKind, Distribution, Int, Tensor};
use std::time::Instant;

#[derive(Module, Debug)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
}

impl Mlp {
    fn new(device: &Device) -> Self {
        Self {
            fc1: LinearConfig::new(784, 256).init(device),
            fc2: LinearConfig::new(256, 128).init(device),
            fc3: LinearConfig::new(128, 10).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = relu(self.fc1.forward(x));
        let x = relu(self.fc2.forward(x));
        self.fc3.forward(x)
    }
}

#[derive(Module, Debug)]
struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    fc: Linear,
}

impl Cnn {
    fn new(device: &Device) -> Self {
        Self {
            // No padding, stride 1, with bias: Conv2dConfig's defaults.
            conv1: Conv2dConfig::new([1, 8], [3, 3]).init(device),
            conv2: Conv2dConfig::new([8, 16], [3, 3]).init(device),
            // Stride defaults to the kernel size.
            pool: MaxPool2dConfig::new([2, 2]).init(),
            fc: LinearConfig::new(400, 10).init(device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let x = self.pool.forward(relu(self.conv1.forward(x))); // [64, 8, 13, 13]
        let x = self.pool.forward(relu(self.conv2.forward(x))); // [64, 16, 5, 5]
        self.fc.forward(x.flatten(1, 3)) // [64, 400] -> [64, 10]
    }
}

/// Runs 3 warm-up steps and then `steps` timed ones; returns ms per step and
/// the last step's loss.
fn bench<M: Module, const D: usize>(
    mut model: M,
    shape: [usize; D],
    forward: impl Fn(&M, Tensor<D>) -> Tensor<2>,
    device: &Device,
    steps: usize,
) -> (f64, f32) {
    let x = Tensor::<D>::random(shape, Distribution::Normal(0.0, 1.0), device);
    // Labels in 0..10: uniform floats in [0, 10), floored (clamped in case the
    // upper bound is ever drawn).
    let y: Tensor<1, Int> =
        Tensor::<1>::random([shape[0]], Distribution::Uniform(0.0, 10.0), device).floor().int().clamp(0, 9);
    if std::env::var_os("BURN_STEPS_VERBOSE").is_some() {
        eprintln!("labels: {:?}", y.clone().into_data().convert::<i64>().try_to_vec::<i64>().unwrap());
    }
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();

    let mut step = |model: M| -> (M, Tensor<1>) {
        let loss = loss_fn.forward(forward(&model, x.clone()), y.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let model = optim.step(1e-3, model, grads);
        device.sync().expect("device sync");
        (model, loss)
    };

    for _ in 0..3 {
        model = step(model).0;
    }
    let start = Instant::now();
    let mut loss = None;
    for _ in 0..steps {
        let (next, l) = step(model);
        model = next;
        loss = Some(l);
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let loss = loss.map_or(f32::NAN, |l| l.into_scalar::<f32>());
    (ms, loss)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: burn-steps <mlp|cnn> <ndarray|wgpu> [steps=100]";
    let (Some(name), Some(backend)) = (args.get(1), args.get(2)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let steps: usize = match args.get(3).map(|s| s.parse()) {
        None => 100,
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let device = match backend.as_str() {
        #[allow(deprecated)]
        "ndarray" => Device::ndarray(),
        // The software adapter by kind: lavapipe (`llvmpipe`) on this machine.
        "wgpu" => Device::wgpu(DeviceKind::Cpu),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
    .autodiff();
    if std::env::var_os("BURN_STEPS_VERBOSE").is_some() {
        match device.identity() {
            Some(id) => eprintln!("device: {} ({})", id.name, id.fingerprint),
            None => eprintln!("device: {device:?}"),
        }
    }
    device.seed(0);

    let (ms, loss) = match name.as_str() {
        "mlp" => bench(Mlp::new(&device), [64, 784], Mlp::forward, &device, steps),
        "cnn" => bench(Cnn::new(&device), [64, 1, 28, 28], Cnn::forward, &device, steps),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    println!("{name} {backend}: {ms:.3} ms/step, loss {loss:.4}");
}
