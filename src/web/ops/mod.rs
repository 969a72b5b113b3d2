//! Registry ops as methods of the JS `Tensor` (PyTorch names in camelCase),
//! plus the few PyTorch only has as functions (`cat`, `where`, `unfold`,
//! `fold`). Tensor arguments arrive as `JsValue` and go through
//! `args::tensor` / `Operand::parse`, so a wrong or disposed argument is an
//! error naming the op; numbers arrive as `JsValue` too, so `undefined` is
//! an error rather than a silent NaN.
//!
//! Every registry op's method or function is generated from its signature
//! (`call.rs`); written here by hand are the JS conveniences that are no
//! registry entry (`view`, `narrow`, `select`, `split`, `stack`,
//! `maskedFill`, casts, in-place ops, ...). `coverage.rs` names, for the test
//! build, the JS method or function that runs each registry op.
//!
//! No JS input may panic (wasm32 aborts on a panic): sizes that JS chooses
//! are checked here for overflow before skiff does arithmetic with them, and
//! ops that index an axis are refused on 0-d tensors.

mod call;
#[cfg(feature = "web-testing")]
mod coverage;
mod elementwise;
mod read;
mod shape;

use super::args;
use super::{js_error, JsResult, JsTensor, Kind, Named};
use crate::tensor::Tensor;
use wasm_bindgen::prelude::*;

// ---- local argument helpers (shared by the child modules) -------------------

/// The most elements a shape chosen by JS may describe (wasm32 memory is 4 GiB,
/// so any real tensor is far smaller; this only keeps size arithmetic from wrapping).
const MAX_NUMEL: u64 = i32::MAX as u64;

/// The result of a method as a new handle, its error named for the JS op `op`.
fn out(op: &str, r: crate::error::Result<Tensor>) -> JsResult<JsTensor> {
    Ok(JsTensor::wrap(r.named(op)?))
}

fn undef(v: Option<JsValue>) -> JsValue {
    v.unwrap_or(JsValue::UNDEFINED)
}

fn is_absent(v: &JsValue) -> bool {
    v.is_undefined() || v.is_null()
}

/// Rejects shapes too large for skiff's size arithmetic (32-bit `usize` on
/// wasm32). Zero sizes count as 1: partial products such as strides must fit
/// too, even when the tensor is empty.
fn check_numel(op: &str, what: &str, dims: impl IntoIterator<Item = u64>) -> JsResult<()> {
    let mut n: u64 = 1;
    for d in dims {
        n = n.saturating_mul(d.max(1));
    }
    if n > MAX_NUMEL {
        return Err(js_error(
            op,
            Kind::Memory,
            format!("{what} is too large: its sizes multiply to {n}, over {MAX_NUMEL}"),
        ));
    }
    Ok(())
}

/// A shape as `dims` reads it, also checked for size.
fn shape_arg(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<usize>> {
    let dims = args::dims(op, name, v)?;
    check_numel(op, name, dims.iter().map(|&d| d as u64))?;
    Ok(dims)
}

/// A shape that may hold -1 (reshape, view, expand): a number or an array of integers >= -1.
fn signed_shape(op: &str, name: &str, v: &JsValue) -> JsResult<Vec<isize>> {
    let out = args::signed_dims(op, name, v)?;
    check_numel(op, name, out.iter().filter(|&&d| d >= 0).map(|&d| d as u64))?;
    Ok(out)
}

/// Refuses a 0-d tensor for ops that cut or index one axis.
fn needs_axis(op: &str, t: &Tensor) -> JsResult<()> {
    if t.ndim() == 0 {
        return Err(js_error(op, Kind::Shape, "needs a tensor with at least one axis, got a scalar (shape [])"));
    }
    Ok(())
}
