//! The layer benchmarks of "The layers and ops that real models need", one
//! side of a same-run comparison with PyTorch (`benches/peers/torch_layers.py`
//! runs the same work; `benches/layers.sh` runs both and prints the ratios):
//!
//! - `lstm`: an LSTM layer (input 256, hidden 256) over 64 steps at batch 32,
//!   forward and backward of sum(output);
//! - `convt`: a DCGAN-style ConvTranspose2d (128 -> 64 channels, kernel 4,
//!   stride 2, padding 1) of [64, 128, 16, 16], forward and backward;
//! - `sort`: a sort of 2^20 floats (values and indices), forward only.
//!
//! ```text
//! cargo build --release --example layer_steps
//! target/release/examples/layer_steps lstm 10 [cpu|gpu]
//! ```
//!
//! Prints the ms per call (after 2 warm-up calls), the median of the calls.

use skiff::nn::{ConvTranspose2d, ConvTranspose2dConfig, Layer, Recurrent};
use skiff::{manual_seed, DType, Device, Result, Tensor};
use std::time::Instant;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("lstm", |s| s.as_str());
    let calls: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let device = if args.get(3).map(|s| s.as_str()) == Some("gpu") { Device::gpu()? } else { Device::Cpu };
    manual_seed(0);
    if what == "sort" {
        let x = Tensor::randn(&[1 << 20], DType::F32)?.to(&device)?;
        return time(what, &device, calls, &|| {
            let (values, indices) = x.sort(0, false, false)?;
            // Wait for the device: read one element of each.
            values.narrow(0, 0, 1)?.to_f32_vec()?;
            indices.narrow(0, 0, 1)?.to_dtype(DType::F32)?.to_f32_vec()?;
            Ok(())
        });
    }
    let (layer, shape): (Box<dyn Layer>, Vec<usize>) = match what {
        "lstm" => (Box::new(Recurrent::lstm(256, 256)?), vec![64, 32, 256]),
        "convt" => {
            let c = ConvTranspose2dConfig { stride: [2, 2], padding: [1, 1], ..Default::default() };
            (Box::new(ConvTranspose2d::with_config(128, 64, [4, 4], c)?), vec![64, 128, 16, 16])
        }
        other => panic!("unknown benchmark {other:?}: lstm, convt or sort"),
    };
    layer.to(&device)?;
    let x = Tensor::randn(&shape, DType::F32)?.to(&device)?.requires_grad_(true)?;
    time(what, &device, calls, &|| {
        layer.zero_grad();
        // As the PyTorch side's `x.grad = None`: no accumulation into the last call's gradient.
        x.zero_grad();
        let y = layer.forward(&x)?.sum_all()?;
        y.backward()?;
        // Wait for the device: read one element of the input's gradient.
        x.grad().expect("a gradient").flatten(0, -1)?.narrow(0, 0, 1)?.to_f32_vec()?;
        Ok(())
    })
}

/// Prints the median ms of `calls` calls of `call`, after 2 warm-up calls.
fn time(what: &str, device: &Device, calls: usize, call: &dyn Fn() -> Result<()>) -> Result<()> {
    for _ in 0..2 {
        call()?;
    }
    let mut ms: Vec<f64> = (0..calls)
        .map(|_| {
            let t = Instant::now();
            call().map(|_| t.elapsed().as_secs_f64() * 1e3)
        })
        .collect::<Result<_>>()?;
    ms.sort_by(f64::total_cmp);
    let per = if what == "sort" { "sort" } else { "forward+backward" };
    println!("{what} skiff ({device}): {:.3} ms per {per} (median of {calls})", ms[calls / 2]);
    Ok(())
}
