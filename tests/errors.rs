//! Every user mistake returns `Err` (never a panic) with a message that names
//! the op and the offending shapes, dtypes or devices (DESIGN principle 6).

mod common;

use skiff::{grad, BackwardOptions, DType, Device, Error, GradOptions, Reduction, Result, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

fn f32s(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32)
}

fn ints(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// Unwraps the error and checks that its message contains every needle.
fn err_with<T: std::fmt::Debug>(r: Result<T>, needles: &[&str]) -> Error {
    let e = r.expect_err("expected an error");
    let msg = e.to_string();
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
    }
    e
}

#[test]
fn broadcast_mismatch_names_the_op_and_both_shapes() {
    let (a, b) = (f32s(&[2, 3]), f32s(&[4]));
    for (op, r) in
        [("add", a.add(&b)), ("sub", a.sub(&b)), ("mul", a.mul(&b)), ("div", a.div(&b)), ("maximum", a.maximum(&b))]
    {
        let e = err_with(r, &[op, "[2, 3]", "[4]"]);
        assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    }
    err_with(a.lt(&b), &["lt", "[2, 3]", "[4]"]);
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    err_with(Tensor::where_(&mask, &a, &a), &["where", "[2]", "[2, 3]"]);
    err_with(a.expand(&[4, 3]), &["expand", "[2, 3]", "[4, 3]"]);
    err_with(a.add_(&f32s(&[3, 3])), &["add_", "[2, 3]", "[3, 3]"]);
}

#[test]
fn matmul_inner_dimension_mismatch_shows_both_shapes() {
    let e = err_with(f32s(&[2, 3]).matmul(&f32s(&[4, 5])), &["matmul", "[2, 3]", "[4, 5]"]);
    assert!(matches!(e, Error::Shape { .. }));
    err_with(f32s(&[3]).matmul(&f32s(&[4])), &["matmul", "[3]", "[4]"]);
    err_with(f32s(&[2, 3]).matmul(&f32s(&[2])), &["matmul", "[2, 3]", "[2]"]);
    // Batch dims that do not broadcast.
    err_with(f32s(&[2, 2, 3]).matmul(&f32s(&[3, 3, 4])), &["matmul", "[2]", "[3]"]);
    err_with(f32s(&[]).matmul(&f32s(&[3])), &["matmul", "1-D"]);
}

#[test]
fn reshape_to_a_different_element_count() {
    let a = f32s(&[2, 3]);
    let e = err_with(a.reshape(&[4, 2]), &["reshape", "[2, 3]", "[4, 2]", "6 elements"]);
    assert!(matches!(e, Error::Shape { .. }));
    err_with(a.reshape(&[-1, 4]), &["reshape", "[2, 3]", "[-1, 4]"]);
    err_with(a.reshape(&[-1, -1]), &["reshape", "[-1, -1]"]);
    err_with(a.reshape_dims(&[7]), &["reshape", "[2, 3]", "[7]"]);
    err_with(a.view(&[5]), &["reshape", "[5]"]);
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
    ];
    for (op, axis, r) in cases {
        let e = err_with(r, &[op, &format!("axis {axis}"), "rank 2", "[2, 3]"]);
        assert!(matches!(e, Error::Axis { .. }), "{op}: {e:?}");
    }
    err_with(a.size(2), &["size", "axis 2"]);
    err_with(a.split(1, 3), &["split", "axis 3"]);
    err_with(a.permute(&[0, 2]), &["permute", "axis 2"]);
    // Narrow within a valid axis but past its end is a shape error.
    err_with(a.narrow(1, 2, 2), &["narrow", "[2, 3]"]);
}

#[test]
fn integer_tensors_cannot_require_grad() {
    let e = err_with(ints(&[1, 2], &[2]).requires_grad_(true), &["requires_grad_", "i32", "[2]"]);
    assert!(matches!(e, Error::DType { .. }));
    let mask = Tensor::from_bools(&[true], &[1]).unwrap();
    err_with(mask.requires_grad_(true), &["requires_grad_", "bool"]);
    // Turning it off is fine.
    assert!(ints(&[1], &[1]).requires_grad_(false).is_ok());
}

#[test]
fn backward_on_a_non_scalar_needs_an_output_gradient() {
    let x = f32s(&[2, 3]).requires_grad_(true).unwrap();
    let y = x.mul_scalar(2.0).unwrap();
    let e = err_with(y.backward(), &["backward", "scalar", "[2, 3]"]);
    assert!(matches!(e, Error::Autograd { .. }));
    // grad() needs one too.
    err_with(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), None, GradOptions::default()),
        &["grad", "[2, 3]"],
    );
    // And a tensor without history cannot be differentiated at all.
    err_with(f32s(&[]).backward(), &["backward", "does not require grad"]);
    err_with(
        grad(&[y.sum_all().unwrap()], &[f32s(&[2])], None, GradOptions::default()),
        &["grad", "input 0", "does not require grad"],
    );
}

#[test]
fn output_gradient_of_the_wrong_shape() {
    let x = f32s(&[2, 3]).requires_grad_(true).unwrap();
    let y = x.exp().unwrap();
    let e =
        err_with(y.backward_with(Some(&f32s(&[3, 2])), BackwardOptions::default()), &["backward", "[3, 2]", "[2, 3]"]);
    assert!(matches!(e, Error::Shape { .. }));
    err_with(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[f32s(&[6])]), GradOptions::default()),
        &["grad", "[6]", "[2, 3]"],
    );
    err_with(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[]), GradOptions::default()),
        &["grad", "0 grad_outputs for 1 outputs"],
    );
}

#[test]
fn second_backward_without_retain_graph() {
    let x = f32s(&[3]).requires_grad_(true).unwrap();
    let y = x.tanh().unwrap().sum_all().unwrap();
    y.backward().unwrap();
    let e = err_with(y.backward(), &["second time", "retain_graph"]);
    assert!(matches!(e, Error::Autograd { .. }));
}

#[test]
fn inplace_overwrite_of_a_saved_tensor() {
    let x = f32s(&[2, 2]).requires_grad_(true).unwrap();
    let y = x.exp().unwrap();
    y.mul_scalar_(2.0).unwrap();
    let e = err_with(y.sum_all().unwrap().backward(), &["exp", "in-place", "[2, 2]", "f32"]);
    assert!(matches!(e, Error::Autograd { .. }));
    err_with(x.add_scalar_(1.0), &["add_scalar_", "leaf", "[2, 2]"]);
}

#[test]
fn cross_entropy_label_out_of_range() {
    let logits = f32s(&[2, 3]);
    let e = err_with(
        logits.cross_entropy(&ints(&[0, 3], &[2]), Reduction::Mean, 0.0),
        &["cross_entropy", "label 3", "[0, 3)", "[2, 3]"],
    );
    assert!(matches!(e, Error::Value { .. }));
    err_with(logits.cross_entropy(&ints(&[-1, 0], &[2]), Reduction::Sum, 0.0), &["cross_entropy", "label -1"]);
    err_with(logits.cross_entropy(&ints(&[0, 1, 2], &[3]), Reduction::Mean, 0.0), &["cross_entropy", "[3]", "[2, 3]"]);
    err_with(logits.cross_entropy(&t(&[0.0, 1.0], &[2]), Reduction::Mean, 0.0), &["cross_entropy", "i32", "f64"]);
    err_with(f32s(&[3]).cross_entropy(&ints(&[0], &[1]), Reduction::Mean, 0.0), &["cross_entropy", "[3]"]);
    err_with(logits.nll_loss(&ints(&[0, 7], &[2]), Reduction::Mean), &["nll_loss", "label 7"]);
}

#[test]
fn device_errors_are_clear() {
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
    err_with(bogus, &["Device::best", "tpu", "cpu", "gpu"]);
    assert_eq!(cpu.unwrap(), Device::Cpu);
    match Device::gpu() {
        Ok(g) => {
            assert_eq!(forced.unwrap(), g);
            assert_eq!(auto, if g.is_software() { Device::Cpu } else { g });
        }
        Err(_) => {
            err_with(forced, &["gpu"]);
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
    ] {
        let e = err_with(r, &[op, "cpu", "gpu"]);
        assert!(matches!(e, Error::Device { .. }), "{op}: {e:?}");
    }
    err_with(Tensor::concat(&[a.clone(), b.clone()], 0), &["concat", "cpu", "gpu"]);
}

#[test]
fn dtype_mismatch_is_an_error_not_a_promotion() {
    let (a, b) = (f32s(&[2]), Tensor::ones(&[2], DType::F64));
    for (op, r) in [("add", a.add(&b)), ("mul", a.mul(&b)), ("matmul", a.matmul(&b)), ("eq", a.eq(&b))] {
        let e = err_with(r, &[op, "f32", "f64"]);
        assert!(matches!(e, Error::DType { .. }), "{op}: {e:?}");
    }
    err_with(Tensor::concat(&[a.clone(), b.clone()], 0), &["concat", "f32", "f64"]);
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    err_with(Tensor::where_(&mask, &a, &b), &["where", "f32", "f64"]);
    err_with(Tensor::where_(&a, &a, &a), &["where", "bool", "f32"]);
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
        let e = err_with(r, &[op, "i32", "[3]"]);
        assert!(matches!(e, Error::DType { .. }), "{op}: {e:?}");
    }
    err_with(Tensor::linspace(0.0, 1.0, 3, DType::I32), &["linspace", "i32"]);
}

#[test]
fn creation_and_readback_errors() {
    let e = err_with(Tensor::from_vec(vec![1.0f32; 5], &[2, 3]), &["from_vec", "5 elements", "[2, 3]", "6 elements"]);
    assert!(matches!(e, Error::Shape { .. }));
    err_with(Tensor::from_slice(&[1i32, 2], &[3]), &["from_vec", "2 elements", "[3]"]);
    err_with(f32s(&[2]).item(), &["item", "[2]"]);
    err_with(f32s(&[2, 3]).to_vec::<f64>(), &["to_vec", "f64", "f32", "[2, 3]"]);
    err_with(Tensor::arange(0.0, 1.0, 0.0, DType::F32), &["arange", "step=0"]);
    err_with(Tensor::randint(3, 3, &[2]), &["randint", "[3, 3)"]);
}

#[test]
fn movement_misuse() {
    let a = f32s(&[2, 3]);
    err_with(Tensor::concat(&[a.clone(), f32s(&[3, 3])], 1), &["concat", "[2, 3]", "[3, 3]"]);
    err_with(Tensor::concat(&[], 0), &["concat", "at least one"]);
    err_with(Tensor::stack(&[a.clone(), f32s(&[3, 2])], 0), &["stack", "[2, 3]", "[3, 2]"]);
    err_with(a.permute(&[0, 0]), &["permute", "not a permutation"]);
    err_with(a.permute(&[0]), &["permute", "[0]", "[2, 3]"]);
    err_with(a.slice(0, 0, 2, 0), &["slice", "step"]);
    err_with(a.split(0, 0), &["split", "at least 1"]);
    err_with(a.split_sizes(&[1, 1], 1), &["split", "[1, 1]", "[2, 3]"]);
    err_with(a.chunk(0, 0), &["chunk", "at least 1"]);
    err_with(a.pad(&[(1, 1), (1, 1), (1, 1)], 0.0), &["pad", "rank 2", "[2, 3]"]);
    err_with(a.flatten(1, 0), &["flatten", "after"]);
    err_with(f32s(&[3]).sum_to(&[2]), &["sum_to", "[3]", "[2]"]);
    err_with(f32s(&[3]).mse_loss(&f32s(&[4]), Reduction::Mean), &["mse_loss", "[3]", "[4]"]);
    err_with(f32s(&[0, 3]).max(&[0], false), &["max", "empty", "[0, 3]"]);
}

#[test]
fn errors_are_values_that_compare_and_clone() {
    let e1 = f32s(&[2, 3]).add(&f32s(&[4])).unwrap_err();
    let e2 = e1.clone();
    assert_eq!(e1, e2);
    assert!(format!("{e1:?}").contains("Shape"));
    let boxed: Box<dyn std::error::Error> = Box::new(e1);
    assert!(boxed.to_string().starts_with("add: "));
}

#[test]
fn expand_rejects_negative_and_new_minus_one_sizes() {
    // -1 keeps an existing size; it is meaningless for a new leading axis.
    err_with(f32s(&[3]).expand(&[-1, 3]), &["expand", "[3]", "-1"]);
    err_with(f32s(&[3]).expand(&[-2, 3]), &["expand", "-2"]);
    err_with(f32s(&[1, 3]).expand(&[-3, 3]), &["expand", "-3"]);
    assert_eq!(f32s(&[1, 3]).expand(&[2, -1]).unwrap().shape(), &[2, 3]);
}

#[test]
fn inplace_errors_name_the_inplace_op() {
    err_with(f32s(&[2, 2]).copy_(&f32s(&[3])), &["copy_", "[3]", "[2, 2]"]);
    err_with(f32s(&[2]).mul_(&Tensor::ones(&[2], DType::F64)), &["mul_", "f32", "f64"]);
    err_with(ints(&[1, 2], &[2]).add_scalar_(1.0), &["add_scalar_", "i32"]);
}

#[test]
fn gradients_of_the_wrong_dtype_are_rejected() {
    let x = Tensor::ones(&[3], DType::F64).requires_grad_(true).unwrap();
    let y = x.add_scalar(1.0).unwrap();
    let g32 = f32s(&[3]);
    err_with(y.backward_with(Some(&g32), BackwardOptions::default()), &["backward", "f32", "f64"]);
    assert!(x.grad().is_none(), "a rejected backward leaves .grad alone");
    err_with(
        grad(std::slice::from_ref(&y), std::slice::from_ref(&x), Some(&[g32]), GradOptions::default()),
        &["grad", "f32", "f64"],
    );
    // A hook that returns another dtype.
    x.register_hook(|g| Some(g.to_dtype(DType::F32).unwrap())).unwrap();
    let r = x.add_scalar(1.0).unwrap().sum_all().unwrap().backward();
    err_with(r, &["hook", "f32", "f64"]);
}

#[test]
fn inplace_writes_into_an_expanded_view_are_rejected() {
    // Several elements of an expanded view share one memory location, so an
    // in-place write would silently keep only one of them.
    let base = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
    let ex = base.expand(&[2, 3]).unwrap();
    let other = Tensor::from_slice(&[1.0f32, 1.0, 1.0, 2.0, 2.0, 2.0], &[2, 3]).unwrap();
    err_with(ex.add_(&other), &["add_", "[2, 3]", "memory"]);
    err_with(ex.fill_(0.0), &["fill_", "[2, 3]"]);
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
    let errs = [
        s.transpose(0, 0).err(),
        s.transpose(0, -1).err(),
        s.slice(0, 0, 1, 1).err(),
        s.narrow(0, 0, 1).err(),
        s.split(1, 0).err(),
        s.chunk(1, 0).err(),
        Tensor::concat(&[s.clone(), s.clone()], 0).err(),
    ];
    for (i, e) in errs.into_iter().enumerate() {
        let e = e.unwrap_or_else(|| panic!("case {i} accepted a 0-d tensor"));
        assert!(e.to_string().contains("axis") || e.to_string().contains("0-d"), "case {i}: {e}");
    }
    assert_eq!(s.sum(&[0], false).unwrap().item().unwrap(), 1.0);
}

/// Results whose element count overflows (or, in WebAssembly, exceeds
/// `shape::MAX_ELEMENTS`) are errors before anything is allocated: expanded
/// views cost nothing, so they can ask for absurd broadcast results.
#[test]
fn results_too_large_to_allocate_are_errors() {
    let big = 1usize << 33;
    let col = Tensor::ones(&[1, 1], DType::F32).expand_dims(&[big, 1]).unwrap();
    let row = Tensor::ones(&[1, 1], DType::F32).expand_dims(&[1, big]).unwrap();
    for (op, r) in [("add", col.add(&row)), ("matmul", col.matmul(&row)), ("lt", col.lt(&row))] {
        let e = r.err().unwrap_or_else(|| panic!("{op} of [2^33, 1] and [1, 2^33] was accepted")).to_string();
        assert!(e.starts_with(op) && e.contains("elements"), "{op}: {e}");
    }
    let e = col.expand_dims(&[big, big]).expect_err("expand to 2^66 elements").to_string();
    assert!(e.contains("expand") && e.contains("elements"), "{e}");
}
