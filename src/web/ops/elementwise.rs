//! Elementwise methods: unary math and activations, binary arithmetic with a
//! `Tensor | number` right-hand side, comparisons (bool results), `where`,
//! casts, `detach`/`clone`, and the in-place ops (`add_`, `fill_`, ...).

use super::out;
use crate::dtype::DType;
use crate::tensor::Tensor;
use crate::web::args::{self, number, Operand};
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use wasm_bindgen::prelude::*;

/// Methods taking a Tensor (broadcast) or a number (which runs `$scalar`, a
/// `JsResult`): the binary ops and their in-place forms.
macro_rules! operand_methods {
    ($($name:ident: $doc:literal, |$x:ident, $c:ident| $scalar:expr;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
                pub fn $name(
                    &self,
                    // Operands of another dtype are an error (no promotion).
                    #[wasm_bindgen(unchecked_param_type = "Tensor<D> | number")] other: JsValue,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    let $x = self.get(OP)?;
                    Ok(JsTensor::wrap(match Operand::parse(OP, "other", &other)? {
                        Operand::Scalar($c) => ($scalar)?,
                        Operand::Tensor(t) => $x.$name(&t).named(OP)?,
                    }))
                }
            )*
        }
    };
}

/// `cond ? a : b` where a number takes the other operand's dtype (checked to
/// fit it) and float32 when both are numbers. `names`: the JS names of a and b.
fn select(op: &str, cond: &Tensor, a: Operand, b: Operand, names: [&str; 2]) -> JsResult<Tensor> {
    let num = |c: f64| Tensor::full_on(&[], c, DType::F32, &cond.device()).named(op);
    let (a, b) = match (a, b) {
        (Operand::Tensor(a), Operand::Tensor(b)) => (a, b),
        (Operand::Tensor(a), Operand::Scalar(c)) => {
            let b = args::scalar_like(op, names[1], &a, c)?;
            (a, b)
        }
        (Operand::Scalar(c), Operand::Tensor(b)) => (args::scalar_like(op, names[0], &b, c)?, b),
        (Operand::Scalar(c), Operand::Scalar(d)) => (num(c)?, num(d)?),
    };
    Tensor::where_(cond, &a, &b).named(op)
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// `condition ? this : other`, elementwise with broadcasting (PyTorch's `Tensor.where`).
    #[wasm_bindgen(js_name = "where", unchecked_return_type = "Tensor<D>")]
    pub fn where_method(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] condition: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor | number")] other: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "where";
        let x = self.get(OP)?;
        let cond = args::tensor(OP, "condition", &condition)?;
        let b = Operand::parse(OP, "other", &other)?;
        Ok(JsTensor::wrap(select(OP, &cond, Operand::Tensor(x), b, ["this", "other"])?))
    }

    /// `value` where the bool `mask` is true, this elsewhere (`mask` broadcasts).
    #[wasm_bindgen(js_name = maskedFill, unchecked_return_type = "Tensor<D>")]
    pub fn masked_fill(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] mask: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor | number")] value: JsValue,
    ) -> JsResult<JsTensor> {
        const OP: &str = "maskedFill";
        let x = self.get(OP)?;
        let mask = args::tensor(OP, "mask", &mask)?;
        if mask.dtype() != DType::Bool {
            let dtype = args::dtype_name(mask.dtype());
            return Err(js_error(
                OP,
                Kind::DType,
                format!("mask must be bool, got {dtype} of shape {:?}", mask.shape()),
            ));
        }
        let v = Operand::parse(OP, "value", &value)?;
        let filled = select(OP, &mask, v, Operand::Tensor(x.clone()), ["value", "this"])?;
        if filled.shape() != x.shape() {
            return Err(js_error(
                OP,
                Kind::Shape,
                format!("mask of shape {:?} must broadcast to the tensor's shape {:?}", mask.shape(), x.shape()),
            ));
        }
        Ok(JsTensor::wrap(filled))
    }

    /// This as float32 (`toDtype('float32')`).
    #[wasm_bindgen(unchecked_return_type = "Tensor<'float32'>")]
    pub fn float(&self) -> JsResult<JsTensor> {
        out("float", self.get("float")?.to_dtype(DType::F32))
    }

    /// This as float64 (`toDtype('float64')`; cpu only).
    #[wasm_bindgen(unchecked_return_type = "Tensor<'float64'>")]
    pub fn double(&self) -> JsResult<JsTensor> {
        out("double", self.get("double")?.to_dtype(DType::F64))
    }

    /// This as int32 (`toDtype('int32')`; floats truncate toward zero).
    #[wasm_bindgen(unchecked_return_type = "Tensor<'int32'>")]
    pub fn int(&self) -> JsResult<JsTensor> {
        out("int", self.get("int")?.to_dtype(DType::I32))
    }

    /// This as bool (`toDtype('bool')`: nonzero is true).
    #[wasm_bindgen(js_name = bool, unchecked_return_type = "Tensor<'bool'>")]
    pub fn to_bool(&self) -> JsResult<JsTensor> {
        out("bool", self.get("bool")?.to_dtype(DType::Bool))
    }

    /// The same values, cut from the autograd graph (shares memory).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn detach(&self) -> JsResult<JsTensor> {
        Ok(JsTensor::wrap(self.get("detach")?.detach()))
    }

    /// A contiguous copy with its own memory; differentiable (PyTorch's `clone`).
    #[wasm_bindgen(js_name = clone, unchecked_return_type = "Tensor<D>")]
    pub fn clone_tensor(&self) -> JsResult<JsTensor> {
        out("clone", self.get("clone")?.contiguous_copy())
    }
}

// In-place arithmetic: writes into this tensor and returns a handle to it.
operand_methods! {
    add_: "In place: this += other (a Tensor broadcast to this shape, or a number); returns this tensor.",
        |x, c| x.add_scalar_(c).named(OP);
    sub_: "In place: this -= other; returns this tensor.", |x, c| x.add_scalar_(-c).named(OP);
    mul_: "In place: this *= other; returns this tensor.", |x, c| x.mul_scalar_(c).named(OP);
    div_: "In place: this /= other; returns this tensor.", |x, c| x.mul_scalar_(1.0 / c).named(OP);
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// In place: sets every element to `value` (an int32 tensor takes
    /// integers in its range only); returns this tensor.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn fill_(&self, #[wasm_bindgen(unchecked_param_type = "number")] value: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "fill_";
        let x = self.get(OP)?;
        let value = args::value_for(OP, "value", number(OP, "value", &value)?, x.dtype())?;
        out(OP, x.fill_(value))
    }

    /// In place: sets every element to zero; returns this tensor.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn zero_(&self) -> JsResult<JsTensor> {
        out("zero_", self.get("zero_")?.zero_())
    }

    /// In place: copies `src` (broadcast, converted to this dtype and device) into this tensor; returns it.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn copy_(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] src: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "copy_";
        let x = self.get(OP)?;
        out(OP, x.copy_(&args::tensor(OP, "src", &src)?))
    }
}
