//! In-place ops (values, version counter, gradients through them, the errors
//! that guard saved tensors and leaves), tensor hooks and retain_grad.

use skiff::{no_grad, DType, Result, Tensor};
use std::sync::{Arc, Mutex};

use crate::common::{assert_close, expect_err, leaf, t, vals, Kind};

fn grad_of(x: &Tensor) -> Vec<f64> {
    vals(&x.grad().expect("tensor has a gradient"))
}

const X: [f64; 3] = [0.5, -1.25, 2.0];

#[test]
fn inplace_ops_write_values_and_bump_the_version() -> Result<()> {
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let v0 = a.version();
    a.add_(&t(&[10.0, 20.0], &[2]))?; // broadcast source
    assert_eq!(vals(&a), vec![11.0, 22.0, 13.0, 24.0]);
    assert_eq!(a.version(), v0 + 1);
    a.sub_(&t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]))?;
    assert_eq!(vals(&a), vec![10.0, 20.0, 10.0, 20.0]);
    a.mul_(&t(&[0.5], &[1]))?;
    assert_eq!(vals(&a), vec![5.0, 10.0, 5.0, 10.0]);
    a.div_(&t(&[5.0, 2.0], &[2]))?;
    assert_eq!(vals(&a), vec![1.0, 5.0, 1.0, 5.0]);
    a.add_scalar_(1.0)?;
    a.mul_scalar_(2.0)?;
    assert_eq!(vals(&a), vec![4.0, 12.0, 4.0, 12.0]);
    assert_eq!(a.version(), v0 + 6);
    a.fill_(7.0)?;
    assert_eq!(vals(&a), vec![7.0; 4]);
    a.zero_()?;
    assert_eq!(vals(&a), vec![0.0; 4]);
    a.copy_(&t(&[1.0, 2.0], &[2]))?; // broadcast copy
    assert_eq!(vals(&a), vec![1.0, 2.0, 1.0, 2.0]);
    assert_eq!(a.version(), v0 + 9);
    // copy_ converts the dtype of its source.
    let f = Tensor::zeros(&[2], DType::F32)?;
    f.copy_(&t(&[1.5, -2.0], &[2]))?;
    assert_eq!(f.to_vec::<f32>()?, vec![1.5, -2.0]);
    // The in-place result cannot broadcast the destination.
    let r = t(&[1.0], &[1]).add_(&t(&[1.0, 2.0], &[2]));
    expect_err(r, Kind::Shape, "add_", &["result has shape [2] but the destination has shape [1]"]);
    Ok(())
}

#[test]
fn inplace_writes_through_a_view_reach_the_base_and_share_its_version() -> Result<()> {
    let a = Tensor::arange(0.0, 6.0, 1.0, DType::F64)?.reshape(&[2, 3])?;
    let col = a.narrow(1, 1, 1)?; // a strided view
    let v0 = a.version();
    col.fill_(-1.0)?;
    assert_eq!(vals(&a), vec![0.0, -1.0, 2.0, 3.0, -1.0, 5.0]);
    assert_eq!(a.version(), v0 + 1, "views share the storage's version counter");
    let tr = a.transpose(0, 1)?;
    tr.add_(&t(&[100.0, 200.0], &[2]))?; // tr is [3, 2]: adds 100 to row 0 of a, 200 to row 1
    assert_eq!(vals(&a), vec![100.0, 99.0, 102.0, 203.0, 199.0, 205.0]);
    Ok(())
}

#[test]
fn gradient_flows_through_inplace_ops_on_non_leaves() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    y.mul_(&x)?;
    assert_eq!(y.grad_fn_name().as_deref(), Some("mul"), "the in-place op rebases y's history");
    y.sum_all()?.backward()?;
    let want: Vec<f64> = X.iter().map(|x| 4.0 * x).collect(); // d/dx 2x^2
    assert_close(&grad_of(&x), &want, 1e-12);

    // A chain of in-place updates: y = ((x + 1) * 3 - x) / 2 = x + 1.5
    let x = leaf(&X, &[3]);
    let y = x.add_scalar(1.0)?;
    y.mul_scalar_(3.0)?;
    y.sub_(&x)?;
    y.div_(&t(&[2.0], &[1]))?;
    assert_close(&vals(&y), &X.iter().map(|x| x + 1.5).collect::<Vec<_>>(), 1e-12);
    y.mul(&y)?.sum_all()?.backward()?; // d/dx (x + 1.5)^2
    assert_close(&grad_of(&x), &X.iter().map(|x| 2.0 * (x + 1.5)).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

#[test]
fn inplace_into_a_constant_from_a_tensor_requiring_grad_records_history() -> Result<()> {
    let x = leaf(&X, &[3]);
    let buf = Tensor::zeros(&[3], DType::F64)?;
    buf.add_(&x.mul(&x)?)?;
    assert!(buf.requires_grad());
    buf.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &X.iter().map(|x| 2.0 * x).collect::<Vec<_>>(), 1e-12);

    let x = leaf(&X, &[3]);
    let buf = Tensor::ones(&[3], DType::F64)?;
    buf.copy_(&x)?;
    assert_eq!(vals(&buf), X.to_vec());
    buf.mul(&buf)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &X.iter().map(|x| 2.0 * x).collect::<Vec<_>>(), 1e-12);
    Ok(())
}

#[test]
fn fill_zero_and_copy_on_non_leaves_cut_the_old_values_gradient() -> Result<()> {
    let x = leaf(&X, &[3]);
    let w = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul_scalar(2.0)?;
    y.copy_(&w)?; // y's old value (from x) no longer matters
    y.mul(&y)?.sum_all()?.backward()?;
    assert_close(&grad_of(&w), &[2.0, 4.0, 6.0], 1e-12);
    assert_close(&x.grad().map(|g| vals(&g)).unwrap_or(vec![0.0; 3]), &[0.0; 3], 0.0);

    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    y.fill_(3.0)?;
    assert_eq!(vals(&y), vec![3.0; 3]);
    y.mul(&x)?.sum_all()?.backward()?; // d/dx (3 * x) with y constant
    assert_close(&grad_of(&x), &[3.0; 3], 1e-12);

    // As in PyTorch, the (zero) gradient still reaches the node that saved the
    // overwritten value, and that node refuses to run.
    let x = leaf(&X, &[3]);
    let y = x.exp()?;
    y.fill_(3.0)?;
    let facts = ["saved tensor 0 of 'exp' (shape [3], dtype f64)", "version 1 now, 0 when saved"];
    expect_err(y.mul(&x)?.sum_all()?.backward(), Kind::Autograd, "exp", &facts);

    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(5.0)?;
    y.zero_()?;
    y.add(&x)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[1.0; 3], 1e-12);
    Ok(())
}

#[test]
fn inplace_on_a_leaf_that_requires_grad_is_an_error_unless_no_grad() -> Result<()> {
    let x = leaf(&X, &[3]);
    let v0 = x.version();
    for (name, r) in [
        ("add_", x.add_(&t(&[1.0; 3], &[3]))),
        ("mul_scalar_", x.mul_scalar_(2.0)),
        ("fill_", x.fill_(0.0)),
        ("zero_", x.zero_()),
        ("copy_", x.copy_(&t(&[1.0; 3], &[3]))),
    ] {
        expect_err(r, Kind::Autograd, name, &["leaf tensor that requires grad (shape [3])", "no_grad"]);
    }
    assert_eq!(vals(&x), X.to_vec(), "a rejected in-place op leaves the values alone");
    assert_eq!(x.version(), v0);
    // The optimizer-style update under no_grad works and keeps x a leaf.
    no_grad(|| x.sub_(&t(&[0.5; 3], &[3]))).unwrap();
    assert_eq!(vals(&x), vec![0.0, -1.75, 1.5]);
    assert_eq!(x.version(), v0 + 1);
    assert!(x.is_leaf() && x.requires_grad());
    no_grad(|| x.zero_()).unwrap();
    assert_eq!(vals(&x), vec![0.0; 3]);
    Ok(())
}

#[test]
fn overwriting_a_saved_tensor_makes_backward_fail_naming_the_op() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.sigmoid()?; // saves its output
    y.add_scalar_(1.0)?;
    let facts = ["saved tensor 0 of 'sigmoid' (shape [3], dtype f64)", "in-place", "version 1 now, 0 when saved"];
    expect_err(y.sum_all()?.backward(), Kind::Autograd, "sigmoid", &facts);

    // A saved input overwritten through a no_grad alias is caught too.
    let x = leaf(&X, &[3]);
    let h = x.mul_scalar(1.0)?;
    let z = h.sin()?; // saves h
    no_grad(|| h.detach().mul_scalar_(2.0)).unwrap();
    let facts = ["saved tensor 0 of 'sin' (shape [3], dtype f64)", "version 1 now, 0 when saved"];
    expect_err(z.sum_all()?.backward(), Kind::Autograd, "sin", &facts);

    // A constant operand of mul saved and then modified.
    let x = leaf(&X, &[3]);
    let c = t(&[1.0, 2.0, 3.0], &[3]);
    let z = x.mul(&c)?;
    c.add_scalar_(1.0)?;
    // mul saves both operands: x as saved tensor 0, the constant c as 1.
    let facts = ["saved tensor 1 of 'mul' (shape [3], dtype f64)", "version 1 now, 0 when saved"];
    expect_err(z.sum_all()?.backward(), Kind::Autograd, "mul", &facts);
    Ok(())
}

#[test]
fn inplace_on_a_view_of_a_tensor_requiring_grad_is_rejected() -> Result<()> {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = x.mul_scalar(1.0)?;
    let row = y.narrow(0, 0, 1)?;
    expect_err(row.mul_scalar_(2.0), Kind::Autograd, "mul_scalar_", &["view", "[1, 2]"]);
    Ok(())
}

#[test]
fn hooks_observe_and_replace_gradients_on_leaves() -> Result<()> {
    let x = leaf(&X, &[3]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    x.register_hook(move |g| {
        s.lock().unwrap().push(g.to_vec::<f64>().unwrap());
        None
    })?;
    x.register_hook(|g| Some(g.mul_scalar(2.0).unwrap()))?;
    x.mul(&x)?.sum_all()?.backward()?;
    assert_eq!(seen.lock().unwrap().clone(), vec![vec![1.0, -2.5, 4.0]], "the observer sees 2x");
    assert_close(&grad_of(&x), &[2.0, -5.0, 8.0], 1e-12);
    Ok(())
}

#[test]
fn hooks_on_non_leaves_change_what_flows_upstream() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(3.0)?;
    y.register_hook(|g| Some(g.mul_scalar(2.0).unwrap()))?;
    y.mul(&y)?.sum_all()?.backward()?;
    // dL/dy = 2y, doubled by the hook, times dy/dx = 3: 12 y = 36 x
    assert_close(&grad_of(&x), &X.iter().map(|x| 36.0 * x).collect::<Vec<_>>(), 1e-12);
    assert!(y.grad().is_none(), "a non-leaf keeps no .grad without retain_grad");
    Ok(())
}

#[test]
fn hooks_run_in_registration_order_and_can_be_removed() -> Result<()> {
    let order = Arc::new(Mutex::new(Vec::new()));
    let x = leaf(&[1.0], &[1]);
    let y = x.mul_scalar(1.0)?;
    let o1 = order.clone();
    let h1 = y.register_hook(move |g| {
        o1.lock().unwrap().push("times2");
        Some(g.mul_scalar(2.0).unwrap())
    })?;
    let o2 = order.clone();
    let h2 = y.register_hook(move |g| {
        o2.lock().unwrap().push("plus1");
        Some(g.add_scalar(1.0).unwrap())
    })?;
    let keep = skiff::BackwardOptions { retain_graph: true, create_graph: false };
    y.sum_all()?.backward_with(None, keep)?;
    assert_eq!(*order.lock().unwrap(), vec!["times2", "plus1"]);
    assert_close(&grad_of(&x), &[3.0], 0.0); // (1 * 2) + 1, not (1 + 1) * 2

    h1.remove();
    x.zero_grad();
    order.lock().unwrap().clear();
    let y2 = y.mul_scalar(1.0)?; // new graph over the same y node (y's hooks persist)
    y2.sum_all()?.backward_with(None, keep)?;
    assert_eq!(*order.lock().unwrap(), vec!["plus1"]);
    assert_close(&grad_of(&x), &[2.0], 0.0);

    h2.remove();
    x.zero_grad();
    y.mul_scalar(1.0)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[1.0], 0.0);

    // Removing a leaf hook.
    let x = leaf(&[1.0], &[1]);
    let h = x.register_hook(|g| Some(g.mul_scalar(10.0).unwrap()))?;
    x.mul_scalar(1.0)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[10.0], 0.0);
    h.remove();
    x.zero_grad();
    x.mul_scalar(1.0)?.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[1.0], 0.0);
    Ok(())
}

#[test]
fn hooks_apply_to_grad_results_and_bad_hooks_error() -> Result<()> {
    let x = leaf(&X, &[3]);
    x.register_hook(|g| Some(g.mul_scalar(-1.0).unwrap()))?;
    let g = skiff::grad(&[x.mul_scalar(2.0)?.sum_all()?], std::slice::from_ref(&x), None, Default::default())?;
    assert_close(&vals(g[0].as_ref().unwrap()), &[-2.0; 3], 0.0);

    let x = leaf(&X, &[3]);
    x.register_hook(|g| Some(g.sum_all().unwrap()))?; // wrong shape
    let facts = ["hook returned a gradient of shape [] and dtype f64, expected shape [3] and dtype f64"];
    expect_err(x.mul_scalar(2.0)?.sum_all()?.backward(), Kind::Shape, "register_hook", &facts);

    let c = t(&X, &[3]);
    // A constant cannot take a gradient hook.
    let facts = ["tensor of shape [3] that does not require grad"];
    expect_err(c.register_hook(|_| None).map(|_| ()), Kind::Autograd, "register_hook", &facts);
    Ok(())
}

#[test]
fn retain_grad_keeps_a_non_leaf_gradient() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    let z = x.mul_scalar(2.0)?;
    y.retain_grad()?;
    y.mul(&y)?.add(&z)?.sum_all()?.backward()?;
    assert_close(&grad_of(&y), &X.iter().map(|x| 4.0 * x).collect::<Vec<_>>(), 1e-12); // 2y
    assert!(z.grad().is_none());
    assert!(!y.grad().unwrap().requires_grad());
    assert_close(&grad_of(&x), &X.iter().map(|x| 8.0 * x + 2.0).collect::<Vec<_>>(), 1e-12);

    // Retained gradients accumulate like leaf gradients.
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    y.retain_grad()?;
    y.sum_all()?.backward_with(None, skiff::BackwardOptions { retain_graph: true, create_graph: false })?;
    y.sum_all()?.backward()?;
    assert_close(&grad_of(&y), &[2.0; 3], 0.0);
    // On a leaf it is a no-op.
    x.retain_grad()?;
    Ok(())
}

#[test]
fn inplace_on_a_tensor_no_node_saved_is_allowed() -> Result<()> {
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    let z = y.add_scalar(1.0)?; // add_scalar saves nothing
    no_grad(|| y.add_scalar_(100.0)).unwrap();
    z.sum_all()?.backward()?;
    assert_close(&grad_of(&x), &[2.0; 3], 0.0);
    Ok(())
}

#[test]
fn gradients_stored_in_dot_grad_never_alias_user_tensors() -> Result<()> {
    // add_scalar's backward passes the incoming gradient through unchanged, so
    // the leaf would receive the user's own output-gradient tensor.
    let x = leaf(&X, &[3]);
    let v = t(&[1.0, 2.0, 3.0], &[3]);
    x.add_scalar(1.0)?.backward_with(Some(&v), Default::default())?;
    v.fill_(0.0)?;
    assert_eq!(grad_of(&x), vec![1.0, 2.0, 3.0], "writing into v must not change x.grad");
    no_grad(|| x.grad().unwrap().mul_scalar_(10.0)).unwrap();
    assert_eq!(vals(&v), vec![0.0; 3], "an optimizer writing into x.grad must not change v");

    // The same for a retained non-leaf gradient.
    let x = leaf(&X, &[3]);
    let y = x.mul_scalar(2.0)?;
    y.retain_grad()?;
    let v = t(&[1.0, 2.0, 3.0], &[3]);
    y.backward_with(Some(&v), Default::default())?;
    v.fill_(0.0)?;
    assert_eq!(grad_of(&y), vec![1.0, 2.0, 3.0], "writing into v must not change y.grad");
    Ok(())
}
