//! Recurrent layers with PyTorch's options, parameter names and layouts:
//! `RNN`, `LSTM`, `GRU` (`num_layers`, `bidirectional`, `batch_first`,
//! dropout between layers, initial states in and final states out) and
//! their cells. Everything is skiff's own ops, so both backends and `jit`
//! (which records the unrolled steps) work as for any model: one product
//! with the input weights for all steps of a layer, then one product with
//! the hidden weights per step. A layer's sequence is one autograd node with
//! a hand-written backward through time (`sequence.rs`); a cell records its
//! step op by op (`cell.rs`).
//!
//! Gates as PyTorch stacks them: LSTM (input, forget, cell, output), GRU
//! (reset, update, new) with the reset gate applied to the hidden product
//! *after* its bias: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).

mod cell;
mod sequence;

use super::{init, py_bool, py_float, Core, Layer, Param};
use crate::autograd::apply_function;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use sequence::Sequence;
use std::sync::Arc;

/// Which recurrence a layer or cell computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecurrentKind {
    /// Elman RNN with tanh.
    RnnTanh,
    /// Elman RNN with ReLU.
    RnnRelu,
    Lstm,
    Gru,
}

impl RecurrentKind {
    fn gates(self) -> usize {
        match self {
            RecurrentKind::RnnTanh | RecurrentKind::RnnRelu => 1,
            RecurrentKind::Lstm => 4,
            RecurrentKind::Gru => 3,
        }
    }
    fn name(self) -> &'static str {
        match self {
            RecurrentKind::RnnTanh | RecurrentKind::RnnRelu => "RNN",
            RecurrentKind::Lstm => "LSTM",
            RecurrentKind::Gru => "GRU",
        }
    }
}

/// The four parameters of one direction of one layer (or of a cell).
struct Weights {
    w_ih: Param,
    w_hh: Param,
    b_ih: Option<Param>,
    b_hh: Option<Param>,
}

impl Weights {
    /// PyTorch's initialisation: every parameter uniform in +-1/sqrt(hidden).
    fn new(kind: RecurrentKind, input: usize, hidden: usize, bias: bool) -> Result<Weights> {
        let rows = kind.gates() * hidden;
        let bound = 1.0 / (hidden as f64).sqrt();
        let draw = |shape: &[usize]| -> Result<Param> {
            let t = Tensor::zeros(shape, DType::F32)?;
            init::uniform_(&t, -bound, bound)?;
            Param::parameter(t)
        };
        Ok(Weights {
            w_ih: draw(&[rows, input])?,
            w_hh: draw(&[rows, hidden])?,
            b_ih: if bias { Some(draw(&[rows])?) } else { None },
            b_hh: if bias { Some(draw(&[rows])?) } else { None },
        })
    }

    fn named(&self, suffix: &str) -> Vec<(String, Param)> {
        let mut v =
            vec![(format!("weight_ih{suffix}"), self.w_ih.clone()), (format!("weight_hh{suffix}"), self.w_hh.clone())];
        v.extend(self.b_ih.iter().map(|p| (format!("bias_ih{suffix}"), p.clone())));
        v.extend(self.b_hh.iter().map(|p| (format!("bias_hh{suffix}"), p.clone())));
        v
    }

    /// `x W_ih^T + b_ih` for every row of `x` at once.
    fn project_input(&self, x: &Tensor) -> Result<Tensor> {
        let y = x.matmul(&self.w_ih.get().transpose(0, 1)?)?;
        match &self.b_ih {
            Some(b) => y.add(&b.get()),
            None => Ok(y),
        }
    }

    /// One step (a cell's): the new h and c.
    fn step(
        &self,
        kind: RecurrentKind,
        xw: &Tensor,
        h: &Tensor,
        c: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let b_hh = self.b_hh.as_ref().map(|b| b.get());
        let s = cell::step(kind, xw, h, c, &self.w_hh.get().transpose(0, 1)?, b_hh.as_ref())?;
        Ok((s.h, s.c))
    }

    /// Every step of a sequence from its input projection `xw` `[L, N, G*H]`
    /// (L >= 1), in time order or from the end: the outputs `[L, N, H]` and
    /// the final h and c.
    fn sequence(
        &self,
        kind: RecurrentKind,
        reverse: bool,
        xw: &Tensor,
        h: &Tensor,
        c: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let mut inputs = vec![xw.clone(), h.clone()];
        inputs.extend(c.cloned());
        inputs.push(self.w_hh.get());
        inputs.extend(self.b_hh.as_ref().map(|b| b.get()));
        let f = Sequence { kind, reverse, bias: self.b_hh.is_some() };
        let mut out = apply_function(Arc::new(f), &inputs)?.into_iter();
        let (y, h) = (out.next().expect("the outputs"), out.next().expect("the final h"));
        Ok((y, h, out.next()))
    }
}

/// Options of the recurrent layers (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct RecurrentConfig {
    pub num_layers: usize,
    pub bias: bool,
    /// Inputs and outputs `[N, L, *]` instead of `[L, N, *]`.
    pub batch_first: bool,
    /// Dropout on each layer's output but the last's, while training.
    pub dropout: f64,
    pub bidirectional: bool,
}

impl Default for RecurrentConfig {
    fn default() -> Self {
        RecurrentConfig { num_layers: 1, bias: true, batch_first: false, dropout: 0.0, bidirectional: false }
    }
}

/// A layer's or cell's starting state `what` (h0, c0, h, c): zeros of
/// `shape` like `x` when none is given, else the given one, which for an
/// unbatched input (`unbatched_axis`: where its batch dim of 1 goes) gets
/// that dim, and must then have `shape`.
fn initial_state(
    op: &'static str,
    t: Option<&Tensor>,
    what: &str,
    shape: &[usize],
    unbatched_axis: Option<isize>,
    x: &Tensor,
) -> Result<Tensor> {
    let Some(t) = t else { return Tensor::zeros_on(shape, x.dtype(), &x.device()) };
    let t = match unbatched_axis {
        None => t.clone(),
        Some(axis) => t.unsqueeze(axis)?,
    };
    if t.shape() != shape {
        let msg = format!("{what} must have shape {shape:?} for input {:?}, got {:?}", x.shape(), t.shape());
        return Err(Error::shape(op, msg));
    }
    Ok(t)
}

/// A stack of recurrent layers; `RNN`, `LSTM` and `GRU` are this with their kind.
pub struct Recurrent {
    core: Core,
    pub kind: RecurrentKind,
    pub input_size: usize,
    pub hidden_size: usize,
    pub config: RecurrentConfig,
    /// Per layer, per direction (forward, then reverse).
    weights: Vec<Vec<Weights>>,
}

/// The final states of a recurrent layer: `h_n` `[D * num_layers, N, H]`,
/// and `c_n` for an LSTM.
pub struct RecurrentState {
    pub h: Tensor,
    pub c: Option<Tensor>,
}

impl Recurrent {
    /// PyTorch's `nn.RNN(input_size, hidden_size)` (tanh).
    pub fn rnn(input_size: usize, hidden_size: usize) -> Result<Recurrent> {
        Recurrent::new(RecurrentKind::RnnTanh, input_size, hidden_size, RecurrentConfig::default())
    }
    /// PyTorch's `nn.LSTM(input_size, hidden_size)`.
    pub fn lstm(input_size: usize, hidden_size: usize) -> Result<Recurrent> {
        Recurrent::new(RecurrentKind::Lstm, input_size, hidden_size, RecurrentConfig::default())
    }
    /// PyTorch's `nn.GRU(input_size, hidden_size)`.
    pub fn gru(input_size: usize, hidden_size: usize) -> Result<Recurrent> {
        Recurrent::new(RecurrentKind::Gru, input_size, hidden_size, RecurrentConfig::default())
    }
    pub fn new(kind: RecurrentKind, input_size: usize, hidden_size: usize, c: RecurrentConfig) -> Result<Recurrent> {
        let op = kind.name();
        if input_size == 0 || hidden_size == 0 || c.num_layers == 0 {
            return Err(Error::value(
                op,
                format!(
                    "input_size, hidden_size and num_layers must be positive, got {input_size}, {hidden_size} and {}",
                    c.num_layers
                ),
            ));
        }
        if !(0.0..=1.0).contains(&c.dropout) {
            return Err(Error::value(op, format!("dropout must be in [0, 1], got {}", c.dropout)));
        }
        let dirs = if c.bidirectional { 2 } else { 1 };
        let weights = (0..c.num_layers)
            .map(|l| {
                let input = if l == 0 { input_size } else { hidden_size * dirs };
                (0..dirs).map(|_| Weights::new(kind, input, hidden_size, c.bias)).collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Recurrent { core: Core::default(), kind, input_size, hidden_size, config: c, weights })
    }

    fn directions(&self) -> usize {
        if self.config.bidirectional {
            2
        } else {
            1
        }
    }

    /// The output `[L, N, D * H]` (batch first: `[N, L, D * H]`; unbatched
    /// `[L, H_in]` in, `[L, D * H]` out) and the final states, from the
    /// initial states (`[D * num_layers, N, H]`, zeros when None).
    pub fn forward_with_state(&self, x: &Tensor, state: Option<&RecurrentState>) -> Result<(Tensor, RecurrentState)> {
        let op = self.kind.name();
        let (lstm, dirs, hidden) = (self.kind == RecurrentKind::Lstm, self.directions(), self.hidden_size);
        let batched = x.ndim() == 3;
        if !(batched || x.ndim() == 2) || x.shape()[x.ndim() - 1] != self.input_size {
            return Err(Error::shape(
                op,
                format!(
                    "expects input [L, N, {0}] ([N, L, {0}] batch first, or unbatched [L, {0}]), got shape {1:?}",
                    self.input_size,
                    x.shape()
                ),
            ));
        }
        // Sequence-first [L, N, H_in] from here on.
        let x = match (batched, self.config.batch_first) {
            (false, _) => x.unsqueeze(1)?,
            (true, true) => x.transpose(0, 1)?,
            (true, false) => x.clone(),
        };
        let (len, n) = (x.shape()[0], x.shape()[1]);
        let state_shape = [self.config.num_layers * dirs, n, hidden];
        let initial =
            |t: Option<&Tensor>, what: &str| initial_state(op, t, what, &state_shape, (!batched).then_some(1), &x);
        if !lstm && state.is_some_and(|s| s.c.is_some()) {
            return Err(Error::value(op, "has no cell state: give h0 alone (c0 is an LSTM's)"));
        }
        let h0 = initial(state.map(|s| &s.h), "h0")?;
        let c0 = if lstm { Some(initial(state.and_then(|s| s.c.as_ref()), "c0")?) } else { None };
        let train = self.is_training();
        let mut layer_input = x;
        let (mut h_n, mut c_n) = (Vec::new(), Vec::new());
        for (l, layer) in self.weights.iter().enumerate() {
            let mut outputs = Vec::with_capacity(dirs);
            for (d, w) in layer.iter().enumerate() {
                let k = (l * dirs + d) as isize;
                let h = h0.narrow(0, k as usize, 1)?.squeeze(Some(0))?;
                let c = c0.as_ref().map(|c| c.narrow(0, k as usize, 1).and_then(|t| t.squeeze(Some(0)))).transpose()?;
                let xw = w.project_input(&layer_input)?;
                // The reverse direction reads the sequence from its end.
                let (out, h, c) = if len == 0 {
                    (Tensor::zeros_on(&[0, n, hidden], h.dtype(), &h.device())?, h, c)
                } else {
                    w.sequence(self.kind, d == 1, &xw, &h, c.as_ref())?
                };
                outputs.push(out);
                h_n.push(h);
                c_n.extend(c);
            }
            let out = if dirs == 1 { outputs.remove(0) } else { Tensor::concat(&outputs, -1)? };
            let last = l + 1 == self.weights.len();
            layer_input =
                if !last && self.config.dropout > 0.0 { out.dropout(self.config.dropout, train)? } else { out };
        }
        let h = Tensor::stack(&h_n, 0)?;
        let c = if lstm { Some(Tensor::stack(&c_n, 0)?) } else { None };
        let (out, h, c) = match (batched, self.config.batch_first) {
            (false, _) => {
                (layer_input.squeeze(Some(1))?, h.squeeze(Some(1))?, c.map(|c| c.squeeze(Some(1))).transpose()?)
            }
            (true, true) => (layer_input.transpose(0, 1)?, h, c),
            (true, false) => (layer_input, h, c),
        };
        Ok((out, RecurrentState { h, c }))
    }
}

impl Layer for Recurrent {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.forward_with_state(x, None)?.0)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        let mut v = Vec::new();
        for (l, layer) in self.weights.iter().enumerate() {
            for (d, w) in layer.iter().enumerate() {
                v.extend(w.named(&format!("_l{l}{}", if d == 1 { "_reverse" } else { "" })));
            }
        }
        v
    }
    fn type_name(&self) -> &'static str {
        self.kind.name()
    }
    /// PyTorch's: the sizes, then the options that differ from their defaults
    /// (PyTorch's RNN does not print its nonlinearity; its cell does).
    fn extra_repr(&self) -> String {
        let c = &self.config;
        let mut s = format!("{}, {}", self.input_size, self.hidden_size);
        if c.num_layers != 1 {
            s += &format!(", num_layers={}", c.num_layers);
        }
        if !c.bias {
            s += ", bias=False";
        }
        if c.batch_first {
            s += ", batch_first=True";
        }
        if c.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(c.dropout));
        }
        if c.bidirectional {
            s += &format!(", bidirectional={}", py_bool(true));
        }
        s
    }
}

fn cell_name(kind: RecurrentKind) -> &'static str {
    match kind {
        RecurrentKind::RnnTanh | RecurrentKind::RnnRelu => "RNNCell",
        RecurrentKind::Lstm => "LSTMCell",
        RecurrentKind::Gru => "GRUCell",
    }
}

/// One step of a recurrence (PyTorch's `RNNCell`, `LSTMCell`, `GRUCell`):
/// parameters `weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`.
pub struct RecurrentCell {
    core: Core,
    pub kind: RecurrentKind,
    pub input_size: usize,
    pub hidden_size: usize,
    weights: Weights,
}

impl RecurrentCell {
    pub fn new(kind: RecurrentKind, input_size: usize, hidden_size: usize, bias: bool) -> Result<RecurrentCell> {
        let op = cell_name(kind);
        if input_size == 0 || hidden_size == 0 {
            return Err(Error::value(
                op,
                format!("input_size and hidden_size must be positive, got {input_size} and {hidden_size}"),
            ));
        }
        let weights = Weights::new(kind, input_size, hidden_size, bias)?;
        Ok(RecurrentCell { core: Core::default(), kind, input_size, hidden_size, weights })
    }

    /// The next state from input `[N, H_in]` (or `[H_in]`) and the state
    /// `h` (`c` for an LSTM) `[N, H]`, zeros when None.
    pub fn step(&self, x: &Tensor, state: Option<&RecurrentState>) -> Result<RecurrentState> {
        let op = cell_name(self.kind);
        if self.kind != RecurrentKind::Lstm && state.is_some_and(|s| s.c.is_some()) {
            return Err(Error::value(op, "has no cell state: give h alone (c is an LSTMCell's)"));
        }
        if !(1..=2).contains(&x.ndim()) || x.shape()[x.ndim() - 1] != self.input_size {
            return Err(Error::shape(
                op,
                format!("expects input [N, {}] or [{0}], got shape {:?}", self.input_size, x.shape()),
            ));
        }
        let batched = x.ndim() == 2;
        let x = if batched { x.clone() } else { x.unsqueeze(0)? };
        let n = x.shape()[0];
        let shape = [n, self.hidden_size];
        let get = |t: Option<&Tensor>, what: &str| initial_state(op, t, what, &shape, (!batched).then_some(0), &x);
        let h = get(state.map(|s| &s.h), "h")?;
        let c = if self.kind == RecurrentKind::Lstm { Some(get(state.and_then(|s| s.c.as_ref()), "c")?) } else { None };
        let (h, c) = self.weights.step(self.kind, &self.weights.project_input(&x)?, &h, c.as_ref())?;
        if batched {
            Ok(RecurrentState { h, c })
        } else {
            Ok(RecurrentState { h: h.squeeze(Some(0))?, c: c.map(|c| c.squeeze(Some(0))).transpose()? })
        }
    }
}

impl Layer for RecurrentCell {
    /// The next hidden state from a zero state.
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.step(x, None)?.h)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        self.weights.named("")
    }
    fn type_name(&self) -> &'static str {
        cell_name(self.kind)
    }
    fn extra_repr(&self) -> String {
        let mut s = format!("{}, {}", self.input_size, self.hidden_size);
        if self.weights.b_ih.is_none() {
            s += ", bias=False";
        }
        if self.kind == RecurrentKind::RnnRelu {
            s += ", nonlinearity=relu";
        }
        s
    }
}
