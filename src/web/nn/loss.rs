//! The JS `Loss` class: skiff's loss structs (`CrossEntropyLoss`, `MSELoss`,
//! ...). They are not layers (their forward takes an input and a target), so
//! they get their own class with `forward(input, target)`.

use super::{bag, py_float};
use crate::nn::{BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss};
use crate::ops::composite::Reduction;
use crate::web::args::{self, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind as ErrorKind, Named};
use wasm_bindgen::prelude::*;

enum Kind {
    CrossEntropy(CrossEntropyLoss),
    Nll(NLLLoss),
    Mse(MSELoss),
    L1(L1Loss),
    BceWithLogits(BCEWithLogitsLoss),
}

/// A loss function (PyTorch's `nn.CrossEntropyLoss`, `nn.MSELoss`, ...).
/// Create one with the static factories; call `forward(input, target)`.
#[wasm_bindgen(js_name = Loss)]
pub struct JsLoss {
    kind: Kind,
    name: &'static str,
    extra: String,
}

fn reduction(op: &str, o: &Opts) -> JsResult<Reduction> {
    match o.string("reduction", "mean")?.as_str() {
        "mean" => Ok(Reduction::Mean),
        "sum" => Ok(Reduction::Sum),
        "none" => Ok(Reduction::None),
        other => {
            Err(js_error(op, ErrorKind::Argument, format!("reduction must be 'mean', 'sum' or 'none', got {other:?}")))
        }
    }
}

fn reduction_repr(r: Reduction) -> String {
    match r {
        Reduction::Mean => String::new(),
        Reduction::Sum => "reduction='sum'".into(),
        Reduction::None => "reduction='none'".into(),
    }
}

/// A loss with only a `reduction` option.
fn simple(op: &str, options: Option<JsValue>) -> JsResult<(Reduction, String)> {
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let r = reduction(op, &bag(op, &options, &["reduction"])?)?;
    Ok((r, reduction_repr(r)))
}

#[wasm_bindgen(js_class = Loss)]
impl JsLoss {
    /// Cross-entropy of [N, C] logits against [N] int32 labels, with optional
    /// label smoothing (PyTorch's `nn.CrossEntropyLoss`).
    #[wasm_bindgen(js_name = crossEntropyLoss)]
    pub fn cross_entropy_loss(
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none'; labelSmoothing?: number }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsLoss> {
        const OP: &str = "CrossEntropyLoss";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["reduction", "labelSmoothing"])?;
        let r = reduction(OP, &o)?;
        let ls = o.f64("labelSmoothing", 0.0)?;
        if !(0.0..=1.0).contains(&ls) {
            return Err(js_error(OP, ErrorKind::Value, format!("labelSmoothing must be in [0, 1], got {ls}")));
        }
        let mut extra = reduction_repr(r);
        if ls != 0.0 {
            extra += &format!("{}label_smoothing={}", if extra.is_empty() { "" } else { ", " }, py_float(ls));
        }
        let loss = CrossEntropyLoss { reduction: r, label_smoothing: ls };
        Ok(JsLoss { kind: Kind::CrossEntropy(loss), name: "CrossEntropyLoss", extra })
    }

    /// Negative log-likelihood of [N, C] log-probabilities at [N] int32 labels.
    #[wasm_bindgen(js_name = nllLoss)]
    pub fn nll_loss(
        #[wasm_bindgen(unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none' }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsLoss> {
        let (r, extra) = simple("NLLLoss", options)?;
        Ok(JsLoss { kind: Kind::Nll(NLLLoss::with_reduction(r)), name: "NLLLoss", extra })
    }

    /// Mean squared error (input - target)^2.
    #[wasm_bindgen(js_name = mseLoss)]
    pub fn mse_loss(
        #[wasm_bindgen(unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none' }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsLoss> {
        let (r, extra) = simple("MSELoss", options)?;
        Ok(JsLoss { kind: Kind::Mse(MSELoss::with_reduction(r)), name: "MSELoss", extra })
    }

    /// Mean absolute error |input - target|.
    #[wasm_bindgen(js_name = l1Loss)]
    pub fn l1_loss(
        #[wasm_bindgen(unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none' }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsLoss> {
        let (r, extra) = simple("L1Loss", options)?;
        Ok(JsLoss { kind: Kind::L1(L1Loss::with_reduction(r)), name: "L1Loss", extra })
    }

    /// Binary cross-entropy of logits against probabilities in [0, 1].
    #[wasm_bindgen(js_name = bceWithLogitsLoss)]
    pub fn bce_with_logits_loss(
        #[wasm_bindgen(unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none' }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsLoss> {
        let (r, extra) = simple("BCEWithLogitsLoss", options)?;
        let loss = BCEWithLogitsLoss::with_reduction(r);
        Ok(JsLoss { kind: Kind::BceWithLogits(loss), name: "BCEWithLogitsLoss", extra })
    }

    /// The loss of `input` against `target`.
    pub fn forward(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] input: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] target: JsValue,
    ) -> JsResult<JsTensor> {
        let op = format!("{}.forward", self.name);
        let x = args::tensor(&op, "input", &input)?;
        let y = args::tensor(&op, "target", &target)?;
        let loss = match &self.kind {
            Kind::CrossEntropy(l) => l.forward(&x, &y),
            Kind::Nll(l) => l.forward(&x, &y),
            Kind::Mse(l) => l.forward(&x, &y),
            Kind::L1(l) => l.forward(&x, &y),
            Kind::BceWithLogits(l) => l.forward(&x, &y),
        };
        Ok(JsTensor::wrap(loss.named(&op)?))
    }

    /// PyTorch's class name: 'CrossEntropyLoss', 'MSELoss', ...
    #[wasm_bindgen(getter, js_name = typeName)]
    pub fn type_name(&self) -> String {
        self.name.to_string()
    }

    /// `CrossEntropyLoss()`, `MSELoss(reduction='sum')`, ...
    #[wasm_bindgen(js_name = toString)]
    pub fn to_js_string(&self) -> String {
        format!("{}({})", self.name, self.extra)
    }
}
