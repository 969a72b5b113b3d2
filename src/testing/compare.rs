//! Strict comparisons: a check can only pass on real numbers. A NaN or an
//! infinity where the reference has a finite value fails, and so does a
//! non-finite reference unless the case allows non-finite outputs (then NaN
//! must meet NaN and an infinity the same infinity). Shapes and dtypes are
//! part of every comparison.

use crate::dtype::DType;
use crate::ops::Host;
use crate::tensor::Tensor;

/// Compares `got` with `want` elementwise: finite values within
/// `atol + rtol * |want|`, non-finite ones only with `nonfinite` and exactly.
/// The error names the first mismatch and how many there are.
pub fn compare_values(
    what: &str,
    got: &[f64],
    want: &[f64],
    atol: f64,
    rtol: f64,
    nonfinite: bool,
) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    let ok = |g: f64, w: f64| {
        if !w.is_finite() || !g.is_finite() {
            nonfinite && (g == w || (g.is_nan() && w.is_nan()))
        } else {
            (g - w).abs() <= atol + rtol * w.abs()
        }
    };
    let bad: Vec<usize> = (0..want.len()).filter(|&i| !ok(got[i], want[i])).collect();
    let Some(&i) = bad.first() else { return Ok(()) };
    let why = if !want[i].is_finite() && !nonfinite {
        " (the expected value is not finite and the case does not allow that: the inputs left the op's domain?)"
    } else if !got[i].is_finite() {
        " (a non-finite result)"
    } else {
        ""
    };
    Err(format!(
        "{what}: {} of {} elements differ (atol {atol:e}, rtol {rtol:e}); first at flat index {i}: got {} vs expected {} \
         (|diff| {:e}){why}",
        bad.len(),
        want.len(),
        got[i],
        want[i],
        (got[i] - want[i]).abs()
    ))
}

/// Checks an op's output against the reference: shape, dtype (a `Float`
/// reference means the check's float dtype `float`), then values.
pub fn expect_output(
    what: &str,
    out: &Tensor,
    want: &Host,
    float: DType,
    (atol, rtol): (f64, f64),
    nonfinite: bool,
) -> std::result::Result<(), String> {
    let dtype = want.kind.dtype(float);
    if out.shape() != want.shape.as_slice() || out.dtype() != dtype {
        return Err(format!(
            "{what}: got {} {:?}, the reference gives {dtype} {:?}",
            out.dtype(),
            out.shape(),
            want.shape
        ));
    }
    let got = out.to_f64_vec().map_err(|e| format!("{what}: reading the output failed: {e}"))?;
    // Indices and masks must match exactly.
    let (atol, rtol) = if dtype.is_float() { (atol, rtol) } else { (0.0, 0.0) };
    compare_values(what, &got, &want.data, atol, rtol, nonfinite)
}

#[cfg(test)]
mod tests {
    use super::compare_values;

    #[test]
    fn non_finite_values_pass_only_where_allowed_and_then_exactly() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        // A case drifting out of its domain (NaN on both sides) fails unless it opts in.
        assert!(compare_values("x", &[nan], &[nan], 1.0, 1.0, false).is_err());
        assert!(compare_values("x", &[nan], &[nan], 1.0, 1.0, true).is_ok());
        // An infinite reference matches only the same infinity, even with huge tolerances.
        assert!(compare_values("x", &[1e300], &[inf], 1e308, 1e308, true).is_err());
        assert!(compare_values("x", &[-inf], &[inf], 1e308, 1e308, true).is_err());
        assert!(compare_values("x", &[inf], &[inf], 0.0, 0.0, true).is_ok());
        assert!(compare_values("x", &[inf], &[inf], 0.0, 0.0, false).is_err());
        // A non-finite result never matches a finite reference.
        assert!(compare_values("x", &[nan], &[1.0], 1e308, 1e308, true).is_err());
        assert!(compare_values("x", &[inf], &[1.0], 1e308, 1e308, true).is_err());
    }

    #[test]
    fn finite_values_within_atol_plus_rtol() {
        assert!(compare_values("x", &[1.0 + 1.5e-6], &[1.0], 1e-6, 1e-6, false).is_ok());
        let e = compare_values("x", &[1.0, 2.0 + 5e-6], &[1.0, 2.0], 1e-6, 1e-6, false).unwrap_err();
        assert!(e.starts_with("x: 1 of 2 elements differ") && e.contains("flat index 1"), "{e}");
        assert!(compare_values("x", &[1.0], &[1.0, 2.0], 1.0, 1.0, false)
            .unwrap_err()
            .contains("1 elements, expected 2"));
    }
}
