//! Every user mistake returns `Err` (never a panic) with a message that names
//! the op and the offending shapes, dtypes or devices (DESIGN principle 6).

use crate::common;

use crate::common::{check_err, expect_err, Kind};
use skiff::{grad, BackwardOptions, DType, Device, GradOptions, Reduction, Result, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

fn f32s(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32).unwrap()
}

fn ints(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

#[test]
fn broadcast_mismatch_names_the_op_and_both_shapes() {
    let (a, b) = (f32s(&[2, 3]), f32s(&[4]));
    for (op, r) in
        [("add", a.add(&b)), ("sub", a.sub(&b)), ("mul", a.mul(&b)), ("div", a.div(&b)), ("maximum", a.maximum(&b))]
    {
        expect_err(r, Kind::Shape, op, &["[2, 3] and [4] cannot be broadcast", "dim 1: 3 vs 4"]);
    }
    expect_err(a.lt(&b), Kind::Shape, "lt", &["[2, 3] and [4]", "dim 1: 3 vs 4"]);
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    expect_err(Tensor::where_(&mask, &a, &a), Kind::Shape, "where", &["[2] and [2, 3]", "dim 1: 2 vs 3"]);
    expect_err(a.expand(&[4, 3]), Kind::Shape, "expand", &["cannot expand shape [2, 3] to [4, 3]"]);
    expect_err(a.add_(&f32s(&[3, 3])), Kind::Shape, "add_", &["[2, 3] and [3, 3]", "dim 0: 2 vs 3"]);
}

#[test]
fn matmul_inner_dimension_mismatch_shows_both_shapes() {
    let inner = |a: &[usize], b: &[usize], facts: &str| {
        expect_err(f32s(a).matmul(&f32s(b)), Kind::Shape, "matmul", &["inner dims differ", facts]);
    };
    inner(&[2, 3], &[4, 5], "[2, 3] x [4, 5]");
    inner(&[3], &[4], "[3] x [4]");
    inner(&[2, 3], &[2], "[2, 3] x [2]");
    // Batch dims that do not broadcast.
    expect_err(f32s(&[2, 2, 3]).matmul(&f32s(&[3, 3, 4])), Kind::Shape, "matmul", &["[2] and [3] cannot be broadcast"]);
    expect_err(f32s(&[]).matmul(&f32s(&[3])), Kind::Shape, "matmul", &["at least 1-D", "[] x [3]"]);
}

#[test]
fn reshape_to_a_different_element_count() {
    let a = f32s(&[2, 3]);
    for (target, r) in [
        ("[4, 2]", a.reshape(&[4, 2])),
        ("[-1, 4]", a.reshape(&[-1, 4])),
        ("[-1, -1]", a.reshape(&[-1, -1])),
        ("[7]", a.reshape_dims(&[7])),
    ] {
        expect_err(r, Kind::Shape, "reshape", &["shape [2, 3] (6 elements)", &format!("to {target}")]);
    }
    expect_err(a.view(&[5]), Kind::Shape, "view", &["shape [2, 3] (6 elements)", "to [5]"]);
}

#[test]
fn axis_out_of_range_names_the_op_axis_and_shape() {
    let a = f32s(&[2, 3]);
    let cases: Vec<(&str, isize, Result<Tensor>)> = vec![
        ("sum", 2, a.sum(&[2], false)),
        ("sum", -3, a.sum(&[-3], true)),
        ("max", 5, a.max(&[5], false)),
        ("mean", 2, a.mean(&[2], false)),
        ("var", 2, a.var(&[2], 1.0, false)),
        ("argmax", 2, a.argmax(Some(2), false)),
        ("transpose", 2, a.transpose(0, 2)),
        ("narrow", 2, a.narrow(2, 0, 1)),
        ("squeeze", 2, a.squeeze(Some(2))),
        ("unsqueeze", 3, a.unsqueeze(3)),
        ("unsqueeze", -4, a.unsqueeze(-4)),
        ("slice", -3, a.slice(-3, 0, 1, 1)),
        ("softmax", 2, a.softmax(2)),
        ("concat", 2, Tensor::concat(&[a.clone(), a.clone()], 2)),
        ("size", 2, a.size(2).map(|_| a.clone())),
        ("split", 3, a.split(1, 3).map(|_| a.clone())),
        ("permute", 2, a.permute(&[0, 2])),
    ];
    for (op, axis, r) in cases {
        let e = expect_err(r, Kind::Axis, op, &[&format!("axis {axis} is out of range"), "rank 2", "(shape [2, 3])"]);
        // The structured fields carry the same facts.
        let fields = matches!(&e, skiff::Error::Axis { axis: a, ndim: 2, shape, .. } if *a == axis && shape == &[2, 3]);
        assert!(fields, "{op}: {e:?}");
    }
    // Narrow within a valid axis but past its end is a shape error.
    expect_err(
        a.narrow(1, 2, 2),
        Kind::Shape,
        "narrow",
        &["start 2 + length 2 exceeds size 3 of axis 1", "(shape [2, 3])"],
    );
}

#[test]
fn integer_tensors_cannot_require_grad() {
    expect_err(
        ints(&[1, 2], &[2]).requires_grad_(true),
        Kind::DType,
        "requires_grad_",
        &["got i32 tensor of shape [2]"],
    );
    let mask = Tensor::from_bools(&[true], &[1]).unwrap();
    expect_err(mask.requires_grad_(true), Kind::DType, "requires_grad_", &["got bool tensor of shape [1]"]);
    // Turning it off is fine.
    assert!(ints(&[1], &[1]).requires_grad_(false).is_ok());
}

#[test]
fn backward_on_a_non_scalar_needs_an_output_gradient() {
    let x = f32s(&[2, 3]).requires_grad_(true).unwrap();
    let y = x.mul_scalar(2.0).unwrap();
    expect_err(y.backward(), Kind::Autograd, "backward", &["only for scalar outputs", "got shape [2, 3]"]);
    // grad() needs one too.
    expect_err(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), None, GradOptions::default()),
        Kind::Autograd,
        "grad",
        &["only for scalar outputs", "got shape [2, 3]"],
    );
    // And a tensor without history cannot be differentiated at all.
    expect_err(f32s(&[]).backward(), Kind::Autograd, "backward", &["shape [] does not require grad"]);
    expect_err(
        grad(&[y.sum_all().unwrap()], &[f32s(&[2])], None, GradOptions::default()),
        Kind::Autograd,
        "grad",
        &["input 0 (shape [2]) does not require grad"],
    );
}

#[test]
fn output_gradient_of_the_wrong_shape() {
    let x = f32s(&[2, 3]).requires_grad_(true).unwrap();
    let y = x.exp().unwrap();
    expect_err(
        y.backward_with(Some(&f32s(&[3, 2])), BackwardOptions::default()),
        Kind::Shape,
        "backward",
        &["output gradient has shape [3, 2] but the output has shape [2, 3]"],
    );
    expect_err(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[f32s(&[6])]), GradOptions::default()),
        Kind::Shape,
        "grad",
        &["output gradient has shape [6] but the output has shape [2, 3]"],
    );
    expect_err(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[]), GradOptions::default()),
        Kind::Value,
        "grad",
        &["0 grad_outputs for 1 outputs"],
    );
}

#[test]
fn second_backward_without_retain_graph() {
    let x = f32s(&[3]).requires_grad_(true).unwrap();
    let y = x.tanh().unwrap().sum_all().unwrap();
    y.backward().unwrap();
    // The first node the second pass reaches is the sum's.
    expect_err(y.backward(), Kind::Autograd, "sum", &["node 'sum'", "second time", "retain_graph"]);
}

#[test]
fn inplace_overwrite_of_a_saved_tensor() {
    let x = f32s(&[2, 2]).requires_grad_(true).unwrap();
    let y = x.exp().unwrap();
    y.mul_scalar_(2.0).unwrap();
    expect_err(
        y.sum_all().unwrap().backward(),
        Kind::Autograd,
        "exp",
        &["saved tensor 0 of 'exp' (shape [2, 2], dtype f32)", "in-place", "version 1 now, 0 when saved"],
    );
    expect_err(x.add_scalar_(1.0), Kind::Autograd, "add_scalar_", &["leaf", "(shape [2, 2])", "no_grad"]);
}

#[test]
fn cross_entropy_label_out_of_range() {
    let logits = f32s(&[2, 3]);
    let ce = "cross_entropy";
    expect_err(
        logits.cross_entropy(&ints(&[0, 3], &[2]), Reduction::Mean, 0.0),
        Kind::Value,
        ce,
        &["label 3 at position 1 is out of range [0, 3)", "scores of shape [2, 3]"],
    );
    expect_err(
        logits.cross_entropy(&ints(&[-1, 0], &[2]), Reduction::Sum, 0.0),
        Kind::Value,
        ce,
        &["label -1 at position 0 is out of range [0, 3)"],
    );
    expect_err(
        logits.cross_entropy(&ints(&[0, 1, 2], &[3]), Reduction::Mean, 0.0),
        Kind::Shape,
        ce,
        &["labels must have shape [2] for scores of shape [2, 3], got [3]"],
    );
    expect_err(
        logits.cross_entropy(&t(&[0.0, 1.0], &[2]), Reduction::Mean, 0.0),
        Kind::DType,
        ce,
        &["labels must be i32", "got f64 of shape [2]"],
    );
    expect_err(
        f32s(&[3]).cross_entropy(&ints(&[0], &[1]), Reduction::Mean, 0.0),
        Kind::Shape,
        ce,
        &["[N, C] scores, got shape [3]"],
    );
    expect_err(
        logits.nll_loss(&ints(&[0, 7], &[2]), Reduction::Mean),
        Kind::Value,
        "nll_loss",
        &["label 7 at position 1 is out of range [0, 3)", "shape [2, 3]"],
    );
}

#[test]
fn device_errors_are_clear() {
    // It sets SKIFF_DEVICE, which every Device::best() reads.
    if !common::own_process() {
        return;
    }
    assert_eq!(Device::Cpu.to_string(), "cpu");
    let prev = std::env::var("SKIFF_DEVICE").ok();
    std::env::set_var("SKIFF_DEVICE", "tpu");
    let bogus = Device::best();
    std::env::set_var("SKIFF_DEVICE", "cpu");
    let cpu = Device::best();
    // SKIFF_DEVICE=gpu takes any adapter; auto passes over software ones.
    std::env::set_var("SKIFF_DEVICE", "gpu");
    let forced = Device::best();
    std::env::set_var("SKIFF_DEVICE", "auto");
    let auto = Device::best().unwrap();
    match prev {
        Some(v) => std::env::set_var("SKIFF_DEVICE", v),
        None => std::env::remove_var("SKIFF_DEVICE"),
    }
    expect_err(bogus, Kind::Value, "Device::best", &["SKIFF_DEVICE=\"tpu\" is not one of cpu, gpu, auto"]);
    assert_eq!(cpu.unwrap(), Device::Cpu);
    match Device::gpu() {
        Ok(g) => {
            assert_eq!(forced.unwrap(), g);
            assert_eq!(auto, if g.is_software() { Device::Cpu } else { g });
        }
        Err(e) => {
            // Forcing the GPU reports why there is none, as Device::gpu does.
            check_err(&e, Kind::Value, "Device::gpu", &[]);
            assert_eq!(forced.unwrap_err(), e);
            assert_eq!(auto, Device::Cpu);
        }
    }

    // Mixing devices needs a second device: the GPU when one exists.
    let Some(gpu) = common::gpu() else { return };
    let a = f32s(&[2, 3]);
    let b = a.to(&gpu).unwrap();
    for (op, r) in [
        ("add", a.add(&b)),
        ("matmul", a.matmul(&b.transpose(0, 1).unwrap())),
        ("where", Tensor::where_(&a.gt_scalar(0.0).unwrap(), &a, &b)),
        ("concat", Tensor::concat(&[a.clone(), b.clone()], 0)),
    ] {
        let e = expect_err(r, Kind::Device, op, &["found cpu and gpu"]);
        assert!(matches!(&e, skiff::Error::Device { found, .. } if found == "cpu and gpu"), "{op}: {e:?}");
    }
}

#[test]
fn dtype_mismatch_is_an_error_not_a_promotion() {
    let (a, b) = (f32s(&[2]), Tensor::ones(&[2], DType::F64).unwrap());
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    for (op, r) in [
        ("add", a.add(&b)),
        ("mul", a.mul(&b)),
        ("matmul", a.matmul(&b)),
        ("eq", a.eq(&b)),
        ("concat", Tensor::concat(&[a.clone(), b.clone()], 0)),
        ("where", Tensor::where_(&mask, &a, &b)),
    ] {
        expect_err(r, Kind::DType, op, &["dtypes differ: f32 [2] vs f64 [2]"]);
    }
    expect_err(Tensor::where_(&a, &a, &a), Kind::DType, "where", &["condition must be bool, got f32 [2]"]);
}

#[test]
fn float_only_ops_reject_integer_tensors() {
    let i = ints(&[1, 2, 3], &[3]);
    for (op, r) in [
        ("exp", i.exp()),
        ("log", i.log()),
        ("sigmoid", i.sigmoid()),
        ("add", i.add(&i)),
        ("sum", i.sum_all()),
        ("mean", i.mean(&[], false)),
        ("matmul", i.matmul(&i)),
        ("softmax", i.softmax(0)),
        ("argmax", i.argmax(None, false)),
    ] {
        expect_err(r, Kind::DType, op, &["expected a float tensor, got i32 of shape [3]"]);
    }
    expect_err(Tensor::linspace(0.0, 1.0, 3, DType::I32), Kind::DType, "linspace", &["float dtype, got i32"]);
}

#[test]
fn creation_and_readback_errors() {
    expect_err(
        Tensor::from_vec(vec![1.0f32; 5], &[2, 3]),
        Kind::Shape,
        "from_vec",
        &["5 elements cannot fill shape [2, 3] (6 elements)"],
    );
    expect_err(Tensor::from_slice(&[1i32, 2], &[3]), Kind::Shape, "from_vec", &["2 elements cannot fill shape [3]"]);
    expect_err(f32s(&[2]).item(), Kind::Shape, "item", &["one-element tensor, got shape [2]"]);
    expect_err(
        f32s(&[2, 3]).to_vec::<f64>(),
        Kind::DType,
        "to_vec",
        &["f64 elements from a f32 tensor of shape [2, 3]"],
    );
    expect_err(Tensor::arange(0.0, 1.0, 0.0, DType::F32), Kind::Value, "arange", &["start=0 end=1 step=0"]);
    expect_err(Tensor::randint(3, 3, &[2]), Kind::Value, "randint", &["empty range [3, 3)"]);
}

#[test]
fn movement_misuse() {
    let a = f32s(&[2, 3]);
    expect_err(
        Tensor::concat(&[a.clone(), f32s(&[3, 3])], 1),
        Kind::Shape,
        "concat",
        &["shapes [2, 3] and [3, 3] differ outside axis 1"],
    );
    expect_err(Tensor::concat(&[], 0), Kind::Value, "concat", &["at least one tensor"]);
    expect_err(Tensor::stack(&[a.clone(), f32s(&[3, 2])], 0), Kind::Shape, "stack", &["got [2, 3] and [3, 2]"]);
    expect_err(
        a.permute(&[0, 0]),
        Kind::Value,
        "permute",
        &["[0, 0] is not a permutation of the axes of shape [2, 3]"],
    );
    expect_err(a.permute(&[0]), Kind::Shape, "permute", &["permutation [0] does not match rank 2 (shape [2, 3])"]);
    expect_err(a.slice(0, 0, 2, 0), Kind::Value, "slice", &["step must be at least 1, got 0 (axis 0 of shape [2, 3])"]);
    expect_err(a.split(0, 1), Kind::Value, "split", &["size must be at least 1, got 0 (axis 1 of shape [2, 3])"]);
    expect_err(
        a.split_sizes(&[1, 1], 1),
        Kind::Shape,
        "split",
        &["sizes [1, 1] do not add up to axis 1 of shape [2, 3]"],
    );
    expect_err(a.chunk(0, 0), Kind::Value, "chunk", &["chunks must be at least 1, got 0 (axis 0 of shape [2, 3])"]);
    expect_err(a.pad(&[(1, 1), (1, 1), (1, 1)], 0.0), Kind::Shape, "pad", &["3 pad pairs", "rank 2 (shape [2, 3])"]);
    expect_err(a.flatten(1, 0), Kind::Value, "flatten", &["start axis 1 is after end axis 0 (shape [2, 3])"]);
    expect_err(f32s(&[3]).sum_to(&[2]), Kind::Shape, "sum_to", &["cannot sum shape [3] to [2]"]);
    expect_err(f32s(&[3]).mse_loss(&f32s(&[4]), Reduction::Mean), Kind::Shape, "mse_loss", &["differ: [3] vs [4]"]);
    expect_err(f32s(&[0, 3]).max(&[0], false), Kind::Shape, "max", &["empty axis of shape [0, 3]"]);
}

#[test]
fn errors_are_values_that_compare_and_clone() {
    let e1 = f32s(&[2, 3]).add(&f32s(&[4])).unwrap_err();
    let e2 = e1.clone();
    assert_eq!(e1, e2);
    check_err(&e1, Kind::Shape, "add", &[]);
    let boxed: Box<dyn std::error::Error> = Box::new(e1);
    assert!(boxed.to_string().starts_with("add: "));
}

#[test]
fn expand_rejects_negative_and_new_minus_one_sizes() {
    // -1 keeps an existing size; it is meaningless for a new leading axis.
    let bad = |from: &[usize], to: &[isize], facts: &str| {
        expect_err(f32s(from).expand(to), Kind::Shape, "expand", &[facts, "(-1 only keeps an existing size)"]);
    };
    bad(&[3], &[-1, 3], "size -1 at position 0 of [-1, 3] is invalid for shape [3]");
    bad(&[3], &[-2, 3], "size -2 at position 0 of [-2, 3] is invalid for shape [3]");
    bad(&[1, 3], &[-3, 3], "size -3 at position 0 of [-3, 3] is invalid for shape [1, 3]");
    assert_eq!(f32s(&[1, 3]).expand(&[2, -1]).unwrap().shape(), &[2, 3]);
}

#[test]
fn inplace_errors_name_the_inplace_op() {
    expect_err(f32s(&[2, 2]).copy_(&f32s(&[3])), Kind::Shape, "copy_", &["cannot expand shape [3] to [2, 2]"]);
    expect_err(
        f32s(&[2]).mul_(&Tensor::ones(&[2], DType::F64).unwrap()),
        Kind::DType,
        "mul_",
        &["dtypes differ: f32 [2] vs f64 [2]"],
    );
    expect_err(ints(&[1, 2], &[2]).add_scalar_(1.0), Kind::DType, "add_scalar_", &["got i32 of shape [2]"]);
}

#[test]
fn gradients_of_the_wrong_dtype_are_rejected() {
    let x = Tensor::ones(&[3], DType::F64).unwrap().requires_grad_(true).unwrap();
    let y = x.add_scalar(1.0).unwrap();
    let g32 = f32s(&[3]);
    let facts = ["output gradient has dtype f32 but the output has dtype f64 (shape [3])"];
    expect_err(y.backward_with(Some(&g32), BackwardOptions::default()), Kind::DType, "backward", &facts);
    assert!(x.grad().is_none(), "a rejected backward leaves .grad alone");
    expect_err(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[g32]), GradOptions::default()),
        Kind::DType,
        "grad",
        &facts,
    );
    // A hook that returns another dtype: the error names the hook (registered with register_hook).
    x.register_hook(|g| Some(g.to_dtype(DType::F32).unwrap())).unwrap();
    let r = x.add_scalar(1.0).unwrap().sum_all().unwrap().backward();
    expect_err(
        r,
        Kind::DType,
        "register_hook",
        &["hook returned a gradient of shape [3] and dtype f32, expected shape [3] and dtype f64"],
    );
}

#[test]
fn inplace_writes_into_an_expanded_view_are_rejected() {
    // Several elements of an expanded view share one memory location, so an
    // in-place write would silently keep only one of them.
    let base = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
    let ex = base.expand(&[2, 3]).unwrap();
    let other = Tensor::from_slice(&[1.0f32, 1.0, 1.0, 2.0, 2.0, 2.0], &[2, 3]).unwrap();
    let facts = ["expanded view of shape [2, 3]", "share one memory location"];
    expect_err(ex.add_(&other), Kind::Shape, "add_", &facts);
    expect_err(ex.fill_(0.0), Kind::Shape, "fill_", &facts);
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0], "the base is untouched");
    // Writing through a size-1 (non-overlapping) broadcast axis is fine.
    let one = base.expand(&[1, 3]).unwrap();
    one.add_scalar_(1.0).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0]);
}

/// A 0-d tensor has no axis to slice, split, concatenate along or swap:
/// errors naming the op, never an index panic (axis 0 of a scalar is accepted
/// only by reductions, as in PyTorch).
#[test]
fn axis_ops_on_a_scalar_are_errors() {
    let s = Tensor::scalar(1.0, DType::F32);
    let cases = [
        ("transpose", s.transpose(0, 0).err()),
        ("transpose", s.transpose(0, -1).err()),
        ("slice", s.slice(0, 0, 1, 1).err()),
        ("narrow", s.narrow(0, 0, 1).err()),
        ("split", s.split(1, 0).err()),
        ("chunk", s.chunk(1, 0).err()),
        ("concat", Tensor::concat(&[s.clone(), s.clone()], 0).err()),
    ];
    for (op, e) in cases {
        let e = e.unwrap_or_else(|| panic!("{op} accepted a 0-d tensor"));
        check_err(&e, Kind::Axis, op, &["axis 0 is out of range for a tensor of rank 0 (shape [])"]);
    }
    assert_eq!(s.sum(&[0], false).unwrap().item().unwrap(), 1.0);
}

/// Results whose element count overflows (or, in WebAssembly, exceeds
/// `shape::MAX_ELEMENTS`) are `Memory` errors before anything is allocated: expanded
/// views cost nothing, so they can ask for absurd broadcast results.
#[test]
fn results_too_large_to_allocate_are_errors() {
    let big = 1usize << 33;
    let col = Tensor::ones(&[1, 1], DType::F32).unwrap().expand_dims(&[big, 1]).unwrap();
    let row = Tensor::ones(&[1, 1], DType::F32).unwrap().expand_dims(&[1, big]).unwrap();
    let facts = ["result of shape [8589934592, 8589934592] would have too many elements"];
    for (op, r) in [
        ("add", col.add(&row)),
        ("matmul", col.matmul(&row)),
        ("lt", col.lt(&row)),
        ("expand", col.expand_dims(&[big, big])),
    ] {
        expect_err(r, Kind::Memory, op, &facts);
    }
}
