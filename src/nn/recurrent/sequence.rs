//! One direction of one recurrent layer over a whole sequence, as one
//! autograd node. Recorded step by step, a sequence of L steps is about a
//! dozen nodes per step, and its hidden weights get L gradients of their
//! own, each a small product summed into the last. Here the forward runs the
//! steps unrecorded and keeps what the backward reads; the backward walks
//! the steps in reverse (one product per step, for the previous state), then
//! takes the hidden weights' gradient as one product over all steps
//! (dHW^T [G*H, L*N] x H_prev [L*N, H]), as PyTorch's fused kernels do.
//!
//! Asked for a gradient that is differentiable again (`create_graph`), the
//! backward recomputes the steps from its inputs with recording on, so the
//! second derivative sees how every activation depends on them.

use super::cell::{step, step_backward};
use super::RecurrentKind;
use crate::autograd::{is_grad_enabled, Function, FunctionCtx};
use crate::error::Result;
use crate::tensor::Tensor;

/// Inputs `[xw [L, N, G*H], h0 [N, H], c0 (LSTM), w_hh [G*H, H], b_hh (with bias)]`,
/// outputs `[out [L, N, H], h_n, c_n (LSTM)]`; `out` in time order also when
/// the steps run from the end (`reverse`).
pub(super) struct Sequence {
    pub kind: RecurrentKind,
    pub reverse: bool,
    pub bias: bool,
}

/// What the backward of step t reads: the state it started from, its
/// output and its activations.
struct Record {
    h_prev: Tensor,
    c_prev: Option<Tensor>,
    h: Tensor,
    acts: Vec<Tensor>,
}

impl Record {
    fn tensors(&self) -> Vec<&Tensor> {
        let mut v = vec![&self.h_prev, &self.h];
        v.extend(&self.c_prev);
        v.extend(&self.acts);
        v
    }
    fn from_tensors(t: &[Tensor], lstm: bool) -> Record {
        let (c_prev, rest) = if lstm { (Some(t[2].clone()), &t[3..]) } else { (None, &t[2..]) };
        Record { h_prev: t[0].clone(), h: t[1].clone(), c_prev, acts: rest.to_vec() }
    }
}

impl Sequence {
    fn lstm(&self) -> bool {
        self.kind == RecurrentKind::Lstm
    }
    fn inputs(&self) -> usize {
        3 + usize::from(self.lstm()) + usize::from(self.bias)
    }
    /// Tensors one `Record` saves.
    fn per_step(&self) -> usize {
        2 + usize::from(self.lstm())
            + match self.kind {
                RecurrentKind::RnnTanh | RecurrentKind::RnnRelu => 0,
                RecurrentKind::Lstm => 5,
                RecurrentKind::Gru => 4,
            }
    }
    /// The time of each step, in the order the steps run.
    fn order(&self, len: usize) -> Vec<usize> {
        if self.reverse {
            (0..len).rev().collect()
        } else {
            (0..len).collect()
        }
    }
    /// (xw, h0, c0, w_hh, b_hh) from the inputs.
    fn unpack<'a>(
        &self,
        ins: &'a [Tensor],
    ) -> (&'a Tensor, &'a Tensor, Option<&'a Tensor>, &'a Tensor, Option<&'a Tensor>) {
        let c0 = self.lstm().then(|| &ins[2]);
        let w = 2 + usize::from(self.lstm());
        (&ins[0], &ins[1], c0, &ins[w], self.bias.then(|| &ins[w + 1]))
    }
    /// Runs the steps: the records in time order, the final h and c.
    fn run(&self, ins: &[Tensor]) -> Result<(Vec<Record>, Tensor, Option<Tensor>)> {
        let (xw, h0, c0, w_hh, b_hh) = self.unpack(ins);
        let len = xw.shape()[0];
        // Transposed once into its own rows: a product with a transposed
        // view packs the weights again at every step.
        let w_t = w_hh.transpose(0, 1)?.contiguous()?;
        let (mut h, mut c) = (h0.clone(), c0.cloned());
        let mut records: Vec<Option<Record>> = (0..len).map(|_| None).collect();
        for t in self.order(len) {
            let x_t = xw.narrow(0, t, 1)?.squeeze(Some(0))?;
            let s = step(self.kind, &x_t, &h, c.as_ref(), &w_t, b_hh)?;
            records[t] = Some(Record { h_prev: h, c_prev: c, h: s.h.clone(), acts: s.acts });
            (h, c) = (s.h, s.c);
        }
        Ok((records.into_iter().map(|r| r.expect("every step ran")).collect(), h, c))
    }
}

impl Function for Sequence {
    fn name(&self) -> String {
        format!("{}Sequence", self.kind.name())
    }

    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let (records, h, c) = self.run(inputs)?;
        let out = Tensor::stack(&records.iter().map(|r| r.h.clone()).collect::<Vec<_>>(), 0)?;
        ctx.save_for_backward(&inputs.iter().collect::<Vec<_>>());
        for r in &records {
            ctx.save_for_backward(&r.tensors());
        }
        Ok([vec![out, h], c.into_iter().collect()].concat())
    }

    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let saved = ctx.saved_tensors();
        let ins = &saved[..self.inputs()];
        let records = if is_grad_enabled() {
            // create_graph: activations that know how they depend on the inputs.
            self.run(ins)?.0
        } else {
            saved[self.inputs()..].chunks(self.per_step()).map(|t| Record::from_tensors(t, self.lstm())).collect()
        };
        let (_, _, _, w_hh, _) = self.unpack(ins);
        let len = records.len();
        let (d_out, mut dh, mut dc) = (&grads[0], grads[1].clone(), self.lstm().then(|| grads[2].clone()));
        // Indexed by time; the GRU's hidden product has a gradient of its own.
        let mut d_xw: Vec<Option<Tensor>> = vec![None; len];
        let mut d_hw: Vec<Option<Tensor>> = vec![None; len];
        for t in self.order(len).into_iter().rev() {
            let r = &records[t];
            let dh_t = dh.add(&d_out.narrow(0, t, 1)?.squeeze(Some(0))?)?;
            let g = step_backward(self.kind, &dh_t, dc.as_ref(), &r.h_prev, r.c_prev.as_ref(), &r.h, &r.acts)?;
            dh = g.hw.as_ref().unwrap_or(&g.xw).matmul(w_hh)?;
            if let Some(direct) = g.h_direct {
                dh = dh.add(&direct)?;
            }
            dc = g.c;
            d_xw[t] = Some(g.xw);
            d_hw[t] = g.hw;
        }
        let stacked = |v: Vec<Option<Tensor>>| Tensor::stack(&v.into_iter().flatten().collect::<Vec<_>>(), 0);
        let d_xw = stacked(d_xw)?;
        // [L, N, K] as [L * N, K].
        let rows = |t: &Tensor| t.reshape(&[-1, t.shape()[2] as isize]);
        let d_hw = if self.kind == RecurrentKind::Gru { rows(&stacked(d_hw)?)? } else { rows(&d_xw)? };
        let w_index = 2 + usize::from(self.lstm());
        let d_w = if ctx.needs_input_grad(w_index) {
            let h_prev = Tensor::stack(&records.iter().map(|r| r.h_prev.clone()).collect::<Vec<_>>(), 0)?;
            Some(d_hw.transpose(0, 1)?.matmul(&rows(&h_prev)?)?)
        } else {
            None
        };
        let mut out = vec![Some(d_xw), Some(dh)];
        if self.lstm() {
            out.push(dc);
        }
        out.push(d_w);
        if self.bias {
            out.push(Some(d_hw.sum(&[0], false)?));
        }
        Ok(out)
    }
}
