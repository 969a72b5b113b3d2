//! `Module` methods of the sequence layers beyond `forward`: the recurrent
//! layers' and cells' states in and out (`forwardWithState`) and the
//! transformer layers' masks and memory (`encode`, `decode`). As with
//! `attention`, hooks run only through `forward`.

use super::bag;
use super::module::{JsModule, Kind};
use crate::nn::RecurrentState;
use crate::tensor::Tensor;
use crate::web::args;
use crate::web::{js_error, JsOpError, JsResult, JsTensor, Kind as ErrorKind, Named};
use js_sys::Array;
use wasm_bindgen::prelude::*;

/// A state argument: `h` alone, `[h, c]`, or nothing (zeros).
fn state_arg(op: &str, v: &JsValue) -> JsResult<Option<RecurrentState>> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if Array::is_array(v) {
        let a = Array::from(v);
        if a.length() != 2 {
            return Err(js_error(
                op,
                ErrorKind::Argument,
                format!("state must be h or [h, c], got an array of {}", a.length()),
            ));
        }
        let (h, c) = (args::tensor(op, "state[0]", &a.get(0))?, args::tensor(op, "state[1]", &a.get(1))?);
        return Ok(Some(RecurrentState { h, c: Some(c) }));
    }
    Ok(Some(RecurrentState { h: args::tensor(op, "state", v)?, c: None }))
}

/// `h` as a handle, or `[h, c]` when there is a cell state.
fn state_value(s: RecurrentState) -> JsValue {
    match s.c {
        Some(c) => Array::of2(&JsTensor::wrap(s.h).into(), &JsTensor::wrap(c).into()).into(),
        None => JsTensor::wrap(s.h).into(),
    }
}

fn tensor_value(t: Tensor) -> JsValue {
    JsTensor::wrap(t).into()
}

#[wasm_bindgen(js_class = Module)]
impl JsModule {
    /// A recurrent layer (RNN, LSTM, GRU) on `x` from `state` (h0, or
    /// [h0, c0] for an LSTM; zeros when left out): `[output, hN]`, or
    /// `[output, [hN, cN]]` for an LSTM, as PyTorch returns them. A cell
    /// (RNNCell, LSTMCell, GRUCell): the next state, `h` or `[h, c]`.
    #[wasm_bindgen(
        js_name = forwardWithState,
        unchecked_return_type = "[Tensor, Tensor | [Tensor, Tensor]] | Tensor | [Tensor, Tensor]"
    )]
    pub fn forward_with_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] x: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Tensor | [Tensor, Tensor] | null")] state: Option<JsValue>,
    ) -> JsResult<JsValue> {
        const OP: &str = "forwardWithState";
        let x = args::tensor(OP, "x", &x)?;
        let state = state_arg(OP, &state.unwrap_or(JsValue::UNDEFINED))?;
        match &self.entry.kind {
            Kind::Recurrent(r) => {
                let (out, s) = r.forward_with_state(&x, state.as_ref()).within(OP)?;
                Ok(Array::of2(&tensor_value(out), &state_value(s)).into())
            }
            Kind::Cell(c) => Ok(state_value(c.step(&x, state.as_ref()).within(OP)?)),
            _ => Err(self.wrong_kind(OP, "a recurrent layer or cell (RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell)")),
        }
    }

    /// A TransformerEncoderLayer on `src`, with a bool `srcKeyPaddingMask`
    /// [N, S] (true: ignore that key) and causal self-attention.
    #[wasm_bindgen(unchecked_return_type = "Tensor")]
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] src: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ srcKeyPaddingMask?: Tensor; isCausal?: boolean }")]
        options: Option<JsValue>,
    ) -> JsResult<JsValue> {
        const OP: &str = "encode";
        let Kind::Encoder(layer) = &self.entry.kind else {
            return Err(self.wrong_kind(OP, "a TransformerEncoderLayer"));
        };
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["srcKeyPaddingMask", "isCausal"])?;
        let src = args::tensor(OP, "src", &src)?;
        let y = layer.encode(&src, o.opt_tensor("srcKeyPaddingMask")?.as_ref(), o.bool("isCausal", false)?);
        Ok(tensor_value(y.within(OP)?))
    }

    /// A TransformerDecoderLayer on `tgt` attending to `memory`;
    /// `tgtIsCausal` masks each target position's future, the bool padding
    /// masks [N, T] and [N, S] mark keys to ignore.
    #[wasm_bindgen(unchecked_return_type = "Tensor")]
    pub fn decode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] tgt: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] memory: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ tgtIsCausal?: boolean; tgtKeyPaddingMask?: Tensor; memoryKeyPaddingMask?: Tensor }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsValue> {
        const OP: &str = "decode";
        let Kind::Decoder(layer) = &self.entry.kind else {
            return Err(self.wrong_kind(OP, "a TransformerDecoderLayer"));
        };
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["tgtIsCausal", "tgtKeyPaddingMask", "memoryKeyPaddingMask"])?;
        let (tgt, memory) = (args::tensor(OP, "tgt", &tgt)?, args::tensor(OP, "memory", &memory)?);
        let (tgt_mask, memory_mask) = (o.opt_tensor("tgtKeyPaddingMask")?, o.opt_tensor("memoryKeyPaddingMask")?);
        let y = layer.decode(&tgt, &memory, o.bool("tgtIsCausal", false)?, tgt_mask.as_ref(), memory_mask.as_ref());
        Ok(tensor_value(y.within(OP)?))
    }
}

impl JsModule {
    fn wrong_kind(&self, op: &str, needs: &str) -> JsOpError {
        js_error(op, ErrorKind::Argument, format!("needs {needs}, this is a {}", self.entry.name()))
    }
}
