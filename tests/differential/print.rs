//! Printing: each op as the Rust call it makes.

use super::program::{Cmp, Ints, Ip, Op, To, Un};
use std::fmt;

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
