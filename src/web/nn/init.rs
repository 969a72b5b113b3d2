//! `nn.init` for JS: in-place initialisers (PyTorch's `torch.nn.init`). Each
//! fills the tensor under no_grad from skiff's seeded generator and returns
//! the same tensor handle (for chaining). The JS wrapper exposes them as
//! `nn.init.kaimingUniform_` and so on.

use super::bag;
use crate::nn::init::{self, FanMode, Nonlinearity};
use crate::web::args::{self, Opts};
use crate::web::{js_error, JsResult, Kind, Named};
use wasm_bindgen::prelude::*;

/// A nonlinearity name with leaky ReLU's negative slope `a`.
fn nonlinearity(op: &str, name: &str, a: f64) -> JsResult<Nonlinearity> {
    Ok(match name {
        "linear" | "conv1d" | "conv2d" | "conv3d" => Nonlinearity::Linear,
        "sigmoid" => Nonlinearity::Sigmoid,
        "tanh" => Nonlinearity::Tanh,
        "relu" => Nonlinearity::Relu,
        "leaky_relu" => Nonlinearity::LeakyRelu(a),
        other => {
            return Err(js_error(
                op,
                Kind::Argument,
                format!(
                    "nonlinearity must be 'linear', 'conv2d', 'sigmoid', 'tanh', 'relu' or 'leaky_relu', got {other:?}"
                ),
            ))
        }
    })
}

/// Kaiming's `{ a, mode, nonlinearity }` (PyTorch's defaults: 0, 'fan_in', 'leaky_relu').
fn kaiming(op: &str, o: &Opts) -> JsResult<(FanMode, Nonlinearity)> {
    let mode = match o.string("mode", "fan_in")?.as_str() {
        "fan_in" => FanMode::FanIn,
        "fan_out" => FanMode::FanOut,
        other => {
            return Err(js_error(op, Kind::Argument, format!("mode must be 'fan_in' or 'fan_out', got {other:?}")))
        }
    };
    let a = o.f64("a", 0.0)?;
    Ok((mode, nonlinearity(op, &o.string("nonlinearity", "leaky_relu")?, a)?))
}

const KAIMING: &[&str] = &["a", "mode", "nonlinearity"];

/// The recommended gain for a nonlinearity (`param`: leaky ReLU's slope, default 0.01).
#[wasm_bindgen(js_name = calculateGain)]
pub fn calculate_gain(
    #[wasm_bindgen(
        js_name = nonlinearity,
        unchecked_param_type = "'linear' | 'conv2d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu'"
    )]
    nonlinearity_name: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number")] param: Option<JsValue>,
) -> JsResult<f64> {
    const OP: &str = "calculateGain";
    let Some(name) = nonlinearity_name.as_string() else {
        return Err(js_error(
            OP,
            Kind::Argument,
            format!("nonlinearity must be a string, got {}", args::describe(&nonlinearity_name)),
        ));
    };
    let a = match param {
        Some(v) if !(v.is_undefined() || v.is_null()) => args::finite_arg(OP, "param", &v)?,
        _ => 0.01,
    };
    Ok(init::calculate_gain(nonlinearity(OP, &name, a)?))
}

/// He uniform init in place: U(-b, b), b = gain * sqrt(3 / fan).
#[wasm_bindgen(js_name = initKaimingUniform_, unchecked_return_type = "Tensor")]
pub fn kaiming_uniform_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(
        unchecked_optional_param_type = "{ a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: 'linear' | 'conv2d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' }"
    )]
    options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "kaimingUniform_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let (mode, nl) = kaiming(OP, &bag(OP, &options, KAIMING)?)?;
    init::kaiming_uniform_(&t, mode, nl).named(OP)?;
    Ok(tensor)
}

/// He normal init in place: N(0, std^2), std = gain / sqrt(fan).
#[wasm_bindgen(js_name = initKaimingNormal_, unchecked_return_type = "Tensor")]
pub fn kaiming_normal_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(
        unchecked_optional_param_type = "{ a?: number; mode?: 'fan_in' | 'fan_out'; nonlinearity?: 'linear' | 'conv2d' | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' }"
    )]
    options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "kaimingNormal_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let (mode, nl) = kaiming(OP, &bag(OP, &options, KAIMING)?)?;
    init::kaiming_normal_(&t, mode, nl).named(OP)?;
    Ok(tensor)
}

/// Glorot uniform init in place: U(-b, b), b = gain * sqrt(6 / (fanIn + fanOut)).
#[wasm_bindgen(js_name = initXavierUniform_, unchecked_return_type = "Tensor")]
pub fn xavier_uniform_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ gain?: number }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "xavierUniform_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    init::xavier_uniform_(&t, bag(OP, &options, &["gain"])?.f64("gain", 1.0)?).named(OP)?;
    Ok(tensor)
}

/// Glorot normal init in place: N(0, std^2), std = gain * sqrt(2 / (fanIn + fanOut)).
#[wasm_bindgen(js_name = initXavierNormal_, unchecked_return_type = "Tensor")]
pub fn xavier_normal_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ gain?: number }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "xavierNormal_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    init::xavier_normal_(&t, bag(OP, &options, &["gain"])?.f64("gain", 1.0)?).named(OP)?;
    Ok(tensor)
}

/// Uniform samples in [a, b) (default [0, 1)), in place.
#[wasm_bindgen(js_name = initUniform_, unchecked_return_type = "Tensor")]
pub fn uniform_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ a?: number; b?: number }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "uniform_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o = bag(OP, &options, &["a", "b"])?;
    init::uniform_(&t, o.f64("a", 0.0)?, o.f64("b", 1.0)?).named(OP)?;
    Ok(tensor)
}

/// Normal samples N(mean, std^2) (default N(0, 1)), in place.
#[wasm_bindgen(js_name = initNormal_, unchecked_return_type = "Tensor")]
pub fn normal_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ mean?: number; std?: number }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "normal_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o = bag(OP, &options, &["mean", "std"])?;
    init::normal_(&t, o.f64("mean", 0.0)?, o.f64("std", 1.0)?).named(OP)?;
    Ok(tensor)
}

/// Sets every element to `value`, in place.
#[wasm_bindgen(js_name = initConstant_, unchecked_return_type = "Tensor")]
pub fn constant_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] value: JsValue,
) -> JsResult<JsValue> {
    const OP: &str = "constant_";
    let t = args::tensor(OP, "tensor", &tensor)?;
    init::constant_(&t, args::finite_arg(OP, "value", &value)?).named(OP)?;
    Ok(tensor)
}

/// Sets every element to 0, in place.
#[wasm_bindgen(js_name = initZeros_, unchecked_return_type = "Tensor")]
pub fn zeros_(#[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue) -> JsResult<JsValue> {
    const OP: &str = "zeros_";
    init::constant_(&args::tensor(OP, "tensor", &tensor)?, 0.0).named(OP)?;
    Ok(tensor)
}

/// Sets every element to 1, in place.
#[wasm_bindgen(js_name = initOnes_, unchecked_return_type = "Tensor")]
pub fn ones_(#[wasm_bindgen(unchecked_param_type = "Tensor")] tensor: JsValue) -> JsResult<JsValue> {
    const OP: &str = "ones_";
    init::constant_(&args::tensor(OP, "tensor", &tensor)?, 1.0).named(OP)?;
    Ok(tensor)
}
