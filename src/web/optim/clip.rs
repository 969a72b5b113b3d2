//! Gradient clipping for JS (no readback: the norm stays a device tensor).

use crate::web::args::{self, describe, Opts};
use crate::web::nn::bag;
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use wasm_bindgen::prelude::*;

/// Scales all gradients together so that their joint norm is at most
/// `maxNorm`; returns the norm before clipping as a one-element Tensor on
/// the gradients' device (undefined when no parameter has a gradient).
/// Nothing is read back. `normType`: any p > 0, or Infinity / 'inf' (default 2).
#[wasm_bindgen(js_name = clipGradNorm)]
pub fn clip_grad_norm(
    #[wasm_bindgen(unchecked_param_type = "Tensor[]")] params: JsValue,
    #[wasm_bindgen(js_name = maxNorm, unchecked_param_type = "number")] max_norm: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ normType?: number | 'inf' }")] options: Option<JsValue>,
) -> JsResult<Option<JsTensor>> {
    const OP: &str = "clipGradNorm";
    let params = args::tensors(OP, "params", &params)?;
    let max_norm = args::finite_arg(OP, "maxNorm", &max_norm)?;
    if max_norm < 0.0 {
        return Err(js_error(OP, Kind::Value, format!("maxNorm must be >= 0, got {max_norm}")));
    }
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o: Opts = bag(OP, &options, &["normType"])?;
    let norm_type = match o.get("normType") {
        v if v.is_undefined() || v.is_null() => 2.0,
        v if v.as_string().as_deref() == Some("inf") => f64::INFINITY,
        v => match v.as_f64() {
            Some(p) if p == f64::INFINITY || (p.is_finite() && p > 0.0) => p,
            _ => {
                return Err(js_error(
                    OP,
                    Kind::Argument,
                    format!("normType must be a number > 0, Infinity or 'inf', got {}", describe(&v)),
                ))
            }
        },
    };
    Ok(crate::optim::clip_grad_norm_tensor_(&params, max_norm, norm_type).named(OP)?.map(JsTensor::wrap))
}

/// Clamps every gradient element into [-clipValue, clipValue], in place.
#[wasm_bindgen(js_name = clipGradValue)]
pub fn clip_grad_value(
    #[wasm_bindgen(unchecked_param_type = "Tensor[]")] params: JsValue,
    #[wasm_bindgen(js_name = clipValue, unchecked_param_type = "number")] clip_value: JsValue,
) -> JsResult<()> {
    const OP: &str = "clipGradValue";
    let params = args::tensors(OP, "params", &params)?;
    let clip = args::finite_arg(OP, "clipValue", &clip_value)?;
    if clip < 0.0 {
        return Err(js_error(OP, Kind::Value, format!("clipValue must be >= 0, got {clip}")));
    }
    crate::optim::clip_grad_value_(&params, clip).named(OP)
}
