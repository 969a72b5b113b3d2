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
    /// The page asked the browser for `subgroups` itself when this device was
    /// requested (wgpu's WebGPU backend cannot: gfx-rs/wgpu#10146), so the
    /// device has them though `device.features()` does not say so, and
    /// kernels that use them must declare `enable subgroups;` (Tint requires
    /// it; naga, natively, rejects it).
    pub subgroups_by_directive: bool,
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
    quiet_device_select_layer();
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
    // Half-precision shaders wherever the adapter has them (lavapipe and most
    // real GPUs; not SwiftShader): the f16 kernels need the device to enable
    // them at creation.
    // Timestamp queries too, for the profiler's kernel times (used only
    // while a profile records).
    // Subgroup operations on software adapters, where the blocked matmul
    // shares loads of B across a subgroup (`matmul::Block::broadcast`). wgpu's
    // WebGPU backend does not offer them, so in a browser this asks nothing:
    // there the page asks (`Opened::subgroups_by_directive`).
    let mut wanted = wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY;
    if info.device_type == wgpu::DeviceType::Cpu {
        wanted |= wgpu::Features::SUBGROUP;
    }
    let features = adapter.features() & wanted;
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("skiff"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| Error::value("Device::gpu", format!("adapter '{}' refused a device: {e}", info.name)))?;
    Ok(Opened { info, limits, device, queue, subgroups_by_directive: false })
}

/// Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` (installed with
/// mesa-vulkan-drivers, lavapipe's package) asks Wayland for the default GPU
/// whenever the instance enables `VK_KHR_wayland_surface`, which wgpu always
/// does; without `XDG_RUNTIME_DIR` libwayland then prints "error:
/// XDG_RUNTIME_DIR is invalid or not set" on every instance, even in a program
/// that never opens a window or uses the GPU result. No compositor can be
/// reached without that directory, so the layer has nothing to learn there:
/// switch it off through its own `NODEVICE_SELECT` variable, unless the user
/// configured it (`NODEVICE_SELECT`, or `MESA_VK_DEVICE_SELECT` to pick a
/// device). skiff chooses among the adapters itself, so nothing else changes.
/// Set once, before the first instance; wgpu has no option to leave out
/// surface extensions.
#[cfg(all(target_os = "linux", not(target_arch = "wasm32")))]
fn quiet_device_select_layer() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let runtime_dir_ok = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| d.to_string_lossy().starts_with('/'));
        let configured = ["NODEVICE_SELECT", "MESA_VK_DEVICE_SELECT"].iter().any(|v| std::env::var_os(v).is_some());
        if !runtime_dir_ok && !configured {
            std::env::set_var("NODEVICE_SELECT", "1");
        }
    });
}

#[cfg(not(all(target_os = "linux", not(target_arch = "wasm32"))))]
fn quiet_device_select_layer() {}

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
    block_on(super::readback::read(f))
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

/// Whether GPU errors are known only later (the browser, where error scopes
/// resolve asynchronously): allocations and batches of work are then wrapped
/// in error scopes whose outcome the next readback awaits (`pending_errors`).
/// Natively every scope is read when it closes.
pub const DEFERRED_ERRORS: bool = cfg!(target_arch = "wasm32");

/// Out-of-memory and validation error scopes around some calls.
pub struct Scopes {
    invalid: wgpu::ErrorScopeGuard,
    oom: wgpu::ErrorScopeGuard,
}

pub fn open_scopes(device: &wgpu::Device) -> Scopes {
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let invalid = device.push_error_scope(wgpu::ErrorFilter::Validation);
    Scopes { invalid, oom }
}

/// Closes `scopes`. Natively: the error they caught, read now. In the
/// browser: `None` now; the next readback awaits the outcome and, if an error
/// was caught, fails with what `on_error` makes of it (which may also do
/// bookkeeping, such as keeping a failed buffer out of the pool).
#[cfg(not(target_arch = "wasm32"))]
pub fn close_scopes(scopes: Scopes, _on_error: impl FnOnce(wgpu::Error) -> Error + 'static) -> Option<wgpu::Error> {
    let invalid = block_on(scopes.invalid.pop());
    let oom = block_on(scopes.oom.pop());
    oom.or(invalid)
}

#[cfg(target_arch = "wasm32")]
pub fn close_scopes(scopes: Scopes, on_error: impl FnOnce(wgpu::Error) -> Error + 'static) -> Option<wgpu::Error> {
    let invalid = scopes.invalid.pop();
    let oom = scopes.oom.pop();
    let both = async move {
        let invalid = invalid.await;
        oom.await.or(invalid)
    };
    PENDING_SCOPES.with(|p| p.borrow_mut().push((Box::pin(both), Box::new(on_error))));
    None
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
type PendingScope =
    (std::pin::Pin<Box<dyn std::future::Future<Output = Option<wgpu::Error>>>>, Box<dyn FnOnce(wgpu::Error) -> Error>);

#[cfg(target_arch = "wasm32")]
thread_local! {
    static PENDING_SCOPES: std::cell::RefCell<Vec<PendingScope>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The open scopes of each context's pending batch (see `open_batch_scopes`).
    static BATCH_SCOPES: std::cell::RefCell<std::collections::HashMap<u64, Scopes>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

#[cfg(target_arch = "wasm32")]
pub fn scope_error(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    let on_error = |e: wgpu::Error| Error::gpu("gpu", format!("a GPU kernel failed to compile: {e}"));
    PENDING_SCOPES.with(|p| p.borrow_mut().push((Box::pin(scope.pop()), Box::new(on_error))));
    None
}

/// Opens the error scopes of context `ctx`'s pending batch, unless open
/// (browser only): every error its recording and submission raise (a bind
/// group over a buffer whose allocation failed, the invalid command buffer)
/// lands there instead of in the device's uncaptured-error handler, which
/// would fail every later op. They close after the batch's submit
/// (`close_batch_scopes`). Natively an allocation failure is known at once and
/// its buffer never used, so nothing needs catching.
pub fn open_batch_scopes(ctx: u64, device: &wgpu::Device) {
    #[cfg(target_arch = "wasm32")]
    BATCH_SCOPES.with(|b| {
        b.borrow_mut().entry(ctx).or_insert_with(|| open_scopes(device));
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (ctx, device);
}

/// Closes the scopes `open_batch_scopes` opened for `ctx`, if any; an error
/// they caught fails the next readback with `on_error`'s result.
pub fn close_batch_scopes(ctx: u64, on_error: impl FnOnce(wgpu::Error) -> Error + 'static) {
    #[cfg(target_arch = "wasm32")]
    if let Some(scopes) = BATCH_SCOPES.with(|b| b.borrow_mut().remove(&ctx)) {
        close_scopes(scopes, on_error);
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (ctx, on_error);
}

/// The first error of the error scopes not yet awaited (browser only; natively
/// scopes are checked when they close). Every caught error's `on_error` runs,
/// so all their bookkeeping is done even when only the first is reported.
pub async fn pending_errors() -> Result<()> {
    #[cfg(target_arch = "wasm32")]
    {
        let scopes = PENDING_SCOPES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        let mut first = None;
        for (scope, on_error) in scopes {
            if let Some(e) = scope.await {
                let e = on_error(e);
                first.get_or_insert(e);
            }
        }
        if let Some(e) = first {
            return Err(e);
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
