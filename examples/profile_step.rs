//! Where a training step's time goes: one MLP step (784-256-128-10, Adam,
//! batch 64) profiled on the cpu and, when there is one, on the GPU; the
//! table is printed and the Chrome trace written to `DIR/step-<device>.json`
//! (open it in chrome://tracing or https://ui.perfetto.dev).
//!
//! `cargo run --release --example profile_step -- [DIR]`

use skiff::nn::{Layer, Linear, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{DType, Device, Reduction, Result, Tensor};

fn step(model: &Sequential, opt: &mut Adam, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    opt.zero_grad();
    let loss = model.forward(x)?.cross_entropy(y, Reduction::Mean, 0.0)?;
    loss.backward()?;
    opt.step()?;
    Ok(loss)
}

fn main() -> Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| std::env::temp_dir().display().to_string());
    let mut devices = vec![Device::Cpu];
    devices.extend(Device::gpu().ok());
    for device in devices {
        skiff::manual_seed(0);
        let model = Sequential::new()
            .push(Linear::new(784, 256)?)
            .push(ReLU::new())
            .push(Linear::new(256, 128)?)
            .push(ReLU::new())
            .push(Linear::new(128, 10)?);
        model.to(&device)?;
        let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 1e-3, ..Default::default() })?;
        let x = Tensor::randn(&[64, 784], DType::F32)?.to(&device)?;
        let y = Tensor::randint(0, 10, &[64])?.to(&device)?;
        // Two warm steps: buffers pooled, pipelines compiled.
        for _ in 0..2 {
            step(&model, &mut opt, &x, &y)?.item()?;
        }
        let (loss, profile) = skiff::profile(|| step(&model, &mut opt, &x, &y)?.item())?;
        println!("MLP step on {}: loss {:.4}\n{profile}", device.describe(), loss?);
        let name = if device.is_gpu() { "gpu" } else { "cpu" };
        let path = std::path::Path::new(&dir).join(format!("step-{name}.json"));
        std::fs::write(&path, profile.chrome_trace())
            .map_err(|e| skiff::Error::Value { op: "profile_step", msg: e.to_string() })?;
        println!("Chrome trace: {}\n", path.display());
    }
    Ok(())
}
