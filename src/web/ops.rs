//! Registry ops as methods of the JS `Tensor` (PyTorch names in camelCase).
//! Tensor arguments arrive as `JsValue` and go through `args::tensor` /
//! `Operand::parse`, so a wrong or disposed argument is an error naming the op.

use super::args::{self, Operand, Opts};
use super::{JsResult, JsTensor};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// this + other (a Tensor, broadcast, or a number).
    pub fn add(&self, #[wasm_bindgen(unchecked_param_type = "Tensor | number")] other: JsValue) -> JsResult<JsTensor> {
        let x = self.get("add")?;
        Ok(JsTensor::wrap(match Operand::parse("add", "other", &other)? {
            Operand::Scalar(c) => x.add_scalar(c)?,
            Operand::Tensor(t) => x.add(&t)?,
        }))
    }

    /// Sum over `axes` (all when omitted); `options.keepdim` keeps reduced dims as size 1.
    pub fn sum(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | number[]")] axes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ keepdim?: boolean }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let x = self.get("sum")?;
        let axes = args::axes("sum", "axes", &axes)?;
        let keepdim = Opts::new("sum", &options)?.bool("keepdim", false)?;
        Ok(JsTensor::wrap(x.sum(&axes, keepdim)?))
    }
}
