//! The one error type users see. Every message names the op and the offending
//! shapes, dtypes or devices so the user can act on it (DESIGN principle 6).

use thiserror::Error;

/// Result alias used across skiff.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong at a user boundary. Panics are reserved for
/// broken internal invariants.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum Error {
    /// Operand shapes are incompatible for the op (broadcasting, matmul, reshape, ...).
    #[error("{op}: {msg}")]
    Shape { op: &'static str, msg: String },
    /// An operand has a dtype the op does not accept.
    #[error("{op}: {msg}")]
    DType { op: &'static str, msg: String },
    /// An axis index is out of range for the tensor's rank.
    #[error("{op}: axis {axis} is out of range for a tensor of rank {ndim} (shape {shape:?})")]
    Axis { op: &'static str, axis: isize, ndim: usize, shape: Vec<usize> },
    /// Inputs live on different devices.
    #[error("{op}: expected all tensors on one device, found {found}")]
    Device { op: &'static str, found: String },
    /// A value argument is invalid (label out of range, negative size, bad probability...).
    #[error("{op}: {msg}")]
    Value { op: &'static str, msg: String },
    /// Misuse of the autograd engine (second backward, in-place overwrite, ...).
    #[error("{op}: {msg}")]
    Autograd { op: &'static str, msg: String },
}

impl Error {
    pub(crate) fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape { op, msg: msg.into() }
    }
    pub(crate) fn dtype(op: &'static str, msg: impl Into<String>) -> Self {
        Error::DType { op, msg: msg.into() }
    }
    pub(crate) fn value(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Value { op, msg: msg.into() }
    }
    pub(crate) fn autograd(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Autograd { op, msg: msg.into() }
    }
}
