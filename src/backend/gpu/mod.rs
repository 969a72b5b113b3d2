//! The wgpu backend: WGSL compute kernels over storage buffers.
//!
//! Tensors on the GPU keep host-side shapes and layouts (views cost nothing);
//! a `GpuBuffer` owns one pooled wgpu buffer and returns it to its context's
//! pool when the last tensor using it drops. Dtypes: f32, i32, and bool masks
//! stored as one u32 per element (WGSL has no byte-sized storage); f64 stays
//! on the cpu.

pub mod catalog;
pub mod checks;
pub mod context;
pub mod conv;
pub mod conv_gemm;
pub mod custom;
pub mod elementwise;
pub mod epilogue;
pub mod fused;
pub mod index;
pub mod kernels;
pub mod matmul;
pub mod memory;
pub mod optim;
pub mod options;
pub mod pipelines;
pub mod readback;
pub mod reduce;
pub mod replay;
mod run;
mod run_index;
pub mod runtime;
pub mod scan;
pub mod sort;
pub mod timing;

pub use options::{GpuOptions, MatmulKernel};
pub use run::Gpu;
pub use runtime::{GpuContext, GpuCounters};

use crate::dtype::DType;
use crate::error::{Error, Result};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// Handle to one GPU device (cheap to clone; equal when it is the same device).
#[derive(Clone)]
pub struct GpuDevice(pub(crate) Arc<GpuContext>);

impl GpuDevice {
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.0
    }
    /// Adapter name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub fn name(&self) -> &str {
        &self.0.info.name
    }
    /// The wgpu backend in use (Vulkan, Metal, Dx12, BrowserWebGpu, ...).
    pub fn backend(&self) -> wgpu::Backend {
        self.0.info.backend
    }
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.0.info
    }
    pub fn limits(&self) -> &wgpu::Limits {
        &self.0.limits
    }
    /// Whether the device runs half-precision shaders (WebGPU's `shader-f16`,
    /// enabled at creation wherever the adapter has it).
    pub fn shader_f16(&self) -> bool {
        self.0.device.features().contains(wgpu::Features::SHADER_F16)
    }
    pub fn counters(&self) -> GpuCounters {
        self.0.counters()
    }
    /// Frees this device's pool of unused buffers (`crate::empty_cache` also
    /// clears the cpu pool's).
    pub fn empty_cache(&self) {
        self.0.empty_cache()
    }
    /// Submits all recorded work and waits for it.
    pub fn synchronize(&self) -> Result<()> {
        self.0.synchronize()
    }
    /// Opens a new device context of its own on the best adapter (the
    /// default device, `Device::gpu()`, is shared by the whole process), with
    /// the options the `SKIFF_GPU_*` environment variables set.
    pub fn open() -> Result<GpuDevice> {
        Self::open_with_options(GpuOptions::default())
    }
    /// `open`, with `options` taking precedence over the environment's.
    pub fn open_with_options(options: GpuOptions) -> Result<GpuDevice> {
        let options = GpuOptions::from_env()?.overridden_by(&options);
        options.validate()?;
        context::request_blocking(|_| {}).map(|o| GpuDevice(GpuContext::new(o, &options)))
    }
    /// `open`, with the adapter's limits adjusted first: a device that enforces
    /// lower limits than the hardware's, e.g. the WebGPU defaults a browser
    /// grants, or a small `max_compute_workgroups_per_dimension` to exercise
    /// the folded dispatch grids cheaply. Raising a limit past the adapter's
    /// is an error from the adapter.
    pub fn open_with_limits(adjust: impl FnOnce(&mut wgpu::Limits)) -> Result<GpuDevice> {
        let options = GpuOptions::from_env()?;
        context::request_blocking(adjust).map(|o| GpuDevice(GpuContext::new(o, &options)))
    }
    /// `open` without blocking: the only way to open a device in the browser.
    pub async fn open_async() -> Result<GpuDevice> {
        let options = GpuOptions::from_env()?;
        context::request().await.map(|o| GpuDevice(GpuContext::new(o, &options)))
    }
    /// The kernels compiled on this device so far, by pipeline key (such as
    /// "index:gather:f32"): for tests that check which kernel a path chose.
    #[doc(hidden)]
    pub fn compiled_kernels(&self) -> Vec<String> {
        let mut keys: Vec<String> =
            self.0.pipelines.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect();
        keys.sort();
        keys
    }
    /// Destroys the device, as a driver reset or unplugged GPU would: every
    /// later op on it returns an error. For tests of device-loss handling.
    #[doc(hidden)]
    pub fn destroy(&self) {
        self.0.mark_lost("device lost (Destroyed): GpuDevice::destroy was called");
        self.0.device.destroy();
    }
}

impl PartialEq for GpuDevice {
    fn eq(&self, o: &Self) -> bool {
        self.0.id == o.0.id
    }
}
impl Eq for GpuDevice {}
impl std::hash::Hash for GpuDevice {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gpu({}, {:?})", self.0.info.name, self.0.info.backend)
    }
}

static DEFAULT: OnceLock<std::result::Result<GpuDevice, Error>> = OnceLock::new();

/// The process-wide default GPU (opened on first use).
///
/// Natively it opens on first use (blocking). In the browser a device can only
/// be opened asynchronously, so `init_default_async` must have run first.
pub fn default_device() -> Result<GpuDevice> {
    if !context::CAN_BLOCK {
        return DEFAULT.get().cloned().unwrap_or_else(|| {
            Err(Error::value(
                "Device::gpu",
                "the GPU is not initialised yet: await Device::gpu_async() (JS: init()) first",
            ))
        });
    }
    DEFAULT.get_or_init(GpuDevice::open).clone()
}

/// The default GPU if it has been opened (never opens it).
pub(crate) fn opened_default() -> Option<GpuDevice> {
    DEFAULT.get().and_then(|d| d.as_ref().ok().cloned())
}

/// Opens the default GPU without blocking (once; later calls return the same
/// result). A failure is remembered like `default_device`'s.
pub async fn init_default_async() -> Result<GpuDevice> {
    init_default_async_with(false, false).await
}

/// `init_default_async`, where the caller knows more about the adapter than
/// wgpu reports: in the browser WebGPU hides the device type, and the page
/// can tell a software adapter (SwiftShader) from `GPUAdapterInfo`. With
/// `software`, an adapter of unknown type is recorded as a CPU device, which
/// picks the kernels made for software rasterisers (see `matmul`). With
/// `subgroups`, the page had the browser add `subgroups` to the device's
/// features while it was requested (`context::Opened::subgroups_by_directive`).
pub async fn init_default_async_with(software: bool, subgroups: bool) -> Result<GpuDevice> {
    if let Some(done) = DEFAULT.get() {
        return done.clone();
    }
    let opened = async {
        let options = GpuOptions::from_env()?;
        let mut o = context::request().await?;
        if software && o.info.device_type == wgpu::DeviceType::Other {
            o.info.device_type = wgpu::DeviceType::Cpu;
        }
        o.subgroups_by_directive = subgroups;
        Ok(GpuDevice(GpuContext::new(o, &options)))
    }
    .await;
    // Another caller may have finished first while this one awaited: keep theirs.
    DEFAULT.get_or_init(|| opened).clone()
}

/// Device memory holding one tensor storage.
pub struct GpuBuffer {
    ctx: Arc<GpuContext>,
    buf: Option<wgpu::Buffer>,
    /// The pool's size class it returns to; 0 for a view of a program's
    /// arena buffer (`replay`), which the program keeps.
    class: u64,
    /// Elements (4 bytes each, f16 2: `element_bytes`).
    pub len: usize,
    pub dtype: DType,
}

impl GpuBuffer {
    pub(crate) fn new(ctx: &Arc<GpuContext>, op: &'static str, dtype: DType, len: usize) -> Result<GpuBuffer> {
        if dtype == DType::F64 {
            return Err(Error::dtype(op, "f64 tensors live on the cpu only; convert with to_dtype(F32) first"));
        }
        if dtype == DType::F16 && !ctx.device.features().contains(wgpu::Features::SHADER_F16) {
            return Err(Error::dtype(
                op,
                format!(
                    "f16 tensors need the adapter feature shader-f16, which {} does not have; keep f32 there \
                     (autocast falls back to f32 by itself)",
                    ctx.info.name
                ),
            ));
        }
        let bytes = (len * element_bytes(dtype)).div_ceil(4) as u64 * 4;
        if let Some(buf) = replay::take_output(ctx.id, bytes) {
            return Ok(GpuBuffer::arena_view(ctx, buf, dtype, len));
        }
        let (buf, class) = ctx.alloc(op, bytes)?;
        Ok(GpuBuffer { ctx: ctx.clone(), buf: Some(buf), class, len, dtype })
    }
    /// A buffer over (part of) a program's arena buffer `buf`: never pooled.
    pub(crate) fn arena_view(ctx: &Arc<GpuContext>, buf: wgpu::Buffer, dtype: DType, len: usize) -> GpuBuffer {
        GpuBuffer { ctx: ctx.clone(), buf: Some(buf), class: 0, len, dtype }
    }
    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        self.buf.as_ref().expect("buffer present until drop")
    }
    pub(crate) fn ctx(&self) -> &Arc<GpuContext> {
        &self.ctx
    }
    pub fn device(&self) -> GpuDevice {
        GpuDevice(self.ctx.clone())
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take().filter(|_| self.class != 0) {
            self.ctx.release(b, self.class);
        }
    }
}

impl fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GpuBuffer({} x {})", self.len, self.dtype)
    }
}

/// Bytes per element in device memory: f16 2, every other dtype 4 (bool
/// masks are u32; f64 never reaches a device).
pub fn element_bytes(dtype: DType) -> usize {
    match dtype {
        DType::F16 => 2,
        _ => 4,
    }
}

/// The WGSL element type for a dtype.
pub fn wgsl_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F64 => "f32",
        DType::F16 => "f16",
        DType::I32 => "i32",
        DType::Bool => "u32",
    }
}
