//! Element types. F32 is the working dtype everywhere; F64 exists on the cpu
//! backend for gradient checking; F16 is storage for mixed precision (on a
//! GPU only where the adapter has `shader-f16`; kernels compute in f32);
//! I32 carries indices and class labels; Bool carries masks (stored as one
//! byte per element).

use std::fmt;

/// The element type of a tensor.
///
/// ```
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::arange(0.0, 4.0, 1.0, DType::F32)?;
/// assert!(x.dtype().is_float());
/// // Comparisons give Bool masks; labels and indices are I32.
/// assert_eq!(x.gt_scalar(1.5)?.dtype(), DType::Bool);
/// let labels = Tensor::from_vec(vec![2i32, 0, 1], &[3])?;
/// assert_eq!(labels.dtype(), DType::I32);
/// // Only floating-point tensors can require gradients.
/// assert!(labels.requires_grad_(true).is_err());
///
/// // `to_dtype` casts; `to_vec` takes the element type matching the dtype.
/// let x64 = x.to_dtype(DType::F64)?;
/// assert_eq!(x64.to_vec::<f64>()?, vec![0.0, 1.0, 2.0, 3.0]);
/// assert_eq!((DType::F64.size_in_bytes(), DType::F64.to_string()), (8, "f64".to_string()));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F64,
    F16,
    I32,
    Bool,
}

impl DType {
    /// True for F32, F64 and F16: the dtypes that can carry gradients.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16)
    }
    /// Bytes per element in storage.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 => 8,
            DType::F16 => 2,
            DType::Bool => 1,
        }
    }
    /// The lower-case name used in messages and `Display`: "f32", "i32", ...
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
