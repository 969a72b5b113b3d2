//! The f16 check of one case sample (`DType::F16`: f16 storage, f32 kernels
//! rounding once per op, `backend::half`), on any device with f16: the
//! forward from f16 inputs against the case's reference computed in f64 from
//! the same values, and the gradients of sum(out * w) against the same graph
//! run in f32 from the same values (f16 inputs and w, widened exactly).

use super::compare::{compare_values, expect_output};
use super::cpu::{first_grads, weights};
use super::{case_of, fail, float_positions, Check, CheckResult, GPU_DTYPE_ERROR};
use crate::autograd::enable_grad;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{case_seed, Case, Host, OpDef, OpKind, Reference};
use crate::tensor::Tensor;

type Outcome<T> = std::result::Result<T, String>;

/// f16 forward vs the reference, and f16 gradients vs f32 ones, scaled by the
/// case's `tol`: f16 keeps 11 significant bits (a rounding is up to 2^-11
/// relative), and an op composed of several kernels rounds after each one, so
/// O(1) results may be off by a few 2^-10 steps; 1e-2 is about ten of them.
pub const REFERENCE_F16: (f64, f64) = (1e-2, 1e-2);

/// Runs the f16 checks of sample `k` of `def` on `device` (returns those that ran).
pub fn check_half(def: &OpDef, k: usize, device: &Device) -> CheckResult<Vec<Check>> {
    let case = case_of(def, k)?;
    let fail = fail(def, &case);
    enable_grad(|| half_checks(def, &case, k, device)).map_err(fail)
}

fn half_checks(def: &OpDef, case: &Case, k: usize, device: &Device) -> Outcome<Vec<Check>> {
    let x16 = case.make_inputs_on(def.name, k, DType::F16, device).map_err(|e| format!("f16 inputs: {e}"))?;
    let out = (case.run)(&x16);
    if device.is_gpu() && GPU_DTYPE_ERROR.contains(&(def.name, case.name)) {
        return match out {
            Err(Error::DType { .. }) => Ok(vec![Check::GpuDtypeError]),
            Err(e) => Err(format!("expected a dtype error (no f64 on the GPU), got another error: {e}")),
            Ok(t) => Err(format!("expected a dtype error (no f64 on the GPU), got a {} tensor", t.dtype())),
        };
    }
    let out = out.map_err(|e| format!("f16 forward failed: {e}"))?;
    let (atol, rtol) = (REFERENCE_F16.0 * case.tol, REFERENCE_F16.1 * case.tol);
    let hosts: Vec<Host> =
        x16.iter().map(Host::from_tensor).collect::<Result<_>>().map_err(|e| format!("reading inputs: {e}"))?;
    match case.reference {
        Some(Reference::Values(f)) => {
            expect_output("f16 forward", &out, &f(&hosts), DType::F16, (atol, rtol), case.nonfinite)?
        }
        // A property (a random draw's statistics, a sort's order) is checked in f32 and f64 already.
        Some(Reference::Property(_)) => {}
        None => return Err("the case has no reference".into()),
    }
    let mut ran = vec![Check::HalfForward];
    if def.kind == OpKind::NoGrad || case.max_order == 0 || !out.dtype().is_float() || float_positions(&x16).is_empty()
    {
        return Ok(ran);
    }
    let widen = |t: &Tensor| if t.dtype() == DType::F16 { t.to_dtype(DType::F32) } else { Ok(t.clone()) };
    let x32: Vec<Tensor> = x16.iter().map(widen).collect::<Result<_>>().map_err(|e| e.to_string())?;
    let w16 = weights(out.shape(), DType::F16, case_seed(def.name, k))
        .and_then(|w| w.to(device))
        .map_err(|e| format!("weights: {e}"))?;
    let w32 = widen(&w16).map_err(|e| e.to_string())?;
    let (_, g16) = first_grads(case, &x16, &w16, false).map_err(|e| format!("f16 backward failed: {e}"))?;
    let (_, g32) = first_grads(case, &x32, &w32, false).map_err(|e| format!("f32 backward failed: {e}"))?;
    for ((a, b), i) in g16.iter().zip(&g32).zip(float_positions(&x16)) {
        let what = format!("f16 grad of input {i}");
        if a.dtype() != DType::F16 {
            return Err(format!("{what}: a {} gradient", a.dtype()));
        }
        let read = |t: &Tensor| t.to_f64_vec().map_err(|e| format!("{what}: reading back: {e}"));
        compare_values(&format!("{what} (vs f32)"), &read(a)?, &read(b)?, atol, rtol, false)?;
    }
    ran.push(Check::HalfGradients);
    Ok(ran)
}
