//! Mixed precision for JS: the autocast switch (the scope itself is
//! `autocast(fn)` in web/api.js, like noGrad) and `GradScaler`, whose step
//! awaits its inf/NaN check instead of blocking (`amp::scaler`).

use super::args;
use super::nn::bag;
use super::optim::optimizer_arg;
use super::{js_error, rejection, JsResult, JsTensor, Kind, Named};
use crate::amp::{GradScaler, GradScalerConfig};
use crate::device::Device;
use crate::dtype::DType;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// Turns autocast on or off; returns the previous setting.
#[wasm_bindgen(js_name = setAutocastEnabled)]
pub fn set_autocast_enabled(#[wasm_bindgen(unchecked_param_type = "boolean")] on: JsValue) -> JsResult<bool> {
    let on = args::bool_arg("setAutocastEnabled", "on", &on)?;
    Ok(crate::amp::set_autocast_enabled(on))
}

/// Whether autocast is on.
#[wasm_bindgen(js_name = isAutocastEnabled)]
pub fn is_autocast_enabled() -> bool {
    crate::amp::is_autocast_enabled()
}

/// `{ dtype, reason }` of autocast on `device` (for `backendInfo()`): what
/// its f16 ops run in there, and why f32 where the adapter lacks shader-f16.
pub(crate) fn autocast_info(device: &Device) -> JsValue {
    let (dtype, reason) = match device {
        #[cfg(feature = "gpu")]
        Device::Gpu(g) if !g.shader_f16() => {
            (DType::F32, JsValue::from(format!("{} has no shader-f16: autocast computes in float32 there", g.name())))
        }
        _ => (DType::F16, JsValue::NULL),
    };
    super::opts::object(&[("dtype", args::dtype_name(dtype).into()), ("reason", reason)])
}

/// Dynamic loss scaling for mixed-precision training (PyTorch's
/// `GradScaler`): `scaler.scale(loss).backward()`, `await
/// scaler.step(optimizer)` (false when a gradient was inf or NaN and the
/// step was skipped), `scaler.update()`.
#[wasm_bindgen(js_name = GradScaler)]
pub struct JsGradScaler {
    inner: Rc<RefCell<GradScaler>>,
}

impl JsGradScaler {
    fn borrow_mut(&self, op: &str) -> JsResult<std::cell::RefMut<'_, GradScaler>> {
        self.inner.try_borrow_mut().map_err(|_| js_error(op, Kind::Value, "the GradScaler is in use (await its step)"))
    }
}

#[wasm_bindgen(js_class = GradScaler)]
impl JsGradScaler {
    /// Options (PyTorch's defaults): `initScale` 65536, `growthFactor` 2,
    /// `backoffFactor` 0.5, `growthInterval` 2000, `enabled` true.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ initScale?: number; growthFactor?: number; backoffFactor?: number; growthInterval?: number; enabled?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsGradScaler> {
        const OP: &str = "GradScaler";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["initScale", "growthFactor", "backoffFactor", "growthInterval", "enabled"])?;
        let d = GradScalerConfig::default();
        let interval = o.usize("growthInterval", d.growth_interval as usize)?;
        let config = GradScalerConfig {
            init_scale: o.f64("initScale", d.init_scale)?,
            growth_factor: o.f64("growthFactor", d.growth_factor)?,
            backoff_factor: o.f64("backoffFactor", d.backoff_factor)?,
            growth_interval: u32::try_from(interval)
                .map_err(|_| js_error(OP, Kind::Value, format!("growthInterval {interval} is too large")))?,
            enabled: o.bool("enabled", d.enabled)?,
        };
        Ok(JsGradScaler { inner: Rc::new(RefCell::new(GradScaler::new(config).named(OP)?)) })
    }

    /// `loss` times the current scale (call `backward()` on the result).
    pub fn scale(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] loss: JsValue) -> JsResult<JsTensor> {
        let loss = args::tensor("GradScaler.scale", "loss", &loss)?;
        Ok(JsTensor::wrap(self.borrow_mut("GradScaler.scale")?.scale(&loss).named("GradScaler.scale")?))
    }

    /// Divides the gradients by the scale and steps `optimizer` unless one
    /// is inf or NaN; resolves to whether it stepped. The check reads one
    /// number back per device, awaited (never blocking).
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn step(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
    ) -> JsResult<js_sys::Promise> {
        const OP: &str = "GradScaler.step";
        let entry = optimizer_arg(OP, "optimizer", &optimizer)?;
        let sums = {
            let opt = entry.borrow(OP)?;
            self.borrow_mut(OP)?.start_step(&**opt).named(OP)?
        };
        let scaler = self.inner.clone();
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let finite = match sums {
                Some(sums) => Some(crate::amp::all_finite_async(sums).await.map_err(|e| rejection(OP, e))?),
                None => None,
            };
            let mut s = scaler.try_borrow_mut().map_err(|_| js_error(OP, Kind::Value, "the GradScaler is in use"))?;
            let mut opt = entry.borrow_mut(OP)?;
            Ok(s.finish_step(&mut **opt, finite).map_err(|e| rejection(OP, e))?.into())
        }))
    }

    /// Divides the gradients by the scale now (to clip them before `step`);
    /// resolves to whether one is inf or NaN.
    #[wasm_bindgen(js_name = unscale_, unchecked_return_type = "Promise<boolean>")]
    pub fn unscale(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
    ) -> JsResult<js_sys::Promise> {
        const OP: &str = "GradScaler.unscale_";
        let entry = optimizer_arg(OP, "optimizer", &optimizer)?;
        let sums = {
            let opt = entry.borrow(OP)?;
            let mut s = self.borrow_mut(OP)?;
            if !s.config().enabled {
                return Ok(js_sys::Promise::resolve(&JsValue::FALSE));
            }
            s.start_unscale(&**opt).named(OP)?
        };
        let scaler = self.inner.clone();
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let finite = crate::amp::all_finite_async(sums).await.map_err(|e| rejection(OP, e))?;
            let mut s = scaler.try_borrow_mut().map_err(|_| js_error(OP, Kind::Value, "the GradScaler is in use"))?;
            Ok(s.finish_unscale(finite).into())
        }))
    }

    /// Adapts the scale to the last step's check (halved after inf/NaN,
    /// doubled after `growthInterval` good steps).
    pub fn update(&self) -> JsResult<()> {
        self.borrow_mut("GradScaler.update")?.update().named("GradScaler.update")
    }

    /// The current scale (1 when disabled).
    #[wasm_bindgen(js_name = getScale)]
    pub fn get_scale(&self) -> JsResult<f64> {
        Ok(self.borrow_mut("GradScaler.getScale")?.get_scale())
    }
}
