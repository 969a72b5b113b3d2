//! Safetensors for JS: `saveSafetensors` / `loadSafetensors`, and the
//! helpers `Module.stateDict` and `Optimizer.stateDict` share.
//!
//! Serialising never blocks: cpu tensors are written at once, and GPU
//! tensors are first copied (one flat copy per dtype, queued now, so later
//! in-place updates cannot leak into the result) and then read back with one
//! awaited readback per dtype.

use crate::autograd::no_grad;
use crate::backend::CpuBuffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::io::safetensors;
use crate::tensor::Tensor;
use crate::web::args::{self, describe};
use crate::web::{js_error, rejection, JsResult, JsTensor, Kind, Named};
use js_sys::{Array, ArrayBuffer, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

const OP: &str = "safetensors";

/// `(key, value)` pairs of a plain object or of an array of `[key, value]` pairs.
pub(crate) fn pairs(op: &str, name: &str, v: &JsValue, what: &str) -> JsResult<Vec<(String, JsValue)>> {
    let list: Array = if let Some(a) = args::as_array(v) {
        a.clone()
    } else if v.is_object() && !v.is_function() {
        // Keys, then each value through Reflect (which catches): a getter that
        // throws is an error of the op, not an exception unwinding through wasm.
        let pairs = Array::new();
        for key in js_sys::Object::keys(v.unchecked_ref::<js_sys::Object>()).iter() {
            let text = key.as_string().unwrap_or_default();
            let value = Reflect::get(v, &key).map_err(|e| {
                js_error(op, Kind::Argument, format!("{name}[{text:?}] could not be read: {}", args::thrown_text(&e)))
            })?;
            pairs.push(&Array::of2(&key, &value));
        }
        pairs
    } else {
        return Err(js_error(
            op,
            Kind::Argument,
            format!(
                "{name} must be a Record<string, {what}> or an array of [string, {what}] pairs, got {}",
                describe(v)
            ),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, p)| {
            match args::as_array(&p)
                .filter(|a| a.length() == 2)
                .and_then(|a| a.get(0).as_string().map(|k| (k, a.get(1))))
            {
                Some(kv) => Ok(kv),
                None => Err(js_error(
                    op,
                    Kind::Argument,
                    format!("{name}[{i}] must be a [string, {what}] pair, got {}", describe(&p)),
                )),
            }
        })
        .collect()
}

/// Named tensors from safetensors bytes (read onto the cpu) or from a
/// `{ name: Tensor }` record / `[name, Tensor][]` array.
pub(crate) fn read_entries(op: &str, v: &JsValue) -> JsResult<Vec<(String, Tensor)>> {
    if let Some(bytes) = as_bytes(v) {
        return safetensors::from_bytes(&bytes, &Device::Cpu).named(op);
    }
    pairs(op, "state", v, "Tensor")?
        .into_iter()
        .map(|(k, t)| Ok((k.clone(), args::tensor(op, &format!("state[{k:?}]"), &t)?)))
        .collect()
}

/// The bytes of a Uint8Array or ArrayBuffer.
pub(crate) fn as_bytes(v: &JsValue) -> Option<Vec<u8>> {
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        Some(a.to_vec())
    } else {
        v.dyn_ref::<ArrayBuffer>().map(|b| Uint8Array::new(b).to_vec())
    }
}

/// Elements `off..off + numel(shape)` of a host buffer, as a cpu tensor.
fn piece(host: &CpuBuffer, off: usize, shape: &[usize]) -> Result<Tensor> {
    let r = off..off + shape.iter().product::<usize>();
    let short = || Error::value(OP, "internal: a readback was shorter than its tensors");
    match host {
        CpuBuffer::F32(v) => Tensor::from_vec(v.get(r).ok_or_else(short)?.to_vec(), shape),
        CpuBuffer::F64(v) => Tensor::from_vec(v.get(r).ok_or_else(short)?.to_vec(), shape),
        CpuBuffer::F16(v) => Tensor::from_vec(v.get(r).ok_or_else(short)?.to_vec(), shape),
        CpuBuffer::I32(v) => Tensor::from_vec(v.get(r).ok_or_else(short)?.to_vec(), shape),
        CpuBuffer::Bool(v) => Tensor::from_vec(v.get(r).ok_or_else(short)?.to_vec(), shape),
    }
}

/// Safetensors bytes of `entries`, as a promise (see the module note).
pub(crate) fn serialize_promise(op: &'static str, entries: Vec<(String, Tensor)>) -> JsResult<Promise> {
    if entries.iter().all(|(_, t)| !t.device().is_gpu()) {
        let bytes = safetensors::to_bytes(&entries).named(op)?;
        return Ok(Promise::resolve(&JsValue::from(Uint8Array::from(&bytes[..]))));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some((dup, _)) = entries.iter().find(|(n, _)| !seen.insert(n.as_str())) {
        return Err(js_error(op, Kind::Value, format!("tensor name {dup:?} appears twice")));
    }
    // Snapshot now: cpu tensors copied, GPU tensors gathered per dtype.
    let mut slots: Vec<(String, Vec<usize>, Option<Tensor>)> = Vec::with_capacity(entries.len());
    let mut groups: Vec<(DType, Vec<Tensor>, Vec<usize>)> = Vec::new();
    no_grad(|| -> Result<()> {
        for (i, (name, t)) in entries.iter().enumerate() {
            let t = t.detach();
            if t.device().is_gpu() {
                let flat = t.reshape_dims(&[t.numel()])?;
                match groups.iter_mut().find(|g| g.0 == t.dtype()) {
                    Some(g) => {
                        g.1.push(flat);
                        g.2.push(i);
                    }
                    None => groups.push((t.dtype(), vec![flat], vec![i])),
                }
                slots.push((name.clone(), t.shape().to_vec(), None));
            } else {
                slots.push((name.clone(), t.shape().to_vec(), Some(t.contiguous_copy()?)));
            }
        }
        Ok(())
    })
    .named(op)?;
    let flats = no_grad(|| -> Result<Vec<(Tensor, Vec<usize>)>> {
        groups.into_iter().map(|(_, parts, idx)| Ok((Tensor::concat(&parts, 0)?, idx))).collect()
    })
    .named(op)?;
    let js = move |e: Error| rejection(op, e);
    Ok(wasm_bindgen_futures::future_to_promise(async move {
        for (flat, idx) in flats {
            let host = crate::dispatch::host_copy_async(&flat).await.map_err(js)?;
            let mut off = 0;
            for i in idx {
                let Some(slot) = slots.get_mut(i) else { continue };
                slot.2 = Some(piece(&host, off, &slot.1).map_err(js)?);
                off += slot.1.iter().product::<usize>();
            }
        }
        let mut done = Vec::with_capacity(slots.len());
        for (name, _, t) in slots {
            let t = t.ok_or_else(|| js(Error::value(OP, format!("internal: tensor {name:?} was not read back"))))?;
            done.push((name, t));
        }
        let bytes = safetensors::to_bytes(&done).map_err(js)?;
        Ok(Uint8Array::from(&bytes[..]).into())
    }))
}

/// Serialises named tensors (a `{ name: Tensor }` record or `[name, Tensor][]`)
/// to safetensors bytes; GPU tensors are read back without blocking.
#[wasm_bindgen(js_name = saveSafetensors, unchecked_return_type = "Promise<Uint8Array>")]
pub fn save_safetensors(
    #[wasm_bindgen(unchecked_param_type = "Record<string, Tensor> | [string, Tensor][]")] tensors: JsValue,
) -> JsResult<Promise> {
    const OP: &str = "saveSafetensors";
    let entries = pairs(OP, "tensors", &tensors, "Tensor")?
        .into_iter()
        .map(|(k, t)| Ok((k.clone(), args::tensor(OP, &format!("tensors[{k:?}]"), &t)?)))
        .collect::<JsResult<Vec<_>>>()?;
    serialize_promise(OP, entries)
}

/// Parses safetensors bytes into a `{ name: Tensor }` object (sorted by
/// name) on `options.device` (default: init's choice). F32, F64, I32, BOOL,
/// and I64 narrowed to int32, are read. WebGPU has no float64: by default
/// float64 tensors (an optimizer state's step counts and options) stay on
/// the cpu; asking for `device: 'webgpu'` with one is an error.
#[wasm_bindgen(js_name = loadSafetensors, unchecked_return_type = "Record<string, Tensor>")]
pub fn load_safetensors(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "{ device?: DeviceName }")] options: Option<JsValue>,
) -> JsResult<JsValue> {
    const OP: &str = "loadSafetensors";
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let o = super::bag(OP, &options, &["device"])?;
    let device = args::device(OP, &o.get("device"))?;
    let Some(bytes) = as_bytes(&bytes) else {
        return Err(js_error(
            OP,
            Kind::Argument,
            format!("bytes must be a Uint8Array or ArrayBuffer, got {}", describe(&bytes)),
        ));
    };
    let explicit = !(o.get("device").is_undefined() || o.get("device").is_null());
    let mut tensors = Vec::new();
    for (name, t) in safetensors::from_bytes(&bytes, &Device::Cpu).named(OP)? {
        let t = match (device.is_gpu(), t.dtype() == DType::F64) {
            (true, true) if explicit => {
                return Err(js_error(
                    OP,
                    Kind::DType,
                    format!("tensor {name:?} is float64, which WebGPU cannot hold: load it with {{ device: 'cpu' }}"),
                ))
            }
            (true, false) => t.to(&device).named(OP)?,
            _ => t,
        };
        tensors.push((name, t));
    }
    let out = js_sys::Object::new();
    for (name, t) in tensors {
        set_own(&out, &name, &JsTensor::wrap(t).into());
    }
    Ok(out.into())
}

/// Defines an own enumerable property (a plain assignment would treat the
/// name `__proto__` as the prototype).
pub(crate) fn set_own(obj: &js_sys::Object, key: &str, value: &JsValue) {
    let d = js_sys::Object::new();
    for (k, v) in [
        ("value", value.clone()),
        ("enumerable", true.into()),
        ("writable", true.into()),
        ("configurable", true.into()),
    ] {
        let _ = js_sys::Reflect::set(&d, &JsValue::from_str(k), &v);
    }
    js_sys::Object::define_property(obj, &JsValue::from_str(key), &d);
}
