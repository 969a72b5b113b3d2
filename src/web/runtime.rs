//! Process-wide state for JS: backend initialisation, the default device,
//! `tidy` scopes, grad mode, seeding and the memory report.

use super::args::{self, object};
use super::{js_error, JsResult, Kind, Named};
use crate::device::Device;
use crate::dispatch::record::Stamp;
use std::cell::RefCell;
use std::collections::HashSet;
use wasm_bindgen::prelude::*;

thread_local! {
    static DEFAULT: RefCell<Device> = const { RefCell::new(Device::Cpu) };
    /// Compiled functions that created tensors on the default device assume it.
    static DEFAULT_STAMP: Stamp = Stamp::new("the default device");
    static GPU: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// The device creation functions use when none is given (what `init` chose).
pub fn default_device() -> Device {
    DEFAULT_STAMP.with(|s| s.read());
    DEFAULT.with(|d| d.borrow().clone())
}

fn set_default(d: &Device) {
    if DEFAULT.with(|x| x.replace(d.clone())) != *d {
        DEFAULT_STAMP.with(|s| s.changed(&format!("set to {}", args::device_name(d))));
    }
}

/// The initialised GPU, or an error saying `init` must open it first.
pub fn gpu_device(op: &str) -> JsResult<Device> {
    GPU.with(|g| g.borrow().clone()).ok_or_else(|| {
        js_error(op, Kind::Device, "no WebGPU device: call init({ device: 'webgpu' }) (or 'auto') first")
    })
}

/// Opens the backend: `kind` is 'cpu' (no GPU is touched) or 'webgpu' (the
/// GPU is opened, or the returned promise rejects with the reason). Resolves
/// to `{ device, adapter }`; the JS `init()` adds the fallback logic.
/// `softwareAdapter`: the page saw (in `GPUAdapterInfo`) that the adapter is
/// a software rasteriser such as SwiftShader, which WebGPU does not report
/// otherwise; skiff then uses its kernels for CPU adapters. `subgroups`: the
/// page has the browser add the `subgroups` feature to the device wgpu
/// requests (wgpu's WebGPU backend cannot ask for it, gfx-rs/wgpu#10146).
#[wasm_bindgen(js_name = initBackend)]
pub async fn init_backend(
    #[wasm_bindgen(unchecked_param_type = "'cpu' | 'webgpu'")] kind: JsValue,
    #[wasm_bindgen(js_name = softwareAdapter, unchecked_optional_param_type = "boolean")] software_adapter: Option<
        JsValue,
    >,
    #[wasm_bindgen(unchecked_optional_param_type = "boolean")] subgroups: Option<JsValue>,
) -> JsResult<JsValue> {
    let kind = args::string_arg("init", "device", &kind)?;
    let software_adapter = args::opt_bool("init", "softwareAdapter", &software_adapter.unwrap_or_default(), false)?;
    let subgroups = args::opt_bool("init", "subgroups", &subgroups.unwrap_or_default(), false)?;
    let device = match kind.as_str() {
        "cpu" => Device::Cpu,
        "webgpu" | "gpu" => {
            #[cfg(feature = "gpu")]
            let d = Device::Gpu(
                crate::backend::gpu::init_default_async_with(software_adapter, subgroups).await.within("init")?,
            );
            #[cfg(not(feature = "gpu"))]
            let d = {
                let _ = (software_adapter, subgroups);
                Device::gpu_async().await.within("init")?
            };
            GPU.with(|g| *g.borrow_mut() = Some(d.clone()));
            d
        }
        other => {
            return Err(js_error(
                "init",
                Kind::Argument,
                format!("device must be 'auto', 'webgpu' or 'cpu', got {other:?}"),
            ))
        }
    };
    set_default(&device);
    Ok(object(&[
        ("device", args::device_name(&device).into()),
        ("adapter", adapter_info(&device)),
        ("wasmSimd", wasm_simd().into()),
        ("autocast", super::amp::autocast_info(&device)),
    ]))
}

/// Which of the package's two builds this module is: 'relaxed' (compiled
/// with relaxed SIMD: the cpu GEMM fuses multiply and add) or 'simd128'.
#[wasm_bindgen(js_name = wasmSimd, unchecked_return_type = "'relaxed' | 'simd128'")]
pub fn wasm_simd() -> String {
    if cfg!(target_feature = "relaxed-simd") { "relaxed" } else { "simd128" }.to_string()
}

/// `{ name, vendor, architecture, backend, deviceType, driver }` of a GPU, else null.
fn adapter_info(device: &Device) -> JsValue {
    match device {
        Device::Cpu => JsValue::NULL,
        #[cfg(feature = "gpu")]
        Device::Gpu(g) => {
            let i = g.info();
            object(&[
                ("name", i.name.as_str().into()),
                ("vendor", i.vendor.to_string().into()),
                ("backend", format!("{:?}", i.backend).into()),
                ("deviceType", format!("{:?}", i.device_type).into()),
                ("driver", i.driver.as_str().into()),
                ("driverInfo", i.driver_info.as_str().into()),
                ("shaderF16", g.shader_f16().into()),
            ])
        }
    }
}

/// Makes `device` ('cpu' | 'webgpu') the default for creation functions.
#[wasm_bindgen(js_name = setDefaultDevice)]
pub fn set_default_device(#[wasm_bindgen(unchecked_param_type = "DeviceName")] device: JsValue) -> JsResult<()> {
    set_default(&args::device("setDefaultDevice", &device)?);
    Ok(())
}

/// The default device's name.
#[wasm_bindgen(js_name = getDefaultDevice, unchecked_return_type = "DeviceName")]
pub fn get_default_device() -> String {
    args::device_name(&default_device()).to_string()
}

/// Seeds the global random generator (randn, rand, dropout, init).
#[wasm_bindgen(js_name = manualSeed)]
pub fn manual_seed(#[wasm_bindgen(unchecked_param_type = "number")] seed: JsValue) -> JsResult<()> {
    match seed.as_f64() {
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s <= 9.0e15 => {
            crate::random::manual_seed(s as u64);
            Ok(())
        }
        _ => Err(js_error(
            "manualSeed",
            Kind::Argument,
            format!("seed must be a non-negative integer, got {}", args::describe(&seed)),
        )),
    }
}

/// Deterministic mode (`crate::determinism`): the cpu kernels compute the
/// same bits as a native build in the same mode (WebGPU is not covered).
#[wasm_bindgen(js_name = setDeterministic)]
pub fn set_deterministic(#[wasm_bindgen(unchecked_param_type = "boolean")] on: JsValue) -> JsResult<()> {
    let on = on.as_bool().ok_or_else(|| {
        js_error("setDeterministic", Kind::Argument, format!("on must be a boolean, got {}", args::describe(&on)))
    })?;
    crate::determinism::set_deterministic(on);
    Ok(())
}

/// Whether deterministic mode is on.
#[wasm_bindgen(js_name = isDeterministic)]
pub fn is_deterministic() -> bool {
    crate::determinism::is_deterministic()
}

/// Opens a tidy scope (the JS `tidy()` pairs it with `endScope`).
#[wasm_bindgen(js_name = beginScope)]
pub fn begin_scope() {
    super::begin_scope();
}

/// Closes the innermost tidy scope, disposing its tensors except those whose
/// handle ids are in `keep` (they move to the enclosing scope).
#[wasm_bindgen(js_name = endScope)]
pub fn end_scope(#[wasm_bindgen(unchecked_param_type = "number[]")] keep: JsValue) -> JsResult<()> {
    let ids = args::sizes("tidy", "keep", &keep)?;
    super::end_scope(&ids.into_iter().map(|i| i as u32).collect::<Vec<_>>())
}

/// Keeps a tensor out of every open tidy scope (it lives until disposed).
#[wasm_bindgen(js_name = keep)]
pub fn keep(#[wasm_bindgen(unchecked_param_type = "Tensor")] t: JsValue) -> JsResult<JsValue> {
    args::tensor("keep", "tensor", &t)?;
    if let Some(id) = args::tensor_id(&t) {
        super::keep_handle(id);
    }
    Ok(t)
}

/// Turns gradient recording on or off; returns the previous setting.
#[wasm_bindgen(js_name = setGradEnabled)]
pub fn set_grad_enabled(#[wasm_bindgen(unchecked_param_type = "boolean")] on: JsValue) -> JsResult<bool> {
    // A boolean only: setGradEnabled('no') must not switch recording off (or on).
    let Some(on) = on.as_bool() else {
        return Err(js_error(
            "setGradEnabled",
            Kind::Argument,
            format!("on must be a boolean, got {}", args::describe(&on)),
        ));
    };
    let was = crate::autograd::is_grad_enabled();
    // The guard restores on drop; JS restores explicitly (noGrad's finally).
    std::mem::forget(crate::autograd::set_grad_enabled(on));
    Ok(was)
}

/// Whether gradient recording is on.
#[wasm_bindgen(js_name = isGradEnabled)]
pub fn is_grad_enabled() -> bool {
    crate::autograd::is_grad_enabled()
}

/// Live tensor handles, the bytes their storages hold per device (each
/// storage counted once, however many views share it), open tidy scopes, the
/// cpu runtime's figures (every live cpu storage, the pool of freed buffers,
/// the pool's cap, and the wasm memory's size), and for the GPU the runtime's
/// own figures (every live buffer, including
/// gradients and optimizer state, and the pool of free buffers).
#[wasm_bindgen(
    js_name = memoryInfo,
    unchecked_return_type = "{ tensors: number; bytes: { cpu: number; webgpu: number }; scopes: number; cpu: { liveBytes: number; pooledBytes: number; capBytes: number; wasmMemoryBytes: number }; gpu: { liveBytes: number; pooledBytes: number; buffersCreated: number; readbacks: number; submits: number } | null }"
)]
pub fn memory_info() -> JsValue {
    let live = super::live_tensors();
    let mut seen = HashSet::new();
    let (mut cpu, mut gpu) = (0usize, 0usize);
    for t in &live {
        let st = t.storage();
        if seen.insert(std::sync::Arc::as_ptr(st) as usize) {
            let bytes = storage_bytes(t);
            if t.device().is_gpu() {
                gpu += bytes;
            } else {
                cpu += bytes;
            }
        }
    }
    let runtime = match GPU.with(|g| g.borrow().clone()) {
        #[cfg(feature = "gpu")]
        Some(Device::Gpu(g)) => {
            let c = g.counters();
            object(&[
                ("liveBytes", (c.bytes_live as f64).into()),
                ("pooledBytes", (c.bytes_pooled as f64).into()),
                ("buffersCreated", (c.buffers_created as f64).into()),
                ("readbacks", (c.readbacks as f64).into()),
                ("submits", (c.submits as f64).into()),
            ])
        }
        _ => JsValue::NULL,
    };
    let pool = crate::backend::cpu::pool::stats();
    let host = object(&[
        ("liveBytes", (pool.live_bytes as f64).into()),
        ("pooledBytes", (pool.pooled_bytes as f64).into()),
        ("capBytes", (pool.cap_bytes as f64).into()),
        ("wasmMemoryBytes", wasm_memory_bytes().into()),
    ]);
    object(&[
        ("tensors", (live.len() as f64).into()),
        ("bytes", object(&[("cpu", (cpu as f64).into()), ("webgpu", (gpu as f64).into())])),
        ("scopes", (super::scope_depth() as f64).into()),
        ("cpu", host),
        ("gpu", runtime),
    ])
}

/// Bytes of the whole storage behind `t` (not just its view).
fn storage_bytes(t: &crate::tensor::Tensor) -> usize {
    t.storage().read().bytes()
}

/// Frees the pools of unused buffers: the cpu pool and the GPU's
/// (`skiff::empty_cache`). The wasm memory keeps its size (it never shrinks);
/// the freed bytes serve later allocations.
#[wasm_bindgen(js_name = emptyCache)]
pub fn empty_cache() {
    crate::backend::empty_cache();
}

/// Bytes of this module's `WebAssembly.Memory` (what the page's wasm heap
/// has grown to; it never shrinks).
fn wasm_memory_bytes() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        (core::arch::wasm32::memory_size::<0>() as f64) * 65536.0
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}
