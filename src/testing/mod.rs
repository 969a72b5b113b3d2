//! The registry checks (DESIGN principle 7), in the crate so that the native
//! test drivers (`tests/autograd/gradcheck.rs`, `tests/gpu_backend/parity.rs`) and the browser
//! (`web::testing`, `registryCases`/`checkCase`) run the same code.
//!
//! Every case of an op is expanded into its samples (`ops::cases_of`:
//! contiguous, transposed, strided, expanded, empty, 0-d), and for sample `k`:
//! - **reference** (`cpu.rs`): the case runs in f64 and in f32 on the cpu;
//!   each output must have the reference's shape and dtype and match its
//!   values, computed naively in f64 from the same inputs (`ops::reference`);
//! - **gradcheck**: for differentiable ops, the gradient of the weighted loss
//!   sum(out * w) with respect to every float input is checked in f64 against
//!   central differences;
//! - **second order** (gradgradcheck): where the op is marked, the gradient
//!   of s = sum_i <grad_i(x, w), v_i> with respect to the inputs AND to the
//!   incoming gradient w, against central differences of first-order
//!   gradients (perturbing w is what makes linear ops compare non-zeros);
//! - **GPU parity** (`parity.rs`): the case runs in f32 on the cpu and on a
//!   GPU (inputs laid out on each device); forward values, gradients and, for
//!   second-order ops, the second-order gradients must agree. It is `async`
//!   and reads GPU tensors only through `host_copy_async` (the browser cannot
//!   block on a readback).
//!
//! Comparisons are strict (`compare.rs`): NaN and infinities only where a
//! case opts in, and then compared exactly. Each check returns the checks
//! that ran, and `missing_checks` says which an op must have had, so an op
//! cannot drop to forward-only silently. Inputs come from
//! `Case::make_inputs_on` (seeded by `case_seed`), so every run of a case, on
//! any target, draws the same values.

mod compare;
mod cpu;
mod digest;
mod half;
mod parity;

pub use compare::{compare_values, expect_output};
pub use cpu::check_cpu;
pub use digest::{fnv1a32, forward_digests, tensor_digest};
pub use half::{check_half, REFERENCE_F16};
pub use parity::{check_gpu_parity, compare_gpu, parity_tolerance};

use crate::ops::{cases_of, registry, Case, OpDef, OpKind, Sample};
use std::collections::HashSet;
use std::fmt;

/// The central-difference step of the gradchecks (f64), unless a case sets its own.
pub const EPS: f64 = 1e-6;
/// f64 forward vs the reference: only summation order may differ.
pub const REFERENCE_F64: (f64, f64) = (1e-10, 1e-10);
/// f32 forward vs the reference (computed in f64 from the same f32 inputs):
/// a few f32 roundings of O(1) values.
pub const REFERENCE_F32: (f64, f64) = (1e-5, 1e-5);
/// First-order gradcheck tolerances (scaled by the case's `tol`).
pub const GRAD_ATOL: f64 = 1e-5;
pub const GRAD_RTOL: f64 = 1e-4;
/// Second-order gradcheck tolerances (scaled by the case's `tol`).
pub const SECOND_ATOL: f64 = 1e-4;
pub const SECOND_RTOL: f64 = 1e-3;

/// f32 parity tolerances: |gpu - cpu| <= atol + rtol * |cpu|, scaled by the case's `tol`.
pub const PARITY_ATOL: f64 = 1e-4;
pub const PARITY_RTOL: f64 = 1e-3;

/// Per-op exceptions to the parity tolerances, each with its reason. Only what
/// an accuracy bound of the WGSL spec
/// (<https://www.w3.org/TR/WGSL/#floating-point-accuracy>) allows a conforming
/// adapter to differ by; never a measured discrepancy.
pub const PARITY_TOLERANCES: &[(&str, f64, f64)] = &[
    // WGSL's sin and cos only promise an absolute error of 2^-11 on [-pi, pi]
    // (the cases draw from [-3, 3]); the default atol is 5x tighter than that.
    ("sin", 4.9e-4, PARITY_RTOL),
    ("cos", 4.9e-4, PARITY_RTOL),
];

/// Cases whose GPU run must fail with a dtype error instead of matching the
/// cpu: f64 does not exist on the GPU (DType docs), so a case that converts
/// to f64 must say so clearly rather than compute in f32 behind the user's back.
pub const GPU_DTYPE_ERROR: &[(&str, &str)] = &[("to_dtype", "f32 round trip through f64")];

/// How the GPU context reports the first uncaptured wgpu error, at every later op.
pub const POISON: &str = "a GPU command failed";

/// A check that ran (what `check_cpu` / `check_gpu_parity` report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// f64 and f32 forward outputs match the reference (shape, dtype, values).
    Reference,
    /// First-order gradients match central differences (f64, cpu).
    Gradcheck,
    /// Second-order gradients (w.r.t. inputs and the incoming gradient)
    /// match central differences (f64, cpu).
    SecondOrder,
    /// GPU forward values match the cpu (f32).
    GpuForward,
    /// GPU gradients match the cpu (f32).
    GpuGradients,
    /// GPU second-order gradients match the cpu (f32).
    GpuSecondOrder,
    /// The GPU run failed with the expected dtype error (no f64 on the GPU).
    GpuDtypeError,
    /// The f16 forward matches the reference (`half.rs`).
    HalfForward,
    /// f16 gradients match the same graph's f32 ones.
    HalfGradients,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Reference => "forward vs reference",
            Check::Gradcheck => "gradcheck",
            Check::SecondOrder => "gradgradcheck",
            Check::GpuForward => "gpu forward",
            Check::GpuGradients => "gpu gradients",
            Check::GpuSecondOrder => "gpu second order",
            Check::GpuDtypeError => "gpu dtype error",
            Check::HalfForward => "f16 forward",
            Check::HalfGradients => "f16 gradients",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The checks every op must have passed in some case: the reference always,
/// the gradcheck for differentiable ops, gradgradcheck where marked; with
/// `gpu`, the GPU counterparts instead.
pub fn expected_checks(def: &OpDef, gpu: bool) -> Vec<Check> {
    let grads = def.kind != OpKind::NoGrad;
    let all = if gpu {
        [(Check::GpuForward, true), (Check::GpuGradients, grads), (Check::GpuSecondOrder, grads && def.second_order)]
    } else {
        [(Check::Reference, true), (Check::Gradcheck, grads), (Check::SecondOrder, grads && def.second_order)]
    };
    all.into_iter().filter(|(_, wanted)| *wanted).map(|(c, _)| c).collect()
}

/// The expected checks of `def` that none of its cases ran.
pub fn missing_checks(def: &OpDef, ran: &HashSet<Check>, gpu: bool) -> Vec<Check> {
    expected_checks(def, gpu).into_iter().filter(|c| !ran.contains(c)).collect()
}

/// A failed check: `op / case: message`.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub op: &'static str,
    /// The case's label (`name [sample]`, or `case #k` when `k` is out of range).
    pub case: String,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {}: {}", self.op, self.case, self.message)
    }
}

impl std::error::Error for Failure {}

/// What every check returns.
pub type CheckResult<T> = std::result::Result<T, Failure>;

/// The registry entry named `op`.
pub fn find_op(op: &str) -> Option<&'static OpDef> {
    registry().into_iter().find(|d| d.name == op)
}

/// Breaks of the registry's rules: an op registered twice, an op without
/// cases (an op without cases fails the suite), two cases of an op with one
/// name, a case without a reference, empty/0-d shapes that do not match the
/// inputs, a primitive without a backward rule. Empty when the registry is sound.
pub fn registry_problems() -> Vec<String> {
    let mut names = HashSet::new();
    let mut problems = Vec::new();
    for def in registry() {
        if !names.insert(def.name) {
            problems.push(format!("op '{}' is registered twice", def.name));
        }
        let cases = (def.cases)();
        if cases.is_empty() {
            problems.push(format!("op '{}' has no test cases", def.name));
        }
        // Case names identify cases in reports and in the JS tests' tables.
        let mut case_names = HashSet::new();
        for case in &cases {
            problems.extend(case_problems(def, case));
            if !case_names.insert(case.name) {
                problems.push(format!("op '{}' has two cases named {:?}", def.name, case.name));
            }
        }
        if let Err(e) = crate::ops::signature::Signature::parse(def.signature) {
            problems.push(format!("op '{}': {e}", def.name));
        }
        if def.doc.is_empty() || def.doc.contains('\n') || !def.doc.ends_with('.') {
            problems.push(format!("op '{}' needs a one-line doc ending in a full stop: {:?}", def.name, def.doc));
        }
        if def.kind == OpKind::Primitive && def.backward.is_none() {
            problems.push(format!("primitive op '{}' has no backward rule", def.name));
        }
    }
    problems
}

fn case_problems(def: &OpDef, case: &Case) -> Vec<String> {
    let mut problems = Vec::new();
    let at = format!("op '{}' case {:?}", def.name, case.name);
    if case.reference.is_none() {
        problems.push(format!("{at} has no reference (an independent definition of its forward)"));
    }
    for (sample, shapes) in &case.shapes {
        if shapes.len() != case.inputs.len() {
            problems.push(format!(
                "{at}: its {} sample gives {} shapes for {} inputs",
                sample.name(),
                shapes.len(),
                case.inputs.len()
            ));
        }
        let ok = match sample {
            Sample::Empty => shapes.iter().any(|s| s.contains(&0)),
            Sample::Scalar => shapes.iter().any(|s| s.is_empty()),
            _ => false,
        };
        if !ok {
            problems.push(format!("{at}: its {} sample has no {} input", sample.name(), sample.name()));
        }
    }
    problems
}

/// Sample `k` of `def`'s cases (`ops::cases_of`), or a failure saying it does not exist.
pub fn case_of(def: &OpDef, k: usize) -> CheckResult<Case> {
    let mut cases = cases_of(def);
    let n = cases.len();
    if k >= n {
        return Err(Failure {
            op: def.name,
            case: format!("case #{k}"),
            message: format!("out of range: the op has {n} case{}", if n == 1 { "" } else { "s" }),
        });
    }
    Ok(cases.swap_remove(k))
}

fn fail(def: &OpDef, case: &Case) -> impl Fn(String) -> Failure {
    let (op, case) = (def.name, case.label());
    move |message| Failure { op, case: case.clone(), message }
}

/// The positions of the float inputs (the ones gradients are taken for).
fn float_positions(xs: &[crate::tensor::Tensor]) -> Vec<usize> {
    (0..xs.len()).filter(|&i| xs[i].dtype().is_float()).collect()
}
