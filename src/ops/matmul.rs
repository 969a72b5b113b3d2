//! Matrix product with NumPy semantics: batched, broadcast batch dims, and
//! 1-D operands promoted (then squeezed) as in `numpy.matmul`. The primitive
//! works on rank >= 2 operands of equal rank; promotion is done with views.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{expect_float, same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::matmul as be;
use crate::error::{Error, Result};
use crate::shape::{broadcast_shapes, Dims};
use crate::tensor::Tensor;

static MATMUL: OpDef = OpDef {
    name: "matmul",
    signature: "matmul(self, other: Tensor) -> Tensor",
    doc: "Matrix product with NumPy semantics: batched, batch dims broadcast, 1-D operands promoted.",
    forward: Some(Forward::One(|a| a.this()?.matmul(a.tensor("other")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let (a, b) = (c.saved(0), c.saved(1));
        let ga = if c.needs_input_grad(0) {
            Some(g[0].matmul(&b.transpose(-1, -2)?)?.sum_to(c.input_shape(0))?)
        } else {
            None
        };
        let gb = if c.needs_input_grad(1) {
            Some(a.transpose(-1, -2)?.matmul(&g[0])?.sum_to(c.input_shape(1))?)
        } else {
            None
        };
        Ok(vec![ga, gb])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: &[usize]| Input::Uniform(s.to_vec(), -1.0, 1.0);
        vec![
            Case::new("2-D", vec![u(&[3, 4]), u(&[4, 5])], |x| x[0].matmul(&x[1]))
                .also(Sample::Empty, &[&[3, 0], &[0, 5]]),
            Case::new("batched with broadcast", vec![u(&[2, 3, 4]), u(&[4, 2])], |x| x[0].matmul(&x[1]))
                .also(Sample::Empty, &[&[0, 3, 4], &[4, 2]]),
            Case::new("broadcast batch dims", vec![u(&[2, 1, 2, 3]), u(&[3, 3, 2])], |x| x[0].matmul(&x[1])),
            Case::new("vector @ matrix", vec![u(&[3]), u(&[3, 4])], |x| x[0].matmul(&x[1])),
            Case::new("matrix @ vector", vec![u(&[2, 3]), u(&[3])], |x| x[0].matmul(&x[1])),
            Case::new("vector @ vector", vec![u(&[4]), u(&[4])], |x| x[0].matmul(&x[1])),
        ]
        .into_iter()
        .map(|c| c.reference(|h| r::matmul(&h[0], &h[1])))
        .chain([
            Case::new("transposed operands", vec![u(&[4, 3]), u(&[5, 4])], |x| {
                x[0].transpose(0, 1)?.matmul(&x[1].transpose(0, 1)?)
            })
            .reference(|h| r::matmul(&r::transpose(&h[0], 0, 1), &r::transpose(&h[1], 0, 1))),
            Case::new("chain", vec![u(&[2, 3]), u(&[3, 3]), u(&[3, 2])], |x| x[0].matmul(&x[1])?.tanh()?.matmul(&x[2]))
                .reference(|h| r::matmul(&r::map(&r::matmul(&h[0], &h[1]), f64::tanh), &h[2])),
        ])
        .collect()
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&MATMUL]
}

fn mismatch(a: &Tensor, b: &Tensor) -> Error {
    Error::shape("matmul", format!("inner dims differ: {:?} x {:?}", a.shape(), b.shape()))
}

impl Tensor {
    /// Matrix product (NumPy's `matmul`): the last two axes multiply, leading
    /// axes broadcast; a 1-D left operand is a row vector, a 1-D right
    /// operand a column vector, and the promoted axis is removed again.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        // Under autocast a product is an f16 op (`amp`).
        matmul_entry(&crate::amp::lower(self)?, &crate::amp::lower(other)?)
    }
}

fn matmul_entry(this: &Tensor, other: &Tensor) -> Result<Tensor> {
    same_device("matmul", &[this, other])?;
    expect_float("matmul", this)?;
    same_dtype("matmul", this, other)?;
    if this.ndim() == 0 || other.ndim() == 0 {
        return Err(Error::shape(
            "matmul",
            format!("operands must be at least 1-D, got {:?} x {:?}", this.shape(), other.shape()),
        ));
    }
    let a = if this.ndim() == 1 { this.unsqueeze(0)? } else { this.clone() };
    let b = if other.ndim() == 1 { other.unsqueeze(-1)? } else { other.clone() };
    if a.shape()[a.ndim() - 1] != b.shape()[b.ndim() - 2] {
        return Err(mismatch(this, other));
    }
    // [..., m, k] x [k, n]: the batch folds into the rows (as PyTorch folds
    // it), one product instead of a broadcast batch of small ones, and one
    // for b's gradient instead of a batch of them summed. Only where the
    // rows are a view of `a`: a copy would cost more than the batch saves.
    let lead = &a.shape()[..a.ndim() - 1];
    let rows = [lead.iter().product(), a.shape()[a.ndim() - 1]];
    let out = if a.ndim() > 2 && b.ndim() == 2 && a.layout().reshaped(&rows).is_some() {
        let mut shape: Dims = lead.into();
        shape.push(b.shape()[1]);
        matmul_nd(&a.reshape_dims(&rows)?, &b)?.reshape_dims(&shape)?
    } else {
        matmul_nd(&a, &b)?
    };
    match (this.ndim(), other.ndim()) {
        (1, 1) => out.reshape_dims(&[]),
        (1, _) => out.squeeze(Some(-2)),
        (_, 1) => out.squeeze(Some(-1)),
        _ => Ok(out),
    }
}

/// The primitive: rank >= 2 operands; ranks are equalised with leading 1s (views).
fn matmul_nd(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let r = a.ndim().max(b.ndim());
    let lift = |t: &Tensor| -> Result<Tensor> {
        let mut s: Dims = smallvec::smallvec![1; r - t.ndim()];
        s.extend_from_slice(t.shape());
        t.reshape_dims(&s)
    };
    let (a2, b2) = (lift(a)?, lift(b)?);
    let batch = broadcast_shapes("matmul", &a2.shape()[..r - 2], &b2.shape()[..r - 2])?;
    let mut out_shape = batch.clone();
    out_shape.push(a2.shape()[r - 2]);
    out_shape.push(b2.shape()[r - 1]);
    crate::shape::check_size("matmul", &out_shape)?;
    let out = be::matmul(&a2, &b2, &batch, &out_shape)?;
    if !needs_record(&[a, b]) {
        return Ok(out);
    }
    // Recorded on the rank-lifted views; their reshape nodes return the
    // gradients to the callers' shapes.
    let out = record(&MATMUL, Attrs::None, &[&a2, &b2], &[&a2, &b2], false, out)?;
    Ok(out)
}
