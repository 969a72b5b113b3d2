//! Elementwise methods: unary math and activations, binary arithmetic with a
//! `Tensor | number` right-hand side, comparisons (bool results), `where`,
//! casts, `detach`/`clone`, and the in-place ops (`add_`, `fill_`, ...).

use super::{is_absent, out, undef};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::web::args::{self, number, Operand, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind, Named};
use wasm_bindgen::prelude::*;

/// Methods without arguments that call the skiff method of the same name.
macro_rules! unary_methods {
    ($($name:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
                pub fn $name(&self) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    out(OP, self.get(OP)?.$name())
                }
            )*
        }
    };
}

unary_methods! {
    neg: "-this, elementwise.";
    exp: "e^x, elementwise.";
    log: "Natural logarithm, elementwise.";
    sqrt: "Square root, elementwise.";
    rsqrt: "1 / sqrt(x), elementwise.";
    abs: "|x|, elementwise.";
    sign: "-1, 0 or 1 by the sign of each element.";
    sin: "Sine, elementwise.";
    cos: "Cosine, elementwise.";
    tanh: "Hyperbolic tangent, elementwise.";
    sigmoid: "1 / (1 + e^-x), elementwise.";
    relu: "max(x, 0), elementwise.";
    erf: "The error function, elementwise.";
    silu: "x * sigmoid(x) (SiLU / swish), elementwise.";
    softplus: "log(1 + e^x), computed stably, elementwise.";
}

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

operand_methods! {
    add: "this + other (a Tensor, broadcast, or a number).", |x, c| x.add_scalar(c).named(OP);
    sub: "this - other (a Tensor, broadcast, or a number).", |x, c| x.sub_scalar(c).named(OP);
    mul: "this * other (a Tensor, broadcast, or a number).", |x, c| x.mul_scalar(c).named(OP);
    div: "this / other (a Tensor, broadcast, or a number).", |x, c| x.div_scalar(c).named(OP);
    pow: "this ** exponent (a Tensor, broadcast, or a number).", |x, c| x.pow_scalar(c).named(OP);
    maximum: "The elementwise larger of this and other (a Tensor, broadcast, or a number).",
        |x, c| x.maximum(&args::scalar_like(OP, "other", &x, c)?).named(OP);
    minimum: "The elementwise smaller of this and other (a Tensor, broadcast, or a number).",
        |x, c| x.minimum(&args::scalar_like(OP, "other", &x, c)?).named(OP);
}

/// `x OP c` for a number `c`: integer and bool tensors are compared as floats
/// when `c` is not representable in their dtype (`ints.lt(2.5)`, `mask.eq(2)`).
fn compare_scalar(x: &Tensor, c: f64, f: fn(&Tensor, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let exact = match x.dtype() {
        DType::F32 | DType::F64 => true,
        DType::I32 => c.fract() == 0.0 && c.abs() <= i32::MAX as f64,
        DType::Bool => false,
    };
    if exact {
        return f(x, &x.scalar_like(c)?);
    }
    let wide = x.to_dtype(if x.device().is_gpu() { DType::F32 } else { DType::F64 })?;
    f(&wide, &wide.scalar_like(c)?)
}

/// Comparison methods: bool tensors, no gradient.
macro_rules! compare_methods {
    ($($name:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(unchecked_return_type = "Tensor<'bool'>")]
                pub fn $name(
                    &self,
                    #[wasm_bindgen(unchecked_param_type = "Tensor | number")] other: JsValue,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($name);
                    let x = self.get(OP)?;
                    out(OP, match Operand::parse(OP, "other", &other)? {
                        Operand::Scalar(c) => compare_scalar(&x, c, Tensor::$name),
                        Operand::Tensor(t) => x.$name(&t),
                    })
                }
            )*
        }
    };
}

compare_methods! {
    eq: "this == other, elementwise (a bool tensor; other is a Tensor, broadcast, or a number).";
    ne: "this != other, elementwise (a bool tensor).";
    lt: "this < other, elementwise (a bool tensor).";
    le: "this <= other, elementwise (a bool tensor).";
    gt: "this > other, elementwise (a bool tensor).";
    ge: "this >= other, elementwise (a bool tensor).";
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

/// Elementwise `condition ? input : other` with broadcasting (`condition` is a bool tensor).
#[wasm_bindgen(js_name = "where")]
pub fn where_(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] condition: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Tensor | number")] input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Tensor | number")] other: JsValue,
) -> JsResult<JsTensor> {
    const OP: &str = "where";
    let cond = args::tensor(OP, "condition", &condition)?;
    let a = Operand::parse(OP, "input", &input)?;
    let b = Operand::parse(OP, "other", &other)?;
    Ok(JsTensor::wrap(select(OP, &cond, a, b, ["input", "other"])?))
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// `x` where positive, `negativeSlope * x` elsewhere (default slope 0.01).
    #[wasm_bindgen(js_name = leakyRelu, unchecked_return_type = "Tensor<D>")]
    pub fn leaky_relu(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number", js_name = negativeSlope)] negative_slope: Option<
            JsValue,
        >,
    ) -> JsResult<JsTensor> {
        const OP: &str = "leakyRelu";
        let x = self.get(OP)?;
        let slope = undef(negative_slope);
        let slope = if is_absent(&slope) { 0.01 } else { args::finite_arg(OP, "negativeSlope", &slope)? };
        out(OP, x.leaky_relu(slope))
    }

    /// GELU: exact (erf) by default, the tanh approximation with `{ approximate: 'tanh' }`.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn gelu(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ approximate?: 'none' | 'tanh' }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "gelu";
        let x = self.get(OP)?;
        let options = undef(options);
        match Opts::known(OP, &options, &["approximate"])?.string("approximate", "none")?.as_str() {
            "none" => out(OP, x.gelu_erf()),
            "tanh" => out(OP, x.gelu()),
            other => {
                Err(js_error(OP, Kind::Argument, format!("option approximate must be 'none' or 'tanh', got {other:?}")))
            }
        }
    }

    /// Clamps into [min, max]; either bound may be omitted (null or undefined), not both.
    /// As PyTorch: a NaN bound gives NaN everywhere, min > max gives max everywhere.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn clamp(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] min: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] max: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "clamp";
        let x = self.get(OP)?;
        let bound = |name: &str, v: Option<JsValue>| -> JsResult<Option<f64>> {
            let v = undef(v);
            if is_absent(&v) {
                return Ok(None);
            }
            // NaN is a bound like any other: PyTorch's clamp then gives NaN.
            Ok(Some(number(OP, name, &v)?))
        };
        let (lo, hi) = (bound("min", min)?, bound("max", max)?);
        if lo.is_none() && hi.is_none() {
            return Err(js_error(OP, Kind::Argument, "at least one of min and max must be given"));
        }
        out(OP, x.clamp(lo, hi))
    }

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

    /// A copy converted to `dtype` ('float32' | 'float64' | 'int32' | 'bool'); gradients flow between float dtypes.
    #[wasm_bindgen(js_name = toDtype, skip_typescript)]
    pub fn to_dtype(&self, #[wasm_bindgen(unchecked_param_type = "DType")] dtype: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "toDtype";
        let x = self.get(OP)?;
        out(OP, x.to_dtype(args::dtype(OP, &dtype)?))
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
