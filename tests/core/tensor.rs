//! Tensor creation, the seeded generator, readback and Display/Debug.

use crate::common;
use crate::common::{expect_err, Kind};
use skiff::{manual_seed, DType, Device, Tensor};

fn vals(x: &Tensor) -> Vec<f64> {
    x.to_f64_vec().unwrap()
}

#[test]
fn filled_tensors() {
    let z = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    assert_eq!((z.shape(), z.dtype(), z.numel(), z.ndim()), (&[2usize, 3][..], DType::F32, 6, 2));
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    assert_eq!(z.device(), Device::Cpu);
    assert!(z.is_contiguous() && !z.requires_grad() && z.is_leaf());
    assert_eq!(Tensor::ones(&[3], DType::F64).unwrap().to_vec::<f64>().unwrap(), vec![1.0; 3]);
    assert_eq!(Tensor::full(&[2], 2.5, DType::F64).unwrap().to_vec::<f64>().unwrap(), vec![2.5; 2]);
    assert_eq!(Tensor::full(&[2], 7.0, DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![7, 7]);
    assert_eq!(Tensor::ones(&[2], DType::Bool).unwrap().to_vec::<u8>().unwrap(), vec![1, 1]);
    let like = Tensor::zeros(&[2, 2], DType::F64).unwrap();
    assert_eq!(like.ones_like().unwrap().to_vec::<f64>().unwrap(), vec![1.0; 4]);
    assert_eq!(like.full_like(-3.0).unwrap().to_vec::<f64>().unwrap(), vec![-3.0; 4]);
    assert_eq!(like.ones_like().unwrap().zeros_like().unwrap().dtype(), DType::F64);
    let e = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!((e.numel(), e.shape()), (0, &[0usize, 3][..]));
    assert!(e.to_vec::<f32>().unwrap().is_empty());
    assert_eq!(e.size(-1).unwrap(), 3);
}

#[test]
fn scalars() {
    let s = Tensor::scalar(3.5, DType::F64);
    assert_eq!(s.shape(), &[] as &[usize]);
    assert_eq!((s.ndim(), s.numel()), (0, 1));
    assert_eq!(s.item().unwrap(), 3.5);
    let f: Tensor = 2.0f32.into();
    assert_eq!((f.dtype(), f.item().unwrap()), (DType::F32, 2.0));
    let d: Tensor = 2.0f64.into();
    assert_eq!(d.dtype(), DType::F64);
    assert_eq!(Tensor::scalar(1.0, DType::I32).item().unwrap(), 1.0);
    assert_eq!(s.scalar_like(1.0).unwrap().dtype(), DType::F64);
    assert_eq!(Tensor::ones(&[1, 1, 1], DType::F32).unwrap().item().unwrap(), 1.0);
}

#[test]
fn arange_with_positive_negative_and_fractional_steps() {
    assert_eq!(vals(&Tensor::arange(0.0, 5.0, 1.0, DType::F64).unwrap()), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(vals(&Tensor::arange(5.0, 0.0, -1.5, DType::F64).unwrap()), vec![5.0, 3.5, 2.0, 0.5]);
    assert_eq!(vals(&Tensor::arange(2.0, -2.0, -1.0, DType::F32).unwrap()), vec![2.0, 1.0, 0.0, -1.0]);
    let f = Tensor::arange(0.0, 1.0, 0.1, DType::F64).unwrap();
    assert_eq!(f.shape(), &[10]);
    assert!((vals(&f)[9] - 0.9).abs() < 1e-12);
    let i = Tensor::arange(1.0, 10.0, 3.0, DType::I32).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, 4, 7]);
    // An empty range (step pointing away from end) is empty, not an error.
    assert_eq!(Tensor::arange(0.0, 5.0, -1.0, DType::F64).unwrap().shape(), &[0]);
    assert_eq!(Tensor::arange(3.0, 3.0, 1.0, DType::F64).unwrap().shape(), &[0]);
    let r = Tensor::arange(0.0, f64::INFINITY, 1.0, DType::F64);
    expect_err(r, Kind::Value, "arange", &["invalid range start=0 end=inf step=1"]);
}

#[test]
fn linspace_and_eye() {
    assert_eq!(vals(&Tensor::linspace(0.0, 1.0, 5, DType::F64).unwrap()), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(vals(&Tensor::linspace(2.0, -2.0, 3, DType::F32).unwrap()), vec![2.0, 0.0, -2.0]);
    assert_eq!(vals(&Tensor::linspace(4.0, 9.0, 1, DType::F64).unwrap()), vec![4.0]);
    assert_eq!(Tensor::linspace(0.0, 1.0, 0, DType::F64).unwrap().shape(), &[0]);
    let l = vals(&Tensor::linspace(-1.0, 1.0, 101, DType::F64).unwrap());
    assert_eq!((l[0], l[100]), (-1.0, 1.0), "both ends are exact");
    let e = Tensor::eye(3, DType::F32).unwrap();
    assert_eq!(e.shape(), &[3, 3]);
    assert_eq!(vals(&e), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(Tensor::eye(0, DType::F64).unwrap().shape(), &[0, 0]);
}

#[test]
fn from_vec_and_from_slice() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!((a.dtype(), a.shape()), (DType::F32, &[2usize, 3][..]));
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = Tensor::from_slice(&[1.5f64, -2.0], &[2, 1]).unwrap();
    assert_eq!((b.dtype(), b.to_vec::<f64>().unwrap()), (DType::F64, vec![1.5, -2.0]));
    let i = Tensor::from_slice(&[3i32, -4], &[2]).unwrap();
    assert_eq!(i.dtype(), DType::I32);
    assert_eq!(i.to_f32_vec().unwrap(), vec![3.0, -4.0]);
    let m = Tensor::from_bools(&[true, false, true], &[3]).unwrap();
    assert_eq!(m.dtype(), DType::Bool);
    assert_eq!(m.to_f64_vec().unwrap(), vec![1.0, 0.0, 1.0]);
    assert_eq!(Tensor::from_vec(vec![7.0f64], &[]).unwrap().item().unwrap(), 7.0);
    assert!(Tensor::from_vec(Vec::<f32>::new(), &[0, 5]).is_ok());
    // Clones share the tensor; detach makes a new handle on the same data.
    let c = a.clone();
    assert!(c.same_tensor(&a));
    assert!(!a.detach().same_tensor(&a));
}

#[test]
fn to_vec_checks_the_dtype() {
    let a = Tensor::ones(&[2], DType::F32).unwrap();
    let dtype_err = |r: skiff::Result<_>, fact: &str| expect_err(r, Kind::DType, "to_vec", &[fact]);
    dtype_err(a.to_vec::<f64>().map(|_| ()), "requested f64 elements from a f32 tensor of shape [2]");
    dtype_err(a.to_vec::<i32>().map(|_| ()), "requested i32 elements from a f32 tensor of shape [2]");
    dtype_err(
        Tensor::ones(&[2], DType::I32).unwrap().to_vec::<f32>().map(|_| ()),
        "requested f32 elements from a i32 tensor",
    );
    dtype_err(
        Tensor::ones(&[2], DType::Bool).unwrap().to_vec::<i32>().map(|_| ()),
        "requested i32 elements from a bool tensor",
    );
    // to_f64_vec / to_f32_vec convert any dtype.
    assert_eq!(a.to_f64_vec().unwrap(), vec![1.0, 1.0]);
    assert_eq!(Tensor::ones(&[2], DType::F64).unwrap().to_f32_vec().unwrap(), vec![1.0, 1.0]);
    // Conversions between dtypes.
    let f = Tensor::from_slice(&[1.7f64, -1.7, 0.0], &[3]).unwrap();
    assert_eq!(f.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -1, 0]);
    assert_eq!(f.to_dtype(DType::Bool).unwrap().to_vec::<u8>().unwrap(), vec![1, 1, 0]);
    assert_eq!(f.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![1.7f32, -1.7, 0.0]);
}

#[test]
fn rand_is_in_the_unit_interval() {
    if !common::own_process() {
        return;
    }
    manual_seed(11);
    let r = Tensor::rand(&[100, 100], DType::F64).unwrap();
    assert_eq!(r.shape(), &[100, 100]);
    let v = vals(&r);
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    assert!(v.iter().any(|&x| x < 0.01) && v.iter().any(|&x| x > 0.99));
    let r32 = Tensor::rand(&[1000], DType::F32).unwrap();
    assert_eq!(r32.dtype(), DType::F32);
    assert!(r32.to_vec::<f32>().unwrap().iter().all(|&x| (0.0..=1.0).contains(&x)));
    let u = vals(&Tensor::uniform(&[1000], -2.0, 3.0, DType::F64).unwrap());
    assert!(u.iter().all(|&x| (-2.0..3.0).contains(&x)));
}

#[test]
fn randn_has_standard_moments() {
    if !common::own_process() {
        return;
    }
    manual_seed(12);
    let v = vals(&Tensor::randn(&[40_000], DType::F64).unwrap());
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
    let skew = v.iter().map(|x| (x - m).powi(3)).sum::<f64>() / n;
    let kurt = v.iter().map(|x| (x - m).powi(4)).sum::<f64>() / n;
    assert!(m.abs() < 0.03, "mean {m}");
    assert!((var - 1.0).abs() < 0.03, "variance {var}");
    assert!(skew.abs() < 0.1, "skewness {skew}");
    assert!((kurt - 3.0).abs() < 0.15, "kurtosis {kurt}");
    assert!(v.iter().all(|x| x.is_finite()));
}

#[test]
fn randint_stays_in_range_and_covers_it() {
    if !common::own_process() {
        return;
    }
    manual_seed(13);
    let r = Tensor::randint(-3, 4, &[20, 50]).unwrap();
    assert_eq!((r.dtype(), r.shape()), (DType::I32, &[20usize, 50][..]));
    let v = r.to_vec::<i32>().unwrap();
    assert!(v.iter().all(|&x| (-3..4).contains(&x)));
    for k in -3..4 {
        assert!(v.contains(&k), "value {k} never drawn");
    }
    assert_eq!(Tensor::randint(5, 6, &[10]).unwrap().to_vec::<i32>().unwrap(), vec![5; 10]);
    assert!(Tensor::randint(i32::MIN, i32::MAX, &[100]).is_ok());
}

#[test]
fn manual_seed_makes_draws_reproducible() {
    if !common::own_process() {
        return;
    }
    let draw = |seed: u64| {
        manual_seed(seed);
        (
            vals(&Tensor::rand(&[8], DType::F64).unwrap()),
            vals(&Tensor::randn(&[8], DType::F32).unwrap()),
            Tensor::randint(0, 1000, &[8]).unwrap().to_vec::<i32>().unwrap(),
        )
    };
    let a = draw(42);
    let b = draw(42);
    let c = draw(43);
    assert_eq!(a, b, "same seed, same values");
    assert_ne!(a.0, c.0, "different seeds differ");
    assert_ne!(a.1, c.1);
    assert_ne!(a.2, c.2);
    // Draws after the seed continue one stream (not repeated).
    manual_seed(42);
    let first = vals(&Tensor::rand(&[8], DType::F64).unwrap());
    let second = vals(&Tensor::rand(&[8], DType::F64).unwrap());
    assert_eq!(first, a.0);
    assert_ne!(first, second);
}

#[test]
fn display_shows_shape_dtype_device_and_values() {
    let a = Tensor::from_slice(&[1.0f32, 2.5, -3.0, 4.0], &[2, 2]).unwrap();
    let s = a.to_string();
    for needle in ["tensor(", "[[1.0000, 2.5000]", "[-3.0000, 4.0000]]", "shape=[2, 2]", "dtype=f32", "device=cpu"] {
        assert!(s.contains(needle), "{s:?} lacks {needle:?}");
    }
    assert!(!s.contains("..."));
    assert_eq!(format!("{a:?}"), s, "Debug shows the same");
    let i = Tensor::from_slice(&[1i32, -2, 3], &[3]).unwrap().to_string();
    assert!(i.contains("[1, -2, 3]") && i.contains("dtype=i32"), "{i}");
    let b = Tensor::from_bools(&[true, false], &[2]).unwrap().to_string();
    assert!(b.contains("[true, false]") && b.contains("dtype=bool"), "{b}");
    let sc = Tensor::scalar(3.0, DType::F64).to_string();
    assert!(sc.contains("tensor(3.0000") && sc.contains("shape=[]") && sc.contains("dtype=f64"), "{sc}");
    // Autograd state is shown.
    let x = Tensor::ones(&[2], DType::F32).unwrap().requires_grad_(true).unwrap();
    assert!(x.to_string().contains("requires_grad=true"), "{x}");
    let y = x.mul(&x).unwrap();
    assert!(y.to_string().contains("grad_fn=mul"), "{y}");
    // A view displays its own elements, in its own order.
    let tr = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap().transpose(0, 1).unwrap();
    assert!(tr.to_string().contains("[[1.0000, 3.0000]"), "{tr}");
    let empty = Tensor::zeros(&[0], DType::F32).unwrap().to_string();
    assert!(empty.contains("[]") && empty.contains("shape=[0]"), "{empty}");
}

#[test]
fn display_abbreviates_large_tensors() {
    let big = Tensor::arange(0.0, 5000.0, 1.0, DType::F32).unwrap();
    let s = big.to_string();
    assert!(s.contains("..."), "{s}");
    assert!(s.contains("shape=[5000]") && s.contains("dtype=f32") && s.contains("device=cpu"));
    assert!(s.contains("0.0000") && s.contains("4999.0000"), "first and last values are shown: {s}");
    assert!(!s.contains("2500.0000"));
    assert!(s.len() < 300, "abbreviated output stays short ({} chars)", s.len());
    let m = Tensor::zeros(&[100, 100], DType::F64).unwrap().to_string();
    assert!(m.contains("...") && m.contains("shape=[100, 100]"));
    assert!(m.len() < 1000, "2-D abbreviation ({} chars): {m}", m.len());
    assert!(m.lines().count() < 12, "{m}");
    // Small tensors are shown in full.
    let small = Tensor::zeros(&[10, 10], DType::F32).unwrap().to_string();
    assert!(!small.contains("..."));
    assert_eq!(format!("{:?}", big), s);
}
