//! Running an op through skiff's public API (`Op::run`).

use super::program::{Bin, Cmp, Cx, Ints, Ip, Op, Red, To, Un};
use skiff::{DType, Device, Result, Tensor};

impl Op {
    /// Runs the op on `x` (the tensors of `inputs()`, in order).
    pub fn run(&self, x: &[Tensor], cx: &Cx) -> Result<Tensor> {
        use Op::*;
        let ints = |i: &Ints| Tensor::from_vec(i.values.clone(), &i.shape)?.to(&cx.device);
        match self {
            Unary { f, .. } => unary(&x[0], *f),
            Binary { f, .. } => {
                let (a, b) = (&x[0], &x[1]);
                match f {
                    Bin::Add => a.add(b),
                    Bin::Sub => a.sub(b),
                    Bin::Mul => a.mul(b),
                    Bin::Div => a.div(b),
                    Bin::Pow => a.pow(b),
                    Bin::Maximum => a.maximum(b),
                    Bin::Minimum => a.minimum(b),
                }
            }
            Compare { f, .. } => {
                let (a, b) = (&x[0], &x[1]);
                match f {
                    Cmp::Eq => a.eq(b),
                    Cmp::Ne => a.ne(b),
                    Cmp::Lt => a.lt(b),
                    Cmp::Le => a.le(b),
                    Cmp::Gt => a.gt(b),
                    Cmp::Ge => a.ge(b),
                }
            }
            CompareScalar { f, v, .. } => match f {
                Cmp::Eq => x[0].eq_scalar(*v),
                Cmp::Lt => x[0].lt_scalar(*v),
                Cmp::Le => x[0].le_scalar(*v),
                Cmp::Gt => x[0].gt_scalar(*v),
                Cmp::Ge => x[0].ge_scalar(*v),
                Cmp::Ne => x[0].ne(&x[0].scalar_like(*v)?),
            },
            Where { .. } => Tensor::where_(&x[0], &x[1], &x[2]),
            Reduce { f, axes, keepdim, .. } => match f {
                Red::Sum => x[0].sum(axes, *keepdim),
                Red::Mean => x[0].mean(axes, *keepdim),
                Red::Max => x[0].max(axes, *keepdim),
                Red::Min => x[0].min(axes, *keepdim),
                Red::Logsumexp => x[0].logsumexp(axes, *keepdim),
            },
            Var { axes, correction, keepdim, std, .. } => {
                if *std {
                    x[0].std(axes, *correction, *keepdim)
                } else {
                    x[0].var(axes, *correction, *keepdim)
                }
            }
            Arg { max, axis, keepdim, .. } => {
                if *max {
                    x[0].argmax(*axis, *keepdim)
                } else {
                    x[0].argmin(*axis, *keepdim)
                }
            }
            SumAll { .. } => x[0].sum_all(),
            SumTo { shape, .. } => x[0].sum_to(shape),
            Softmax { axis, log, .. } => {
                if *log {
                    x[0].log_softmax(*axis)
                } else {
                    x[0].softmax(*axis)
                }
            }
            Matmul { transpose_b, .. } => {
                if *transpose_b {
                    x[0].matmul(&x[1].transpose(-1, -2)?)
                } else {
                    x[0].matmul(&x[1])
                }
            }
            Reshape { shape, .. } => x[0].reshape(shape),
            Permute { perm, .. } => x[0].permute(perm),
            Transpose { a, b, .. } => x[0].transpose(*a, *b),
            Expand { shape, .. } => x[0].expand(shape),
            Slice { axis, start, end, step, .. } => x[0].slice(*axis, *start, *end, *step),
            Narrow { axis, start, len, .. } => x[0].narrow(*axis, *start, *len),
            Squeeze { axis, .. } => x[0].squeeze(*axis),
            Unsqueeze { axis, .. } => x[0].unsqueeze(*axis),
            Flatten { start, end, .. } => x[0].flatten(*start, *end),
            Contiguous { copy, .. } => {
                if *copy {
                    x[0].contiguous_copy()
                } else {
                    x[0].contiguous()
                }
            }
            Concat { axis, .. } => Tensor::concat(x, *axis),
            Stack { axis, .. } => Tensor::stack(x, *axis),
            Pad { pads, value, .. } => x[0].pad(pads, *value),
            Split { size, axis, pick, .. } => {
                let pieces = x[0].split(*size, *axis)?;
                // An empty axis splits into no pieces; the op then yields the
                // (empty) input itself so the program goes on.
                Ok(pieces.get(pick % pieces.len().max(1)).cloned().unwrap_or_else(|| x[0].clone()))
            }
            IndexSelect { axis, index, .. } => x[0].index_select(*axis, &ints(index)?),
            Gather { axis, index, .. } => x[0].gather(*axis, &ints(index)?),
            ScatterAdd { axis, index, .. } => x[0].scatter_add(*axis, &ints(index)?, &x[1]),
            InPlace { f, .. } if cx.local => inplace_value(x, *f),
            InPlace { f, .. } => {
                let t = &x[0];
                match f {
                    Ip::Add => t.add_(&x[1]),
                    Ip::Sub => t.sub_(&x[1]),
                    Ip::Mul => t.mul_(&x[1]),
                    Ip::Div => t.div_(&x[1]),
                    Ip::Copy => t.copy_(&x[1]),
                    Ip::AddScalar(c) => t.add_scalar_(*c),
                    Ip::MulScalar(c) => t.mul_scalar_(*c),
                    Ip::Fill(v) => t.fill_(*v),
                    Ip::Zero => t.zero_(),
                }
            }
            ToDType { to, .. } => x[0].to_dtype(match to {
                To::Float => cx.float,
                To::I32 => DType::I32,
                To::Bool => DType::Bool,
            }),
            Detach { .. } => Ok(x[0].detach()),
            RoundTrip { .. } => x[0].to(&Device::Cpu)?.contiguous_copy()?.to(&cx.device),
            Mse { reduction, .. } => x[0].mse_loss(&x[1], *reduction),
            CrossEntropy { labels, reduction, smoothing, .. } => {
                x[0].cross_entropy(&ints(labels)?, *reduction, *smoothing)
            }
        }
    }
}

/// The value an in-place op writes, computed out of place (as `Tensor::inplace`
/// does before writing: the result converted to the destination's dtype).
fn inplace_value(x: &[Tensor], f: Ip) -> Result<Tensor> {
    let t = &x[0];
    let r = match f {
        Ip::Add => t.add(&x[1])?,
        Ip::Sub => t.sub(&x[1])?,
        Ip::Mul => t.mul(&x[1])?,
        Ip::Div => t.div(&x[1])?,
        Ip::Copy => x[1].to_dtype(t.dtype())?.expand_dims(t.shape())?.contiguous_copy()?,
        Ip::AddScalar(c) => t.add_scalar(c)?,
        Ip::MulScalar(c) => t.mul_scalar(c)?,
        Ip::Fill(v) => t.full_like(v)?,
        Ip::Zero => t.full_like(0.0)?,
    };
    r.to_dtype(t.dtype())
}

fn unary(x: &Tensor, f: Un) -> Result<Tensor> {
    match f {
        Un::Neg => x.neg(),
        Un::Exp => x.exp(),
        Un::Log => x.log(),
        Un::Sqrt => x.sqrt(),
        Un::Rsqrt => x.rsqrt(),
        Un::Abs => x.abs(),
        Un::Sign => x.sign(),
        Un::Sin => x.sin(),
        Un::Cos => x.cos(),
        Un::Tanh => x.tanh(),
        Un::Sigmoid => x.sigmoid(),
        Un::Relu => x.relu(),
        Un::LeakyRelu(s) => x.leaky_relu(s),
        Un::Gelu => x.gelu(),
        Un::GeluErf => x.gelu_erf(),
        Un::Erf => x.erf(),
        Un::Silu => x.silu(),
        Un::Softplus => x.softplus(),
        Un::PowScalar(e) => x.pow_scalar(e),
        Un::AddScalar(c) => x.add_scalar(c),
        Un::SubScalar(c) => x.sub_scalar(c),
        Un::MulScalar(c) => x.mul_scalar(c),
        Un::DivScalar(c) => x.div_scalar(c),
        Un::Clamp(lo, hi) => x.clamp(lo, hi),
    }
}
