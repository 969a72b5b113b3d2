//! The movement and joining methods that are no registry entry of their own
//! (`view`, `transpose`, `narrow`, `select`, `squeeze`, `flip`, `split`,
//! `chunk`, `stack`, ...). `reshape`, `expand`, `slice`, `pad`, `cat` and the
//! index ops are generated from the registry (`call.rs`).

use super::{is_absent, needs_axis, out, shape_arg, signed_shape, undef};
use crate::shape::normalize_axis;
use crate::tensor::Tensor;
use crate::web::args;
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use js_sys::Array;
use wasm_bindgen::prelude::*;

/// An optional integer argument with a default.
fn int_or(op: &str, name: &str, v: Option<JsValue>, default: isize) -> JsResult<isize> {
    let v = undef(v);
    if is_absent(&v) {
        Ok(default)
    } else {
        args::int_arg(op, name, &v)
    }
}

/// `axis` of a tensor with at least one axis, normalised.
fn one_axis(op: &'static str, x: &Tensor, axis: isize) -> JsResult<usize> {
    needs_axis(op, x)?;
    normalize_axis(op, axis, x.shape()).named(op)
}

/// Normalised, distinct axes (for squeeze and flip).
fn distinct_axes(op: &'static str, x: &Tensor, v: &JsValue) -> JsResult<Vec<usize>> {
    let mut out = Vec::new();
    for a in args::axes(op, "dims", v)? {
        let n = normalize_axis(op, a, x.shape()).named(op)?;
        if out.contains(&n) {
            return Err(js_error(op, Kind::Axis, format!("axis {a} appears twice")));
        }
        out.push(n);
    }
    Ok(out)
}

fn required(op: &str, name: &str, v: &JsValue) -> JsResult<()> {
    if is_absent(v) {
        return Err(js_error(op, Kind::Argument, format!("{name} is required, got {}", args::describe(v))));
    }
    Ok(())
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// Alias of `reshape` (one entry of `shape` may be -1).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn view(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | number[]")] shape: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "view";
        let x = self.get(OP)?;
        out(OP, x.view(&signed_shape(OP, "shape", &shape)?))
    }

    /// Swaps axes `dim0` and `dim1` (a view).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn transpose(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] dim0: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] dim1: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "transpose";
        let x = self.get(OP)?;
        let (a, b) = (args::int_arg(OP, "dim0", &dim0)?, args::int_arg(OP, "dim1", &dim1)?);
        needs_axis(OP, &x)?;
        out(OP, x.transpose(a, b))
    }

    /// The transpose of a matrix (0-D and 1-D tensors are returned as is).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn t(&self) -> JsResult<JsTensor> {
        const OP: &str = "t";
        let x = self.get(OP)?;
        match x.ndim() {
            0 | 1 => Ok(JsTensor::wrap(x)),
            2 => out(OP, x.transpose(0, 1)),
            _ => Err(js_error(
                OP,
                Kind::Shape,
                format!("expects a tensor with at most 2 dims, got shape {:?}", x.shape()),
            )),
        }
    }

    /// `expand` to the shape of `other`.
    #[wasm_bindgen(js_name = expandAs, unchecked_return_type = "Tensor<D>")]
    pub fn expand_as(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] other: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "expandAs";
        let x = self.get(OP)?;
        let other = args::tensor(OP, "other", &other)?;
        out(OP, x.expand_dims(other.shape()))
    }

    /// Broadcasts to `shape` (NumPy's `broadcast_to`; a view).
    #[wasm_bindgen(js_name = broadcastTo, unchecked_return_type = "Tensor<D>")]
    pub fn broadcast_to(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number[]")] shape: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "broadcastTo";
        let x = self.get(OP)?;
        out(OP, x.broadcast_to(&shape_arg(OP, "shape", &shape)?))
    }

    /// `length` elements from `start` (negative counts from the end) along `dim` (a view).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn narrow(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] dim: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] start: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] length: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "narrow";
        let x = self.get(OP)?;
        let ax = one_axis(OP, &x, args::int_arg(OP, "dim", &dim)?)?;
        let size = x.shape()[ax];
        let s = args::int_arg(OP, "start", &start)?;
        let len = args::usize_arg(OP, "length", &length)?;
        let s = if s < 0 { s + size as isize } else { s };
        let fits = s >= 0 && (s as usize).checked_add(len).is_some_and(|e| e <= size);
        if !fits {
            return Err(js_error(
                OP,
                Kind::Shape,
                format!("start {s} + length {len} is outside axis {ax} of size {size} (shape {:?})", x.shape()),
            ));
        }
        out(OP, x.narrow(ax as isize, s as usize, len))
    }

    /// The slice at `index` (negative counts from the end) along `dim`, with that dim removed (a view).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn select(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] dim: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] index: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "select";
        let x = self.get(OP)?;
        let ax = one_axis(OP, &x, args::int_arg(OP, "dim", &dim)?)?;
        let size = x.shape()[ax] as isize;
        let i = args::int_arg(OP, "index", &index)?;
        let j = if i < 0 { i + size } else { i };
        if j < 0 || j >= size {
            return Err(js_error(OP, Kind::Value, format!("index {i} is out of range for axis {ax} of size {size}")));
        }
        out(OP, x.narrow(ax as isize, j as usize, 1).and_then(|y| y.squeeze(Some(ax as isize))))
    }

    /// Removes size-1 axes: those in `dims` (a number or a list), or all of them when omitted.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn squeeze(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | number[]")] dims: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "squeeze";
        let x = self.get(OP)?;
        let dims = undef(dims);
        if is_absent(&dims) {
            return out(OP, x.squeeze(None));
        }
        let mut axes = distinct_axes(OP, &x, &dims)?;
        axes.sort_unstable_by(|a, b| b.cmp(a));
        let mut y = x;
        for a in axes {
            y = y.squeeze(Some(a as isize)).named(OP)?;
        }
        Ok(JsTensor::wrap(y))
    }

    /// Inserts a size-1 axis at `dim` (which may be ndim, or negative).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn unsqueeze(&self, #[wasm_bindgen(unchecked_param_type = "number")] dim: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "unsqueeze";
        let x = self.get(OP)?;
        out(OP, x.unsqueeze(args::int_arg(OP, "dim", &dim)?))
    }

    /// Reverses the order of elements along `dims` (a number or a list); a copy.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn flip(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | number[]")] dims: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "flip";
        let x = self.get(OP)?;
        required(OP, "dims", &dims)?;
        let axes = distinct_axes(OP, &x, &dims)?;
        if !axes.is_empty() {
            needs_axis(OP, &x)?;
        }
        let mut y = x.clone();
        for a in axes {
            let n = x.shape()[a];
            let top =
                i32::try_from(n).map_err(|_| js_error(OP, Kind::Shape, format!("axis {a} of size {n} is too long")))?;
            let idx = Tensor::from_vec((0..top).rev().collect::<Vec<i32>>(), &[n]).and_then(|i| i.to(&x.device()));
            let idx = idx.named(OP)?;
            idx.storage().set_index_bound(n);
            y = y.index_select(a as isize, &idx).named(OP)?;
        }
        Ok(JsTensor::wrap(y))
    }

    /// Pieces along `dim` (default 0): of `splitSize` each (the last may be smaller), or of the listed sizes.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>[]")]
    pub fn split(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | number[]", js_name = splitSizeOrSections)]
        split_size_or_sections: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] dim: Option<JsValue>,
    ) -> JsResult<Array> {
        const OP: &str = "split";
        let x = self.get(OP)?;
        let ax = one_axis(OP, &x, int_or(OP, "dim", dim, 0)?)? as isize;
        let v = &split_size_or_sections;
        let parts = if v.as_f64().is_some() {
            x.split(args::usize_arg(OP, "splitSize", v)?, ax).named(OP)?
        } else if js_sys::Array::is_array(v) {
            let sizes = args::sizes(OP, "sections", v)?;
            let total = sizes.iter().try_fold(0usize, |s, &d| s.checked_add(d));
            if total.is_none() {
                return Err(js_error(OP, Kind::Shape, format!("sections {sizes:?} add up to more than any axis")));
            }
            x.split_sizes(&sizes, ax).named(OP)?
        } else {
            return Err(js_error(
                OP,
                Kind::Argument,
                format!("splitSizeOrSections must be a number or an array of sizes, got {}", args::describe(v)),
            ));
        };
        Ok(args::handles(parts))
    }

    /// `chunks` nearly equal pieces along `dim` (default 0), as PyTorch's `chunk`.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>[]")]
    pub fn chunk(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] chunks: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] dim: Option<JsValue>,
    ) -> JsResult<Array> {
        const OP: &str = "chunk";
        let x = self.get(OP)?;
        let ax = one_axis(OP, &x, int_or(OP, "dim", dim, 0)?)? as isize;
        Ok(args::handles(x.chunk(args::usize_arg(OP, "chunks", &chunks)?, ax).named(OP)?))
    }
}

/// Joins same-shaped tensors along a new axis `dim` (default 0), as `torch.stack`.
#[wasm_bindgen(js_name = stack)]
pub fn stack(
    #[wasm_bindgen(unchecked_param_type = "Tensor[]")] tensors: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number")] dim: Option<JsValue>,
) -> JsResult<JsTensor> {
    const OP: &str = "stack";
    let ts = args::tensors(OP, "tensors", &tensors)?;
    out(OP, Tensor::stack(&ts, int_or(OP, "dim", dim, 0)?))
}
