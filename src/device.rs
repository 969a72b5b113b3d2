//! Where a tensor lives, and how the default device is chosen.
//!
//! An op runs on its inputs' device; all inputs must share one device (else a
//! clear error); `tensor.to(device)` moves data explicitly.
//!
//! ```
//! use skiff::{DType, Device, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let device = Device::best()?; // a hardware GPU adapter when one exists, else the cpu
//! println!("running on {}", device.describe());
//! let x = Tensor::randn(&[64, 784], DType::F32)?.to(&device)?;
//! let w = Tensor::randn(&[784, 10], DType::F32)?.to(&device)?.requires_grad_(true)?;
//! let loss = x.matmul(&w)?.relu()?.mean(&[], false)?;
//! loss.backward()?;
//! assert_eq!(w.grad().unwrap().device(), device);
//! assert!(loss.item()? >= 0.0);
//! # Ok(())
//! # }
//! ```

use crate::error::{Error, Result};
use std::fmt;

#[cfg(feature = "gpu")]
pub use crate::backend::gpu::{GpuCounters, GpuDevice, GpuOptions, MatmulKernel};

/// A compute device.
///
/// Tensors are created on the cpu; [`Tensor::to`](crate::Tensor::to) moves
/// one (a recorded op: gradients flow back across the move), and an op runs
/// on the device of its inputs, which must all be on one device.
///
/// ```
/// use skiff::{DType, Device, Error, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::ones(&[2, 2], DType::F32)?;
/// assert_eq!(x.device(), Device::Cpu);
///
/// // A hardware GPU when there is one, else the cpu (SKIFF_DEVICE=cpu|gpu|auto overrides).
/// let device = Device::best()?;
/// let y = x.to(&device)?.mul_scalar(3.0)?; // runs on `device`
/// assert_eq!(y.device(), device);
/// // Reading values copies them back from wherever the tensor is.
/// assert_eq!(y.to_vec::<f32>()?, vec![3.0; 4]);
/// assert_eq!(y.to(&Device::Cpu)?.device(), Device::Cpu);
///
/// // Mixing devices in one op is an error, never an implicit copy.
/// if device.is_gpu() {
///     assert!(matches!(y.add(&x), Err(Error::Device { op: "add", .. })));
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// The ndarray cpu backend (native and WebAssembly).
    #[default]
    Cpu,
    /// A wgpu adapter (Vulkan, Metal, DX12 natively; WebGPU in browsers).
    #[cfg(feature = "gpu")]
    Gpu(GpuDevice),
}

impl Device {
    /// The best device available: a hardware GPU adapter when one exists,
    /// else the cpu. A software adapter (Mesa's lavapipe, SwiftShader) runs its
    /// shaders on the same CPU and is always slower than the cpu backend, so
    /// it is only used when forced. `SKIFF_DEVICE=cpu` or `SKIFF_DEVICE=gpu`
    /// forces one (forcing `gpu` without any adapter is an error).
    pub fn best() -> Result<Device> {
        match std::env::var("SKIFF_DEVICE").ok().as_deref().map(str::trim) {
            Some("cpu") => Ok(Device::Cpu),
            Some("gpu") => Device::gpu(),
            None | Some("") | Some("auto") => Ok(match Device::gpu() {
                Ok(d) if !d.is_software() => d,
                _ => Device::Cpu,
            }),
            Some(other) => {
                Err(Error::value("Device::best", format!("SKIFF_DEVICE={other:?} is not one of cpu, gpu, auto")))
            }
        }
    }

    /// The default GPU, or an error saying why there is none.
    pub fn gpu() -> Result<Device> {
        #[cfg(feature = "gpu")]
        {
            crate::backend::gpu::default_device().map(Device::Gpu)
        }
        #[cfg(not(feature = "gpu"))]
        {
            Err(Error::value("Device::gpu", "skiff was built without the `gpu` feature"))
        }
    }

    /// `Device::gpu` without blocking: opens the default GPU on first call. In
    /// the browser this is the only way to get one (JS: `init()`).
    pub async fn gpu_async() -> Result<Device> {
        #[cfg(feature = "gpu")]
        {
            crate::backend::gpu::init_default_async().await.map(Device::Gpu)
        }
        #[cfg(not(feature = "gpu"))]
        {
            Err(Error::value("Device::gpu_async", "skiff was built without the `gpu` feature"))
        }
    }

    pub fn is_gpu(&self) -> bool {
        !matches!(self, Device::Cpu)
    }

    /// True for a GPU device whose adapter is a software rasteriser on the CPU.
    pub fn is_software(&self) -> bool {
        match self {
            Device::Cpu => false,
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => g.info().device_type == wgpu::DeviceType::Cpu,
        }
    }

    /// True for a GPU device that runs a convolution's products as implicit
    /// GEMMs (reading the image through the window; every GPU unless its
    /// `GpuOptions::implicit_gemm` is off).
    pub fn runs_implicit_gemm(&self) -> bool {
        match self {
            Device::Cpu => false,
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => g.context().tuning.implicit_gemm(),
        }
    }

    /// True for a GPU device whose implicit GEMM reads a padded window from
    /// a zero-padded copy of the image (`GpuOptions::pad_first`: SwiftShader).
    pub(crate) fn pads_images_first(&self) -> bool {
        match self {
            Device::Cpu => false,
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => g.context().tuning.pad_first(),
        }
    }

    /// Submits queued GPU work and waits for it (a no-op on the cpu).
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => g.synchronize(),
        }
    }

    /// A one-line description: "cpu", or the adapter's name and backend.
    pub fn describe(&self) -> String {
        match self {
            Device::Cpu => "cpu (ndarray)".to_string(),
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => format!("gpu: {} ({:?}, {:?})", g.name(), g.backend(), g.info().device_type),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            #[cfg(feature = "gpu")]
            Device::Gpu(_) => f.write_str("gpu"),
        }
    }
}
