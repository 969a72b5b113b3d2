//! One step of a recurrence, forward and backward, in skiff's own ops: the
//! cells (`RecurrentCell`) record the forward like any model; a layer's
//! sequence (`sequence.rs`) runs both halves itself.

use super::RecurrentKind;
use crate::autograd::{apply_function, Function, FunctionCtx};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

/// `x` cut into pieces of `size` along `axis`, as one graph node whose
/// gradient is the concatenation of the pieces' gradients. Slicing piece by
/// piece would give each piece's gradient the whole of `x`'s shape (zeros
/// around the slice), summed piece after piece.
struct Pieces {
    axis: usize,
    size: usize,
}

impl Function for Pieces {
    fn name(&self) -> String {
        "Split".into()
    }
    fn forward(&self, _ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        inputs[0].split(self.size, self.axis as isize)
    }
    fn backward(&self, _ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(Tensor::concat(grads, self.axis as isize)?)])
    }
}

/// The `n` gates of `[N, n * H]`, as one node (see `Pieces`).
fn gates(x: &Tensor, n: usize) -> Result<Vec<Tensor>> {
    let last = x.ndim() - 1;
    apply_function(Arc::new(Pieces { axis: last, size: x.shape()[last] / n }), std::slice::from_ref(x))
}

/// The new state of one step, and the activations its backward reads:
/// LSTM (i, f, g, o, tanh(c')), GRU (r, z, n, W_hn h + b_hn), none for an RNN
/// (its backward reads h').
pub(super) struct Step {
    pub h: Tensor,
    pub c: Option<Tensor>,
    pub acts: Vec<Tensor>,
}

/// One step: the input's projection `xw` (x W_ih^T + b_ih, `[N, G*H]`), the
/// state `h` (and `c` for an LSTM), the hidden weights transposed
/// (`w_hh_t`, `[H, G*H]`) and their bias.
pub(super) fn step(
    kind: RecurrentKind,
    xw: &Tensor,
    h: &Tensor,
    c: Option<&Tensor>,
    w_hh_t: &Tensor,
    b_hh: Option<&Tensor>,
) -> Result<Step> {
    let mut hw = h.matmul(w_hh_t)?;
    if let Some(b) = b_hh {
        hw = hw.add(b)?;
    }
    let plain = |h| Ok(Step { h, c: None, acts: Vec::new() });
    match kind {
        RecurrentKind::RnnTanh => plain(xw.add(&hw)?.tanh()?),
        RecurrentKind::RnnRelu => plain(xw.add(&hw)?.relu()?),
        RecurrentKind::Lstm => {
            let g = gates(&xw.add(&hw)?, 4)?;
            let (i, f, cell, o) = (g[0].sigmoid()?, g[1].sigmoid()?, g[2].tanh()?, g[3].sigmoid()?);
            let c = c.ok_or_else(|| Error::value("LSTM", "an LSTM step needs the cell state"))?;
            let c = f.mul(c)?.add(&i.mul(&cell)?)?;
            let tanh_c = c.tanh()?;
            Ok(Step { h: o.mul(&tanh_c)?, c: Some(c), acts: vec![i, f, cell, o, tanh_c] })
        }
        RecurrentKind::Gru => {
            let (gx, gh) = (gates(xw, 3)?, gates(&hw, 3)?);
            let r = gx[0].add(&gh[0])?.sigmoid()?;
            let z = gx[1].add(&gh[1])?.sigmoid()?;
            let n = gx[2].add(&r.mul(&gh[2])?)?.tanh()?;
            // (1 - z) * n + z * h, as n + z * (h - n).
            let h = n.add(&z.mul(&h.sub(&n)?)?)?;
            Ok(Step { h, c: None, acts: vec![r, z, n, gh[2].clone()] })
        }
    }
}

/// The gradients one step sends back, from the gradient `dh` of its output
/// `h` (and `dc` of its cell state `c`).
pub(super) struct StepGrads {
    /// Of the input projection `xw`, `[N, G*H]`.
    pub xw: Tensor,
    /// Of the hidden product `h W_hh^T + b_hh`; None where it equals `xw`'s.
    pub hw: Option<Tensor>,
    /// Of the previous `h` other than through the hidden product (GRU's z * dh).
    pub h_direct: Option<Tensor>,
    /// Of the previous cell state (LSTM).
    pub c: Option<Tensor>,
}

/// y (1 - y): the derivative of the sigmoid at output y.
fn sigmoid_slope(y: &Tensor) -> Result<Tensor> {
    y.mul(&y.neg()?.add_scalar(1.0)?)
}

/// 1 - y^2: the derivative of tanh at output y.
fn tanh_slope(y: &Tensor) -> Result<Tensor> {
    y.mul(y)?.neg()?.add_scalar(1.0)
}

/// The backward of `step`: `h_prev`/`c_prev` are the state it started from,
/// `h` its output, `acts` its `Step::acts`. Written in differentiable ops,
/// so it records when a caller differentiates it again.
pub(super) fn step_backward(
    kind: RecurrentKind,
    dh: &Tensor,
    dc: Option<&Tensor>,
    h_prev: &Tensor,
    c_prev: Option<&Tensor>,
    h: &Tensor,
    acts: &[Tensor],
) -> Result<StepGrads> {
    let simple = |d| Ok(StepGrads { xw: d, hw: None, h_direct: None, c: None });
    match kind {
        RecurrentKind::RnnTanh => simple(dh.mul(&tanh_slope(h)?)?),
        RecurrentKind::RnnRelu => simple(dh.relu_backward(h)?),
        RecurrentKind::Lstm => {
            let [i, f, g, o, tanh_c] = acts else { unreachable!("an LSTM step keeps 5 activations") };
            let missing = || Error::value("LSTM", "an LSTM step needs the cell state");
            let (dc, c_prev) = (dc.ok_or_else(missing)?, c_prev.ok_or_else(missing)?);
            let dc = dc.add(&dh.mul(o)?.mul(&tanh_slope(tanh_c)?)?)?;
            let d_i = dc.mul(g)?.mul(&sigmoid_slope(i)?)?;
            let d_f = dc.mul(c_prev)?.mul(&sigmoid_slope(f)?)?;
            let d_g = dc.mul(i)?.mul(&tanh_slope(g)?)?;
            let d_o = dh.mul(tanh_c)?.mul(&sigmoid_slope(o)?)?;
            let xw = Tensor::concat(&[d_i, d_f, d_g, d_o], -1)?;
            Ok(StepGrads { xw, hw: None, h_direct: None, c: Some(dc.mul(f)?) })
        }
        RecurrentKind::Gru => {
            let [r, z, n, hw_n] = acts else { unreachable!("a GRU step keeps 4 activations") };
            // h = n + z (h_prev - n).
            let d_z = dh.mul(&h_prev.sub(n)?)?.mul(&sigmoid_slope(z)?)?;
            let d_n = dh.mul(&z.neg()?.add_scalar(1.0)?)?.mul(&tanh_slope(n)?)?;
            let d_r = d_n.mul(hw_n)?.mul(&sigmoid_slope(r)?)?;
            let xw = Tensor::concat(&[d_r.clone(), d_z.clone(), d_n.clone()], -1)?;
            let hw = Tensor::concat(&[d_r, d_z, d_n.mul(r)?], -1)?;
            Ok(StepGrads { xw, hw: Some(hw), h_direct: Some(dh.mul(z)?), c: None })
        }
    }
}
