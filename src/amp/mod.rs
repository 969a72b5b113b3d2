//! Automatic mixed precision, after PyTorch's `torch.autocast` and
//! `torch.amp.GradScaler`.
//!
//! Inside [`autocast`], ops choose their own precision from their inputs:
//! - **f16 ops** (`matmul`, `conv2d`, `conv_transpose2d`, and `Linear`'s
//!   bias add): f32 inputs are cast to f16 first, so the product reads and
//!   writes half the bytes (it still accumulates in f32, `backend::half`);
//! - **f32 ops** (reductions, the scans `cumsum`, `cumprod` and `prod`, `exp`,
//!   `log`, `pow`, softmax and log-softmax, the losses, normalisation): f16
//!   inputs are cast to f32 first, where f16's range (65504) and precision
//!   would not do;
//! - **promoting ops** (binary arithmetic): mixed f16 and f32 operands are
//!   computed in f32, as PyTorch promotes (outside autocast skiff has no
//!   implicit promotion: mixing dtypes is an error);
//! - every other op runs in its inputs' dtype (a ReLU of f16 stays f16).
//!
//! The casts are ordinary differentiable ops, so gradients flow back to the
//! f32 parameters in f32: the optimizer keeps f32 master weights. Where f16
//! is not available (a GPU without `shader-f16`, such as SwiftShader)
//! autocast computes in f32 and says so once ([`fallback_reason`]).
//!
//! f16 gradients may underflow: [`GradScaler`] multiplies the loss before
//! `backward`, divides the gradients again before the optimizer steps, skips
//! steps whose gradients overflowed, and adapts the factor.

mod scaler;

#[cfg(feature = "web")]
pub(crate) use scaler::all_finite_async;
pub use scaler::{GradScaler, GradScalerConfig};

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    static AUTOCAST: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with autocast on (on this thread); the previous state is restored
/// afterwards, also when `f` returns an error.
///
/// ```
/// use skiff::{amp, DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::randn(&[4, 8], DType::F32)?;
/// let w = Tensor::randn(&[8, 3], DType::F32)?;
/// let (y, p) = amp::autocast(|| -> skiff::Result<_> {
///     let y = x.matmul(&w)?; // an f16 op
///     let p = y.softmax(1)?; // an f32 op
///     Ok((y, p))
/// })?;
/// assert_eq!((y.dtype(), p.dtype()), (DType::F16, DType::F32));
/// # Ok(())
/// # }
/// ```
pub fn autocast<R>(f: impl FnOnce() -> R) -> R {
    let _guard = AutocastGuard::new(true);
    f()
}

/// Whether autocast is on on this thread.
pub fn is_autocast_enabled() -> bool {
    AUTOCAST.with(|a| a.get())
}

/// Sets autocast on or off on this thread; returns the previous state (for
/// the JS scope, which must restore it itself).
pub fn set_autocast_enabled(on: bool) -> bool {
    AUTOCAST.with(|a| a.replace(on))
}

/// Autocast on (or off) until dropped, then the previous state again.
pub struct AutocastGuard {
    prev: bool,
}

impl AutocastGuard {
    pub fn new(enabled: bool) -> AutocastGuard {
        AutocastGuard { prev: set_autocast_enabled(enabled) }
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        set_autocast_enabled(self.prev);
    }
}

/// The dtype autocast runs f16 ops in on `device`: f16 on the cpu and on GPUs
/// with `shader-f16`, f32 on other GPUs (the first such call says so on
/// stderr natively, and [`fallback_reason`] keeps the reason).
pub fn lower_dtype(device: &Device) -> DType {
    match device {
        Device::Cpu => DType::F16,
        #[cfg(feature = "gpu")]
        Device::Gpu(g) if g.shader_f16() => DType::F16,
        #[cfg(feature = "gpu")]
        Device::Gpu(g) => {
            let mut first = false;
            FALLBACK.get_or_init(|| {
                first = true;
                format!("{} has no shader-f16: autocast computes in f32 there", g.name())
            });
            if first && cfg!(not(target_arch = "wasm32")) {
                eprintln!("skiff: {}", fallback_reason().unwrap_or_default());
            }
            DType::F32
        }
    }
}

static FALLBACK: OnceLock<String> = OnceLock::new();

/// Why autocast ran in f32 instead of f16, once it has (the adapter without
/// `shader-f16`); None while it never had to.
pub fn fallback_reason() -> Option<String> {
    FALLBACK.get().cloned()
}

/// An f16 op's input under autocast: an f32 tensor cast to the device's lower
/// dtype; anything else (autocast off, other dtypes) as it is.
pub(crate) fn lower(t: &Tensor) -> Result<Tensor> {
    if is_autocast_enabled() && t.dtype() == DType::F32 {
        let to = lower_dtype(&t.device());
        if to != DType::F32 {
            return t.to_dtype(to);
        }
    }
    Ok(t.clone())
}

/// An f32 op's input under autocast: an f16 tensor cast to f32.
pub(crate) fn full(t: &Tensor) -> Result<Tensor> {
    if is_autocast_enabled() && t.dtype() == DType::F16 {
        return t.to_dtype(DType::F32);
    }
    Ok(t.clone())
}

/// An f32 op's input under autocast, for an op to rerun itself on: the f32
/// copy of an f16 tensor, None when nothing changes.
pub(crate) fn widened(t: &Tensor) -> Result<Option<Tensor>> {
    Ok(if is_autocast_enabled() && t.dtype() == DType::F16 { Some(t.to_dtype(DType::F32)?) } else { None })
}

/// `widened` for an op of two float inputs: both in f32 when either is f16.
pub(crate) fn widened_pair(a: &Tensor, b: &Tensor) -> Result<Option<(Tensor, Tensor)>> {
    if !is_autocast_enabled() || (a.dtype() != DType::F16 && b.dtype() != DType::F16) {
        return Ok(None);
    }
    Ok(Some((full(a)?, full(b)?)))
}

/// `b` cast to `a`'s dtype where autocast mixes f16 and f32 (`Linear` adds
/// its f32 bias to an f16 product in f16, as PyTorch's autocast linear does).
pub(crate) fn like(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if is_autocast_enabled() && a.dtype() != b.dtype() && a.dtype().is_float() && b.dtype().is_float() {
        return b.to_dtype(a.dtype());
    }
    Ok(b.clone())
}

/// A promoting op's operands under autocast: mixed f16 and f32 become f32.
pub(crate) fn promote(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let mixed = |x: DType, y: DType| x == DType::F16 && y == DType::F32;
    if is_autocast_enabled() {
        if mixed(a.dtype(), b.dtype()) {
            return Ok((a.to_dtype(DType::F32)?, b.clone()));
        }
        if mixed(b.dtype(), a.dtype()) {
            return Ok((a.clone(), b.to_dtype(DType::F32)?));
        }
    }
    Ok((a.clone(), b.clone()))
}
