//! A small MLP with deterministic data, for the capture tests (tests/jit*.rs):
//! no test draws from the global generator, which the tests running in
//! parallel share.

use skiff::{Device, Tensor};

/// Deterministic values in [-1, 1).
pub fn values(seed: u64, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((seed as f32 * 7.31 + i as f32 * 1.37).sin() * 43758.547).fract()).collect()
}

/// A 4-8-3 MLP's parameters (weights [in, out], biases), leaves on `device`.
pub fn params(seed: u64, device: &Device) -> Vec<Tensor> {
    [&[4usize, 8][..], &[8], &[8, 3], &[3]]
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let v: Vec<f32> = values(seed * 10 + k as u64, s.iter().product()).iter().map(|x| x * 0.5).collect();
            Tensor::from_vec(v, s).unwrap().to(device).unwrap().requires_grad_(true).unwrap()
        })
        .collect()
}

/// The MLP's logits.
pub fn forward(p: &[Tensor], x: &Tensor) -> skiff::Result<Tensor> {
    x.matmul(&p[0])?.add(&p[1])?.relu()?.matmul(&p[2])?.add(&p[3])
}

/// `rows` inputs [rows, 4] and their labels in 0..3.
pub fn batch(seed: u64, rows: usize, device: &Device) -> (Tensor, Tensor) {
    let x = Tensor::from_vec(values(seed, rows * 4), &[rows, 4]).unwrap().to(device).unwrap();
    let labels: Vec<i32> = values(seed + 100, rows).iter().map(|v| ((v + 1.0) * 1.5) as i32 % 3).collect();
    (x, Tensor::from_vec(labels, &[rows]).unwrap().to(device).unwrap())
}

/// One training step: zero_grad, forward, cross-entropy, backward, `opt.step()`.
pub fn step(p: &[Tensor], opt: &mut dyn skiff::optim::Optimizer, x: &Tensor, y: &Tensor) -> skiff::Result<Tensor> {
    opt.zero_grad();
    let loss = forward(p, x)?.cross_entropy(y, skiff::Reduction::Mean, 0.0)?;
    loss.backward()?;
    opt.step()?;
    Ok(loss.detach())
}
