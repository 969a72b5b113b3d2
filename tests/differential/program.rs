//! A resolved program: input tensors and a list of concrete ops on named
//! values (`v0`, `v1`, ...). Each op runs through skiff's public API on any
//! backend (`Op::run`), and prints as the Rust line that makes the same call,
//! so a failing program reads as a reproduction.

use skiff::{DType, Device, Reduction, Result, Tensor};
use std::fmt;

/// Where and in what float dtype an op runs. `local` marks the f64 re-run of
/// a single op on fresh copies of its inputs (in-place ops then compute their
/// out-of-place value: a fresh leaf that requires grad may not be written).
#[derive(Clone, Debug)]
pub struct Cx {
    pub float: DType,
    pub device: Device,
    pub local: bool,
}

/// A program's input: a contiguous leaf.
#[derive(Clone, Debug)]
pub struct Input {
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
    pub requires_grad: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Un {
    Neg,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Abs,
    Sign,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    LeakyRelu(f64),
    Gelu,
    GeluErf,
    Erf,
    Silu,
    Softplus,
    PowScalar(f64),
    AddScalar(f64),
    SubScalar(f64),
    MulScalar(f64),
    DivScalar(f64),
    Clamp(Option<f64>, Option<f64>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Red {
    Sum,
    Mean,
    Max,
    Min,
    Logsumexp,
}

/// In-place ops (`x.add_(&o)`, ...).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ip {
    Add,
    Sub,
    Mul,
    Div,
    Copy,
    AddScalar(f64),
    MulScalar(f64),
    Fill(f64),
    Zero,
}

/// `to_dtype` targets: `Float` is the run's float dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum To {
    Float,
    I32,
    Bool,
}

/// An i32 index tensor made on the run's device.
#[derive(Clone, Debug, PartialEq)]
pub struct Ints {
    pub shape: Vec<usize>,
    pub values: Vec<i32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Unary {
        x: usize,
        f: Un,
    },
    Binary {
        a: usize,
        b: usize,
        f: Bin,
    },
    Compare {
        a: usize,
        b: usize,
        f: Cmp,
    },
    CompareScalar {
        a: usize,
        f: Cmp,
        v: f64,
    },
    Where {
        c: usize,
        a: usize,
        b: usize,
    },
    Reduce {
        x: usize,
        f: Red,
        axes: Vec<isize>,
        keepdim: bool,
    },
    Var {
        x: usize,
        axes: Vec<isize>,
        correction: f64,
        keepdim: bool,
        std: bool,
    },
    Arg {
        x: usize,
        max: bool,
        axis: Option<isize>,
        keepdim: bool,
    },
    SumAll {
        x: usize,
    },
    SumTo {
        x: usize,
        shape: Vec<usize>,
    },
    Softmax {
        x: usize,
        axis: isize,
        log: bool,
    },
    Matmul {
        a: usize,
        b: usize,
        transpose_b: bool,
    },
    Reshape {
        x: usize,
        shape: Vec<isize>,
    },
    Permute {
        x: usize,
        perm: Vec<isize>,
    },
    Transpose {
        x: usize,
        a: isize,
        b: isize,
    },
    Expand {
        x: usize,
        shape: Vec<isize>,
    },
    Slice {
        x: usize,
        axis: isize,
        start: isize,
        end: isize,
        step: usize,
    },
    Narrow {
        x: usize,
        axis: isize,
        start: usize,
        len: usize,
    },
    Squeeze {
        x: usize,
        axis: Option<isize>,
    },
    Unsqueeze {
        x: usize,
        axis: isize,
    },
    Flatten {
        x: usize,
        start: isize,
        end: isize,
    },
    Contiguous {
        x: usize,
        copy: bool,
    },
    Concat {
        xs: Vec<usize>,
        axis: isize,
    },
    Stack {
        xs: Vec<usize>,
        axis: isize,
    },
    Pad {
        x: usize,
        pads: Vec<(usize, usize)>,
        value: f64,
    },
    Split {
        x: usize,
        size: usize,
        axis: isize,
        pick: usize,
    },
    IndexSelect {
        x: usize,
        axis: isize,
        index: Ints,
    },
    Gather {
        x: usize,
        axis: isize,
        index: Ints,
    },
    ScatterAdd {
        x: usize,
        axis: isize,
        index: Ints,
        src: usize,
    },
    InPlace {
        x: usize,
        o: Option<usize>,
        f: Ip,
    },
    ToDType {
        x: usize,
        to: To,
    },
    Detach {
        x: usize,
    },
    /// `x.to(cpu).contiguous_copy().to(device)`: a recorded trip off the device.
    RoundTrip {
        x: usize,
    },
    Mse {
        a: usize,
        b: usize,
        reduction: Reduction,
    },
    CrossEntropy {
        x: usize,
        labels: Ints,
        reduction: Reduction,
        smoothing: f64,
    },
}

impl Op {
    /// The values the op reads, in argument order (repeats kept).
    pub fn inputs(&self) -> Vec<usize> {
        use Op::*;
        match self {
            Binary { a, b, .. } | Compare { a, b, .. } | Matmul { a, b, .. } | Mse { a, b, .. } => vec![*a, *b],
            Where { c, a, b } => vec![*c, *a, *b],
            Concat { xs, .. } | Stack { xs, .. } => xs.clone(),
            ScatterAdd { x, src, .. } => vec![*x, *src],
            InPlace { x, o, .. } => std::iter::once(*x).chain(*o).collect(),
            Unary { x, .. }
            | CompareScalar { a: x, .. }
            | Reduce { x, .. }
            | Var { x, .. }
            | Arg { x, .. }
            | SumAll { x }
            | SumTo { x, .. }
            | Softmax { x, .. }
            | Reshape { x, .. }
            | Permute { x, .. }
            | Transpose { x, .. }
            | Expand { x, .. }
            | Slice { x, .. }
            | Narrow { x, .. }
            | Squeeze { x, .. }
            | Unsqueeze { x, .. }
            | Flatten { x, .. }
            | Contiguous { x, .. }
            | Pad { x, .. }
            | Split { x, .. }
            | IndexSelect { x, .. }
            | Gather { x, .. }
            | ToDType { x, .. }
            | Detach { x }
            | RoundTrip { x }
            | CrossEntropy { x, .. } => vec![*x],
        }
    }

    /// Whether the result may share storage with the first input (views,
    /// in-place results, detach): an in-place write to one shows in the other.
    pub fn may_alias(&self) -> bool {
        use Op::*;
        matches!(
            self,
            Reshape { .. }
                | Permute { .. }
                | Transpose { .. }
                | Expand { .. }
                | Slice { .. }
                | Narrow { .. }
                | Squeeze { .. }
                | Unsqueeze { .. }
                | Flatten { .. }
                | Contiguous { copy: false, .. }
                | Split { .. }
                | InPlace { .. }
                | ToDType { .. }
                | Detach { .. }
        )
    }

    pub fn is_inplace(&self) -> bool {
        matches!(self, Op::InPlace { .. })
    }

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

// ---- printing: each op as the Rust call it makes ----------------------------

fn lower(d: impl fmt::Debug) -> String {
    let s = format!("{d:?}");
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn vs(xs: &[usize]) -> String {
    xs.iter().map(|i| format!("v{i}.clone()")).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Ints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "&ints(&{:?}, &{:?})", self.values, self.shape)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Op::*;
        match self {
            Unary { x, f: u } => {
                let (name, args) = match u {
                    Un::LeakyRelu(s) => ("leaky_relu".into(), format!("{s:?}")),
                    Un::PowScalar(c) => ("pow_scalar".into(), format!("{c:?}")),
                    Un::AddScalar(c) => ("add_scalar".into(), format!("{c:?}")),
                    Un::SubScalar(c) => ("sub_scalar".into(), format!("{c:?}")),
                    Un::MulScalar(c) => ("mul_scalar".into(), format!("{c:?}")),
                    Un::DivScalar(c) => ("div_scalar".into(), format!("{c:?}")),
                    Un::Clamp(lo, hi) => ("clamp".into(), format!("{lo:?}, {hi:?}")),
                    other => (lower(other), String::new()),
                };
                write!(f, "v{x}.{name}({args})")
            }
            Binary { a, b, f: o } => write!(f, "v{a}.{}(&v{b})", lower(o)),
            Compare { a, b, f: o } => write!(f, "v{a}.{}(&v{b})", lower(o)),
            CompareScalar { a, f: Cmp::Ne, v } => write!(f, "v{a}.ne(&v{a}.scalar_like({v:?})?)"),
            CompareScalar { a, f: o, v } => write!(f, "v{a}.{}_scalar({v:?})", lower(o)),
            Where { c, a, b } => write!(f, "Tensor::where_(&v{c}, &v{a}, &v{b})"),
            Reduce { x, f: r, axes, keepdim } => write!(f, "v{x}.{}(&{axes:?}, {keepdim})", lower(r)),
            Var { x, axes, correction, keepdim, std } => {
                write!(f, "v{x}.{}(&{axes:?}, {correction:?}, {keepdim})", if *std { "std" } else { "var" })
            }
            Arg { x, max, axis, keepdim } => {
                write!(f, "v{x}.{}({axis:?}, {keepdim})", if *max { "argmax" } else { "argmin" })
            }
            SumAll { x } => write!(f, "v{x}.sum_all()"),
            SumTo { x, shape } => write!(f, "v{x}.sum_to(&{shape:?})"),
            Softmax { x, axis, log } => write!(f, "v{x}.{}({axis})", if *log { "log_softmax" } else { "softmax" }),
            Matmul { a, b, transpose_b } => {
                if *transpose_b {
                    write!(f, "v{a}.matmul(&v{b}.transpose(-1, -2)?)")
                } else {
                    write!(f, "v{a}.matmul(&v{b})")
                }
            }
            Reshape { x, shape } => write!(f, "v{x}.reshape(&{shape:?})"),
            Permute { x, perm } => write!(f, "v{x}.permute(&{perm:?})"),
            Transpose { x, a, b } => write!(f, "v{x}.transpose({a}, {b})"),
            Expand { x, shape } => write!(f, "v{x}.expand(&{shape:?})"),
            Slice { x, axis, start, end, step } => write!(f, "v{x}.slice({axis}, {start}, {end}, {step})"),
            Narrow { x, axis, start, len } => write!(f, "v{x}.narrow({axis}, {start}, {len})"),
            Squeeze { x, axis } => write!(f, "v{x}.squeeze({axis:?})"),
            Unsqueeze { x, axis } => write!(f, "v{x}.unsqueeze({axis})"),
            Flatten { x, start, end } => write!(f, "v{x}.flatten({start}, {end})"),
            Contiguous { x, copy } => write!(f, "v{x}.{}()", if *copy { "contiguous_copy" } else { "contiguous" }),
            Concat { xs, axis } => write!(f, "Tensor::concat(&[{}], {axis})", vs(xs)),
            Stack { xs, axis } => write!(f, "Tensor::stack(&[{}], {axis})", vs(xs)),
            Pad { x, pads, value } => write!(f, "v{x}.pad(&{pads:?}, {value:?})"),
            Split { x, size, axis, pick } => write!(f, "v{x}.split({size}, {axis})?[{pick} % count]"),
            IndexSelect { x, axis, index } => write!(f, "v{x}.index_select({axis}, {index})"),
            Gather { x, axis, index } => write!(f, "v{x}.gather({axis}, {index})"),
            ScatterAdd { x, axis, index, src } => write!(f, "v{x}.scatter_add({axis}, {index}, &v{src})"),
            InPlace { x, o, f: ip } => match (ip, o) {
                (Ip::AddScalar(c), _) => write!(f, "v{x}.add_scalar_({c:?})"),
                (Ip::MulScalar(c), _) => write!(f, "v{x}.mul_scalar_({c:?})"),
                (Ip::Fill(v), _) => write!(f, "v{x}.fill_({v:?})"),
                (Ip::Zero, _) => write!(f, "v{x}.zero_()"),
                (op, Some(o)) => write!(f, "v{x}.{}_(&v{o})", lower(op)),
                (op, None) => write!(f, "v{x}.{}_(?)", lower(op)),
            },
            ToDType { x, to } => {
                let d = match to {
                    To::Float => "FLOAT",
                    To::I32 => "DType::I32",
                    To::Bool => "DType::Bool",
                };
                write!(f, "v{x}.to_dtype({d})")
            }
            Detach { x } => write!(f, "v{x}.detach()"),
            RoundTrip { x } => write!(f, "v{x}.to(&Device::Cpu)?.contiguous_copy()?.to(&dev)"),
            Mse { a, b, reduction } => write!(f, "v{a}.mse_loss(&v{b}, Reduction::{reduction:?})"),
            CrossEntropy { x, labels, reduction, smoothing } => {
                write!(f, "v{x}.cross_entropy({labels}, Reduction::{reduction:?}, {smoothing:?})")
            }
        }
    }
}
