//! Deterministic mode (`skiff::set_deterministic`): the cpu backend gives the
//! same bits on every target. The expected bits live in
//! `tests/determinism/expected.js`, written from a native run in
//! deterministic mode and checked against by this file and, in wasm, by the
//! Node test and both Chromium passes (`tests/browser/pages/surface-determinism.js`
//! for the training runs, `tests/browser/node.test.mjs` for the registry).
//!
//! When a change is meant to move those bits (a new registry case, a kernel
//! that rounds differently), rewrite the file with
//! `SKIFF_BLESS=1 cargo test --test determinism` and say why in the commit.

#[path = "../common/mod.rs"]
mod common;

use skiff::nn::{Layer, Linear, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::testing::{fnv1a32, forward_digests};
use skiff::{is_deterministic, manual_seed, set_deterministic, DType, Device, Reduction, Result, Tensor};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The mode is process-wide: tests that set it run one at a time.
static MODE: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    MODE.lock().unwrap_or_else(|e| e.into_inner())
}

fn expected_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/determinism/expected.js")
}

const HEADER: &str = "// The bits a seeded run gives in deterministic mode (skiff.setDeterministic),\n\
// written from a native run by `SKIFF_BLESS=1 cargo test --test determinism`:\n\
// do not edit by hand. Checked by tests/determinism/main.rs natively, and in wasm by\n\
// tests/browser/node.test.mjs and the `determinism` surface scenario.\n";

/// The checked-in expectations (the JSON object after `export default`).
fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(expected_path()).expect("tests/determinism/expected.js");
    let json = &text[text.find('{').expect("an object")..=text.rfind('}').expect("an object")];
    serde_json::from_str(json).expect("the expectations parse")
}

fn blessing() -> bool {
    std::env::var("SKIFF_BLESS").is_ok_and(|v| v == "1")
}

/// Replaces `key` in the expectations file (when blessing).
fn bless(key: &str, value: serde_json::Value) {
    let mut all = if expected_path().exists() { expected() } else { serde_json::json!({}) };
    all[key] = value;
    let body = serde_json::to_string_pretty(&all).unwrap();
    std::fs::create_dir_all(expected_path().parent().unwrap()).unwrap();
    std::fs::write(expected_path(), format!("{HEADER}export default {body};\n")).unwrap();
}

/// One training run's record: each step's loss (f32 bits) and the final
/// parameters.
struct Run {
    losses: Vec<f32>,
    params: Vec<Vec<f32>>,
}

impl Run {
    fn summary(&self) -> serde_json::Value {
        let hex = |b: u32| format!("{b:08x}");
        serde_json::json!({
            "losses": self.losses.iter().map(|l| hex(l.to_bits())).collect::<Vec<_>>(),
            "params": self.params.iter().map(|p| hex(fnv1a32(p.iter().flat_map(|x| x.to_le_bytes())))).collect::<Vec<_>>(),
        })
    }
}

/// Synthetic inputs the JS scenario builds the same way: exact multiples of
/// 2^-16 in [-0.5, 0.5), from integer arithmetic below 2^53 (exact in JS
/// numbers too), in four batches the steps cycle through.
fn batch(step: usize, rows: usize, features: usize) -> (Vec<f32>, Vec<i32>) {
    let s = step % 4;
    let x = (0..rows * features)
        .map(|i| ((i as u64 * 2_654_435_761 + s as u64 * 40_503) % 65_536) as f32 / 65_536.0 - 0.5)
        .collect();
    let y = (0..rows).map(|r| ((r * 7 + s * 3) % 10) as i32).collect();
    (x, y)
}

fn mlp() -> Result<(Sequential, Vec<usize>)> {
    Ok((Sequential::new().push(Linear::new(784, 128)?).push(ReLU::new()).push(Linear::new(128, 10)?), vec![32, 784]))
}

fn cnn() -> Result<(Sequential, Vec<usize>)> {
    Ok((skiff::models::mnist_cnn()?, vec![16, 1, 28, 28]))
}

/// 100 Adam steps (lr 1e-3) of `model` from seed 21 on `device`.
fn train(model: fn() -> Result<(Sequential, Vec<usize>)>, device: &Device) -> Result<Run> {
    manual_seed(21);
    let (net, shape) = model()?;
    net.to(device)?;
    let mut opt = Adam::new(net.parameters(), AdamConfig::default())?;
    let mut losses = Vec::new();
    for step in 0..100 {
        let (x, y) = batch(step, shape[0], shape[1..].iter().product());
        let x = Tensor::from_vec(x, &shape)?.to(device)?;
        let y = Tensor::from_vec(y, &[shape[0]])?.to(device)?;
        opt.zero_grad();
        let loss = net.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
        loss.backward()?;
        opt.step()?;
        losses.push(loss.to_vec::<f32>()?[0]);
    }
    let params = net.parameters().iter().map(|p| p.to_vec::<f32>()).collect::<Result<_>>()?;
    Ok(Run { losses, params })
}

/// Compares a run with the checked-in one, naming the first differing step.
fn check_run(name: &str, run: &Run) {
    if blessing() {
        bless(name, run.summary());
        return;
    }
    let (got, want) = (run.summary(), expected()[name].clone());
    assert!(!want.is_null(), "tests/determinism/expected.js has no {name} run: bless it (SKIFF_BLESS=1)");
    if let Some(step) = (0..100).find(|&i| got["losses"][i] != want["losses"][i]) {
        panic!(
            "{name}: the loss of step {step} has other bits than the checked-in run: {} ({}) vs {} \
             (a kernel changed its rounding? see the file's header)",
            got["losses"][step], run.losses[step], want["losses"][step]
        );
    }
    assert_eq!(got["params"], want["params"], "{name}: the final parameters' digests");
}

#[test]
fn a_seeded_mlp_run_has_the_checked_in_bits() -> Result<()> {
    let _mode = lock();
    set_deterministic(true);
    let run = train(mlp, &Device::Cpu)?;
    assert!(run.losses[99] < run.losses[0], "the MLP learns: {} -> {}", run.losses[0], run.losses[99]);
    check_run("mlp", &run);
    Ok(())
}

#[test]
fn a_seeded_cnn_run_has_the_checked_in_bits() -> Result<()> {
    let _mode = lock();
    set_deterministic(true);
    let run = train(cnn, &Device::Cpu)?;
    assert!(run.losses[99] < run.losses[0], "the CNN learns: {} -> {}", run.losses[0], run.losses[99]);
    check_run("cnn", &run);
    Ok(())
}

#[test]
fn every_registry_case_has_the_checked_in_forward_bits() {
    let _mode = lock();
    set_deterministic(true);
    let got: BTreeMap<String, String> = forward_digests().into_iter().collect();
    assert!(got.len() > 500, "{} registry samples", got.len());
    if blessing() {
        bless("registry", serde_json::to_value(&got).unwrap());
        return;
    }
    let want: BTreeMap<String, String> = serde_json::from_value(expected()["registry"].clone()).unwrap();
    let differ: Vec<String> = got
        .iter()
        .filter(|(k, v)| want.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {v} vs {:?}", want.get(k)))
        .chain(want.keys().filter(|k| !got.contains_key(*k)).map(|k| format!("{k}: gone")))
        .collect();
    assert!(
        differ.is_empty(),
        "{} registry samples differ from the checked-in bits:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// The largest relative difference of the GPU run from the cpu one: of each
/// step's loss, and of the final parameters as vectors (|gpu - cpu| / |cpu|,
/// a norm: single weights near zero have no meaningful relative error).
fn gpu_bound(model: fn() -> Result<(Sequential, Vec<usize>)>, gpu: &Device) -> Result<(f64, f64, f64)> {
    let cpu = train(model, &Device::Cpu)?;
    let on_gpu = train(model, gpu)?;
    let rel = |a: f32, b: f32| ((a as f64 - b as f64) / b as f64).abs();
    let loss_max = cpu.losses.iter().zip(&on_gpu.losses).map(|(c, g)| rel(*g, *c)).fold(0.0, f64::max);
    let last = rel(on_gpu.losses[99], cpu.losses[99]);
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    let mut params = 0.0f64;
    for (c, g) in cpu.params.iter().zip(&on_gpu.params) {
        let diff = norm(&mut c.iter().zip(g).map(|(c, g)| *g as f64 - *c as f64));
        params = params.max(diff / norm(&mut c.iter().map(|c| *c as f64)));
    }
    Ok((last, loss_max, params))
}

/// The GPU is not bit-for-bit (its own math and summation order): the bound
/// docs/determinism.md documents is the same run within 1e-5 relative of the cpu
/// after 100 steps, on lavapipe here (and on SwiftShader in the WebGPU pass).
#[test]
fn on_the_gpu_the_same_runs_stay_within_1e_5_of_the_cpu() -> Result<()> {
    let _mode = lock();
    let Some(gpu) = common::gpu() else { return Ok(()) };
    set_deterministic(true);
    for (name, model) in [("mlp", mlp as fn() -> _), ("cnn", cnn)] {
        let (last, worst_step, params) = gpu_bound(model, &gpu)?;
        eprintln!("{name}: final loss {last:.2e}, worst step {worst_step:.2e}, parameters {params:.2e} relative");
        assert!(last <= 1e-5, "{name}: the final loss is {last:e} relative from the cpu's");
        assert!(params <= 1e-5, "{name}: the final parameters are {params:e} relative from the cpu's");
    }
    Ok(())
}

/// The switch itself: the same calls give the target's own math by default
/// and libm's in deterministic mode, and products follow the triple loop.
#[test]
fn the_mode_switches_the_math_and_the_gemm() -> Result<()> {
    let _mode = lock();
    let xs: Vec<f32> = (0..4096).map(|i| (i as f32 - 2048.0) / 256.0).collect();
    let x = Tensor::from_vec(xs.clone(), &[4096])?;
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    set_deterministic(false);
    assert!(!is_deterministic());
    // By default, skiff's vectorisable f32 exp (kernel::math::fast), not libm's.
    let fast: Vec<f32> = xs.iter().map(|v| skiff::kernel::math::fast::exp(*v)).collect();
    assert_eq!(bits(x.exp()?.to_vec()?), bits(fast.clone()));
    assert_ne!(bits(fast), bits(xs.iter().map(|v| libm::expf(*v)).collect()), "the routes differ somewhere");
    set_deterministic(true);
    assert!(is_deterministic());
    let pos = x.abs()?.add_scalar(0.5)?;
    let host_pos: Vec<f32> = pos.to_vec()?;
    for (name, got, want) in [
        ("exp", x.exp()?, xs.iter().map(|v| libm::expf(*v)).collect::<Vec<_>>()),
        ("tanh", x.tanh()?, xs.iter().map(|v| libm::tanhf(*v)).collect()),
        ("sin", x.sin()?, xs.iter().map(|v| libm::sinf(*v)).collect()),
        ("log", pos.log()?, host_pos.iter().map(|v| libm::logf(*v)).collect()),
        ("pow_scalar", pos.pow_scalar(1.7)?, host_pos.iter().map(|v| libm::powf(*v, 1.7)).collect()),
        ("pow", pos.pow(&pos)?, host_pos.iter().map(|v| libm::powf(*v, *v)).collect()),
    ] {
        assert_eq!(bits(got.to_vec()?), bits(want), "{name} in deterministic mode is libm's");
    }

    // A batched product with a transposed operand: each output the sum of
    // its terms in index order, one multiply and one add each.
    manual_seed(3);
    let (b, m, k, n) = (3, 37, 300, 29);
    let a = Tensor::randn(&[b, m, k], DType::F32)?;
    let w = Tensor::randn(&[b, n, k], DType::F32)?.transpose(1, 2)?;
    let got = bits(a.matmul(&w)?.to_vec()?);
    let (ha, hw): (Vec<f32>, Vec<f32>) = (a.to_vec()?, w.contiguous()?.to_vec()?);
    let mut want = Vec::new();
    for bi in 0..b {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f32;
                for p in 0..k {
                    s += ha[(bi * m + i) * k + p] * hw[(bi * k + p) * n + j];
                }
                want.push(s.to_bits());
            }
        }
    }
    assert_eq!(got, want, "products in deterministic mode are the triple loop's");
    set_deterministic(false);
    Ok(())
}

/// `SKIFF_DETERMINISTIC=1` turns the mode on at start: this test runs itself
/// again in a child process with the variable set.
#[test]
fn the_environment_variable_turns_it_on() {
    if std::env::var_os("SKIFF_DETERMINISTIC_CHILD").is_some() {
        assert!(is_deterministic(), "SKIFF_DETERMINISTIC={:?}", std::env::var("SKIFF_DETERMINISTIC"));
        return;
    }
    let child = |value: &str| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "the_environment_variable_turns_it_on", "--nocapture"])
            .env("SKIFF_DETERMINISTIC_CHILD", "1")
            .env("SKIFF_DETERMINISTIC", value)
            .output()
            .unwrap()
    };
    let on = child("1");
    assert!(on.status.success(), "the child with SKIFF_DETERMINISTIC=1:\n{}", String::from_utf8_lossy(&on.stderr));
    // A value that is neither on nor off leaves the mode off, and says so.
    let odd = child("maybe");
    let stderr = String::from_utf8_lossy(&odd.stderr);
    assert!(!odd.status.success(), "SKIFF_DETERMINISTIC=maybe must leave the mode off");
    assert!(stderr.contains("SKIFF_DETERMINISTIC=\"maybe\" is not one of"), "{stderr}");
}

/// A step compiled by `jit` replays the same kernels (fused ones call the same
/// row functions), so in deterministic mode it gives the eager step's bits.
#[test]
fn compiled_steps_give_the_eager_bits_in_deterministic_mode() -> Result<()> {
    let _mode = lock();
    set_deterministic(true);
    let run = |compiled: bool| -> Result<Vec<u32>> {
        manual_seed(21);
        let (net, shape) = mlp()?;
        let opt = std::cell::RefCell::new(Adam::new(net.parameters(), AdamConfig::default())?);
        let step = |t: &[Tensor]| -> Result<Vec<Tensor>> {
            let mut opt = opt.borrow_mut();
            opt.zero_grad();
            let loss = net.forward(&t[0])?.cross_entropy(&t[1], Reduction::Mean, 0.0)?;
            loss.backward()?;
            opt.step()?;
            Ok(vec![loss.detach()])
        };
        let mut jitted = skiff::jit::compile(step);
        let mut bits = Vec::new();
        for s in 0..6 {
            let (x, y) = batch(s, shape[0], shape[1]);
            let inputs = [Tensor::from_vec(x, &shape)?, Tensor::from_vec(y, &[shape[0]])?];
            let loss = if compiled { jitted.call(&inputs)? } else { step(&inputs)? };
            bits.push(loss[0].to_vec::<f32>()?[0].to_bits());
        }
        for p in net.parameters() {
            bits.extend(p.to_vec::<f32>()?.iter().map(|v| v.to_bits()));
        }
        Ok(bits)
    };
    let (eager, compiled) = (run(false)?, run(true)?);
    assert!(eager == compiled, "a compiled step's losses or parameters differ from the eager step's");
    // And they are the checked-in run's first steps.
    if !blessing() {
        let want = &expected()["mlp"]["losses"];
        for (s, b) in eager.iter().take(6).enumerate() {
            assert_eq!(format!("{b:08x}"), want[s].as_str().unwrap(), "step {s}");
        }
    }
    set_deterministic(false);
    Ok(())
}
