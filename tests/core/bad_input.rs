//! The Rust half of the bad-input corpus (issue 12): each entry is one call a
//! user could make, with the error it must return (variant, the op the caller
//! called, and facts the message must carry), or PyTorch's documented result
//! where the call is legal. After every call the runtime must still compute.
//! Nothing here may panic or abort: sizes at the extremes, allocations that
//! cannot succeed, wrapped counts and bad arguments are all errors.

use crate::common::{check_err, Kind};
use skiff::nn::{
    Interpolation, Layer, Recurrent, RecurrentCell, RecurrentConfig, RecurrentKind, RecurrentState, TransformerConfig,
    TransformerDecoderLayer, TransformerEncoderLayer,
};
use skiff::{DType, Reduction, Result, ScatterReduce, Tensor};

fn f32s(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32).unwrap()
}
fn f64s(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}
fn ints(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}
fn leaf() -> Tensor {
    f32s(&[2, 2]).requires_grad_(true).unwrap()
}

/// One corpus entry: the call as written, and what it must return.
struct Bad {
    call: &'static str,
    kind: Kind,
    op: &'static str,
    facts: &'static [&'static str],
    run: fn() -> Result<()>,
}

macro_rules! bad {
    ($kind:ident, $op:literal, [$($fact:literal),*], $body:expr) => {
        Bad {
            call: stringify!($body),
            kind: Kind::$kind,
            op: $op,
            facts: &[$($fact),*],
            run: || $body.map(|_| ()),
        }
    };
}

const BIG: usize = 1 << 40; // 4 TiB of f32: no machine here can hold it
const HUGE: usize = 1 << 62; // its byte count overflows

/// Sizes at the extremes: every creation function and every op whose result
/// can outgrow its inputs.
fn sizes() -> Vec<Bad> {
    vec![
        bad!(Memory, "zeros", ["out of memory", "4.0 TiB"], Tensor::zeros(&[BIG], DType::F32)),
        bad!(Memory, "ones", ["out of memory"], Tensor::ones(&[BIG], DType::F64)),
        bad!(Memory, "full", ["out of memory"], Tensor::full(&[BIG], 2.0, DType::I32)),
        bad!(Memory, "randn", ["out of memory"], Tensor::randn(&[BIG], DType::F32)),
        bad!(Memory, "rand", ["out of memory"], Tensor::rand(&[1 << 20, 1 << 20], DType::F32)),
        bad!(Memory, "uniform", ["out of memory"], Tensor::uniform(&[BIG], 0.0, 1.0, DType::F32)),
        bad!(Memory, "randint", ["out of memory"], Tensor::randint(0, 3, &[BIG])),
        bad!(Memory, "linspace", ["out of memory"], Tensor::linspace(0.0, 1.0, BIG, DType::F32)),
        bad!(Memory, "eye", ["out of memory"], Tensor::eye(1 << 20, DType::F32)),
        bad!(Memory, "full", ["more bytes than one allocation"], Tensor::full(&[HUGE], 1.0, DType::F32)),
        bad!(Memory, "eye", ["[4294967296, 4294967296]", "too many"], Tensor::eye(1 << 32, DType::F32)),
        bad!(Memory, "zeros", ["[1099511627776, 1099511627776]", "too many"], Tensor::zeros(&[BIG, BIG], DType::F32)),
        bad!(Memory, "zeros", ["too many"], Tensor::zeros(&[0, BIG, BIG], DType::F32)),
        bad!(Memory, "ones", ["too many"], Tensor::ones(&[usize::MAX, 2], DType::F32)),
        bad!(Memory, "full", ["too many"], Tensor::full(&[usize::MAX], 0.0, DType::F32)),
        bad!(
            Memory,
            "arange",
            ["end=100000000000000000000", "values, more than"],
            Tensor::arange(0.0, 1e20, 1e-3, DType::F32)
        ),
        bad!(Memory, "arange", ["values, more than"], Tensor::arange(0.0, 1e300, 1e-300, DType::F64)),
        bad!(Memory, "arange", ["out of memory"], Tensor::arange(0.0, 1e13, 1.0, DType::F64)),
        bad!(Memory, "linspace", ["too many"], Tensor::linspace(0.0, 1.0, usize::MAX, DType::F32)),
        bad!(
            Shape,
            "from_vec",
            ["cannot fill shape", "too many"],
            Tensor::from_vec(vec![0f32; 6], &[2, (1 << 63) + 3])
        ),
        bad!(Shape, "from_vec", ["6 elements cannot fill shape [4]"], Tensor::from_vec(vec![0f32; 6], &[4])),
        bad!(Shape, "reshape", ["cannot reshape", "[2, 3]"], f32s(&[2, 3]).reshape(&[2, (1 << 62) + 3])),
        bad!(Shape, "reshape", ["cannot reshape"], f32s(&[2, 3]).reshape(&[-1, 1 << 62, 4])),
        bad!(Shape, "reshape", ["cannot reshape"], f32s(&[2, 3]).reshape_dims(&[2, (1usize << 63) + 3])),
        bad!(Shape, "reshape", ["cannot reshape"], f32s(&[0]).reshape(&[0, 1 << 62, 1 << 62])),
        bad!(Memory, "pad", ["the padding", "4611686018427387904"], f32s(&[2]).pad(&[(HUGE, HUGE)], 0.0)),
        bad!(Memory, "pad", ["the padded size"], f32s(&[2]).pad(&[(isize::MAX as usize, 0)], 0.0)),
        bad!(Memory, "pad", ["the padding"], f32s(&[2]).pad(&[(usize::MAX, 1)], 0.0)),
        bad!(Memory, "pad", ["out of memory"], f32s(&[2]).pad(&[(BIG, 0)], 0.0)),
        bad!(Memory, "expand", ["too many"], f32s(&[1, 1]).expand_dims(&[BIG, BIG])),
        bad!(
            Memory,
            "contiguous",
            ["out of memory"],
            f32s(&[1, 1]).expand_dims(&[1 << 20, 1 << 20]).and_then(|t| t.contiguous())
        ),
        bad!(Memory, "exp", ["out of memory"], f32s(&[1, 1]).expand_dims(&[1 << 20, 1 << 20]).and_then(|t| t.exp())),
        bad!(Memory, "add", ["out of memory"], f32s(&[1 << 20, 1]).add(&f32s(&[1, 1 << 20]))),
        bad!(Memory, "gt", ["out of memory"], f32s(&[1 << 20, 1]).gt(&f32s(&[1, 1 << 20]))),
        bad!(Memory, "matmul", ["out of memory"], f32s(&[1 << 20, 1]).matmul(&f32s(&[1, 1 << 20]))),
        bad!(
            Memory,
            "sum",
            ["out of memory"],
            f32s(&[1, 1, 1]).expand_dims(&[1 << 20, 1 << 20, 2]).and_then(|t| t.sum(&[2], false))
        ),
        bad!(
            Memory,
            "to_dtype",
            ["out of memory"],
            f32s(&[1, 1]).expand_dims(&[1 << 20, 1 << 20]).and_then(|t| t.to_dtype(DType::F64))
        ),
        bad!(Memory, "concat", ["out of memory"], Tensor::concat(&[f32s(&[1]).expand_dims(&[BIG])?, f32s(&[1])], 0)),
        bad!(
            Memory,
            "concat",
            ["the joined length"],
            Tensor::concat(&[f32s(&[1]).expand_dims(&[HUGE])?, f32s(&[1]).expand_dims(&[HUGE])?], 0)
        ),
        bad!(
            Memory,
            "index_select",
            ["out of memory"],
            f32s(&[2, 1]).expand_dims(&[2, BIG]).and_then(|t| t.index_select(0, &ints(&[0, 1, 1], &[3])))
        ),
        bad!(Shape, "narrow", ["exceeds size 3"], f32s(&[3]).narrow(0, usize::MAX, 2)),
        bad!(Shape, "split", ["do not add up"], f32s(&[3]).split_sizes(&[usize::MAX, 4], 0)),
        bad!(Memory, "unfold2d", ["2 x padding"], f32s(&[1, 1, 3, 3]).unfold2d([1, 1], [1, 1], [HUGE * 2, 0], [1, 1])),
        bad!(
            Memory,
            "unfold2d",
            ["dilation x (kernel - 1)"],
            f32s(&[1, 1, 3, 3]).unfold2d([HUGE, 1], [1, 1], [0, 0], [HUGE, 1])
        ),
        bad!(
            Memory,
            "max_pool2d",
            ["dilation x (kernel - 1)"],
            f32s(&[1, 1, 3, 3]).max_pool2d([usize::MAX, 1], [1, 1], [0, 0])
        ),
        bad!(
            Memory,
            "unfold2d",
            ["out of memory"],
            f32s(&[1, 1, 1, 1]).expand_dims(&[1, 1, 1 << 20, 1 << 20]).and_then(|t| t.unfold2d(
                [1, 1],
                [1, 1],
                [0, 0],
                [1, 1]
            ))
        ),
    ]
}

/// Arguments of the wrong kind, range or type for ordinary ops.
fn arguments() -> Vec<Bad> {
    vec![
        bad!(Value, "arange", ["step=0"], Tensor::arange(0.0, 3.0, 0.0, DType::F32)),
        bad!(Value, "arange", ["start=NaN"], Tensor::arange(f64::NAN, 3.0, 1.0, DType::F32)),
        bad!(Value, "arange", ["end=inf"], Tensor::arange(0.0, f64::INFINITY, 1.0, DType::F32)),
        bad!(Value, "arange", ["2999999999", "i32"], Tensor::arange(0.0, 3e9, 1.0, DType::I32)),
        bad!(Value, "arange", ["2.5", "i32"], Tensor::arange(0.0, 3.0, 0.5, DType::I32)),
        bad!(DType, "linspace", ["float dtype", "i32"], Tensor::linspace(0.0, 1.0, 3, DType::I32)),
        bad!(DType, "randn", ["float dtype", "i32"], Tensor::randn(&[2], DType::I32)),
        bad!(DType, "rand", ["float dtype", "bool"], Tensor::rand(&[2], DType::Bool)),
        bad!(DType, "uniform", ["float dtype"], Tensor::uniform(&[2], 0.0, 1.0, DType::I32)),
        bad!(Value, "uniform", ["lo <= hi"], Tensor::uniform(&[2], 1.0, 0.0, DType::F32)),
        bad!(Value, "uniform", ["finite"], Tensor::uniform(&[2], f64::NAN, 1.0, DType::F32)),
        bad!(Value, "randint", ["empty range [3, 3)"], Tensor::randint(3, 3, &[2])),
        bad!(Value, "full", ["10000000000", "i32"], Tensor::full(&[2], 1e10, DType::I32)),
        bad!(Value, "full", ["NaN", "i32"], Tensor::full(&[2], f64::NAN, DType::I32)),
        bad!(Value, "full", ["1.5", "i32"], Tensor::full(&[2], 1.5, DType::I32)),
        bad!(Value, "full", ["2147483648"], Tensor::full(&[2], 2147483648.0, DType::I32)),
        bad!(Shape, "reshape", ["[2, 3]", "[4]"], f32s(&[2, 3]).reshape(&[4])),
        bad!(Shape, "reshape", ["[-1, -1]"], f32s(&[2, 3]).reshape(&[-1, -1])),
        bad!(Shape, "reshape", ["[-2, 3]"], f32s(&[2, 3]).reshape(&[-2, 3])),
        bad!(
            Shape,
            "view",
            ["cannot be viewed as [6] without a copy", "reshape()"],
            f32s(&[2, 3]).transpose(0, 1)?.view(&[6])
        ),
        bad!(Shape, "view", ["cannot reshape"], f32s(&[2, 3]).view(&[4])),
        bad!(Shape, "reshape", ["[0, -1]"], f32s(&[2, 3]).reshape(&[0, -1])),
        bad!(Axis, "sum", ["axis 2", "rank 2"], f32s(&[2, 3]).sum(&[2], false)),
        bad!(Axis, "sum", ["axis -3"], f32s(&[2, 3]).sum(&[-3], false)),
        bad!(Value, "sum", ["appears twice"], f32s(&[2, 3]).sum(&[0, -2], false)),
        bad!(Axis, "mean", ["axis 5"], f32s(&[2, 3]).mean(&[5], true)),
        bad!(Axis, "max", ["axis 9"], f32s(&[2]).max(&[9], false)),
        bad!(Axis, "argmax", ["axis 2"], f32s(&[2, 3]).argmax(Some(2), false)),
        bad!(Axis, "softmax", ["axis 2"], f32s(&[2, 3]).softmax(2)),
        bad!(Axis, "log_softmax", ["axis -3"], f32s(&[2, 3]).log_softmax(-3)),
        bad!(Axis, "logsumexp", ["axis 4"], f32s(&[2, 3]).logsumexp(&[4], false)),
        bad!(Axis, "transpose", ["axis 2"], f32s(&[2, 3]).transpose(0, 2)),
        bad!(Shape, "permute", ["[0]", "rank 2"], f32s(&[2, 3]).permute(&[0])),
        bad!(Value, "permute", ["[0, 0]"], f32s(&[2, 3]).permute(&[0, 0])),
        bad!(Axis, "squeeze", ["axis 3"], f32s(&[2, 1]).squeeze(Some(3))),
        bad!(Axis, "unsqueeze", ["axis 4"], f32s(&[2, 3]).unsqueeze(4)),
        bad!(Axis, "flatten", ["axis 3"], f32s(&[2, 3]).flatten(0, 3)),
        bad!(Value, "slice", ["step must be at least 1"], f32s(&[3]).slice(0, 0, 3, 0)),
        bad!(Axis, "slice", ["rank 0"], Tensor::scalar(1.0, DType::F32).slice(0, 0, 1, 1)),
        bad!(Shape, "narrow", ["start 2 + length 2 exceeds size 3"], f32s(&[3]).narrow(0, 2, 2)),
        bad!(Value, "split", ["at least 1"], f32s(&[3]).split(0, 0)),
        bad!(Value, "chunk", ["at least 1"], f32s(&[3]).chunk(0, 0)),
        bad!(Shape, "split", ["do not add up"], f32s(&[3]).split_sizes(&[1, 1], 0)),
        bad!(Value, "concat", ["at least one tensor"], Tensor::concat(&[], 0)),
        bad!(
            Shape,
            "concat",
            ["[2, 3] and [2, 4]", "outside axis 0"],
            Tensor::concat(&[f32s(&[2, 3]), f32s(&[2, 4])], 0)
        ),
        bad!(DType, "concat", [], Tensor::concat(&[f32s(&[2]), Tensor::zeros(&[2], DType::F64)?], 0)),
        bad!(Value, "stack", ["at least one tensor"], Tensor::stack(&[], 0)),
        bad!(Shape, "stack", ["[2] and [3]"], Tensor::stack(&[f32s(&[2]), f32s(&[3])], 0)),
        bad!(Shape, "pad", ["3 pad pairs", "rank 2"], f32s(&[2, 2]).pad(&[(1, 1), (1, 1), (1, 1)], 0.0)),
        bad!(Shape, "expand", ["cannot expand shape [2, 3] to [4, 3]"], f32s(&[2, 3]).expand(&[4, 3])),
        bad!(Shape, "expand", ["fewer dims"], f32s(&[2, 3]).expand(&[3])),
        bad!(Shape, "expand", ["size -2"], f32s(&[2, 3]).expand(&[-2, 3])),
        bad!(Shape, "expand", ["-1 only keeps"], f32s(&[3]).expand(&[-1, 3])),
        bad!(Shape, "broadcast_to", [], f32s(&[2, 3]).broadcast_to(&[3, 3])),
        bad!(Shape, "sum_to", [], f32s(&[2, 3]).sum_to(&[4])),
        bad!(Shape, "add", ["[2, 3] and [4]"], f32s(&[2, 3]).add(&f32s(&[4]))),
        bad!(Shape, "mul", ["[2] and [3]"], f32s(&[2]).mul(&f32s(&[3]))),
        bad!(Shape, "maximum", ["[2] and [3]"], f32s(&[2]).maximum(&f32s(&[3]))),
        bad!(Shape, "pow", ["[2] and [3]"], f32s(&[2]).pow(&f32s(&[3]))),
        bad!(DType, "add", ["f32", "f64"], f32s(&[2]).add(&Tensor::ones(&[2], DType::F64)?)),
        bad!(DType, "exp", ["i32"], ints(&[1, 2], &[2]).exp()),
        bad!(DType, "sum", ["i32"], ints(&[1, 2], &[2]).sum(&[], false)),
        bad!(DType, "matmul", [], ints(&[1, 2], &[1, 2]).matmul(&ints(&[1, 2], &[2, 1]))),
        bad!(Shape, "matmul", ["inner dims differ", "[2, 3]", "[2, 3]"], f32s(&[2, 3]).matmul(&f32s(&[2, 3]))),
        bad!(Shape, "matmul", [], Tensor::scalar(1.0, DType::F32).matmul(&f32s(&[2]))),
        bad!(
            Shape,
            "where",
            ["[2] and [2, 3]"],
            Tensor::where_(&Tensor::from_bools(&[true, false], &[2])?, &f32s(&[2, 3]), &f32s(&[2, 3]))
        ),
        bad!(DType, "where", [], Tensor::where_(&f32s(&[2]), &f32s(&[2]), &f32s(&[2]))),
        bad!(Value, "dropout", ["[0, 1]", "1.5"], f32s(&[2]).dropout(1.5, true)),
        bad!(Value, "dropout", ["[0, 1]", "NaN"], f32s(&[2]).dropout(f64::NAN, true)),
        bad!(Value, "std", ["correction must be a finite number"], f32s(&[2]).std(&[], f64::NAN, false)),
        bad!(Value, "var", ["correction"], f32s(&[2]).var(&[], f64::INFINITY, false)),
        bad!(Shape, "item", ["one-element", "[2]"], f32s(&[2]).item()),
    ]
}

/// Index ops: wrong dtypes, shapes and out-of-range indices.
fn indexing() -> Vec<Bad> {
    vec![
        bad!(
            Value,
            "index_select",
            ["index 5 is out of range", "size 3"],
            f32s(&[3, 2]).index_select(0, &ints(&[5], &[1]))
        ),
        bad!(Value, "index_select", ["index -1"], f32s(&[3, 2]).index_select(0, &ints(&[-1], &[1]))),
        bad!(DType, "index_select", ["i32"], f32s(&[3, 2]).index_select(0, &f32s(&[1]))),
        bad!(Shape, "index_select", [], f32s(&[3, 2]).index_select(0, &ints(&[0, 1], &[1, 2]))),
        bad!(Axis, "index_select", ["axis 2"], f32s(&[3, 2]).index_select(2, &ints(&[0], &[1]))),
        bad!(Value, "gather", ["index 3 is out of range"], f32s(&[2, 3]).gather(1, &ints(&[3, 0], &[2, 1]))),
        bad!(Shape, "gather", [], f32s(&[2, 3]).gather(1, &ints(&[0, 0], &[2]))),
        bad!(DType, "gather", ["i32"], f32s(&[2, 3]).gather(1, &f32s(&[2, 1]))),
        bad!(
            Value,
            "scatter_add",
            ["out of range"],
            f32s(&[2, 3]).scatter_add(1, &ints(&[7, 0], &[2, 1]), &f32s(&[2, 1]))
        ),
        bad!(Shape, "scatter_add", [], f32s(&[2, 3]).scatter_add(1, &ints(&[0, 0], &[2, 1]), &f32s(&[1, 1]))),
        bad!(Value, "index_add", ["out of range"], f32s(&[3]).index_add(0, &ints(&[3], &[1]), &f32s(&[1]))),
        bad!(
            Value,
            "scatter",
            ["index 7 is out of range", "size 3"],
            f32s(&[2, 3]).scatter(1, &ints(&[7, 0], &[2, 1]), &f32s(&[2, 1]))
        ),
        bad!(Shape, "scatter", ["src"], f32s(&[2, 3]).scatter(1, &ints(&[0, 0], &[2, 1]), &f32s(&[1, 1]))),
        bad!(
            DType,
            "scatter",
            ["dtypes differ"],
            f32s(&[2, 3]).scatter(1, &ints(&[0, 0], &[2, 1]), &ints(&[1, 2], &[2, 1]))
        ),
        bad!(
            Value,
            "scatter_reduce",
            ["index -1 is out of range"],
            f32s(&[2, 3]).scatter_reduce(0, &ints(&[-1], &[1, 1]), &f32s(&[1, 1]), ScatterReduce::Amax, true)
        ),
        bad!(
            DType,
            "scatter_reduce",
            ["float", "i32"],
            ints(&[1, 2], &[2]).scatter_reduce(0, &ints(&[0], &[1]), &ints(&[1], &[1]), ScatterReduce::Sum, true)
        ),
        bad!(
            Axis,
            "scatter_reduce",
            ["axis 2"],
            f32s(&[2, 3]).scatter_reduce(2, &ints(&[0], &[1, 1]), &f32s(&[1, 1]), ScatterReduce::Mean, false)
        ),
        bad!(
            Value,
            "index_put",
            ["index 4 is out of range", "axis 1 of size 4"],
            f32s(&[3, 4]).index_put(&[ints(&[0, 1], &[2]), ints(&[4, 0], &[2])], &f32s(&[2]), false)
        ),
        bad!(
            Value,
            "index_put",
            ["index -5 is out of range", "axis 1 of size 4"],
            f32s(&[3, 4]).index_put(&[ints(&[0, 1], &[2]), ints(&[-4, -5], &[2])], &f32s(&[2]), false)
        ),
        bad!(
            Shape,
            "index_put",
            ["values of shape [3]", "[2]"],
            f32s(&[3, 4]).index_put(&[ints(&[0, 1], &[2]), ints(&[1, 0], &[2])], &f32s(&[3]), true)
        ),
        bad!(
            Shape,
            "index_put",
            ["1 to 2 index tensors", "got 3"],
            f32s(&[3, 4]).index_put(&[ints(&[0], &[1]), ints(&[0], &[1]), ints(&[0], &[1])], &f32s(&[1]), true)
        ),
        bad!(DType, "index_put", ["i32"], f32s(&[3, 4]).index_put(&[f32s(&[2])], &f32s(&[4]), true)),
        bad!(
            Shape,
            "index_put",
            ["[2]", "[3]"],
            f32s(&[3, 4]).index_put(&[ints(&[0, 1], &[2]), ints(&[0, 1, 2], &[3])], &f32s(&[1]), true)
        ),
        bad!(Value, "embedding", ["out of range"], f32s(&[4, 2]).embedding(&ints(&[4], &[1]))),
        bad!(DType, "embedding", [], f32s(&[4, 2]).embedding(&f32s(&[1]))),
        bad!(
            Value,
            "cross_entropy",
            ["out of range"],
            f32s(&[2, 3]).cross_entropy(&ints(&[0, 3], &[2]), Reduction::Mean, 0.0)
        ),
        bad!(
            Value,
            "cross_entropy",
            ["label_smoothing"],
            f32s(&[2, 3]).cross_entropy(&ints(&[0, 1], &[2]), Reduction::Mean, 1.5)
        ),
        bad!(Shape, "cross_entropy", [], f32s(&[2, 3]).cross_entropy(&ints(&[0, 1, 2], &[3]), Reduction::Mean, 0.0)),
        bad!(DType, "cross_entropy", [], f32s(&[2, 3]).cross_entropy(&f32s(&[2]), Reduction::Mean, 0.0)),
        bad!(Value, "nll_loss", ["out of range"], f32s(&[2, 3]).nll_loss(&ints(&[-1, 0], &[2]), Reduction::Sum)),
        bad!(Shape, "mse_loss", [], f32s(&[2, 3]).mse_loss(&f32s(&[3, 2]), Reduction::Mean)),
        bad!(Shape, "l1_loss", [], f32s(&[2]).l1_loss(&f32s(&[3]), Reduction::Mean)),
        bad!(
            Shape,
            "binary_cross_entropy_with_logits",
            [],
            f32s(&[2]).binary_cross_entropy_with_logits(&f32s(&[3]), Reduction::Mean)
        ),
    ]
}

/// Convolution and pooling geometry.
fn windows() -> Vec<Bad> {
    vec![
        bad!(
            Value,
            "unfold2d",
            ["kernel must be at least 1"],
            f32s(&[1, 1, 3, 3]).unfold2d([0, 1], [1, 1], [0, 0], [1, 1])
        ),
        bad!(
            Value,
            "unfold2d",
            ["stride must be at least 1"],
            f32s(&[1, 1, 3, 3]).unfold2d([1, 1], [0, 1], [0, 0], [1, 1])
        ),
        bad!(
            Value,
            "unfold2d",
            ["dilation must be at least 1"],
            f32s(&[1, 1, 3, 3]).unfold2d([1, 1], [1, 1], [0, 0], [1, 0])
        ),
        bad!(
            Shape,
            "unfold2d",
            ["larger than the padded input"],
            f32s(&[1, 1, 3, 3]).unfold2d([4, 4], [1, 1], [0, 0], [1, 1])
        ),
        bad!(Shape, "unfold2d", ["4-D"], f32s(&[3, 3]).unfold2d([1, 1], [1, 1], [0, 0], [1, 1])),
        bad!(Shape, "fold2d", ["3-D"], f32s(&[3, 3]).fold2d([2, 2], [1, 1], [1, 1], [0, 0], [1, 1])),
        bad!(Shape, "fold2d", ["does not fit kernel"], f32s(&[1, 4, 3]).fold2d([2, 2], [2, 2], [1, 1], [0, 0], [1, 1])),
        bad!(
            Value,
            "max_pool2d",
            ["stride must be at least 1"],
            f32s(&[1, 1, 3, 3]).max_pool2d([2, 2], [0, 0], [0, 0])
        ),
        bad!(
            Shape,
            "max_pool2d",
            ["larger than the padded input"],
            f32s(&[1, 1, 3, 3]).max_pool2d([5, 5], [1, 1], [0, 0])
        ),
        bad!(
            Value,
            "avg_pool2d",
            ["kernel must be at least 1"],
            f32s(&[1, 1, 3, 3]).avg_pool2d([0, 2], [1, 1], [0, 0])
        ),
        bad!(Shape, "avg_pool2d", ["4-D"], f32s(&[3]).avg_pool2d([1, 1], [1, 1], [0, 0])),
    ]
}

/// Autograd misuse.
/// The rearrangements, tests of values and vector norms (issue 48).
fn layers_and_ops() -> Vec<Bad> {
    vec![
        bad!(Axis, "flip", ["axis 2", "[2, 2]"], f32s(&[2, 2]).flip(&[2])),
        bad!(Value, "flip", ["appears twice"], f32s(&[2, 2]).flip(&[0, -2])),
        bad!(Value, "roll", ["[1, 2]", "[0]", "same length"], f32s(&[2, 2]).roll(&[1, 2], &[0])),
        bad!(Value, "roll", ["without dims", "[1, 2]"], f32s(&[2, 2]).roll(&[1, 2], &[])),
        bad!(Shape, "repeat", ["1 repeat counts", "[2, 2]"], f32s(&[2, 2]).repeat(&[3])),
        bad!(Memory, "repeat", ["too many"], f32s(&[2, 2]).repeat(&[HUGE, HUGE])),
        bad!(Memory, "tile", ["out of memory"], f32s(&[2, 2]).tile(&[BIG])),
        bad!(Shape, "tril", ["at least 2 dims", "[3]"], f32s(&[3]).tril(0)),
        bad!(Shape, "triu", ["at least 2 dims", "[]"], f32s(&[]).triu(0)),
        bad!(Shape, "pixel_shuffle", ["6 channels", "2^2"], f32s(&[1, 6, 2, 2]).pixel_shuffle(2)),
        bad!(Shape, "pixel_shuffle", ["upscale_factor^2 = 0^2"], f32s(&[1, 4, 2, 2]).pixel_shuffle(0)),
        bad!(Shape, "pixel_unshuffle", ["at least 3 dims", "[4, 4]"], f32s(&[4, 4]).pixel_unshuffle(2)),
        bad!(
            Value,
            "einsum",
            ["\"ij,jk\"", "operand 1", "[2, 3, 4]", "names 2 dims"],
            Tensor::einsum("ij,jk", &[f32s(&[2, 3]), f32s(&[2, 3, 4])])
        ),
        bad!(
            Value,
            "einsum",
            ["letter 'j'", "sizes 3 and 4"],
            Tensor::einsum("ij,jk->ik", &[f32s(&[2, 3]), f32s(&[4, 5])])
        ),
        bad!(Value, "einsum", ["repeats letter 'i'"], Tensor::einsum("ij->ii", &[f32s(&[2, 3])])),
        bad!(Value, "einsum", ["bad character '1'"], Tensor::einsum("i1->i", &[f32s(&[2, 3])])),
        bad!(Value, "einsum", ["output letter 'k'", "no operand"], Tensor::einsum("ij->k", &[f32s(&[2, 3])])),
        bad!(Value, "einsum", ["2 terms for 1 operands"], Tensor::einsum("ij,jk->ik", &[f32s(&[2, 3])])),
        bad!(Value, "einsum", ["more than one `...`"], Tensor::einsum("...i...->i", &[f32s(&[2, 3])])),
        bad!(Value, "einsum", ["at least one operand"], Tensor::einsum("->", &[])),
        bad!(DType, "einsum", ["dtypes differ"], Tensor::einsum("i,i->", &[f32s(&[2]), f64s(&[1.0, 2.0], &[2])])),
        bad!(DType, "one_hot", ["int32", "f32"], f32s(&[3]).one_hot(4)),
        bad!(Value, "one_hot", ["class index 4", "[0, 4)", "num_classes 4"], ints(&[0, 4, 1], &[3]).one_hot(4)),
        bad!(Value, "one_hot", ["class index -1"], ints(&[-1], &[1]).one_hot(2)),
        bad!(DType, "masked_fill", ["mask must be bool", "f32"], f32s(&[2]).masked_fill(&f32s(&[2]), 0.0)),
        bad!(
            Shape,
            "masked_fill",
            ["[2, 3]", "does not broadcast", "[3]"],
            f32s(&[3]).masked_fill(&Tensor::from_bools(&[true; 6], &[2, 3])?, 0.0)
        ),
        bad!(
            Value,
            "masked_fill",
            ["value", "int32"],
            ints(&[1, 2], &[2]).masked_fill(&Tensor::from_bools(&[true, false], &[2])?, 0.5)
        ),
        bad!(Value, "norm", ["NaN"], f32s(&[3]).norm(f64::NAN, &[], false)),
        bad!(DType, "norm", ["i32"], ints(&[1, 2], &[2]).norm(2.0, &[], false)),
        bad!(Axis, "any", ["axis 3"], f32s(&[2, 2]).any(&[3], false)),
        bad!(Value, "clamp", ["at least one of min and max"], f32s(&[2]).clamp_tensor(None, None)),
        bad!(Shape, "clamp", ["[3]", "[2]"], f32s(&[3]).clamp_tensor(Some(&f32s(&[2])), None)),
        bad!(Shape, "prelu", ["1 element or one per channel", "[2]"], f32s(&[1, 3, 2]).prelu(&f32s(&[2]))),
        bad!(DType, "prelu", ["f64", "f32"], f32s(&[2, 2]).prelu(&f64s(&[0.25], &[1]))),
        bad!(DType, "elu", ["i32"], ints(&[1], &[1]).elu(1.0)),
        bad!(Value, "group_norm", ["num_groups 4", "6 channels"], f32s(&[2, 6, 3]).group_norm(4, None, None, 1e-5)),
        bad!(Shape, "group_norm", ["weight", "[6]", "[3]"], f32s(&[2, 6]).group_norm(2, Some(&f32s(&[3])), None, 1e-5)),
        bad!(Shape, "instance_norm", ["3 or more dims", "[2, 3]"], f32s(&[2, 3]).instance_norm(None, None, 1e-5)),
        bad!(Value, "instance_norm", ["eps", "-1"], f32s(&[1, 2, 3]).instance_norm(None, None, -1.0)),
        bad!(Shape, "rms_norm", ["[3]", "suffix", "[2, 4]"], f32s(&[2, 4]).rms_norm(&[3], None, None)),
        bad!(
            Shape,
            "conv1d",
            ["[N, C, L]", "[2, 3, 4, 5]"],
            f32s(&[2, 3, 4, 5]).conv1d(&f32s(&[1, 3, 2]), None, 1, 0, 1, 1)
        ),
        bad!(
            Value,
            "conv_transpose2d",
            ["output_padding [2, 0]", "stride [2, 2]"],
            f32s(&[1, 1, 3, 3]).conv_transpose2d(&f32s(&[1, 1, 3, 3]), None, [2, 2], [0, 0], [2, 0], 1, [1, 1])
        ),
        bad!(
            Shape,
            "conv_transpose2d",
            ["[2, 1, 3, 3]", "input's 1 channels"],
            f32s(&[1, 1, 3, 3]).conv_transpose2d(&f32s(&[2, 1, 3, 3]), None, [1, 1], [0, 0], [0, 0], 1, [1, 1])
        ),
        bad!(
            Shape,
            "conv_transpose2d",
            ["padding [3, 3] leaves no output"],
            f32s(&[1, 1, 1, 1]).conv_transpose2d(&f32s(&[1, 1, 2, 2]), None, [1, 1], [3, 3], [0, 0], 1, [1, 1])
        ),
        bad!(
            Value,
            "interpolate",
            ["exactly one of size and scale_factor"],
            f32s(&[1, 1, 4]).interpolate(None, None, Interpolation::Nearest)
        ),
        bad!(
            Value,
            "interpolate",
            ["scale_factor", "NaN"],
            f32s(&[1, 1, 4]).interpolate(None, Some(f64::NAN), Interpolation::Nearest)
        ),
        bad!(
            Shape,
            "interpolate",
            ["mode 'bilinear'", "[N, C, H, W]", "[1, 1, 4]"],
            f32s(&[1, 1, 4]).interpolate(Some(&[8]), None, Interpolation::Bilinear { align_corners: false })
        ),
        bad!(
            Shape,
            "interpolate",
            ["size has 3 entries", "2 spatial axes"],
            f32s(&[1, 1, 2, 2]).interpolate(Some(&[4, 4, 4]), None, Interpolation::Nearest)
        ),
        bad!(
            Memory,
            "interpolate",
            ["too many"],
            f32s(&[1, 1, 2, 2]).interpolate(None, Some(1e300), Interpolation::Nearest)
        ),
    ]
}

/// Attention, the recurrent layers and their cells, the transformer layers.
fn sequences() -> Vec<Bad> {
    use RecurrentKind::{Gru, Lstm};
    use Tensor as T;
    fn state(h: &[usize], c: Option<&[usize]>) -> RecurrentState {
        RecurrentState { h: f32s(h), c: c.map(f32s) }
    }
    vec![
        bad!(
            Shape,
            "scaled_dot_product_attention",
            ["[2, 3, 4]", "[2, 5, 3]"],
            T::scaled_dot_product_attention(
                &f32s(&[2, 3, 4]),
                &f32s(&[2, 5, 3]),
                &f32s(&[2, 5, 3]),
                None,
                0.0,
                false,
                None
            )
        ),
        bad!(
            Value,
            "scaled_dot_product_attention",
            ["attn_mask", "is_causal"],
            T::scaled_dot_product_attention(
                &f32s(&[3, 4]),
                &f32s(&[3, 4]),
                &f32s(&[3, 4]),
                Some(&f32s(&[3, 3])),
                0.0,
                true,
                None
            )
        ),
        bad!(
            Value,
            "scaled_dot_product_attention",
            ["dropout_p", "1"],
            T::scaled_dot_product_attention(&f32s(&[3, 4]), &f32s(&[3, 4]), &f32s(&[3, 4]), None, 1.0, false, None)
        ),
        bad!(Value, "LSTM", ["input_size", "0"], Recurrent::new(Lstm, 0, 4, RecurrentConfig::default())),
        bad!(
            Value,
            "LSTM",
            ["dropout", "1.5"],
            Recurrent::new(Lstm, 3, 4, RecurrentConfig { dropout: 1.5, ..Default::default() })
        ),
        bad!(Shape, "LSTM", ["[5, 2, 2]", "3]"], Recurrent::lstm(3, 4)?.forward(&f32s(&[5, 2, 2]))),
        bad!(Shape, "LSTM", ["[5]"], Recurrent::lstm(3, 4)?.forward(&f32s(&[5]))),
        bad!(
            Shape,
            "LSTM",
            ["h0", "[1, 2, 4]", "[1, 3, 4]"],
            Recurrent::lstm(3, 4)?.forward_with_state(&f32s(&[5, 2, 3]), Some(&state(&[1, 3, 4], None)))
        ),
        bad!(
            Value,
            "GRU",
            ["cell state"],
            Recurrent::gru(3, 4)?.forward_with_state(&f32s(&[5, 2, 3]), Some(&state(&[1, 2, 4], Some(&[1, 2, 4]))))
        ),
        bad!(Shape, "GRUCell", ["[2, 5]"], RecurrentCell::new(Gru, 3, 4, true)?.step(&f32s(&[2, 5]), None)),
        bad!(
            Shape,
            "LSTMCell",
            ["c", "[2, 4]", "[3, 4]"],
            RecurrentCell::new(Lstm, 3, 4, true)?.step(&f32s(&[2, 3]), Some(&state(&[2, 4], Some(&[3, 4]))))
        ),
        bad!(
            Value,
            "TransformerEncoderLayer",
            ["d_model 6", "nhead 4"],
            TransformerEncoderLayer::with_config(6, 4, TransformerConfig::default())
        ),
        bad!(
            Shape,
            "TransformerEncoderLayer",
            ["src", "[L, N, E]", "[3, 2, 5]"],
            TransformerEncoderLayer::new(4, 2)?.forward(&f32s(&[3, 2, 5]))
        ),
        bad!(
            Value,
            "TransformerDecoderLayer",
            ["memory", "decode"],
            TransformerDecoderLayer::new(4, 2)?.forward(&f32s(&[3, 2, 4]))
        ),
    ]
}

/// Scans and sorting (issue 48).
fn scans_and_sorting() -> Vec<Bad> {
    vec![
        bad!(Axis, "cumsum", ["axis 2", "[2, 2]"], f32s(&[2, 2]).cumsum(2)),
        bad!(Axis, "cumprod", ["axis -3", "[2, 2]"], f32s(&[2, 2]).cumprod(-3)),
        bad!(DType, "cumsum", ["i32", "[2]"], ints(&[1, 2], &[2]).cumsum(0)),
        bad!(DType, "cumprod", ["bool"], Tensor::from_bools(&[true], &[1])?.cumprod(0)),
        bad!(Axis, "prod", ["axis 3", "[2, 3]"], f32s(&[2, 3]).prod(&[0, 3], false)),
        bad!(DType, "prod", ["i32"], ints(&[1, 2], &[2]).prod(&[], false)),
        bad!(Axis, "argsort", ["axis 1", "[4]"], f32s(&[4]).argsort(1, false)),
        bad!(Axis, "sort", ["axis -3", "[2, 2]"], f32s(&[2, 2]).sort(-3, false, false)),
        bad!(Value, "topk", ["k = 4", "3 elements", "[2, 3]"], f32s(&[2, 3]).topk(4, -1, true, true)),
        bad!(Axis, "topk", ["axis 2", "[2, 3]"], f32s(&[2, 3]).topk(1, 2, true, true)),
    ]
}

fn autograd() -> Vec<Bad> {
    vec![
        bad!(Autograd, "backward", [], f32s(&[2]).sum_all()?.backward()),
        bad!(Autograd, "backward", ["scalar"], leaf().mul_scalar(2.0)?.backward()),
        bad!(DType, "requires_grad_", ["i32"], ints(&[1], &[1]).requires_grad_(true)),
        bad!(Autograd, "add_", ["leaf"], leaf().add_(&f32s(&[2, 2]))),
        bad!(Autograd, "fill_", ["leaf"], leaf().fill_(1.0)),
        bad!(Autograd, "requires_grad_", [], leaf().mul_scalar(2.0)?.requires_grad_(false)),
    ]
}

/// Legal calls at the edges, with PyTorch's documented results.
fn edge_results() -> Result<usize> {
    let mut n = 0;
    let mut check = |what: &str, got: Tensor, shape: &[usize], values: &[f64]| -> Result<()> {
        n += 1;
        assert_eq!(got.shape(), shape, "{what}: shape");
        let v = got.to_f64_vec()?;
        assert_eq!(v.len(), values.len(), "{what}: values {v:?}");
        for (a, b) in v.iter().zip(values) {
            assert!(a == b || (a.is_nan() && b.is_nan()), "{what}: got {v:?}, want {values:?}");
        }
        Ok(())
    };
    check("zeros [0, 3]", Tensor::zeros(&[0, 3], DType::F32)?, &[0, 3], &[])?;
    check("zeros [0, huge]", Tensor::zeros(&[0, 1 << 40], DType::F32)?, &[0, 1 << 40], &[])?;
    check("arange(0, 0)", Tensor::arange(0.0, 0.0, 1.0, DType::F32)?, &[0], &[])?;
    check("arange(3, 0, -1)", Tensor::arange(3.0, 0.0, -1.0, DType::I32)?, &[3], &[3.0, 2.0, 1.0])?;
    check("arange(0, 3, -1)", Tensor::arange(0.0, 3.0, -1.0, DType::F32)?, &[0], &[])?;
    check("arange(0, 1, 0.25)", Tensor::arange(0.0, 1.0, 0.25, DType::F64)?, &[4], &[0.0, 0.25, 0.5, 0.75])?;
    check("linspace(0, 1, 0)", Tensor::linspace(0.0, 1.0, 0, DType::F32)?, &[0], &[])?;
    check("linspace(2, 5, 1)", Tensor::linspace(2.0, 5.0, 1, DType::F64)?, &[1], &[2.0])?;
    check("linspace(0, 1, 3)", Tensor::linspace(0.0, 1.0, 3, DType::F64)?, &[3], &[0.0, 0.5, 1.0])?;
    check("eye(0)", Tensor::eye(0, DType::F32)?, &[0, 0], &[])?;
    check("eye(2)", Tensor::eye(2, DType::I32)?, &[2, 2], &[1.0, 0.0, 0.0, 1.0])?;
    check("full NaN", Tensor::full(&[2], f64::NAN, DType::F32)?, &[2], &[f64::NAN, f64::NAN])?;
    check("full bool 2", Tensor::full(&[1], 2.0, DType::Bool)?.to_dtype(DType::F32)?, &[1], &[1.0])?;
    check("full i32 min", Tensor::full(&[1], i32::MIN as f64, DType::I32)?, &[1], &[i32::MIN as f64])?;
    check("randn []", Tensor::randn(&[0], DType::F32)?, &[0], &[])?;
    check("sum of empty", f32s(&[0, 3]).sum(&[], false)?, &[], &[0.0])?;
    check("mean of empty", f32s(&[0]).mean(&[], false)?, &[], &[f64::NAN])?;
    check("sum over empty axis", f32s(&[2, 0]).sum(&[1], false)?, &[2], &[0.0, 0.0])?;
    check("narrow len 0", f32s(&[3]).narrow(0, 3, 0)?, &[0], &[])?;
    check("slice past the end", f32s(&[3]).slice(0, 5, 9, 1)?, &[0], &[])?;
    check("slice from -100", f64s(&[1.0, 2.0, 3.0], &[3]).slice(0, -100, 2, 1)?, &[2], &[1.0, 2.0])?;
    check("reshape -1 of empty", f32s(&[0, 3]).reshape(&[-1, 3])?, &[0, 3], &[])?;
    check("matmul with k = 0", f32s(&[2, 0]).matmul(&f32s(&[0, 3]))?, &[2, 3], &[0.0; 6])?;
    check("pad of empty", f32s(&[0]).pad(&[(1, 1)], 5.0)?, &[2], &[5.0, 5.0])?;
    check("concat with empty", Tensor::concat(&[f32s(&[0]), f32s(&[1])], 0)?, &[1], &[1.0])?;
    check("index_select empty index", f32s(&[3, 2]).index_select(0, &ints(&[], &[0]))?, &[0, 2], &[])?;
    check("clamp", f64s(&[-2.0, 0.5, 3.0], &[3]).clamp(Some(-1.0), Some(1.0))?, &[3], &[-1.0, 0.5, 1.0])?;
    check("log(0)", f64s(&[0.0], &[1]).log()?, &[1], &[f64::NEG_INFINITY])?;
    check("sqrt(-1)", f64s(&[-1.0], &[1]).sqrt()?, &[1], &[f64::NAN])?;
    check(
        "div by 0",
        f64s(&[1.0, -1.0], &[2]).div(&f64s(&[0.0, 0.0], &[2]))?,
        &[2],
        &[f64::INFINITY, f64::NEG_INFINITY],
    )?;
    check("argmax of ties", f64s(&[1.0, 3.0, 3.0], &[3]).argmax(None, false)?.to_dtype(DType::F64)?, &[], &[1.0])?;
    check("dropout p=0", f64s(&[1.0, 2.0], &[2]).dropout(0.0, true)?, &[2], &[1.0, 2.0])?;
    check("dropout p=1", f64s(&[1.0, 2.0], &[2]).dropout(1.0, true)?, &[2], &[0.0, 0.0])?;
    check(
        "view of a contiguous tensor",
        f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).view(&[4])?,
        &[4],
        &[1.0, 2.0, 3.0, 4.0],
    )?;
    check("view of a transposed tensor as itself", f32s(&[2, 3]).transpose(0, 1)?.view(&[3, 2])?, &[3, 2], &[1.0; 6])?;
    check("prod of empty", f32s(&[2, 0]).prod(&[1], false)?, &[2], &[1.0, 1.0])?;
    check("prod with a zero", f64s(&[2.0, 0.0, 3.0], &[3]).prod(&[], false)?, &[], &[0.0])?;
    check("cumsum of empty", f32s(&[0, 3]).cumsum(0)?, &[0, 3], &[])?;
    check("cumprod of a 0-d tensor", f64s(&[3.0], &[]).cumprod(-1)?, &[], &[3.0])?;
    check("topk k = 0", f32s(&[2, 3]).topk(0, 1, true, true)?.0, &[2, 0], &[])?;
    let (values, indices) = f64s(&[1.0, f64::NAN, 1.0, -1.0], &[4]).sort(0, true, true)?;
    check("sort descending: NaN first, ties in order", values, &[4], &[f64::NAN, 1.0, 1.0, -1.0])?;
    check("sort's indices", indices.to_dtype(DType::F64)?, &[4], &[1.0, 0.0, 2.0, 3.0])?;
    // Integers and bools sort as PyTorch sorts them (bools false first).
    let (values, indices) = ints(&[2, -7, 2, 0], &[4]).sort(0, true, true)?;
    check("sort of int32 descending", values.to_dtype(DType::F64)?, &[4], &[2.0, 2.0, 0.0, -7.0])?;
    check("its indices, ties in order", indices.to_dtype(DType::F64)?, &[4], &[0.0, 2.0, 3.0, 1.0])?;
    let (_, indices) = ints(&[5, i32::MIN, i32::MAX], &[3]).topk(2, 0, false, true)?;
    check("topk smallest of int32 extremes", indices.to_dtype(DType::F64)?, &[2], &[1.0, 0.0])?;
    let bools = Tensor::from_bools(&[true, false, true, false], &[4])?;
    check("argsort of bools", bools.argsort(0, false)?.to_dtype(DType::F64)?, &[4], &[1.0, 3.0, 0.0, 2.0])?;
    let pieces = f32s(&[0, 2]).split(2, 0)?;
    assert_eq!(pieces.len(), 1, "PyTorch splits an empty axis into one empty piece");
    check("split of an empty axis", pieces[0].clone(), &[0, 2], &[])?;
    Ok(n)
}

/// After any rejected call the runtime must still compute correctly.
fn still_works() {
    let x = f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = x.matmul(&x).and_then(|t| t.sum_all()).and_then(|t| t.item()).expect("the runtime works after a bad call");
    assert_eq!(y, 54.0);
}

/// Runs every entry, then fails listing every entry that misbehaved.
fn run_corpus(name: &str, entries: Vec<Bad>) -> usize {
    let n = entries.len();
    let mut wrong = Vec::new();
    for b in entries {
        match std::panic::catch_unwind(b.run) {
            Ok(Ok(())) => wrong.push(format!("`{}` returned Ok, expected a {:?} error from {}", b.call, b.kind, b.op)),
            Ok(Err(e)) => {
                if std::panic::catch_unwind(|| check_err(&e, b.kind, b.op, b.facts)).is_err() {
                    wrong.push(format!("`{}` gave the wrong error: {e}", b.call));
                }
            }
            Err(_) => wrong.push(format!("`{}` panicked", b.call)),
        }
        still_works();
    }
    assert!(wrong.is_empty(), "{name}: {} of {n} calls misbehaved:\n{}", wrong.len(), wrong.join("\n"));
    n
}

#[test]
fn the_rust_corpus_returns_errors_naming_the_called_op() {
    let total = run_corpus("sizes", sizes())
        + run_corpus("arguments", arguments())
        + run_corpus("indexing", indexing())
        + run_corpus("windows", windows())
        + run_corpus("layers and ops", layers_and_ops())
        + run_corpus("sequences", sequences())
        + run_corpus("scans and sorting", scans_and_sorting())
        + run_corpus("autograd", autograd());
    let edges = edge_results().expect("legal edge calls succeed");
    eprintln!("bad-input corpus (Rust): {total} rejected calls, {edges} legal edge calls");
    assert!(total + edges >= 150, "the Rust corpus shrank to {total} + {edges} calls");
}

#[test]
fn the_worst_cases_repeated_ten_thousand_times_leave_the_runtime_working() {
    let worst = [
        || Tensor::zeros(&[BIG], DType::F32).map(|_| ()),
        || Tensor::full(&[HUGE], 1.0, DType::F32).map(|_| ()),
        || Tensor::eye(1 << 32, DType::F32).map(|_| ()),
        || Tensor::arange(0.0, 1e20, 1e-3, DType::F32).map(|_| ()),
        || f32s(&[2, 3]).reshape(&[2, (1 << 62) + 3]).map(|_| ()),
        || f32s(&[2]).pad(&[(BIG, 0)], 0.0).map(|_| ()),
    ];
    for i in 0..10_000 {
        let r = worst[i % worst.len()]();
        assert!(r.is_err(), "worst case {} succeeded", i % worst.len());
    }
    still_works();
}
