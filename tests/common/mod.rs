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
