//! A resolved program: input tensors and a list of concrete ops on named
//! values (`v0`, `v1`, ...). Each op runs through skiff's public API on any
//! backend (`Op::run`), and prints as the Rust line that makes the same call,
//! so a failing program reads as a reproduction.

use skiff::{DType, Device, Reduction};

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
    // Not drawn for now (see `UNARY` in resolve.rs), kept for when it is again.
    #[allow(dead_code)]
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
}
