//! Registry ops as methods of the JS `Tensor` (PyTorch names in camelCase),
//! plus the few PyTorch only has as functions (`cat`, `stack`, `where`,
//! `unfold`, `fold`). Tensor arguments arrive as `JsValue` and go through
//! `args::tensor` / `Operand::parse`, so a wrong or disposed argument is an
//! error naming the op; numbers arrive as `JsValue` too, so `undefined` is
//! an error rather than a silent NaN.
//!
//! Every registry op is reachable from JS: `COVERAGE` names the method or
//! function that runs it, `registryCoverage()` exports that table, and the
//! unit test below checks it against `ops::registry()`.
//!
//! No JS input may panic (wasm32 aborts on a panic): sizes that JS chooses
//! are checked here for overflow before skiff does arithmetic with them, and
//! ops that index an axis are refused on 0-d tensors.

mod call;
mod elementwise;
mod nn;
mod shape;

use super::args;
use super::{js_error, JsResult, JsTensor, Kind, Named};
use crate::tensor::Tensor;
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

/// Registry op name -> the JS name that runs it (a `Tensor` method, or a
/// module export for `cat`/`where`/`unfold`/`fold`).
const COVERAGE: &[(&str, &str)] = &[
    // unary.rs
    ("neg", "neg"),
    ("exp", "exp"),
    ("log", "log"),
    ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"),
    ("abs", "abs"),
    ("sign", "sign"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tanh", "tanh"),
    ("sigmoid", "sigmoid"),
    ("relu", "relu"),
    ("leaky_relu", "leakyRelu"),
    ("gelu", "gelu"),     // gelu({ approximate: 'tanh' })
    ("gelu_erf", "gelu"), // gelu() (PyTorch's default, exact)
    ("erf", "erf"),
    ("silu", "silu"),
    ("softplus", "softplus"),
    ("pow_scalar", "pow"), // pow(number)
    ("add_scalar", "add"), // add(number), sub(number)
    ("mul_scalar", "mul"), // mul(number), div(number)
    ("clamp", "clamp"),
    ("to_dtype", "toDtype"),
    // binary.rs
    ("add", "add"),
    ("sub", "sub"),
    ("mul", "mul"),
    ("div", "div"),
    ("pow", "pow"),
    ("maximum", "maximum"),
    ("minimum", "minimum"),
    // compare.rs
    ("eq", "eq"),
    ("ne", "ne"),
    ("lt", "lt"),
    ("le", "le"),
    ("gt", "gt"),
    ("ge", "ge"),
    ("where", "where"),
    // reduce.rs
    ("sum", "sum"),
    ("max", "max"),
    ("min", "min"),
    ("argmax", "argmax"),
    ("argmin", "argmin"),
    ("mean", "mean"),
    ("var", "var"),
    ("std", "std"),
    ("logsumexp", "logsumexp"),
    ("sum_to", "sumTo"),
    // matmul.rs
    ("matmul", "matmul"),
    // movement.rs
    ("to_device", "to"), // in web/tensor.rs
    ("reshape", "reshape"),
    ("permute", "permute"),
    ("expand", "expand"),
    ("slice", "slice"),
    ("slice_backward", "slice"), // the gradient of slice/narrow/select: runs in backward()
    ("contiguous", "contiguous"),
    ("squeeze_unsqueeze_flatten", "flatten"), // and squeeze, unsqueeze
    // join.rs
    ("concat", "cat"),
    ("pad", "pad"),
    // index.rs
    ("index_select", "indexSelect"),
    ("index_add", "indexAdd"),
    ("gather", "gather"),
    ("scatter_add", "scatterAdd"),
    // conv.rs
    ("unfold2d", "unfold"),
    ("fold2d", "fold"),
    ("conv2d", "conv2d"),
    ("max_pool2d", "maxPool2d"),
    ("max_pool2d_indices", "maxPool2dIndices"),
    ("avg_pool2d", "avgPool2d"),
    // composite.rs
    ("softmax", "softmax"),
    ("log_softmax", "logSoftmax"),
    ("cross_entropy", "crossEntropy"),
    ("nll_loss", "nllLoss"),
    ("mse_loss", "mseLoss"),
    ("l1_loss", "l1Loss"),
    ("binary_cross_entropy_with_logits", "binaryCrossEntropyWithLogits"),
    ("layer_norm", "layerNorm"),
    ("dropout", "dropout"),
    ("embedding", "embedding"),
];

/// The names of every registry op (skiff's snake_case names).
#[wasm_bindgen(js_name = opNames)]
pub fn op_names() -> Vec<String> {
    crate::ops::registry().iter().map(|d| d.name.to_string()).collect()
}

/// For every registry op, the JS name (a `Tensor` method or a module export) that runs it.
#[doc(hidden)]
#[wasm_bindgen(js_name = registryCoverage, unchecked_return_type = "Record<string, string>")]
pub fn registry_coverage() -> JsValue {
    let o = Object::new();
    for (op, js) in COVERAGE {
        let _ = Reflect::set(&o, &JsValue::from_str(op), &JsValue::from_str(js));
    }
    o.into()
}

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

#[cfg(test)]
mod tests {
    use super::COVERAGE;

    #[test]
    fn every_registry_op_has_a_js_name() {
        let names: Vec<&str> = crate::ops::registry().iter().map(|d| d.name).collect();
        for n in &names {
            assert!(COVERAGE.iter().any(|(op, _)| op == n), "registry op {n} has no JS name in COVERAGE");
        }
        for (op, _) in COVERAGE {
            assert!(names.contains(op), "COVERAGE names {op}, which is not a registry op");
        }
    }
}
