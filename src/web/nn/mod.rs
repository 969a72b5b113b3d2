//! The JS `Module` class (PyTorch's `nn.Module`), the `Loss` class, the
//! state-dict and safetensors functions and the `nn.init` helpers.
//!
//! A `Module` handle shares one registry `Entry` (`module.rs`): the layer (an
//! `Arc<dyn Layer>`), what it is (for `toString` and the container
//! accessors), and for containers the entries of their children. Containers
//! are built from JS `Module` arguments found through the `_skiffModuleId`
//! getter (like tensors through `_skiffId`), so the caller's handles stay
//! usable and the layers are shared: a module placed in a `sequential` is the
//! same layer (same parameters, hooks and training flag) as its own handle.
//! Containers are immutable once built, so no module can contain itself.

mod init;
mod io;
mod layers;
mod loss;
mod module;

pub(crate) use io::{read_entries, serialize_promise};

use super::args::Opts;
use super::JsResult;
use wasm_bindgen::prelude::*;

/// An options bag checked against its known names (`Opts::known`).
pub(crate) fn bag<'a>(op: &'a str, v: &'a JsValue, allowed: &[&str]) -> JsResult<Opts<'a>> {
    Opts::known(op, v, allowed)
}

/// Python's spelling of a float in reprs (`1e-05`, `0.1`, `1.0`).
pub(crate) fn py_float(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e16) {
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else if x.is_finite() && x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Python's spelling of a bool.
pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}
