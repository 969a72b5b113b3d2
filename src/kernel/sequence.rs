//! Fills whose element `i` is a formula of `i` and the output shape
//! (arange, linspace, eye): computed in f64, then converted to the dtype as
//! a cast would (f32 rounds, i32 truncates, bool is `!= 0`).

use super::Scalar;

/// A deterministic fill, element by element in row-major order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sequence {
    /// `start + i * step` (arange).
    Arange { start: Scalar, step: Scalar },
    /// `start + (end - start) * i / (n - 1)` for `n` elements, `start`
    /// alone when `n == 1` (linspace: both ends included).
    Linspace { start: Scalar, end: Scalar },
    /// 1 where the row equals the column of a `[rows, cols]` output, else 0 (eye).
    Eye,
}

impl Sequence {
    pub fn name(&self) -> &'static str {
        match self {
            Sequence::Arange { .. } => "arange",
            Sequence::Linspace { .. } => "linspace",
            Sequence::Eye => "eye",
        }
    }

    /// Whether the sequence is defined for outputs of `shape` (eye: a matrix).
    pub fn fits(&self, shape: &[usize]) -> bool {
        match self {
            Sequence::Eye => shape.len() == 2,
            _ => true,
        }
    }

    /// The formula for an output of `shape` (which `fits`), as a function
    /// of the row-major element position.
    pub fn values(&self, shape: &[usize]) -> impl Fn(usize) -> f64 {
        let n: usize = shape.iter().product();
        let cols = shape.get(1).copied().unwrap_or(1).max(1);
        let seq = *self;
        move |i| match seq {
            Sequence::Arange { start, step } => start.0 + i as f64 * step.0,
            Sequence::Linspace { start, end } => match n {
                1 => start.0,
                _ => start.0 + (end.0 - start.0) * i as f64 / (n - 1) as f64,
            },
            Sequence::Eye => (i / cols == i % cols) as u8 as f64,
        }
    }
}
