//! Each registry entry's `forward` (its arguments as data, as the generated
//! JS methods and functions call it) computes what the typed Rust method
//! does, applies the signature's defaults and argument rules (F.pad order,
//! Python slice bounds, a pool's stride defaulting to its kernel), and
//! refuses what the typed method cannot express.

use skiff::ops::args::{Args, Value};
use skiff::ops::signature::Signature;
use skiff::{DType, Device, Tensor};

/// Runs the forward of registry entry `name` on `this` and `given` (one per
/// parameter in order: `None` takes the default).
fn call(name: &str, this: Option<&Tensor>, given: Vec<Option<Value>>) -> skiff::Result<Tensor> {
    let def = skiff::ops::registry().into_iter().find(|d| d.name == name).unwrap_or_else(|| panic!("no op {name}"));
    let sig = Signature::parse(def.signature).unwrap();
    let args = Args::bind(def, &sig, this.cloned(), given)?;
    let outs = def.forward.unwrap_or_else(|| panic!("{name} has no forward")).run(&args)?;
    Ok(outs.into_iter().next().expect("a forward gives a tensor"))
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_f32_vec().unwrap()
}

fn range(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>(), shape).unwrap()
}

#[test]
fn movement_forwards_match_the_methods() {
    let x = range(&[2, 3]);
    let r = call("reshape", Some(&x), vec![Some(Value::Ints(vec![3, -1]))]).unwrap();
    assert_eq!(r.shape(), &[3, 2]);
    assert_eq!(call("reshape", Some(&x), vec![Some(Value::Int(-1))]).unwrap().shape(), &[6]);
    let e = call("expand", Some(&range(&[3, 1])), vec![Some(Value::Ints(vec![2, -1, 4]))]).unwrap();
    assert_eq!(e.shape(), &[2, 3, 4]);
    // Python bounds: start and end default to the whole axis, negatives count from the end.
    let v = range(&[5]);
    let s =
        call("slice", Some(&v), vec![Some(Value::Int(0)), Some(Value::Int(-4)), None, Some(Value::Int(2))]).unwrap();
    assert_eq!(f32s(&s), vec![1.0, 3.0]);
    let all = call("slice", Some(&v), vec![Some(Value::Int(0)), Some(Value::None), Some(Value::None), None]).unwrap();
    assert_eq!(f32s(&all), f32s(&v));
    let bad = call("slice", Some(&v), vec![Some(Value::Int(0)), None, None, Some(Value::Int(-1))]).unwrap_err();
    assert!(bad.to_string().contains("step must be at least 1, got -1"), "{bad}");
    let moved = call("to_device", Some(&v), vec![Some(Value::Device(Device::Cpu))]).unwrap();
    assert_eq!(f32s(&moved), f32s(&v));
}

#[test]
fn a_huge_step_selects_one_element_without_overflow() {
    let v = range(&[4]);
    let s = v.slice(0, 1, 4, usize::MAX).unwrap();
    assert_eq!(f32s(&s.contiguous().unwrap()), vec![1.0]);
    let scalar = Tensor::scalar(1.0, DType::F32);
    assert!(matches!(scalar.slice(0, 0, 1, 1), Err(skiff::Error::Axis { op: "slice", ndim: 0, .. })));
}

#[test]
fn pad_takes_f_pad_order_and_checks_its_value() {
    let x = range(&[1, 2]);
    // [left, right, top, bottom]: the last dim's pair first.
    let p = call("pad", Some(&x), vec![Some(Value::Ints(vec![1, 0, 0, 1])), Some(Value::Float(9.0))]).unwrap();
    assert_eq!(p.shape(), &[2, 3]);
    assert_eq!(f32s(&p), vec![9.0, 0.0, 1.0, 9.0, 9.0, 9.0]);
    assert_eq!(f32s(&p), f32s(&x.pad(&[(0, 1), (1, 0)], 9.0).unwrap()));
    let odd = call("pad", Some(&x), vec![Some(Value::Ints(vec![1])), None]).unwrap_err();
    assert!(odd.to_string().contains("pairs"), "{odd}");
    let ints = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let frac = call("pad", Some(&ints), vec![Some(Value::Ints(vec![1, 1])), Some(Value::Float(0.5))]).unwrap_err();
    assert!(frac.to_string().contains("0.5"), "{frac}");
    // Negative padding (cropping) is not a size: refused when binding.
    assert!(call("pad", Some(&x), vec![Some(Value::Ints(vec![-1, 0])), None]).is_err());
}

#[test]
fn joining_and_selecting_forwards() {
    let (a, b) = (range(&[2]), range(&[3]));
    let c = call("concat", None, vec![Some(Value::Tensors(vec![a.clone(), b.clone()])), None]).unwrap();
    assert_eq!(f32s(&c), vec![0.0, 1.0, 0.0, 1.0, 2.0]);
    let s = Tensor::scalar(1.0, DType::F32);
    let e = call("concat", None, vec![Some(Value::Tensors(vec![a.clone(), s])), None]).unwrap_err().to_string();
    assert!(e.contains("tensors[1] is zero-dimensional"), "{e}");
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    let w = call(
        "where",
        None,
        vec![Some(Value::Tensor(mask.clone())), Some(Value::Tensor(a.clone())), Some(Value::Float(7.0))],
    );
    assert_eq!(f32s(&w.unwrap()), vec![0.0, 7.0]);
    let both =
        call("where", None, vec![Some(Value::Tensor(mask.clone())), Some(Value::Float(1.0)), Some(Value::Float(2.0))])
            .unwrap();
    assert_eq!((both.dtype(), f32s(&both)), (DType::F32, vec![1.0, 2.0]));
    let ints = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let frac = call("where", None, vec![Some(Value::Tensor(mask)), Some(Value::Tensor(ints)), Some(Value::Float(2.5))]);
    assert!(frac.unwrap_err().to_string().contains("2.5"));
}

#[test]
fn window_forwards_match_the_methods() {
    let x = range(&[1, 1, 4, 4]);
    let w = range(&[2, 1, 3, 3]);
    let conv =
        call("conv2d", Some(&x), vec![Some(Value::Tensor(w.clone())), None, None, Some(Value::Int(1)), None, None])
            .unwrap();
    assert_eq!(f32s(&conv), f32s(&x.conv2d(&w, None, [1, 1], [1, 1], [1, 1], 1).unwrap()));
    let groups = call("conv2d", Some(&x), vec![Some(Value::Tensor(w)), None, None, None, None, Some(Value::Int(-1))]);
    assert!(groups.unwrap_err().to_string().contains("groups"));
    // The stride of a pool defaults to its kernel.
    let m = call("max_pool2d", Some(&x), vec![Some(Value::Int(2)), None, None, None, None]).unwrap();
    assert_eq!(f32s(&m), vec![5.0, 7.0, 13.0, 15.0]);
    let a =
        call("avg_pool2d", Some(&x), vec![Some(Value::Pair([2, 2])), Some(Value::Int(2)), None, None, None]).unwrap();
    assert_eq!(f32s(&a), f32s(&x.avg_pool2d([2, 2], [2, 2], [0, 0]).unwrap()));
    let i = call("max_pool2d_indices", Some(&x), vec![Some(Value::Int(2)), None, None, None, None]).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![5, 7, 13, 15]);
    // ceil_mode and dilation exist in the signature with the one value skiff has.
    let ceil = call("max_pool2d", Some(&x), vec![Some(Value::Int(2)), None, None, None, Some(Value::Bool(true))]);
    assert!(ceil.unwrap_err().to_string().contains("ceil_mode"));
    let dil = call("max_pool2d", Some(&x), vec![Some(Value::Int(2)), None, None, Some(Value::Int(2)), None]);
    assert!(dil.unwrap_err().to_string().contains("dilation"));
    let cols =
        call("unfold2d", None, vec![Some(Value::Tensor(x.clone())), Some(Value::Int(2)), None, None, None]).unwrap();
    assert_eq!(cols.shape(), &[1, 4, 9]);
    let back = call(
        "fold2d",
        None,
        vec![Some(Value::Tensor(cols.clone())), Some(Value::Int(4)), Some(Value::Int(2)), None, None, None],
    )
    .unwrap();
    assert_eq!(f32s(&back), f32s(&cols.fold2d([4, 4], [2, 2], [1, 1], [0, 0], [1, 1]).unwrap()));
}

#[test]
fn einsum_and_scatter_forwards_take_strings_and_lists() {
    let (a, b) = (range(&[2, 3]), range(&[3, 2]));
    let eq = |s: &str| Some(Value::Str(s.to_string()));
    let product = call("einsum", None, vec![eq("ij,jk->ik"), Some(Value::Tensors(vec![a.clone(), b.clone()]))]);
    assert_eq!(f32s(&product.unwrap()), f32s(&a.matmul(&b).unwrap()));
    let bad = call("einsum", None, vec![eq("ij,jk->ik"), Some(Value::Tensors(vec![a.clone()]))]).unwrap_err();
    assert!(bad.to_string().starts_with("einsum: equation \"ij,jk->ik\": 2 terms for 1 operands"), "{bad}");
    // include_self defaults to True, as in PyTorch; reduce is one of five names.
    let index = Tensor::from_vec(vec![0i32, 0, 0], &[1, 3]).unwrap();
    let src = Tensor::from_vec(vec![-1.0f32, 9.0, 4.0], &[1, 3]).unwrap();
    let args = |reduce: &str| {
        vec![Some(Value::Int(0)), Some(Value::Tensor(index.clone())), Some(Value::Tensor(src.clone())), eq(reduce)]
    };
    let amax = call("scatter_reduce", Some(&a), args("amax")).unwrap();
    assert_eq!(f32s(&amax), vec![0.0, 9.0, 4.0, 3.0, 4.0, 5.0]);
    assert!(call("scatter_reduce", Some(&a), args("max")).is_err(), "'max' is not one of the reduce names");
    let rows = Tensor::from_vec(vec![1i32, 1], &[2]).unwrap();
    let put = call(
        "index_put",
        Some(&a),
        vec![Some(Value::Tensors(vec![rows])), Some(Value::Tensor(range(&[2, 3]).mul_scalar(10.0).unwrap())), None],
    )
    .unwrap();
    // Without accumulate the last of the repeated row 1 wins.
    assert_eq!(f32s(&put), vec![0.0, 1.0, 2.0, 30.0, 40.0, 50.0]);
}
