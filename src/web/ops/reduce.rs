//! Reductions (`axes` optional: all axes when omitted; `{ keepdim }`), the
//! arg-reductions, `sumTo`, and `matmul`.

use super::{out, shape_arg, undef};
use crate::web::args::{self, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind};
use wasm_bindgen::prelude::*;

/// Methods `name(axes?, { keepdim? })` calling `Tensor::name(&axes, keepdim)`.
macro_rules! reduce_methods {
    ($($name:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
                pub fn $name(
                    &self,
                    #[wasm_bindgen(unchecked_optional_param_type = "number | number[] | null")] axes: Option<JsValue>,
                    #[wasm_bindgen(unchecked_optional_param_type = "{ keepdim?: boolean }")] options: Option<JsValue>,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    let (axes, options) = (undef(axes), undef(options));
                    let x = self.get(OP)?;
                    let axes = args::axes(OP, "axes", &axes)?;
                    let keepdim = Opts::known(OP, &options, &["keepdim"])?.bool("keepdim", false)?;
                    out(OP, x.$name(&axes, keepdim))
                }
            )*
        }
    };
}

reduce_methods! {
    sum: "Sum over `axes` (all when omitted); `options.keepdim` keeps reduced dims as size 1.";
    mean: "Mean over `axes` (all when omitted); `options.keepdim` keeps reduced dims as size 1.";
    max: "Maximum over `axes` (all when omitted): the values only (see `argmax` for indices).";
    min: "Minimum over `axes` (all when omitted): the values only (see `argmin` for indices).";
    logsumexp: "log(sum(exp(x))) over `axes` (all when omitted), computed stably.";
}

/// `{ correction?, unbiased?, keepdim? }` of var/std: the correction (1 unless given).
fn correction(op: &str, o: &Opts) -> JsResult<f64> {
    let c = o.opt_f64("correction")?;
    let unbiased = o.get("unbiased");
    if unbiased.is_undefined() || unbiased.is_null() {
        return Ok(c.unwrap_or(1.0));
    }
    if c.is_some() {
        return Err(js_error(op, Kind::Argument, "give either option correction or option unbiased, not both"));
    }
    Ok(if o.bool("unbiased", true)? { 1.0 } else { 0.0 })
}

/// Methods `name(axes?, { correction?, unbiased?, keepdim? })` (var, std).
macro_rules! spread_methods {
    ($($name:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
                pub fn $name(
                    &self,
                    #[wasm_bindgen(unchecked_optional_param_type = "number | number[] | null")] axes: Option<JsValue>,
                    #[wasm_bindgen(
                        unchecked_optional_param_type = "{ correction?: number; unbiased?: boolean; keepdim?: boolean }"
                    )]
                    options: Option<JsValue>,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    let (axes, options) = (undef(axes), undef(options));
                    let x = self.get(OP)?;
                    let axes = args::axes(OP, "axes", &axes)?;
                    let o = Opts::known(OP, &options, &["correction", "unbiased", "keepdim"])?;
                    let c = correction(OP, &o)?;
                    out(OP, x.$name(&axes, c, o.bool("keepdim", false)?))
                }
            )*
        }
    };
}

spread_methods! {
    var: "Variance over `axes` (all when omitted); `correction` 1 (default, unbiased) or 0 (population).";
    std: "Standard deviation over `axes` (all when omitted); `correction` as in `var`.";
}

/// Methods `name(axis?, { keepdim? })` returning int32 indices.
macro_rules! arg_methods {
    ($($name:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<'int32'>")]
                pub fn $name(
                    &self,
                    #[wasm_bindgen(unchecked_optional_param_type = "number | null")] axis: Option<JsValue>,
                    #[wasm_bindgen(unchecked_optional_param_type = "{ keepdim?: boolean }")] options: Option<JsValue>,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    let (axis, options) = (undef(axis), undef(options));
                    let x = self.get(OP)?;
                    let axis = args::opt_axis(OP, "axis", &axis)?;
                    if axis.is_some() {
                        super::needs_axis(OP, &x)?;
                    }
                    let keepdim = Opts::known(OP, &options, &["keepdim"])?.bool("keepdim", false)?;
                    out(OP, x.$name(axis, keepdim))
                }
            )*
        }
    };
}

arg_methods! {
    argmax: "Index (int32) of the maximum along `axis`, or into the flattened tensor when omitted.";
    argmin: "Index (int32) of the minimum along `axis`, or into the flattened tensor when omitted.";
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// Sums broadcast dims away so the result has `shape` (the adjoint of `expand`).
    #[wasm_bindgen(js_name = sumTo, unchecked_return_type = "Tensor<D>")]
    pub fn sum_to(&self, #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "sumTo";
        let x = self.get(OP)?;
        out(OP, x.sum_to(&shape_arg(OP, "shape", &shape)?))
    }

    /// Matrix product (NumPy/PyTorch `matmul`): batched, leading dims broadcast, 1-D operands promoted.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn matmul(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] other: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "matmul";
        let x = self.get(OP)?;
        out(OP, x.matmul(&args::tensor(OP, "other", &other)?))
    }
}
