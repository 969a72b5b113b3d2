//! The registry checks for JS (`crate::testing`, the code the native
//! gradcheck and GPU parity tests run): `registryCases()` lists every sample
//! of every case of every op (with the checks each op must pass somewhere),
//! `checkCase(op, caseIndex, { gpu })` runs one. A browser test page walks the
//! list to check the wasm build (and, with `gpu: true`, WebGPU).

use super::args::{describe, object, usize_arg, Opts};
use super::{js_error, JsResult, Kind};
use crate::ops::{cases_of, registry, OpKind};
use crate::testing::{check_cpu, check_gpu_parity, expected_checks, find_op, registry_problems};
use js_sys::Array;
use wasm_bindgen::prelude::*;

fn kind_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Primitive => "primitive",
        OpKind::Composite => "composite",
        OpKind::NoGrad => "noGrad",
    }
}

/// Every case of every registry op, in registry order. Throws when the
/// registry breaks its rules (an op without cases, an op registered twice, a
/// primitive without a backward rule), so a runner cannot skip such an op.
#[wasm_bindgen(
    js_name = registryCases,
    unchecked_return_type = "Array<{ op: string; kind: 'primitive' | 'composite' | 'noGrad'; caseIndex: number; caseName: string; sample: string; label: string; secondOrder: boolean; expectedChecks: string[]; expectedGpuChecks: string[] }>"
)]
pub fn registry_cases() -> JsResult<Array> {
    let problems = registry_problems();
    if !problems.is_empty() {
        return Err(js_error(
            "registryCases",
            Kind::Value,
            format!("the registry breaks its rules: {}", problems.join("; ")),
        ));
    }
    let names =
        |checks: Vec<crate::testing::Check>| -> Array { checks.iter().map(|c| JsValue::from_str(c.name())).collect() };
    let out = Array::new();
    for def in registry() {
        for (k, case) in cases_of(def).iter().enumerate() {
            out.push(&object(&[
                ("op", def.name.into()),
                ("kind", kind_name(def.kind).into()),
                ("caseIndex", (k as f64).into()),
                ("caseName", case.name.into()),
                ("sample", case.sample.name().into()),
                ("label", case.label().into()),
                ("secondOrder", def.second_order.into()),
                ("expectedChecks", names(expected_checks(def, false)).into()),
                ("expectedGpuChecks", names(expected_checks(def, true)).into()),
            ]));
        }
    }
    Ok(out)
}

/// Runs sample `caseIndex` of registry op `op`: forward in f64 and f32
/// against the reference, the f64 gradcheck (and gradgradcheck where the op
/// is marked) on the cpu, and with `options.gpu` also the cpu-vs-WebGPU
/// parity on the device `init` opened. Resolves to `{ op, caseName, label,
/// checks }` (the names of the checks that ran);
/// rejects with an Error naming the op, the case and the failing element.
#[wasm_bindgen(
    js_name = checkCase,
    unchecked_return_type = "{ op: string; caseName: string; label: string; checks: string[] }"
)]
pub async fn check_case(
    #[wasm_bindgen(unchecked_param_type = "string")] op: JsValue,
    #[wasm_bindgen(js_name = caseIndex, unchecked_param_type = "number")] case_index: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ gpu?: boolean }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "checkCase";
    let (def, k) = registry_case_arg(OP, &op, &case_index)?;
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let gpu = Opts::known(OP, &options, &["gpu"])?.bool("gpu", false)?;
    // Resolve the device before running anything: a missing WebGPU device is
    // an error of the call, not a skipped check.
    let device = if gpu { Some(super::runtime::gpu_device(OP)?) } else { None };
    let case = crate::testing::case_of(def, k).map_err(|e| js_error(OP, Kind::Value, e.to_string()))?;
    // A failing check's message names the op, the case and the element: kept whole.
    let mut checks = check_cpu(def, k).map_err(|e| js_error(OP, Kind::Value, e))?;
    if let Some(device) = device {
        checks.extend(check_gpu_parity(def, k, &device).await.map_err(|e| js_error(OP, Kind::Value, e))?);
    }
    let names: Array = checks.iter().map(|c| JsValue::from_str(c.name())).collect();
    Ok(object(&[
        ("op", def.name.into()),
        ("caseName", case.name.into()),
        ("label", case.label().into()),
        ("checks", names.into()),
    ]))
}

/// Every registry case's forward output digest on the cpu, in f32, f64 and f16
/// (`testing::forward_digests`), as `[label, digest]` pairs: in deterministic
/// mode they equal a native run's (tests/determinism/expected.js).
#[wasm_bindgen(js_name = forwardDigests, unchecked_return_type = "[string, string][]")]
pub fn forward_digests() -> Array {
    crate::testing::forward_digests()
        .into_iter()
        .map(|(label, digest)| JsValue::from(Array::of2(&label.into(), &digest.into())))
        .collect()
}

/// The registry op named by `op` and the case index `case_index` (checked
/// JS arguments of `checkCase` and `caseData`).
pub(super) fn registry_case_arg(
    call: &str,
    op: &JsValue,
    case_index: &JsValue,
) -> JsResult<(&'static crate::ops::OpDef, usize)> {
    let Some(name) = op.as_string() else {
        return Err(js_error(
            call,
            Kind::Argument,
            format!("op must be a registry op name (a string), got {}", describe(op)),
        ));
    };
    let def =
        find_op(&name).ok_or_else(|| js_error(call, Kind::Argument, format!("no registry op is named {name:?}")))?;
    Ok((def, usize_arg(call, "caseIndex", case_index)?))
}

/// Every WGSL source the GPU backend can build, as `[name, source]` pairs, so
/// the browser suite can compile each with the browser's own WGSL compiler
/// (stricter than naga in places, e.g. about non-finite constants).
#[wasm_bindgen(js_name = kernelSources, unchecked_return_type = "[string, string][]")]
pub fn kernel_sources() -> Array {
    // The kernels that use subgroups come without `enable subgroups;`, which
    // the runtime adds on a browser device that has them (as naga, natively,
    // rejects it).
    #[cfg(feature = "gpu")]
    let all = crate::ops::gpu_kernel_sources();
    #[cfg(not(feature = "gpu"))]
    let all: Vec<(String, String)> = Vec::new();
    all.into_iter().map(|(name, src)| JsValue::from(Array::of2(&name.into(), &src.into()))).collect()
}

/// The names of the kernels the WebGPU device `init` opened has compiled
/// (pipeline keys, sorted), for tests of which kernel a product ran.
#[wasm_bindgen(js_name = compiledKernels, unchecked_return_type = "string[]")]
pub fn compiled_kernels() -> JsResult<Array> {
    match super::runtime::gpu_device("compiledKernels")? {
        #[cfg(feature = "gpu")]
        crate::device::Device::Gpu(g) => Ok(g.compiled_kernels().into_iter().map(JsValue::from).collect()),
        _ => Err(js_error("compiledKernels", Kind::Device, "the default GPU is not a WebGPU device")),
    }
}

/// Destroys the WebGPU device `init` opened, as a driver reset or a lost GPU
/// would: every later op and readback on it fails with "the GPU device was
/// lost". For tests of device-loss handling (the demo page's recovery).
#[wasm_bindgen(js_name = loseDevice)]
pub fn lose_device() -> JsResult<()> {
    match super::runtime::gpu_device("loseDevice")? {
        #[cfg(feature = "gpu")]
        crate::device::Device::Gpu(g) => {
            g.destroy();
            Ok(())
        }
        _ => Err(js_error("loseDevice", Kind::Device, "the default GPU is not a WebGPU device")),
    }
}
