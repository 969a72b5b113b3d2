//! The JS `Module` class (PyTorch's `nn.Module`), the `Loss` class, the
//! state-dict and safetensors functions and the `nn.init` helpers.
//!
//! A `Module` handle shares one registry `Entry` (`module.rs`): the layer (an
//! `Arc<dyn Layer>`, which gives the class name and `toString`), what it is
//! (for the container accessors and attention), and for containers the
//! entries of their children. The layer factories are the rows of one table
//! (`layers.rs`, expanded by `layer_table.rs`). Containers
//! are built from JS `Module` arguments found through the `_skiffModuleId`
//! getter (like tensors through `_skiffId`), so the caller's handles stay
//! usable and the layers are shared: a module placed in a `sequential` is the
//! same layer (same parameters, hooks and training flag) as its own handle.
//! Containers are immutable once built, so no module can contain itself.

mod init;
pub(crate) mod io;
mod layer_table;
mod layers;
mod loss;
mod module;
mod sequence;

pub(crate) use io::{read_entries, serialize_promise};

use super::args::Opts;
use super::JsResult;
use wasm_bindgen::prelude::*;

/// An options bag checked against its known names (`Opts::known`).
pub(crate) fn bag<'a>(op: &'a str, v: &'a JsValue, allowed: &[&str]) -> JsResult<Opts<'a>> {
    Opts::known(op, v, allowed)
}

/// Python's spellings for the reprs of losses and optimizers (shared with the layers').
pub(crate) use crate::nn::{py_bool, py_float};
