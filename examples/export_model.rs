//! Trains a small CNN natively, exports it with `jit::save_inference_model`,
//! and writes what it should predict, for the browser suites to run the
//! exported file in wasm (Node, Chromium's cpu fallback and WebGPU) and
//! compare.
//!
//!     cargo run --example export_model -- OUT_DIR
//!
//! writes OUT_DIR/model.safetensors (the forward program and the weights in
//! one file) and OUT_DIR/expected.json ({ shape, input, logits }).

use skiff::jit::{load_inference_model, save_inference_model};
use skiff::nn::{Conv2d, Flatten, Layer, Linear, MaxPool2d, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, no_grad, Device, Reduction, Result, Tensor};
use std::path::PathBuf;

const BATCH: usize = 8;

/// Deterministic images and labels: label k is a bright k-th row band.
fn batch(seed: u64) -> Result<(Tensor, Tensor)> {
    let mut pixels = Vec::with_capacity(BATCH * 64);
    let mut labels = Vec::with_capacity(BATCH);
    for i in 0..BATCH {
        let label = (i as u64 + seed) % 4;
        for p in 0..64u64 {
            let noise = ((seed * 131 + i as u64 * 17 + p * 7) % 13) as f32 / 26.0;
            let band = if (p / 8) / 2 == label { 1.0 } else { 0.0 };
            pixels.push(band + noise);
        }
        labels.push(label as i32);
    }
    Ok((Tensor::from_vec(pixels, &[BATCH, 1, 8, 8])?, Tensor::from_vec(labels, &[BATCH])?))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    manual_seed(7);
    let model = Sequential::new()
        .push(Conv2d::new(1, 4, [3, 3])?)
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2])?)
        .push(Flatten::new())
        .push(Linear::new(4 * 3 * 3, 4)?);
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 0.02, ..Default::default() })?;
    for step in 0..60 {
        let (x, y) = batch(step)?;
        opt.zero_grad();
        model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?.backward()?;
        opt.step()?;
    }
    let (x, _) = batch(1000)?;
    std::fs::create_dir_all(&out)?;
    let path = out.join("model.safetensors");
    save_inference_model(&path, &model, std::slice::from_ref(&x))?;
    let logits = no_grad(|| model.forward(&x))?;
    // The file runs natively too, with the same bits.
    let again = load_inference_model(&path, &Device::Cpu)?.run(std::slice::from_ref(&x))?;
    assert_eq!(again[0].to_f32_vec()?, logits.to_f32_vec()?, "the exported model predicts what the live one does");
    let expected = serde_json::json!({
        "shape": x.shape(),
        "input": x.to_f32_vec()?,
        "logits": logits.to_f32_vec()?,
        "logitsShape": logits.shape(),
    });
    std::fs::write(out.join("expected.json"), expected.to_string())?;
    println!("wrote {} and expected.json", path.display());
    Ok(())
}
