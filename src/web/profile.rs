//! The profiler from JS (`await skiff.profile(fn)`, web/api.js): start,
//! then finish once `fn` settled, which reads the GPU timestamps back
//! without blocking and hands the profile over as a plain object; and the
//! leak report (`trackOrigins`, `memory({ detailed: true })`), whose callers
//! come from the JS stack.

use super::{JsResult, Named};
use wasm_bindgen::prelude::*;

const OP: &str = "profile";

/// Starts recording; an error while a profile records.
#[wasm_bindgen(js_name = profileStart, skip_typescript)]
pub fn profile_start() -> JsResult<()> {
    crate::profile::start().named(OP)
}

/// Ends the session: `{ wallMs, ops: [{ op, calls, hostMs, gpuMs, gpuKernels }],
/// dispatches, submits, uploads, uploadBytes, readbacks, readbackBytes,
/// timedDevices, untimedDispatches, table, chromeTrace }`.
#[wasm_bindgen(js_name = profileFinish, skip_typescript)]
pub async fn profile_finish() -> JsResult<JsValue> {
    let p = crate::profile::finish().await.named(OP)?;
    let json = serde_json::to_string(&p).map_err(|e| super::js_error(OP, super::Kind::Value, e))?;
    let out =
        js_sys::JSON::parse(&json).map_err(|_| super::js_error(OP, super::Kind::Value, "the profile is not JSON"))?;
    let set = |k: &str, v: String| js_sys::Reflect::set(&out, &k.into(), &v.into());
    let _ = set("table", p.table());
    let _ = set("chromeTrace", p.chrome_trace());
    Ok(out)
}

/// Starts or stops recording where each new tensor is made (for
/// `memory({ detailed: true })`): the op and the callers outside skiff,
/// read from the JS stack.
#[wasm_bindgen(js_name = trackOrigins, skip_typescript)]
pub fn track_origins(on: JsValue) -> JsResult<()> {
    let on = super::args::bool_arg("trackOrigins", "on", &on)?;
    crate::backend::census::set_locator(js_stack);
    crate::memory::track_origins(on);
    Ok(())
}

/// Live tensors made while origins were tracked, grouped by origin:
/// `[{ op, site, stack, device, tensors, bytes }]`, the most bytes first.
#[wasm_bindgen(js_name = memoryOrigins, skip_typescript)]
pub fn memory_origins() -> JsResult<JsValue> {
    if !crate::memory::tracking_origins() {
        let m = "memory({ detailed: true }) lists the tensors made while origins are tracked: call trackOrigins(true) first";
        return Err(super::js_error("memory", super::Kind::Value, m));
    }
    let list = js_sys::Array::new();
    for s in crate::memory::live_by_origin() {
        let device = if s.device == "cpu" { "cpu" } else { "webgpu" };
        let stack: js_sys::Array = s.stack.iter().map(|f| JsValue::from_str(f)).collect();
        list.push(&super::args::object(&[
            ("op", s.op.as_str().into()),
            ("site", s.site.as_str().into()),
            ("stack", stack.into()),
            ("device", device.into()),
            ("tensors", (s.tensors as f64).into()),
            ("bytes", (s.bytes as f64).into()),
        ]));
    }
    Ok(list.into())
}

/// skiff's own files in a JS stack: the package's wrapper and bindings.
const OWN_FILES: [&str; 12] = [
    "/web/api.js",
    "/web/custom.js",
    "/web/modules.js",
    "/web/checks.js",
    "/web/state.js",
    "/web/index.js",
    "/web/node.js",
    "/web/dev.js",
    "/web/load.js",
    "/web/worker.js",
    "/skiff.js",
    "/skiff_relaxed.js",
];

/// The callers outside skiff in the current JS stack, innermost first, as
/// "url:line:column" (V8's "at f (url:l:c)" and Firefox's "f@url:l:c").
fn js_stack() -> Vec<String> {
    let err = js_sys::Error::new("");
    let stack = js_sys::Reflect::get(&err, &"stack".into()).ok().and_then(|s| s.as_string()).unwrap_or_default();
    stack
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let at = line.strip_prefix("at ").unwrap_or(line);
            let at = match (at.rfind('('), at.ends_with(')')) {
                (Some(open), true) => &at[open + 1..at.len() - 1],
                _ => at.rsplit_once('@').map_or(at, |(_, u)| u),
            };
            // A location ends in :line:column; wasm frames and skiff's own files are not the caller.
            let file = at.rsplitn(3, ':').nth(2)?;
            let own = OWN_FILES.iter().any(|f| file.ends_with(f)) || file.contains("/pkg") && file.ends_with(".cjs");
            let engine = at.starts_with("wasm://") || at.contains("wasm-function") || at.starts_with("node:");
            (!own && !engine).then(|| at.to_string())
        })
        .collect()
}
