//! The benchmark of skiff::distributed (benches/distributed.sh runs it as 1
//! and as 2 ranks; the figures are in benches/README.md):
//! - `ProcessGroup::all_reduce` of f32 tensors from 1 Ki to 4 Mi elements:
//!   time per call, algorithm bandwidth (bytes / time) and bus bandwidth
//!   (2 (n - 1) / n bytes / time, the traffic a ring all_reduce moves per rank);
//! - the CNN and MLP Adam steps at a global batch of 64 split over the ranks: ms per
//!   step, and the part spent in `synchronize` (waiting for the buckets after
//!   backward), for each compression.
//!
//! `cargo build --release --features distributed --example dist_bench`
//! `mpirun -np 2 target/release/examples/dist_bench [--device cpu|gpu]`

use skiff::distributed::{self, Compression, DdpConfig, DistributedDataParallel, ProcessGroup, ReduceOp};
use skiff::nn::{Flatten, Layer, Linear, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, models, DType, Device, Reduction, Result, Tensor};
use std::time::{Duration, Instant};

fn mlp() -> Result<Sequential> {
    Ok(Sequential::new()
        .push(Flatten::new())
        .push(Linear::new(784, 256)?)
        .push(ReLU::new())
        .push(Linear::new(256, 128)?)
        .push(ReLU::new())
        .push(Linear::new(128, 10)?))
}

/// The median of `f`'s times over `reps` calls after two warm-up calls, the
/// ranks lined up by a barrier before each call.
fn median(group: &ProcessGroup, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    let mut times = Vec::with_capacity(reps);
    for i in 0..reps + 2 {
        group.barrier()?;
        let t = Instant::now();
        f()?;
        if i >= 2 {
            times.push(t.elapsed());
        }
    }
    times.sort();
    Ok(times[times.len() / 2])
}

fn all_reduce_table(group: &ProcessGroup, device: &Device) -> Result<()> {
    let n = group.world_size() as f64;
    if group.rank() == 0 {
        println!("| f32 elements | bytes | time per all_reduce | algorithm bandwidth | bus bandwidth |");
        println!("| --- | --- | --- | --- | --- |");
    }
    for elements in [1usize << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22] {
        let x = Tensor::ones(&[elements], DType::F32)?.to(device)?;
        let reps = if elements >= 1 << 20 { 9 } else { 31 };
        let t = median(group, reps, || group.all_reduce(&x, ReduceOp::Sum).map(|_| ()))?;
        let bytes = (elements * 4) as f64;
        let algo = bytes / t.as_secs_f64() / 1e9;
        if group.rank() == 0 {
            println!(
                "| {elements} | {:.1} MiB | {:.3} ms | {algo:.2} GB/s | {:.2} GB/s |",
                bytes / (1 << 20) as f64,
                t.as_secs_f64() * 1e3,
                algo * 2.0 * (n - 1.0) / n
            );
        }
    }
    Ok(())
}

fn step_table(group: &ProcessGroup, device: &Device, name: &str, make: fn() -> Result<Sequential>) -> Result<()> {
    let per_rank = 64 / group.world_size();
    manual_seed(0);
    let x = Tensor::randn(&[per_rank, 1, 28, 28], DType::F32)?.to(device)?;
    let y = Tensor::from_vec((0..per_rank as i32).map(|i| i % 10).collect(), &[per_rank])?.to(device)?;
    if group.rank() == 0 {
        println!(
            "\n| {name} step, {} ranks x {per_rank} digits | ms per step | of which synchronize | bytes sent per rank |",
            group.world_size()
        );
        println!("| --- | --- | --- | --- |");
    }
    for (scheme, compression) in
        [("exact", Compression::None), ("f16", Compression::F16), ("top-k 1%", Compression::TopK { ratio: 0.01 })]
    {
        let model = make()?;
        model.to(device)?;
        let ddp = DistributedDataParallel::new(&model, group, DdpConfig { compression, ..Default::default() })?;
        let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
        let mut in_sync = Vec::new();
        let step = median(group, 41, || {
            opt.zero_grad();
            model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?.backward()?;
            let t = Instant::now();
            ddp.synchronize()?;
            in_sync.push(t.elapsed());
            opt.step()?;
            // The step's end on the device, as a training loop's loss readback would.
            model.parameters()[0].sum_all()?.item()?;
            Ok(())
        })?;
        in_sync.sort();
        let sync = in_sync[in_sync.len() / 2];
        if group.rank() == 0 {
            println!(
                "| {scheme} | {:.2} | {:.2} ms | {} |",
                step.as_secs_f64() * 1e3,
                sync.as_secs_f64() * 1e3,
                ddp.last_sync_bytes()
            );
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let group = distributed::init()?;
    let device = match std::env::args().skip_while(|a| a != "--device").nth(1).as_deref() {
        Some("gpu") => Device::gpu()?,
        _ => Device::Cpu,
    };
    if group.rank() == 0 {
        println!("{} ranks, tensors on {}\n", group.world_size(), device.describe());
    }
    all_reduce_table(&group, &device)?;
    step_table(&group, &device, "CNN", models::mnist_cnn)?;
    step_table(&group, &device, "MLP 784-256-128-10", mlp)
}
