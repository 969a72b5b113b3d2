//! The profiler from JS (`await skiff.profile(fn)`, web/api.js): start,
//! then finish once `fn` settled, which reads the GPU timestamps back
//! without blocking and hands the profile over as a plain object.

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
