//! A small native training run: a 2-layer MLP learns to tell apart two
//! interleaved spirals, with plain full-batch SGD written in tensor ops.
//!
//!     cargo run --release --example train      (or: npm start)
//!
//! It prints the step, the loss and the elapsed time as the loss falls, and
//! the final accuracy. A fixed seed makes every run identical.

use skiff::{manual_seed, no_grad, DType, Reduction, Result, Tensor};
use std::f64::consts::PI;
use std::time::Instant;

const POINTS_PER_CLASS: usize = 500;
const HIDDEN: usize = 64;
const STEPS: usize = 2000;
const LR: f64 = 0.5;
const LOG_EVERY: usize = 200;

/// Two interleaved spirals in the unit square, and their 0/1 labels.
fn spirals(n: usize) -> Result<(Tensor, Tensor)> {
    let mut points = Vec::new();
    for class in 0..2 {
        // Radius (and angle) grows along the arm; sqrt spreads points evenly.
        let t = Tensor::rand(&[n, 1], DType::F32)?.sqrt()?.mul_scalar(3.0 * PI)?;
        let angle = t.add_scalar(class as f64 * PI)?;
        let arm = Tensor::concat(&[t.mul(&angle.cos()?)?, t.mul(&angle.sin()?)?], 1)?;
        let noise = Tensor::randn(&[n, 2], DType::F32)?.mul_scalar(0.3)?;
        points.push(arm.add(&noise)?.div_scalar(3.0 * PI)?);
    }
    let labels: Vec<i32> = (0..2 * n).map(|i| (i >= n) as i32).collect();
    Ok((Tensor::concat(&points, 0)?, Tensor::from_vec(labels, &[2 * n])?))
}

/// A weight matrix with He-style scaling, as a leaf that requires grad.
fn weight(fan_in: usize, fan_out: usize) -> Result<Tensor> {
    Tensor::randn(&[fan_in, fan_out], DType::F32)?.mul_scalar((2.0 / fan_in as f64).sqrt())?.requires_grad_(true)
}

fn bias(n: usize) -> Result<Tensor> {
    Tensor::zeros(&[n], DType::F32)?.requires_grad_(true)
}

struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

impl Mlp {
    fn new(inputs: usize, hidden: usize, classes: usize) -> Result<Mlp> {
        Ok(Mlp { w1: weight(inputs, hidden)?, b1: bias(hidden)?, w2: weight(hidden, classes)?, b2: bias(classes)? })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = x.matmul(&self.w1)?.add(&self.b1)?.relu()?;
        h.matmul(&self.w2)?.add(&self.b2)
    }

    fn params(&self) -> [&Tensor; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    /// Plain SGD: p -= lr * grad, in place, outside the graph.
    fn sgd_step(&self, lr: f64) -> Result<()> {
        no_grad(|| {
            for p in self.params() {
                if let Some(g) = p.grad() {
                    p.sub_(&g.mul_scalar(lr)?)?;
                }
                p.zero_grad();
            }
            Ok(())
        })
    }
}

fn accuracy(logits: &Tensor, labels: &Tensor) -> Result<f64> {
    let hits = logits.argmax(Some(1), false)?.eq(labels)?;
    hits.to_dtype(DType::F32)?.mean(&[], false)?.item()
}

fn main() -> Result<()> {
    manual_seed(42);
    let (x, y) = spirals(POINTS_PER_CLASS)?;
    let model = Mlp::new(2, HIDDEN, 2)?;
    println!("two spirals: {} points, MLP 2-{HIDDEN}-2 (ReLU), full-batch SGD lr {LR}, {STEPS} steps", x.shape()[0]);

    let start = Instant::now();
    for step in 1..=STEPS {
        let loss = model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
        loss.backward()?;
        model.sgd_step(LR)?;
        if step == 1 || step % LOG_EVERY == 0 {
            let secs = start.elapsed().as_secs_f64();
            println!("step {step:5}  loss {:.4}  {secs:6.2} s", loss.item()?);
        }
    }

    let logits = no_grad(|| model.forward(&x))?;
    let loss = logits.cross_entropy(&y, Reduction::Mean, 0.0)?.item()?;
    let acc = accuracy(&logits, &y)?;
    println!("final: loss {loss:.4}, accuracy {:.1}% ({:.2} s)", acc * 100.0, start.elapsed().as_secs_f64());
    Ok(())
}
