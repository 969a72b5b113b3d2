//! The one error type users see. Every message names the op and the offending
//! shapes, dtypes or devices so the user can act on it (DESIGN principle 6).

use thiserror::Error;

/// Result alias used across skiff.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong at a user boundary. Panics are reserved for
/// broken internal invariants.
///
/// Every variant names the op the caller called ([`Error::op`]); the
/// `Display` text is the whole message.
///
/// ```
/// use skiff::{DType, Error, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let a = Tensor::zeros(&[2, 3], DType::F32)?;
/// let b = Tensor::zeros(&[4, 5], DType::F32)?;
/// match a.matmul(&b) {
///     Err(Error::Shape { op, msg }) => {
///         assert_eq!(op, "matmul");
///         assert!(msg.contains("[2, 3]") && msg.contains("[4, 5]"), "{msg}");
///     }
///     other => panic!("expected a shape error, got {other:?}"),
/// }
///
/// let err = a.sum(&[2], false).unwrap_err();
/// assert!(matches!(err, Error::Axis { op: "sum", axis: 2, ndim: 2, .. }));
/// assert!(err.to_string().starts_with("sum: axis 2 is out of range"));
///
/// // In a function returning `skiff::Result`, `?` passes errors on.
/// let labels = Tensor::from_vec(vec![0i32, 7], &[2])?; // class 7 of 3
/// let err = Tensor::zeros(&[2, 3], DType::F32)?.cross_entropy(&labels, skiff::Reduction::Mean, 0.0);
/// assert!(matches!(err, Err(Error::Value { op: "cross_entropy", .. })));
/// # Ok(())
/// # }
/// ```
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
    /// Memory for a result could not be allocated (host or device). The
    /// runtime stays usable: nothing was half-written.
    #[error("{op}: {msg}")]
    Memory { op: &'static str, msg: String },
    /// The GPU failed a command (a kernel that does not compile, a batch the
    /// driver discarded, an error it reported later). The device may keep
    /// working: the tensors the failed work wrote read back as errors.
    #[error("{op}: {msg}")]
    Gpu { op: &'static str, msg: String },
    /// The GPU device was lost (a driver reset, `GpuDevice::destroy`, the
    /// browser's `GPUDevice.lost`): every later op on it fails; tensors on
    /// the cpu keep working.
    #[error("{op}: {msg}")]
    DeviceLost { op: &'static str, msg: String },
    /// A collective across processes (`skiff::distributed`) failed or timed
    /// out waiting for the other ranks. After a timeout the process group is
    /// unusable; dropping it ends the whole job.
    #[error("{op}: {msg}")]
    Distributed { op: &'static str, msg: String },
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
    pub(crate) fn memory(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Memory { op, msg: msg.into() }
    }
    #[allow(dead_code)] // only skiff::distributed makes these
    pub(crate) fn distributed(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Distributed { op, msg: msg.into() }
    }
    #[allow(dead_code)] // only the GPU backend makes these
    pub(crate) fn gpu(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Gpu { op, msg: msg.into() }
    }

    /// The op the error names.
    pub fn op(&self) -> &'static str {
        match self {
            Error::Shape { op, .. }
            | Error::DType { op, .. }
            | Error::Axis { op, .. }
            | Error::Device { op, .. }
            | Error::Value { op, .. }
            | Error::Autograd { op, .. }
            | Error::Memory { op, .. }
            | Error::Gpu { op, .. }
            | Error::DeviceLost { op, .. }
            | Error::Distributed { op, .. } => op,
        }
    }

    /// The same error reported under `op`: an inner op's failure surfaces
    /// under the name of the op the caller called (`add_` rather than `add`,
    /// `softmax` rather than `sub`).
    pub fn renamed(self, op: &'static str) -> Self {
        match self {
            Error::Shape { msg, .. } => Error::Shape { op, msg },
            Error::DType { msg, .. } => Error::DType { op, msg },
            Error::Axis { axis, ndim, shape, .. } => Error::Axis { op, axis, ndim, shape },
            Error::Device { found, .. } => Error::Device { op, found },
            Error::Value { msg, .. } => Error::Value { op, msg },
            Error::Autograd { msg, .. } => Error::Autograd { op, msg },
            Error::Memory { msg, .. } => Error::Memory { op, msg },
            Error::Gpu { msg, .. } => Error::Gpu { op, msg },
            Error::DeviceLost { msg, .. } => Error::DeviceLost { op, msg },
            Error::Distributed { msg, .. } => Error::Distributed { op, msg },
        }
    }
}
