//! A compiled training step's replay on the GPU (issue 15, item 5): after
//! warm-up every call records its whole program into one encoder and submits
//! once (even past the 256 dispatches that split an eager batch), compiles no
//! pipeline, creates no buffer (the arena is the program's, kept across
//! calls; the output comes from the pool) and no bind group (those of arena
//! and captured slots are prebuilt, those of inputs and outputs cached by
//! buffer identity), dispatches exactly the program's kernels, and trains
//! bit for bit as the eager step does. Without a GPU adapter the tests print
//! a loud SKIPPED line and pass (see tests/common).
#![cfg(feature = "gpu")]

use crate::common;

use skiff::backend::gpu::runtime::BATCH_DISPATCHES;
use skiff::device::GpuCounters;
use skiff::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use skiff::program::{Instr, Program, Source};
use skiff::{jit, Device, Reduction, Result, Tensor};
use std::cell::RefCell;

/// Layer widths of the MLP and its batch.
const DIMS: [usize; 4] = [12, 32, 16, 5];
const BATCH: usize = 8;
/// Calls before the steady state: two captures (the first is not kept: the
/// optimizer makes its state), the first replay (which takes the arena and
/// logs the work), the second (which builds the ring and its bind groups),
/// and one more: the outputs (the gradients a call assigns to `.grad`) take
/// two sets of pool buffers in turn, since the previous call's are alive
/// while a call makes its own, so the third replay meets the second set.
const WARMUP: u64 = 5;
const STEADY: u64 = 6;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

/// Deterministic values in [-1, 1), drawn from no global generator.
fn values(seed: u64, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((seed as f32 * 7.31 + i as f32 * 1.37).sin() * 43758.547).fract()).collect()
}

fn params(device: &Device) -> Vec<Tensor> {
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for w in DIMS.windows(2) {
        shapes.push(vec![w[0], w[1]]);
        shapes.push(vec![w[1]]);
    }
    shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let v: Vec<f32> = values(k as u64 + 3, s.iter().product()).iter().map(|x| x * 0.4).collect();
            Tensor::from_vec(v, s).unwrap().to(device).unwrap().requires_grad_(true).unwrap()
        })
        .collect()
}

fn batch(seed: u64, device: &Device) -> (Tensor, Tensor) {
    let x = Tensor::from_vec(values(seed, BATCH * DIMS[0]), &[BATCH, DIMS[0]]).unwrap().to(device).unwrap();
    let labels: Vec<i32> =
        values(seed + 100, BATCH).iter().map(|v| ((v + 1.0) * 2.5) as i32 % DIMS[3] as i32).collect();
    (x, Tensor::from_vec(labels, &[BATCH]).unwrap().to(device).unwrap())
}

fn step(p: &[Tensor], opt: &mut dyn Optimizer, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    opt.zero_grad();
    let mut h = x.clone();
    for (l, w) in p.chunks(2).enumerate() {
        h = h.matmul(&w[0])?.add(&w[1])?;
        if l + 1 < p.len() / 2 {
            h = h.relu()?;
        }
    }
    let loss = h.cross_entropy(y, Reduction::Mean, 0.0)?;
    loss.backward()?;
    opt.step()?;
    Ok(loss.detach())
}

fn counters(gpu: &Device) -> GpuCounters {
    match gpu {
        Device::Gpu(g) => g.counters(),
        Device::Cpu => unreachable!("only called with a GPU"),
    }
}

/// What the counters did between two readings.
#[derive(Clone, Copy, Debug)]
struct Counts {
    dispatches: u64,
    submits: u64,
    bind_groups_created: u64,
    pipelines_compiled: u64,
    buffers_created: u64,
}

fn between(a: &GpuCounters, b: &GpuCounters) -> Counts {
    Counts {
        dispatches: b.dispatches - a.dispatches,
        submits: b.submits - a.submits,
        bind_groups_created: b.bind_groups_created - a.bind_groups_created,
        pipelines_compiled: b.pipelines_compiled - a.pipelines_compiled,
        buffers_created: b.buffers_created - a.buffers_created,
    }
}

/// The program's kernels: (all, range checks, those that bind one of the
/// run's inputs or outputs, whose buffers are new each call).
fn kernels(program: &Program) -> (u64, u64, u64) {
    let per_call =
        |v: usize| matches!(program.values[v].source, Source::Input(_)) || program.outputs.iter().any(|o| o.value == v);
    let mut io = 0;
    for instr in &program.instrs {
        let slots: Vec<usize> = match instr {
            Instr::Run { inputs, out, .. } => inputs.iter().map(|a| a.value).chain([*out]).collect(),
            Instr::Create { out, .. } => vec![*out],
            Instr::Into { inputs, targets, .. } => inputs.iter().chain(targets).map(|a| a.value).collect(),
            Instr::Check { index, .. } => vec![index.value],
            Instr::Host { .. } => vec![],
        };
        io += u64::from(slots.into_iter().any(per_call));
    }
    let checks = program.instrs.iter().filter(|i| matches!(i, Instr::Check { .. })).count() as u64;
    (program.kernels() as u64, checks, io)
}

/// Compiled steps, then as many eager ones on a copy of the same
/// parameters: losses and parameters bit for bit; the steady calls' counts.
/// With `fresh`, every call gets a new batch (new input buffers), else the
/// same tensors (data that lives on the GPU).
fn replayed_training(make: &dyn Fn(Vec<Tensor>) -> Box<dyn Optimizer>, gpu: &Device, what: &str, fresh: bool) {
    let (pa, pb) = (params(gpu), params(gpu));
    let oa = RefCell::new(make(pa.clone()));
    let mut ob = make(pb.clone());
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![step(&pa, &mut **oa.borrow_mut(), &i[0], &i[1])?]));
    let data = |s: u64| batch(if fresh { 10 + s } else { 10 }, gpu);
    let fixed = data(0);
    let mut replays = Vec::new();
    let mut losses = Vec::new();
    for s in 0..WARMUP + STEADY {
        let (x, y) = if fresh { data(s) } else { fixed.clone() };
        // Whatever the uploads queued goes out first, so the counts are the call's alone.
        gpu.synchronize().unwrap();
        let before = counters(gpu);
        let got = compiled.call(&[x, y]).unwrap();
        if s >= WARMUP {
            replays.push(between(&before, &counters(gpu)));
        }
        losses.push(bits(&got[0]));
    }
    let mut eager = Vec::new();
    for (s, got) in losses.iter().enumerate() {
        let (x, y) = if fresh { data(s as u64) } else { fixed.clone() };
        gpu.synchronize().unwrap();
        let before = counters(gpu);
        let want = step(&pb, &mut *ob, &x, &y).unwrap();
        eager.push(between(&before, &counters(gpu)));
        assert_eq!(*got, bits(&want), "{what}: loss at step {s}\n{:#?}", compiled.log());
    }
    for (a, b) in pa.iter().zip(&pb) {
        assert_eq!(bits(a), bits(b), "{what}: parameters after the steps");
    }
    assert_eq!(compiled.replays(), WARMUP + STEADY - 2, "{:#?}", compiled.log());
    let [traced] = compiled.programs()[..] else { panic!("{what}: one program is kept: {:#?}", compiled.log()) };
    let (kernels, checks, io) = kernels(traced.program());
    let first = replays[0];
    eprintln!(
        "{what} (fresh batches: {fresh}): {kernels} kernels ({checks} range checks, {io} binding an input or \
         output); eager step {:?}; replay {first:?}",
        eager[eager.len() - 1]
    );
    eprintln!("{what}: bind groups per call {:?}", replays.iter().map(|c| c.bind_groups_created).collect::<Vec<_>>());
    for c in &replays {
        // Each kernel is one dispatch, except range checks the device need
        // not repeat (a check of the same labels already pending)...
        assert!(c.dispatches <= kernels && c.dispatches + checks >= kernels, "{what}: {c:?}");
        // ...all recorded into one encoder, submitted once at the call's end;
        // no pipeline compiled and no buffer made (the arena is the
        // program's, the outputs come from the pool).
        assert_eq!((c.submits, c.pipelines_compiled, c.buffers_created), (1, 0, 0), "{what}: {c:?}");
        // Bind groups of arena and captured slots are prebuilt; only those
        // over an input's or output's new buffers can be new, at most one
        // per such kernel; with the same data, none (cached by identity: the
        // pool hands out the same output buffers again).
        let most = if fresh { io } else { 0 };
        assert!(c.bind_groups_created <= most, "{what}: {c:?}, at most {most}");
    }
    // The kernels that read the batch or the per-call `.grad` outputs (each
    // Adam update reads one) run through the backend; a third or more of
    // the rest are prebuilt (the MLP Adam step: 12 of 29 kernels).
    assert!(
        3 * (kernels - io) >= kernels,
        "{what}: kernels binding only arena and captured slots ({io} of {kernels} do not)"
    );
}

#[test]
fn a_replayed_sgd_step_submits_once_and_builds_nothing() {
    // The counters are the context's: a private one counts this test's work alone.
    let Some((gpu, _)) = common::private_gpu() else { return };
    let sgd = |p: Vec<Tensor>| -> Box<dyn Optimizer> {
        let c = SgdConfig { lr: 0.1, momentum: 0.9, dampening: 0.1, weight_decay: 0.01, nesterov: false };
        Box::new(Sgd::new(p, c).unwrap())
    };
    replayed_training(&sgd, &gpu, "sgd", false);
    replayed_training(&sgd, &gpu, "sgd", true);
}

#[test]
fn a_replayed_adam_step_submits_once_and_builds_nothing() {
    // The counters are the context's: a private one counts this test's work alone.
    let Some((gpu, _)) = common::private_gpu() else { return };
    let adam = |p: Vec<Tensor>| -> Box<dyn Optimizer> {
        Box::new(Adam::new(p, AdamConfig { lr: 0.01, weight_decay: 0.01, ..Default::default() }).unwrap())
    };
    replayed_training(&adam, &gpu, "adam", false);
    replayed_training(&adam, &gpu, "adam", true);
}

/// A program longer than an eager batch: eager code submits every 256
/// dispatches, a replay once per call; the values agree bit for bit.
#[test]
fn a_replay_past_an_eager_batch_still_submits_once() {
    // The counters are the context's: a private one counts this test's work alone.
    let Some((gpu, _)) = common::private_gpu() else { return };
    // Each product and its scaling are one kernel compiled (an epilogue),
    // two eager: more products than an eager batch has dispatches.
    let products = BATCH_DISPATCHES as usize + 44;
    // 64 x 64 products: enough outputs to take a tail (`program::MIN_PRODUCT_OUTPUTS`).
    let w = Tensor::from_vec(values(1, 64 * 64), &[64, 64]).unwrap().mul_scalar(0.125).unwrap().to(&gpu).unwrap();
    // A matmul between the scalings keeps fusion from merging them.
    let chain = |x: &Tensor| -> Result<Tensor> {
        let mut h = x.clone();
        for _ in 0..products {
            h = h.matmul(&w)?.mul_scalar(0.5)?;
        }
        Ok(h)
    };
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![chain(&i[0])?]));
    let x = Tensor::from_vec(values(2, 64 * 64), &[64, 64]).unwrap().to(&gpu).unwrap();
    for _ in 0..3 {
        compiled.call(std::slice::from_ref(&x)).unwrap();
    }
    gpu.synchronize().unwrap();
    let before = counters(&gpu);
    let got = compiled.call(std::slice::from_ref(&x)).unwrap();
    let replay = between(&before, &counters(&gpu));
    let mid = counters(&gpu);
    let want = chain(&x).unwrap();
    gpu.synchronize().unwrap();
    let eager = between(&mid, &counters(&gpu));
    eprintln!("long chain: eager {eager:?}; replay {replay:?}");
    assert_eq!(bits(&got[0]), bits(&want));
    assert!(eager.dispatches > BATCH_DISPATCHES as u64 && eager.submits >= 2, "{eager:?}");
    assert_eq!(eager.dispatches, 2 * products as u64, "{eager:?}");
    assert_eq!(replay.dispatches, products as u64, "one kernel per product and its scaling: {replay:?}");
    assert_eq!(replay.submits, 1, "{replay:?}");
    assert_eq!((replay.pipelines_compiled, replay.buffers_created, replay.bind_groups_created), (0, 0, 0));
}
