//! The checker checks: hand-written programs whose records are tampered with
//! must fail, and rounding that flips a discontinuity must be set aside
//! rather than reported.

use super::check::{self, Stats, Truth};
use super::exec::{run_replay, Program, Record};
use super::program::{Bin, Cx, Input, Op, Un};
use skiff::{DType, Device};

fn f64_cx() -> Cx {
    Cx { float: DType::F64, device: Device::Cpu, local: false }
}

fn f32_cx() -> Cx {
    Cx { float: DType::F32, device: Device::Cpu, local: false }
}

/// x -> sign(log(exp(x)) - x) * x: the residue of the round trip is rounding
/// noise whose sign differs between f32 and f64 for some of these values.
fn rounding_program() -> Program {
    let values: Vec<f64> = (0..32).map(|i| (0.05 + 0.0613 * i as f64) as f32 as f64).collect();
    let n = values.len();
    Program {
        inputs: vec![Input { shape: vec![n], values, requires_grad: true }],
        ops: vec![
            Op::Unary { x: 0, f: Un::Exp },
            Op::Unary { x: 1, f: Un::Log },
            Op::Binary { a: 2, b: 0, f: Bin::Sub },
            Op::Unary { x: 3, f: Un::Sign },
            Op::Binary { a: 4, b: 0, f: Bin::Mul },
        ],
        loss: Some((5, vec![1.0; n])),
    }
}

/// Smooth, with an in-place write that the earlier view v2 must show (v2
/// is not read again: its history is outdated, see `Info::stale`).
fn smooth_program() -> Program {
    let values: Vec<f64> = (0..6).map(|i| (0.3 * i as f64 - 0.7) as f32 as f64).collect();
    Program {
        inputs: vec![Input { shape: vec![2, 3], values, requires_grad: true }],
        ops: vec![
            Op::Unary { x: 0, f: Un::Sin },
            Op::Transpose { x: 1, a: 0, b: 1 },
            Op::InPlace { x: 1, o: None, f: super::program::Ip::MulScalar(3.0) },
            Op::Matmul { a: 3, b: 1, transpose_b: true },
        ],
        loss: Some((4, vec![1.0, 0.5, 1.5, 0.75])),
    }
}

fn records(p: &Program) -> (Record, Record) {
    let ok = vec![true; p.ops.len()];
    let r64 = run_replay(p, &ok, &f64_cx(), |_, _| {}).unwrap();
    let r32 = run_replay(p, &ok, &f32_cx(), |_, _| {}).unwrap();
    assert!(r64.steps.iter().all(|s| s.out.is_ok()), "the hand-written program runs");
    (r64, r32)
}

fn compare(p: &Program, r64: &Record, r32: &Record) -> Result<Stats, String> {
    let truth = Truth::new(p, r64)?;
    let mut s = Stats::default();
    check::compare("the cpu f32 run", &truth, r32, &check::CPU_F32, DType::F32, &mut s)?;
    Ok(s)
}

#[test]
fn rounding_that_flips_a_sign_is_set_aside_not_reported() {
    let p = rounding_program();
    let (r64, r32) = records(&p);
    // The premise: sign() really differs between the runs somewhere.
    let (s64, s32) = (&r64.steps[3].out.as_ref().unwrap().data, &r32.steps[3].out.as_ref().unwrap().data);
    assert!(s64.iter().zip(s32).any(|(a, b)| a != b), "no flipped sign: {s64:?} vs {s32:?}");
    let s = compare(&p, &r64, &r32).unwrap();
    assert!(s.unstable >= 2, "sign and what reads it are unstable: {s:?}");
    assert_eq!(s.grads_compared, 0, "{s:?}");
    assert_eq!(s.grads_skipped, 1, "{s:?}");
}

#[test]
fn a_smooth_program_is_compared_end_to_end() {
    let p = smooth_program();
    let (r64, r32) = records(&p);
    let s = compare(&p, &r64, &r32).unwrap();
    assert_eq!((s.stable, s.unstable, s.grads_compared), (4, 0, 1), "{s:?}");
    assert!(check::directional(&p, &r64, 7).unwrap(), "the central difference ran");
}

#[test]
fn a_wrong_step_value_is_reported() {
    let p = smooth_program();
    let (r64, mut r32) = records(&p);
    r32.steps[0].out.as_mut().unwrap().data[4] += 1e-3;
    let e = compare(&p, &r64, &r32).unwrap_err();
    assert!(e.contains("step 0") && e.contains("differs from the f64 op on the same input values"), "{e}");
}

#[test]
fn a_stale_alias_is_reported() {
    // The transposed view v2 must show the in-place write into v1.
    let p = smooth_program();
    let (r64, mut r32) = records(&p);
    let stale: Vec<f64> = r32.steps[1].out.as_ref().unwrap().data.clone();
    r32.finals[2].data = stale;
    let e = compare(&p, &r64, &r32).unwrap_err();
    assert!(e.contains("final value of v2"), "{e}");
}

#[test]
fn a_wrong_gradient_is_reported_by_both_checks() {
    let p = smooth_program();
    let (mut r64, mut r32) = records(&p);
    let Some(Ok(g)) = r32.backward.as_mut() else { panic!("a backward") };
    g[0].as_mut().unwrap().data[1] *= 1.01;
    let e = compare(&p, &r64, &r32).unwrap_err();
    assert!(e.contains("backward in the cpu f32 run"), "{e}");
    let Some(Ok(g)) = r64.backward.as_mut() else { panic!("a backward") };
    g[0].as_mut().unwrap().data[1] *= 1.01;
    let e = check::directional(&p, &r64, 7).unwrap_err();
    assert!(e.contains("central difference"), "{e}");
}

#[test]
fn an_error_on_one_backend_only_is_reported() {
    let p = smooth_program();
    let (r64, mut r32) = records(&p);
    let e = skiff::Error::Shape { op: "matmul", msg: "made up".into() };
    r32.steps[3].out = Err(super::exec::ErrKey::of(&e));
    let e = compare(&p, &r64, &r32).unwrap_err();
    assert!(e.contains("step 3") && e.contains("Err(Shape)"), "{e}");
}
