//! skiff::distributed under a real MPI job: each test runs its own body under
//! `mpirun -np 2 --oversubscribe` over loopback TCP (the test binary starts
//! mpirun on itself, filtered to the one test, with SKIFF_MPI_TEST_CHILD set)
//! and checks how the job ended. A failed assertion in a rank panics, which
//! aborts the job (MPI_Abort), so the outer test sees it.
//!
//! `cargo test --features distributed --test distributed` (needs Open MPI:
//! Debian's openmpi-bin and libopenmpi-dev; `npm test` installs them).

#![cfg(feature = "distributed")]

#[path = "../common/mod.rs"]
mod common;

use common::{expect_err, Kind};
use skiff::distributed::{self, Compression, DdpConfig, DistributedDataParallel, ProcessGroup, ReduceOp};
use skiff::io::{safetensors, DataLoader, Mnist, TensorDataset};
use skiff::nn::{Core, Flatten, Layer, Linear, Param, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use skiff::{manual_seed, no_grad, DType, Device, Error, Reduction, Result, Tensor};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "SKIFF_MPI_TEST_CHILD";
const SCRATCH: &str = "SKIFF_MPI_TEST_DIR";

/// The group, when this process is a rank of a test's MPI job.
fn rank() -> Option<ProcessGroup> {
    std::env::var_os(CHILD).map(|_| distributed::init().expect("MPI starts under mpirun"))
}

struct Job {
    ok: bool,
    output: String,
    took: Duration,
}

/// Runs `test` of this binary as `np` ranks, killing the job after `limit`.
fn mpirun(test: &str, np: usize, limit: Duration) -> Job {
    let exe = std::env::current_exe().expect("the test binary's path");
    let scratch = std::env::temp_dir().join(format!("skiff-mpi-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    let log = scratch.join("job.log");
    let file = std::fs::File::create(&log).expect("a log file");
    let mpirun = std::env::var("MPIRUN").unwrap_or_else(|_| "mpirun".into());
    let start = Instant::now();
    let mut child = Command::new(&mpirun)
        .args(["-np", &np.to_string(), "--oversubscribe"])
        // Loopback TCP between the ranks, as between machines.
        .args(["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"])
        .arg(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env(SCRATCH, &scratch)
        // CI runs as root; Open MPI refuses to without these.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("log handle"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {mpirun} (Open MPI: apt-get install openmpi-bin): {e}"));
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for mpirun") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = start.elapsed();
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let job = Job { ok: status.is_some_and(|s| s.success()), output, took };
    assert!(status.is_some(), "{test}: the MPI job hung ({limit:?}); its output:\n{}", job.output);
    job
}

/// The job succeeded and every rank reached its end.
fn assert_ranks_ok(test: &str, job: &Job, np: usize) {
    println!("{test}: the MPI job's output ({:.1} s):\n{}", job.took.as_secs_f64(), job.output);
    assert!(job.ok, "{test} failed; its output:\n{}", job.output);
    for r in 0..np {
        assert!(job.output.contains(&format!("rank {r} ok")), "{test}: rank {r} did not finish:\n{}", job.output);
    }
}

fn scratch() -> PathBuf {
    PathBuf::from(std::env::var_os(SCRATCH).expect("set by mpirun()"))
}

const LIMIT: Duration = Duration::from_secs(240);

// ---- collectives ------------------------------------------------------------

#[test]
fn collectives_on_tensors() {
    let Some(g) = rank() else {
        return assert_ranks_ok("collectives_on_tensors", &mpirun("collectives_on_tensors", 2, LIMIT), 2);
    };
    collectives(&g, &Device::Cpu).unwrap();
    if let Some(gpu) = common::gpu() {
        collectives(&g, &gpu).unwrap();
    }
    collective_errors(&g);
    println!("rank {} ok", g.rank());
}

fn collectives(g: &ProcessGroup, device: &Device) -> Result<()> {
    assert_eq!(g.world_size(), 2);
    let r = g.rank() as f32;
    let mine = Tensor::from_vec(vec![r + 1.0, -10.0 * (r + 1.0), 0.1 + r], &[3])?.to(device)?;
    let sum = g.all_reduce(&mine, ReduceOp::Sum)?;
    assert_eq!(sum.device(), *device, "the result stays on the tensor's device");
    assert_eq!(sum.to_vec::<f32>()?, vec![3.0, -30.0, 0.1f32 + 1.1f32]);
    assert_eq!(g.all_reduce(&mine, ReduceOp::Mean)?.to_vec::<f32>()?, vec![1.5, -15.0, (0.1f32 + 1.1f32) / 2.0]);
    assert_eq!(g.all_reduce(&mine, ReduceOp::Max)?.to_vec::<f32>()?, vec![2.0, -10.0, 1.1]);
    assert_eq!(g.all_reduce(&mine, ReduceOp::Min)?.to_vec::<f32>()?, vec![1.0, -20.0, 0.1]);
    if *device == Device::Cpu {
        let wide = Tensor::from_vec(vec![1e-300 * (r as f64 + 1.0); 2], &[2, 1])?;
        assert_eq!(g.all_reduce(&wide, ReduceOp::Sum)?.to_vec::<f64>()?, vec![1e-300 + 2e-300; 2]);
    }
    let ints = Tensor::from_vec(vec![g.rank() as i32 * 5 - 3], &[1])?.to(device)?;
    assert_eq!(g.all_reduce(&ints, ReduceOp::Sum)?.to_vec::<i32>()?, vec![-1]);
    let half = mine.to_dtype(DType::F16)?;
    let h = g.all_reduce(&half, ReduceOp::Sum)?;
    assert_eq!(h.dtype(), DType::F16);
    assert_eq!(h.to_vec::<skiff::f16>()?[..2], [skiff::f16::from_f32(3.0), skiff::f16::from_f32(-30.0)]);
    // In place, on a parameter-like leaf.
    let leaf = Tensor::from_vec(mine.to_vec::<f32>()?, &[3])?.to(device)?.requires_grad_(true)?;
    g.all_reduce_(&leaf, ReduceOp::Sum)?;
    assert_eq!(leaf.to_vec::<f32>()?, sum.to_vec::<f32>()?);
    // Broadcast from rank 1, and the gather in rank order.
    let b = g.broadcast(&mine, 1)?;
    assert_eq!(b.to_vec::<f32>()?, vec![2.0, -20.0, 1.1]);
    let all = g.all_gather(&mine.reshape(&[1, 3])?)?;
    assert_eq!(all.shape(), &[2, 1, 3]);
    assert_eq!(all.to_vec::<f32>()?, vec![1.0, -10.0, 0.1, 2.0, -20.0, 1.1]);
    let flags = Tensor::from_vec(vec![g.rank() as u8, 1], &[2])?.to(device)?.to_dtype(DType::Bool)?;
    assert_eq!(g.all_gather(&flags)?.to_vec::<u8>()?, vec![0, 1, 1, 1]);
    g.barrier()?;
    Ok(())
}

/// Bad input: the same clear error on every rank, and the group still works.
fn collective_errors(g: &ProcessGroup) {
    let bools = Tensor::from_vec(vec![1u8, 0], &[2]).unwrap().to_dtype(DType::Bool).unwrap();
    expect_err(g.all_reduce(&bools, ReduceOp::Max), Kind::DType, "all_reduce", &["Max", "bool", "[2]"]);
    let ints = Tensor::from_vec(vec![1i32], &[1]).unwrap();
    expect_err(g.all_reduce(&ints, ReduceOp::Mean), Kind::DType, "all_reduce", &["Mean", "i32"]);
    expect_err(g.broadcast(&ints, 2), Kind::Value, "broadcast", &["root rank 2", "world of 2"]);
    // Rank 1 passes a longer tensor than rank 0: named, not an MPI crash.
    let uneven = Tensor::zeros(&[3 + g.rank()], DType::F32).unwrap();
    expect_err(
        g.all_reduce(&uneven, ReduceOp::Sum),
        Kind::Shape,
        "all_reduce",
        &["rank 0: a f32 tensor of shape [3], rank 1: a f32 tensor of shape [4]", "same shape and dtype"],
    );
    let Err(e) = distributed::init() else { panic!("a second init fails") };
    common::check_err(&e, Kind::Distributed, "distributed::init", &["already initialised"]);
    assert_eq!(g.all_reduce(&ints, ReduceOp::Sum).unwrap().to_vec::<i32>().unwrap(), vec![2]);
}

// ---- DistributedDataParallel ------------------------------------------------

fn mlp() -> Result<Sequential> {
    Ok(Sequential::new().push(Linear::new(6, 16)?).push(ReLU::new()).push(Linear::new(16, 3)?))
}

fn params(m: &dyn Layer) -> Vec<f32> {
    m.parameters().iter().flat_map(|p| p.to_vec::<f32>().unwrap()).collect()
}

/// Two ranks with half of each batch end where one process with the whole
/// batch ends (SGD with momentum, 20 steps, several buckets), then again
/// with gradient accumulation under no_sync; and both ranks hold the same bits.
#[test]
fn ddp_matches_one_process_with_the_whole_batch() {
    let Some(g) = rank() else {
        let test = "ddp_matches_one_process_with_the_whole_batch";
        return assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
    };
    let (r, n) = (g.rank(), g.world_size());
    manual_seed(7); // the same data on every rank
    let x = Tensor::randn(&[25, 16, 6], DType::F32).unwrap();
    let y = Tensor::from_vec((0..25 * 16).map(|i| i * 7 % 3).collect(), &[25, 16]).unwrap();
    manual_seed(100 + r as u64); // different initial weights: DDP must broadcast rank 0's
    let model = mlp().unwrap();
    let reference = mlp().unwrap();
    // 64-byte buckets: a bucket per bias, and the weights split alone.
    let ddp = DistributedDataParallel::new(&model, &g, DdpConfig { bucket_bytes: 64, ..Default::default() }).unwrap();
    assert_eq!(ddp.num_buckets(), 4);
    reference.load_state_dict(&model.state_dict(), true).unwrap();
    let rank0 = g.broadcast(&Tensor::from_vec(params(&model), &[params(&model).len()]).unwrap(), 0).unwrap();
    assert_eq!(params(&model), rank0.to_vec::<f32>().unwrap(), "rank 0's parameters everywhere");
    let cfg = SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() };
    let mut opt = Sgd::new(model.parameters(), cfg).unwrap();
    let mut ref_opt = Sgd::new(reference.parameters(), cfg).unwrap();
    let half = 16 / n;
    let rows = |t: &Tensor, step: usize, from: usize, len: usize| {
        t.narrow(0, step, 1).unwrap().squeeze(Some(0)).unwrap().narrow(0, from, len).unwrap()
    };
    for step in 0..20 {
        let (xs, ys) = (rows(&x, step, r * half, half), rows(&y, step, r * half, half));
        opt.zero_grad();
        ddp.backward(&model.forward(&xs).unwrap().cross_entropy(&ys, Reduction::Mean, 0.0).unwrap()).unwrap();
        opt.step().unwrap();
        ref_opt.zero_grad();
        let (xf, yf) = (rows(&x, step, 0, 16), rows(&y, step, 0, 16));
        reference.forward(&xf).unwrap().cross_entropy(&yf, Reduction::Mean, 0.0).unwrap().backward().unwrap();
        ref_opt.step().unwrap();
    }
    assert_close_f32(&params(&model), &params(&reference), 1e-5, "after 20 steps");
    assert!(ddp.last_sync_bytes() == params(&model).len() * 4, "exact buckets send f32: {}", ddp.last_sync_bytes());
    // Gradient accumulation: two micro-batches per rank, the first under
    // no_sync; the mean of the sums is twice the whole batch's mean gradient.
    for step in 20..25 {
        opt.zero_grad();
        let quarter = half / 2;
        let loss = |from: usize| {
            let (xs, ys) = (rows(&x, step, r * half + from, quarter), rows(&y, step, r * half + from, quarter));
            model.forward(&xs).unwrap().cross_entropy(&ys, Reduction::Mean, 0.0).unwrap()
        };
        ddp.no_sync(|| loss(0).backward()).unwrap();
        ddp.backward(&loss(quarter)).unwrap();
        opt.step().unwrap();
        ref_opt.zero_grad();
        let (xf, yf) = (rows(&x, step, 0, 16), rows(&y, step, 0, 16));
        let full = reference.forward(&xf).unwrap().cross_entropy(&yf, Reduction::Mean, 0.0).unwrap();
        full.mul_scalar(2.0).unwrap().backward().unwrap();
        ref_opt.step().unwrap();
    }
    assert_close_f32(&params(&model), &params(&reference), 1e-5, "after accumulation");
    // Every rank took the same steps: the same bits.
    let mine = Tensor::from_vec(params(&model), &[params(&model).len()]).unwrap();
    let both = g.all_gather(&mine).unwrap().to_vec::<f32>().unwrap();
    let (a, b) = both.split_at(both.len() / 2);
    assert!(a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()), "ranks diverged");
    // The buckets' collectives start during backward: by the time the first
    // layer's weight gets its gradient, the later layers' buckets are on their way.
    let ddp = std::sync::Arc::new(ddp);
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
    let (watch, record) = (std::sync::Arc::downgrade(&ddp), seen.clone());
    let first_weight = model.parameters()[0].clone();
    let probe = first_weight
        .register_hook(move |_| {
            let started = watch.upgrade().map_or(0, |d| d.buckets_started());
            record.store(started, std::sync::atomic::Ordering::SeqCst);
            None
        })
        .unwrap();
    opt.zero_grad();
    model.forward(&rows(&x, 0, 0, 4)).unwrap().sum_all().unwrap().backward().unwrap();
    let started = seen.load(std::sync::atomic::Ordering::SeqCst);
    assert!(started >= ddp.num_buckets() - 2, "{started} of {} buckets started during backward", ddp.num_buckets());
    ddp.synchronize().unwrap();
    assert_eq!(ddp.buckets_started(), 0, "synchronize ends the round");
    probe.remove();
    // A second backward before synchronize is an error, on every rank.
    let l = model.forward(&rows(&x, 0, 0, 2)).unwrap().sum_all().unwrap();
    l.backward_with(None, skiff::BackwardOptions { retain_graph: true, ..Default::default() }).unwrap();
    let second = ddp.backward(&l);
    expect_err(second, Kind::Autograd, "DistributedDataParallel", &["second gradient before synchronize", "no_sync"]);
    println!("rank {r} ok");
}

/// Batch norm's running statistics follow rank 0's at every synchronize
/// (`broadcast_buffers`, on by default), and drift apart without it.
#[test]
fn ddp_broadcasts_rank_0s_buffers() {
    let Some(g) = rank() else {
        let test = "ddp_broadcasts_rank_0s_buffers";
        return assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
    };
    let bn_model = || -> Result<Sequential> {
        Ok(Sequential::new().push(Linear::new(4, 3)?).push(skiff::nn::BatchNorm1d::new(3)?))
    };
    let running_mean = |m: &Sequential| m.state_dict().into_iter().find(|(n, _)| n == "1.running_mean").unwrap().1;
    for broadcast_buffers in [true, false] {
        manual_seed(9);
        let model = bn_model().unwrap();
        let ddp =
            DistributedDataParallel::new(&model, &g, DdpConfig { broadcast_buffers, ..Default::default() }).unwrap();
        // Each rank its own batch: the statistics each forward records differ.
        manual_seed(20 + g.rank() as u64);
        let x = Tensor::randn(&[6, 4], DType::F32).unwrap().mul_scalar(1.0 + g.rank() as f64).unwrap();
        let loss = model.forward(&x).unwrap().pow_scalar(2.0).unwrap().sum_all().unwrap();
        let mine = running_mean(&model).to_vec::<f32>().unwrap();
        ddp.backward(&loss).unwrap();
        let after = running_mean(&model);
        let both = g.all_gather(&after).unwrap().to_vec::<f32>().unwrap();
        let rank0_own =
            g.broadcast(&Tensor::from_vec(mine.clone(), &[3]).unwrap(), 0).unwrap().to_vec::<f32>().unwrap();
        if broadcast_buffers {
            assert_eq!(both[..3], both[3..], "the same statistics on every rank");
            assert_eq!(after.to_vec::<f32>().unwrap(), rank0_own, "rank 0's");
        } else {
            assert_ne!(both[..3], both[3..], "each rank keeps its own");
            assert_eq!(after.to_vec::<f32>().unwrap(), mine);
        }
    }
    println!("rank {} ok", g.rank());
}

/// DDP with the model on a GPU (gradients staged through the host) takes
/// the steps DDP takes on the cpu.
#[test]
fn ddp_on_a_gpu_matches_the_cpu() {
    let Some(g) = rank() else {
        let test = "ddp_on_a_gpu_matches_the_cpu";
        return assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
    };
    let Some(gpu) = common::gpu() else {
        println!("rank {} ok", g.rank());
        return;
    };
    manual_seed(5);
    let x = Tensor::randn(&[5, 8, 6], DType::F32).unwrap();
    let y = Tensor::from_vec((0..40).map(|i| i % 3).collect(), &[5, 8]).unwrap();
    manual_seed(50 + g.rank() as u64);
    let (on_cpu, on_gpu) = (mlp().unwrap(), mlp().unwrap());
    on_gpu.to(&gpu).unwrap();
    let ddp_cpu =
        DistributedDataParallel::new(&on_cpu, &g, DdpConfig { bucket_bytes: 256, ..Default::default() }).unwrap();
    on_gpu.load_state_dict(&on_cpu.state_dict(), true).unwrap();
    let ddp_gpu =
        DistributedDataParallel::new(&on_gpu, &g, DdpConfig { bucket_bytes: 256, ..Default::default() }).unwrap();
    let cfg = AdamConfig { lr: 1e-2, ..Default::default() };
    let (mut opt_cpu, mut opt_gpu) =
        (Adam::new(on_cpu.parameters(), cfg).unwrap(), Adam::new(on_gpu.parameters(), cfg).unwrap());
    for step in 0..5 {
        let xs = x.narrow(0, step, 1).unwrap().squeeze(Some(0)).unwrap().narrow(0, 4 * g.rank(), 4).unwrap();
        let ys = y.narrow(0, step, 1).unwrap().squeeze(Some(0)).unwrap().narrow(0, 4 * g.rank(), 4).unwrap();
        for (model, ddp, opt, device) in
            [(&on_cpu, &ddp_cpu, &mut opt_cpu, Device::Cpu), (&on_gpu, &ddp_gpu, &mut opt_gpu, gpu.clone())]
        {
            opt.zero_grad();
            let (xs, ys) = (xs.to(&device).unwrap(), ys.to(&device).unwrap());
            ddp.backward(&model.forward(&xs).unwrap().cross_entropy(&ys, Reduction::Mean, 0.0).unwrap()).unwrap();
            assert_eq!(model.parameters()[0].grad().unwrap().device(), device, "the mean gradient stays on the device");
            opt.step().unwrap();
        }
    }
    assert_close_f32(&params(&on_gpu), &params(&on_cpu), 1e-4, "GPU vs cpu after 5 Adam steps");
    // The GPU's gradients reach the host one bucket at a time (concatenated
    // on the device), not one readback per parameter.
    let Device::Gpu(dev) = &gpu else { unreachable!("common::gpu gives a GPU") };
    let xs = x.narrow(0, 0, 1).unwrap().squeeze(Some(0)).unwrap().to(&gpu).unwrap();
    let loss = on_gpu.forward(&xs).unwrap().sum_all().unwrap();
    dev.synchronize().unwrap();
    let before = dev.counters().readbacks;
    opt_gpu.zero_grad();
    ddp_gpu.backward(&loss).unwrap();
    let readbacks = dev.counters().readbacks - before;
    // 256-byte buckets, last parameter first: [2.bias, 2.weight], [0.bias], [0.weight].
    assert_eq!(ddp_gpu.num_buckets(), 3);
    assert_eq!(readbacks, 3, "one readback per bucket, not one per parameter (4)");
    println!("rank {} ok", g.rank());
}

fn assert_close_f32(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: parameter element {i}: {g} vs one process {w}");
    }
}

/// A layer with one parameter vector `p` and `forward(c) = sum(p * c)`: its
/// gradient is exactly `c`, so compression can be checked to the bit.
struct Dot {
    core: Core,
    p: Param,
}

impl Layer for Dot {
    fn forward_impl(&self, c: &Tensor) -> Result<Tensor> {
        self.p.get().mul(c)?.sum_all()
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        vec![("p".into(), self.p.clone())]
    }
}

/// What every rank of a top-k exchange sends: the k largest |v| (ties to the
/// lower index), by a plain sort.
fn topk_reference(v: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|a, b| v[*b].abs().partial_cmp(&v[*a].abs()).unwrap().then(a.cmp(b)));
    idx.truncate(k);
    idx
}

#[test]
fn compressed_gradients_are_what_each_scheme_promises() {
    let Some(g) = rank() else {
        let test = "compressed_gradients_are_what_each_scheme_promises";
        return assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
    };
    let c = [
        vec![5.0f32, -4.0, 1.0, 0.5, 0.1, 3.0, 1000.7, 1.0 / 3.0],
        vec![0.0f32, 1.0, -6.0, 2.0, 0.2, -0.2, -0.01, 2.0 / 3.0],
    ];
    let mine = Tensor::from_vec(c[g.rank()].clone(), &[8]).unwrap();
    let dot = || Dot { core: Core::new(), p: Param::parameter(Tensor::zeros(&[8], DType::F32).unwrap()).unwrap() };
    let grad_after = |ddp: &DistributedDataParallel, model: &Dot| {
        model.p.get().zero_grad();
        ddp.backward(&model.forward(&mine).unwrap()).unwrap();
        model.p.get().grad().unwrap().to_vec::<f32>().unwrap()
    };
    // Exact: the mean.
    let m = dot();
    let ddp = DistributedDataParallel::new(&m, &g, DdpConfig::default()).unwrap();
    let want: Vec<f32> = (0..8).map(|i| (c[0][i] + c[1][i]) / 2.0).collect();
    assert_eq!(grad_after(&ddp, &m), want);
    assert_eq!(ddp.last_sync_bytes(), 32);
    drop(ddp);
    // f16: each rank's values rounded to f16, summed in f32 in rank order.
    let m = dot();
    let ddp = DistributedDataParallel::new(&m, &g, DdpConfig { compression: Compression::F16, ..Default::default() })
        .unwrap();
    let h = |v: f32| skiff::f16::from_f32(v).to_f32();
    let want: Vec<f32> = (0..8).map(|i| (h(c[0][i]) + h(c[1][i])) / 2.0).collect();
    let got = grad_after(&ddp, &m);
    assert_eq!(got, want);
    assert_ne!(got[6], (c[0][6] + c[1][6]) / 2.0, "1000.7 is not an f16");
    assert_eq!(ddp.last_sync_bytes(), 16);
    drop(ddp);
    // Top-k (k = 3 of 8) with error feedback, over three steps.
    let m = dot();
    let cfg = DdpConfig { compression: Compression::TopK { ratio: 0.3 }, ..Default::default() };
    let ddp = DistributedDataParallel::new(&m, &g, cfg).unwrap();
    let mut residual = [vec![0.0f32; 8], vec![0.0f32; 8]];
    let mut sent_total = [0.0f32; 8];
    for step in 0..3 {
        let mut want = vec![0.0f32; 8];
        for (r, res) in residual.iter_mut().enumerate() {
            let v: Vec<f32> = (0..8).map(|i| c[r][i] + res[i]).collect();
            let pick = topk_reference(&v, 3);
            *res = v.clone();
            for i in pick {
                want[i] += v[i];
                res[i] = 0.0;
            }
        }
        want.iter_mut().for_each(|w| *w /= 2.0);
        let got = grad_after(&ddp, &m);
        assert_eq!(got, want, "top-k step {step}");
        assert_eq!(ddp.last_sync_bytes(), 3 * 8);
        sent_total.iter_mut().zip(&got).for_each(|(s, x)| *s += x);
    }
    // Nothing is lost, only delayed: what was applied plus what waits is
    // three steps of the exact mean.
    for i in 0..8 {
        let pending = (residual[0][i] + residual[1][i]) / 2.0;
        let exact = 3.0 * (c[0][i] + c[1][i]) / 2.0;
        assert!((sent_total[i] + pending - exact).abs() <= 1e-3 * (1.0 + exact.abs()), "element {i}");
    }
    let bad = DistributedDataParallel::new(&m, &g, DdpConfig { compression: Compression::TopK { ratio: 0.0 }, ..cfg });
    expect_err(bad.map(|_| ()), Kind::Value, "DistributedDataParallel", &["top-k ratio", "(0, 1]"]);
    println!("rank {} ok", g.rank());
}

/// Test accuracy (percent) of an MLP trained for one epoch of MNIST with
/// DDP, each rank on its shard (32 of each 64 digits).
fn mnist_accuracy(g: &ProcessGroup, dir: &PathBuf, compression: Compression) -> Result<f64> {
    manual_seed(3);
    let model = Sequential::new()
        .push(Flatten::new())
        .push(Linear::new(784, 128)?)
        .push(ReLU::new())
        .push(Linear::new(128, 10)?);
    let ddp = DistributedDataParallel::new(&model, g, DdpConfig { compression, ..Default::default() })?;
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 2e-3, ..Default::default() })?;
    let train =
        DataLoader::new(Mnist::load(dir, true)?.dataset()?, 64 / g.world_size())?.shuffle(1).distributed(g.sampler());
    for batch in train.epoch(0) {
        let (x, y) = batch?;
        opt.zero_grad();
        ddp.backward(&model.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?)?;
        opt.step()?;
    }
    let test = DataLoader::new(Mnist::load(dir, false)?.dataset()?, 500)?.distributed(g.sampler());
    let mut counts = vec![0.0f64, 0.0];
    for batch in test.epoch(0) {
        let (x, y) = batch?;
        let pred = no_grad(|| model.forward(&x))?.argmax(Some(1), false)?;
        counts[0] += pred.eq(&y)?.to_dtype(DType::F32)?.sum_all()?.item()?;
        counts[1] += y.numel() as f64;
    }
    let both = g.all_reduce(&Tensor::from_vec(counts, &[2])?, ReduceOp::Sum)?.to_vec::<f64>()?;
    Ok(100.0 * both[0] / both[1])
}

#[test]
fn compressed_training_converges_on_mnist() {
    let Some(g) = rank() else {
        let test = "compressed_training_converges_on_mnist";
        if common::mnist_dir().is_some() {
            assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
        }
        return;
    };
    let dir = common::mnist_dir().expect("checked by the outer test");
    let exact = mnist_accuracy(&g, &dir, Compression::None).unwrap();
    let f16 = mnist_accuracy(&g, &dir, Compression::F16).unwrap();
    let topk = mnist_accuracy(&g, &dir, Compression::TopK { ratio: 0.01 }).unwrap();
    if g.rank() == 0 {
        println!("MNIST MLP, one epoch on 2 ranks: exact {exact:.2}%, f16 {f16:.2}%, top-1% {topk:.2}%");
    }
    assert!(exact > 88.0, "exact: {exact}%");
    assert!((f16 - exact).abs() <= 0.5, "f16 {f16}% vs exact {exact}%");
    // Sending 1% of each step's gradient, the residual catches up: well
    // above chance (10%), a few points below exact.
    assert!(topk > 80.0 && topk > exact - 8.0, "top-k {topk}% vs exact {exact}%");
    println!("rank {} ok", g.rank());
}

// ---- checkpoints and the sampler ----------------------------------------------

#[test]
fn a_checkpoint_from_rank_0_loads_in_one_process() {
    let Some(g) = rank() else {
        let test = "a_checkpoint_from_rank_0_loads_in_one_process";
        let job = mpirun(test, 2, LIMIT);
        assert_ranks_ok(test, &job, 2);
        // This process is not part of the job: it loads what rank 0 wrote.
        let dir = std::env::temp_dir().join(format!("skiff-mpi-{test}-{}", std::process::id()));
        let ckpt = safetensors::load_checkpoint(dir.join("ckpt.safetensors"), &Device::Cpu).unwrap();
        assert_eq!(ckpt.step, 3);
        let model = mlp().unwrap();
        model.load_state_dict(&ckpt.model, true).unwrap();
        let printed = job.output.lines().find_map(|l| l.split("rank 0 params: ").nth(1)).expect("rank 0 printed");
        let sum: f64 = params(&model).iter().map(|v| *v as f64).sum();
        assert_eq!(printed, format!("{sum:.9}"));
        assert!(!ckpt.optimizer.is_empty());
        return;
    };
    manual_seed(1);
    let model = mlp().unwrap();
    let ddp = DistributedDataParallel::new(&model, &g, DdpConfig::default()).unwrap();
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    for _ in 0..3 {
        opt.zero_grad();
        let x = Tensor::randn(&[4, 6], DType::F32).unwrap();
        ddp.backward(&model.forward(&x).unwrap().pow_scalar(2.0).unwrap().mean(&[0, 1], false).unwrap()).unwrap();
        opt.step().unwrap();
    }
    let path = scratch().join("ckpt.safetensors");
    distributed::save_checkpoint(&g, &path, &model.state_dict(), &opt.state_dict().unwrap().to_flat(), 3).unwrap();
    // Written before any rank returns: every rank reads it back.
    let ckpt = safetensors::load_checkpoint(&path, &Device::Cpu).unwrap();
    let fresh = mlp().unwrap();
    fresh.load_state_dict(&ckpt.model, true).unwrap();
    assert_eq!(params(&fresh), params(&model));
    if g.rank() == 0 {
        let sum: f64 = params(&model).iter().map(|v| *v as f64).sum();
        println!("rank 0 params: {sum:.9}");
    }
    // Rank 0 cannot write: every rank gets its error.
    let nowhere = scratch().join("no-such-dir").join("ckpt.safetensors");
    let e = distributed::save_checkpoint(&g, &nowhere, &model.state_dict(), &[], 3);
    expect_err(e, Kind::Value, "distributed::save_checkpoint", &["rank 0 could not write the checkpoint"]);
    println!("rank {} ok", g.rank());
}

#[test]
fn the_sampler_gives_each_rank_a_disjoint_shard() {
    let Some(g) = rank() else {
        let test = "the_sampler_gives_each_rank_a_disjoint_shard";
        return assert_ranks_ok(test, &mpirun(test, 2, LIMIT), 2);
    };
    let data = TensorDataset::new(vec![Tensor::from_vec((0..11).collect::<Vec<i32>>(), &[11]).unwrap()]).unwrap();
    let loader = DataLoader::new(data, 4).unwrap().shuffle(9).distributed(g.sampler());
    assert_eq!(loader.num_batches(), 2, "6 samples per rank (11 padded to 12)");
    for epoch in 0..3 {
        let mine: Vec<i32> = loader.indices(epoch).iter().map(|i| *i as i32).collect();
        let both = g.all_gather(&Tensor::from_vec(mine, &[6]).unwrap()).unwrap().to_vec::<i32>().unwrap();
        let mut seen = both.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen, (0..11).collect::<Vec<_>>(), "epoch {epoch}: together the shards cover the data");
        // Only the one padding sample repeats.
        assert_eq!(both.len() - seen.len(), 1);
        if epoch > 0 {
            assert_ne!(loader.indices(epoch), loader.indices(epoch - 1), "a new order every epoch");
        }
    }
    println!("rank {} ok", g.rank());
}

// ---- failures end the job -----------------------------------------------------

#[test]
fn a_rank_that_exits_ends_the_job() {
    let Some(g) = rank() else {
        let job = mpirun("a_rank_that_exits_ends_the_job", 2, LIMIT);
        assert!(!job.ok, "the job should fail:\n{}", job.output);
        assert!(!job.output.contains("rank 0 finished"), "{}", job.output);
        assert!(job.took < Duration::from_secs(60), "took {:?}:\n{}", job.took, job.output);
        return;
    };
    g.barrier().unwrap();
    if g.rank() == 1 {
        std::process::exit(3); // no finalize: mpirun sees a dead rank
    }
    g.set_timeout(Duration::from_secs(200));
    let x = Tensor::ones(&[4], DType::F32).unwrap();
    let r = g.all_reduce(&x, ReduceOp::Sum);
    println!("rank 0 finished: {:?}", r.map(|_| ()));
}

#[test]
fn a_rank_that_panics_ends_the_job() {
    let Some(g) = rank() else {
        let job = mpirun("a_rank_that_panics_ends_the_job", 2, LIMIT);
        assert!(!job.ok, "the job should fail:\n{}", job.output);
        assert!(job.output.contains("rank 1 gives up"), "{}", job.output);
        assert!(!job.output.contains("rank 0 finished"), "{}", job.output);
        assert!(job.took < Duration::from_secs(60), "took {:?}:\n{}", job.took, job.output);
        return;
    };
    g.barrier().unwrap();
    g.set_timeout(Duration::from_secs(200));
    if g.rank() == 1 {
        // Dropping the group while panicking aborts the job.
        panic!("rank 1 gives up");
    }
    let r = g.all_reduce(&Tensor::ones(&[4], DType::F32).unwrap(), ReduceOp::Sum);
    println!("rank 0 finished: {:?}", r.map(|_| ()));
}

#[test]
fn a_stalled_rank_makes_the_others_time_out() {
    let Some(g) = rank() else {
        let job = mpirun("a_stalled_rank_makes_the_others_time_out", 2, LIMIT);
        assert!(!job.ok, "the job should fail:\n{}", job.output);
        let facts = ["all_reduce: timed out after 2 s waiting for the other ranks", "dropping it aborts the job"];
        for f in facts {
            assert!(job.output.contains(f), "no {f:?} in:\n{}", job.output);
        }
        assert!(job.output.contains("then: barrier: the process group failed earlier"), "{}", job.output);
        // Rank 1 sleeps 200 s: the job ended because rank 0 aborted it.
        assert!(job.took < Duration::from_secs(60), "took {:?}:\n{}", job.took, job.output);
        return;
    };
    g.barrier().unwrap();
    if g.rank() == 1 {
        std::thread::sleep(Duration::from_secs(200));
        return;
    }
    g.set_timeout(Duration::from_secs(2));
    let e = g.all_reduce(&Tensor::ones(&[4], DType::F32).unwrap(), ReduceOp::Sum).expect_err("a timeout");
    assert!(matches!(e, Error::Distributed { op: "all_reduce", .. }), "{e:?}");
    eprintln!("{e}");
    let again = g.barrier().expect_err("the group failed");
    eprintln!("then: {again}");
    // Returning drops the group: MPI_Abort ends rank 1 too.
}

/// A rank that returns while the others still wait in a collective (an
/// error in its loop, one step fewer): its finalize waits for them up to its
/// timeout, then aborts the job.
#[test]
fn a_rank_that_returns_early_ends_the_job() {
    let Some(g) = rank() else {
        let job = mpirun("a_rank_that_returns_early_ends_the_job", 2, LIMIT);
        assert!(!job.ok, "the job should fail:\n{}", job.output);
        assert!(job.output.contains("rank 1 of 2 waited 3 s in MPI_Finalize"), "{}", job.output);
        assert!(!job.output.contains("rank 0 finished"), "{}", job.output);
        assert!(job.took < Duration::from_secs(60), "took {:?}:\n{}", job.took, job.output);
        return;
    };
    g.barrier().unwrap();
    g.set_timeout(Duration::from_secs(if g.rank() == 1 { 3 } else { 200 }));
    if g.rank() == 1 {
        return; // drops the group: MPI_Finalize
    }
    let r = g.all_reduce(&Tensor::ones(&[4], DType::F32).unwrap(), ReduceOp::Sum);
    println!("rank 0 finished: {:?}", r.map(|_| ()));
}
