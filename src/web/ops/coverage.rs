//! For the test build: the JS name that runs each registry op, so the
//! browser suites can check every op is reachable (`registryCoverage()`).
//! Ops with a `forward` take the name of their generated method or function
//! (`ops::surface`); `HAND_WRITTEN` names what runs the rest (only
//! `slice_backward`, which backward() runs), and `registryCoverage()` fails
//! on an op that is in neither.

use crate::ops::surface;
use crate::web::{js_error, JsResult, Kind};
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

/// Registry op name -> the JS method that runs it, for ops with no forward
/// of their own.
const HAND_WRITTEN: &[(&str, &str)] = &[
    ("slice_backward", "slice"), // the gradient of slice/narrow/select: runs in backward()
];

/// The names of every registry op (skiff's snake_case names).
#[wasm_bindgen(js_name = opNames)]
pub fn op_names() -> Vec<String> {
    crate::ops::registry().iter().map(|d| d.name.to_string()).collect()
}

/// For every registry op, the JS name (a `Tensor` method or a module export) that runs it.
#[doc(hidden)]
#[wasm_bindgen(js_name = registryCoverage, unchecked_return_type = "Record<string, string>")]
pub fn registry_coverage() -> JsResult<JsValue> {
    const OP: &str = "registryCoverage";
    let methods = surface::methods().map_err(|e| js_error(OP, Kind::Value, e))?;
    let registry = crate::ops::registry();
    if let Some((stale, _)) = HAND_WRITTEN.iter().find(|(op, _)| !registry.iter().any(|d| d.name == *op)) {
        return Err(js_error(OP, Kind::Value, format!("{stale} is no registry op")));
    }
    let o = Object::new();
    for def in registry {
        let generated = methods.iter().find(|m| m.overloads.iter().any(|(d, _)| d.name == def.name));
        let js = match (generated, HAND_WRITTEN.iter().find(|(op, _)| *op == def.name)) {
            (Some(m), None) => m.js.clone(),
            (None, Some((_, js))) => js.to_string(),
            (Some(_), Some(_)) => {
                return Err(js_error(OP, Kind::Value, format!("{} is generated and hand-written", def.name)))
            }
            (None, None) => return Err(js_error(OP, Kind::Value, format!("{} has no JS name", def.name))),
        };
        let _ = Reflect::set(&o, &JsValue::from_str(def.name), &JsValue::from_str(&js));
    }
    Ok(o.into())
}
