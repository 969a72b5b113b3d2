//! Helpers shared by the integration tests (cargo does not treat
//! `tests/common/mod.rs` as a test binary of its own).

#![allow(dead_code)] // each test binary uses its own subset

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
