//! `caseData(op, caseIndex)`: one registry case's inputs and the output the
//! Rust closure computes from them, so a JS test can call the same op through
//! its camelCase binding (`x.conv2d(w, b, { stride })`, `x.sum([1], { keepdim })`)
//! and compare. `checkCase` runs the Rust closures only; this is how the
//! bindings' own argument parsing gets tested for every case.
//!
//! Kept deliberately thin: the inputs come from `Case::make_inputs` (the
//! seeded values and layout every other check draws for the sample) and the
//! output from `case.run`.

use super::args::{handles, object, Opts};
use super::testing::registry_case_arg;
use super::{js_error, JsResult, JsTensor, Kind};
use crate::dtype::DType;
use crate::testing::{case_of, parity_tolerance, GPU_DTYPE_ERROR};
use js_sys::Array;
use wasm_bindgen::prelude::*;

/// Case `caseIndex` of registry op `op`, in float32 on the cpu: `{ op,
/// caseName, sample, inputs, output, gpuTolerance: [atol, rtol],
/// gpuDtypeError }`. `gpuTolerance` is what the cpu-vs-GPU parity check
/// allows for the case; `gpuDtypeError` marks cases that must fail on the GPU
/// (no float64 there). The inputs are laid out as the case's sample says
/// (transposed, strided, expanded views; empty or 0-d shapes), so the JS call
/// also meets views; `options.sample`, when given, must name that sample (a
/// table that means another sample is a mistake, not a skip).
#[wasm_bindgen(
    js_name = caseData,
    unchecked_return_type = "{ op: string; caseName: string; sample: string; inputs: Tensor[]; output: Tensor; gpuTolerance: [number, number]; gpuDtypeError: boolean }"
)]
pub fn case_data(
    #[wasm_bindgen(unchecked_param_type = "string")] op: JsValue,
    #[wasm_bindgen(js_name = caseIndex, unchecked_param_type = "number")] case_index: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ sample?: string }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "caseData";
    let (def, k) = registry_case_arg(OP, &op, &case_index)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let case = case_of(def, k).map_err(|e| js_error(OP, Kind::Value, e.to_string()))?;
    let sample = Opts::known(OP, &options, &["sample"])?.string("sample", case.sample.name())?;
    if sample != case.sample.name() {
        return Err(js_error(
            OP,
            Kind::Value,
            format!("{} case #{k} ({}) is the {} sample, not {sample:?}", def.name, case.name, case.sample.name()),
        ));
    }
    let fail = |what: &str, e: crate::error::Error| {
        js_error(OP, Kind::Value, format!("{} / {}: {what}: {e}", def.name, case.name))
    };
    let inputs = case.make_inputs(def.name, k, DType::F32).map_err(|e| fail("inputs", e))?;
    let output = (case.run)(&inputs).map_err(|e| fail("forward", e))?;
    let (atol, rtol) = parity_tolerance(def.name, &case);
    let tolerance = Array::of2(&atol.into(), &rtol.into());
    Ok(object(&[
        ("op", def.name.into()),
        ("caseName", case.name.into()),
        ("sample", sample.into()),
        ("inputs", handles(inputs).into()),
        ("output", JsTensor::wrap(output).into()),
        ("gpuTolerance", tolerance.into()),
        ("gpuDtypeError", GPU_DTYPE_ERROR.contains(&(def.name, case.name)).into()),
    ]))
}
