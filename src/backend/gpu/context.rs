//! Creating the wgpu instance, adapter and device. This is the ONLY file with
//! `cfg(target_arch = "wasm32")` seams: natively adapter and device requests
//! block on pollster; in the browser they must be awaited (the WebAssembly
//! issue wires the async path to `init()`), and readback never blocks there.

use crate::error::{Error, Result};

/// What `request` produced: the adapter's description and the device/queue pair.
pub struct Opened {
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

/// Asks the platform for the best adapter and opens a device with the
/// adapter's own limits (so large storage buffers work where the hardware
/// allows them), and the WebGPU defaults as the floor.
pub async fn request() -> Result<Opened> {
    request_with_limits(|_| {}).await
}

/// `request`, with the adapter's limits passed through `adjust` before the
/// device is opened: lowering one gives a device that enforces the lower
/// limit (wgpu validates every dispatch against the device's limits).
pub async fn request_with_limits(adjust: impl FnOnce(&mut wgpu::Limits)) -> Result<Opened> {
    check_webgpu_present()?;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            ..Default::default()
        })
        .await
        .map_err(|e| Error::value("Device::gpu", format!("no GPU adapter available: {e}")))?;
    let info = adapter.get_info();
    let mut limits = adapter.limits();
    adjust(&mut limits);
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("skiff"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| Error::value("Device::gpu", format!("adapter '{}' refused a device: {e}", info.name)))?;
    Ok(Opened { info, limits, device, queue })
}

/// In the browser, wgpu's WebGPU backend needs `navigator.gpu` (it panics
/// without one): say so as an error first. Natively there is nothing to check.
#[cfg(target_arch = "wasm32")]
fn check_webgpu_present() -> Result<()> {
    use js_sys::{global, JsString, Reflect};
    let navigator = Reflect::get(&global(), &JsString::from("navigator")).ok().filter(|v| v.is_object());
    let gpu = navigator.and_then(|n| Reflect::get(&n, &JsString::from("gpu")).ok()).filter(|v| v.is_object());
    match gpu {
        Some(_) => Ok(()),
        None => Err(Error::value("Device::gpu", "WebGPU is not available here (no navigator.gpu)")),
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn check_webgpu_present() -> Result<()> {
    Ok(())
}

/// Blocks on a future natively.
#[cfg(not(target_arch = "wasm32"))]
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    pollster::block_on(f)
}

/// Whether this target may block on the GPU (never in the browser).
pub const CAN_BLOCK: bool = cfg!(not(target_arch = "wasm32"));

/// Blocks on a readback natively; in the browser, blocking is refused.
#[cfg(not(target_arch = "wasm32"))]
pub fn block_on_readback(f: super::readback::Readback) -> Result<Vec<u8>> {
    block_on(f)
}

#[cfg(target_arch = "wasm32")]
pub fn block_on_readback(_f: super::readback::Readback) -> Result<Vec<u8>> {
    Err(Error::value("to_vec", "reading GPU data cannot block in the browser: use to_vec_async().await"))
}

/// Waits for all submitted GPU work (natively; the browser resolves map callbacks itself).
#[cfg(not(target_arch = "wasm32"))]
pub fn wait_idle(device: &wgpu::Device) -> Result<()> {
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| Error::value("gpu", format!("waiting for the GPU failed: {e}")))
}

#[cfg(target_arch = "wasm32")]
pub fn wait_idle(_device: &wgpu::Device) -> Result<()> {
    Ok(())
}

/// The validation error captured by an error scope, if any. Natively this
/// waits for the scope. In the browser errors arrive asynchronously: the
/// scope's result is kept and awaited by the next readback
/// (`pending_errors`), so a kernel that failed to compile makes the read
/// that depends on it fail instead of returning stale data.
#[cfg(not(target_arch = "wasm32"))]
pub fn scope_error(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    block_on(scope.pop())
}

#[cfg(target_arch = "wasm32")]
type PendingScope = std::pin::Pin<Box<dyn std::future::Future<Output = Option<wgpu::Error>>>>;

#[cfg(target_arch = "wasm32")]
thread_local! {
    static PENDING_SCOPES: std::cell::RefCell<Vec<PendingScope>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(target_arch = "wasm32")]
pub fn scope_error(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    let pending: PendingScope = Box::pin(scope.pop());
    PENDING_SCOPES.with(|p| p.borrow_mut().push(pending));
    None
}

/// The first error of the error scopes not yet awaited (browser only; natively
/// scopes are checked when they close).
pub async fn pending_errors() -> Result<()> {
    #[cfg(target_arch = "wasm32")]
    {
        let scopes = PENDING_SCOPES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        for scope in scopes {
            if let Some(e) = scope.await {
                return Err(Error::value("gpu", format!("a GPU kernel failed to compile: {e}")));
            }
        }
    }
    Ok(())
}

/// Opens the device synchronously (native only; the browser path is async).
#[cfg(not(target_arch = "wasm32"))]
pub fn request_blocking(adjust: impl FnOnce(&mut wgpu::Limits)) -> Result<Opened> {
    block_on(request_with_limits(adjust))
}

#[cfg(target_arch = "wasm32")]
pub fn request_blocking(_adjust: impl FnOnce(&mut wgpu::Limits)) -> Result<Opened> {
    Err(Error::value("Device::gpu", "in the browser the GPU must be initialised asynchronously"))
}
