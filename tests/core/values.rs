//! Forward values against known results: elementwise ops, comparisons and
//! `where_`, and reductions on a hand-written 2x3 tensor. Matmul and movement
//! ops are in values_movement.rs.

#[cfg(feature = "gpu")]
use crate::common;

use skiff::{DType, Result, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

fn vals(x: &Tensor) -> Vec<f64> {
    x.to_f64_vec().unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w} (all: {got:?} vs {want:?})");
    }
}

fn check(name: &str, x: Result<Tensor>, want: &[f64], tol: f64) {
    let x = x.unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = vals(&x);
    assert_eq!(got.len(), want.len(), "{name}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{name}[{i}]: got {g:.17}, want {w:.17}");
    }
}

#[test]
fn gelu_matches_known_constants_for_both_approximations() {
    // PyTorch: gelu(1.0, approximate='tanh') and gelu(1.0) (erf).
    let one = t(&[1.0, -2.0, 0.0], &[3]);
    check("gelu tanh f64", one.gelu(), &[0.8411919906082768, -0.04540230591222494, 0.0], 1e-14);
    check("gelu erf f64", one.gelu_erf(), &[0.8413447460685429, -0.04550026389635842, 0.0], 1e-14);
    let one32 = one.to_dtype(DType::F32).unwrap();
    check("gelu tanh f32", one32.gelu(), &[0.8411919906082768, -0.04540230591222494, 0.0], 1e-6);
    check("gelu erf f32", one32.gelu_erf(), &[0.8413447460685429, -0.04550026389635842, 0.0], 1e-6);
}

#[test]
fn smooth_activations_match_known_values() {
    let x = t(&[0.0, 1.0, -1.0, -20.0, 30.0], &[5]);
    check(
        "softplus",
        x.softplus(),
        &[std::f64::consts::LN_2, 1.3132616875182228, 0.31326168751822286, 2.061153622438558e-9, 30.0],
        1e-14,
    );
    check(
        "silu",
        x.silu(),
        &[
            0.0,
            0.7310585786300049,
            -0.2689414213699951,
            -20.0 * 2.0611536181902037e-9,
            30.0 / (1.0 + 9.357622968840175e-14),
        ],
        1e-14,
    );
    check(
        "sigmoid",
        x.sigmoid(),
        &[0.5, 0.7310585786300049, 0.2689414213699951, 2.0611536181902037e-9, 1.0 / (1.0 + 9.357622968840175e-14)],
        1e-14,
    );
    check("tanh", t(&[0.5], &[1]).tanh(), &[0.46211715726000974], 1e-15);
    let e = t(&[0.0, 0.5, 1.0, -2.0], &[4]);
    check("erf", e.erf(), &[0.0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527], 1e-14);
    // Large magnitudes stay finite (stable formulas).
    let big = t(&[-800.0, 800.0], &[2]);
    check("sigmoid extremes", big.sigmoid(), &[0.0, 1.0], 0.0);
    check("softplus extremes", big.softplus(), &[0.0, 800.0], 0.0);
}

#[test]
fn piecewise_and_basic_unary_ops() {
    let x = t(&[-2.0, -0.5, 0.0, 0.5, 3.0], &[5]);
    check("sign", x.sign(), &[-1.0, -1.0, 0.0, 1.0, 1.0], 0.0);
    check("abs", x.abs(), &[2.0, 0.5, 0.0, 0.5, 3.0], 0.0);
    check("neg", x.neg(), &[2.0, 0.5, -0.0, -0.5, -3.0], 0.0);
    check("relu", x.relu(), &[0.0, 0.0, 0.0, 0.5, 3.0], 0.0);
    check("leaky_relu", x.leaky_relu(0.1), &[-0.2, -0.05, 0.0, 0.5, 3.0], 1e-15);
    check("clamp both", x.clamp(Some(-1.0), Some(1.0)), &[-1.0, -0.5, 0.0, 0.5, 1.0], 0.0);
    check("clamp min", x.clamp(Some(0.0), None), &[0.0, 0.0, 0.0, 0.5, 3.0], 0.0);
    check("clamp max", x.clamp(None, Some(0.0)), &[-2.0, -0.5, 0.0, 0.0, 0.0], 0.0);
    let p = t(&[0.25, 1.0, 4.0], &[3]);
    check("sqrt", p.sqrt(), &[0.5, 1.0, 2.0], 0.0);
    check("rsqrt", p.rsqrt(), &[2.0, 1.0, 0.5], 0.0);
    check("log", p.log(), &[-2.0 * std::f64::consts::LN_2, 0.0, 2.0 * std::f64::consts::LN_2], 1e-15);
    check("exp", t(&[0.0, 1.0], &[2]).exp(), &[1.0, std::f64::consts::E], 1e-15);
    let angles = t(&[std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_6, std::f64::consts::FRAC_PI_3], &[3]);
    check("sin", angles.sin(), &[1.0, 0.5, 0.75f64.sqrt()], 1e-15);
    check("cos", angles.cos(), &[0.0, 0.75f64.sqrt(), 0.5], 1e-15);
    check("pow_scalar", p.pow_scalar(1.5), &[0.125, 1.0, 8.0], 1e-15);
    check("pow_scalar negative base", t(&[-2.0], &[1]).pow_scalar(3.0), &[-8.0], 0.0);
    check(
        "scalar arithmetic",
        p.add_scalar(1.0).and_then(|y| y.mul_scalar(2.0)?.sub_scalar(0.5)?.div_scalar(2.0)),
        &[1.0, 1.75, 4.75],
        1e-15,
    );
    // f32 results are f32 tensors.
    let y = Tensor::from_slice(&[4.0f32], &[1]).unwrap().sqrt().unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0]);
}

#[test]
fn binary_ops_broadcast() {
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let e = t(&[2.0, 0.5], &[2]);
    check("pow broadcast", a.pow(&e), &[1.0, 2f64.sqrt(), 9.0, 2.0], 1e-15);
    check("pow column", a.pow(&t(&[1.0, 2.0], &[2, 1])), &[1.0, 2.0, 9.0, 16.0], 0.0);
    let col = t(&[10.0, 20.0], &[2, 1]);
    let row = t(&[1.0, 2.0, 3.0], &[3]);
    let s = col.add(&row).unwrap();
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(vals(&s), vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
    check("sub", col.sub(&row), &[9.0, 8.0, 7.0, 19.0, 18.0, 17.0], 0.0);
    check("mul", col.mul(&row), &[10.0, 20.0, 30.0, 20.0, 40.0, 60.0], 0.0);
    check("div", col.div(&row), &[10.0, 5.0, 10.0 / 3.0, 20.0, 10.0, 20.0 / 3.0], 1e-15);
    check("scalar operand", a.mul(&Tensor::scalar(3.0, DType::F64)), &[3.0, 6.0, 9.0, 12.0], 0.0);
    let b = t(&[2.0, 2.0, 2.0, 5.0], &[2, 2]);
    check("maximum", a.maximum(&b), &[2.0, 2.0, 3.0, 5.0], 0.0);
    check("minimum", a.minimum(&b), &[1.0, 2.0, 2.0, 4.0], 0.0);
    // Broadcasting a strided (transposed) operand.
    check("transposed + row", a.transpose(0, 1).unwrap().add(&t(&[0.5, 0.25], &[2])), &[1.5, 3.25, 2.5, 4.25], 0.0);
}

#[test]
fn comparisons_give_bool_masks() {
    let a = t(&[1.0, 2.0, 3.0], &[3]);
    let b = t(&[3.0, 2.0, 1.0], &[3]);
    let cases: [(&str, Result<Tensor>, [f64; 3]); 6] = [
        ("eq", a.eq(&b), [0.0, 1.0, 0.0]),
        ("ne", a.ne(&b), [1.0, 0.0, 1.0]),
        ("lt", a.lt(&b), [1.0, 0.0, 0.0]),
        ("le", a.le(&b), [1.0, 1.0, 0.0]),
        ("gt", a.gt(&b), [0.0, 0.0, 1.0]),
        ("ge", a.ge(&b), [0.0, 1.0, 1.0]),
    ];
    for (name, m, want) in cases {
        let m = m.unwrap();
        assert_eq!(m.dtype(), DType::Bool, "{name}");
        assert_eq!(vals(&m), want.to_vec(), "{name}");
        assert!(!m.requires_grad());
    }
    let m = t(&[1.0, 5.0], &[2, 1]).gt(&t(&[0.0, 2.0, 6.0], &[3])).unwrap();
    assert_eq!(m.shape(), &[2, 3]);
    assert_eq!(m.to_vec::<u8>().unwrap(), vec![1, 0, 0, 1, 1, 0]);
    assert_eq!(vals(&a.ge_scalar(2.0).unwrap()), vec![0.0, 1.0, 1.0]);
    assert_eq!(vals(&a.eq_scalar(3.0).unwrap()), vec![0.0, 0.0, 1.0]);
    assert_eq!(vals(&a.lt_scalar(2.0).unwrap()), vec![1.0, 0.0, 0.0]);
    assert_eq!(vals(&a.le_scalar(2.0).unwrap()), vec![1.0, 1.0, 0.0]);
    // Integer and bool operands compare too.
    let i = Tensor::from_slice(&[1i32, 5, -2], &[3]).unwrap();
    assert_eq!(vals(&i.gt(&Tensor::from_slice(&[0i32], &[1]).unwrap()).unwrap()), vec![1.0, 1.0, 0.0]);
    let p = Tensor::from_bools(&[true, false], &[2]).unwrap();
    assert_eq!(vals(&p.eq(&Tensor::from_bools(&[true, true], &[2]).unwrap()).unwrap()), vec![1.0, 0.0]);
    // NaN compares unequal to everything.
    let n = t(&[f64::NAN], &[1]);
    assert_eq!(vals(&n.eq(&n).unwrap()), vec![0.0]);
    assert_eq!(vals(&n.ne(&n).unwrap()), vec![1.0]);
}

#[test]
fn where_selects_with_broadcasting() {
    let cond = Tensor::from_bools(&[true, false, true, false, false, true], &[2, 3]).unwrap();
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = Tensor::scalar(-1.0, DType::F64);
    check("where", Tensor::where_(&cond, &a, &b), &[1.0, -1.0, 3.0, -1.0, -1.0, 6.0], 0.0);
    let rows = Tensor::from_bools(&[false, true], &[2, 1]).unwrap();
    let y = Tensor::where_(&rows, &t(&[7.0, 8.0, 9.0], &[3]), &a).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(vals(&y), vec![1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
    // Gradients follow the selection.
    let x = a.requires_grad_(true).unwrap();
    Tensor::where_(&cond, &x, &b).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
}

const M: [f64; 6] = [1.0, 5.0, 3.0, 4.0, 2.0, 6.0];

#[test]
fn sum_mean_max_min_on_a_2x3_tensor() {
    let x = t(&M, &[2, 3]);
    let s = x.sum_all().unwrap();
    assert_eq!(s.shape(), &[] as &[usize]);
    assert_eq!(s.item().unwrap(), 21.0);
    check("sum axis 0", x.sum(&[0], false), &[5.0, 7.0, 9.0], 0.0);
    check("sum axis 1", x.sum(&[1], false), &[9.0, 12.0], 0.0);
    check("sum axis -1", x.sum(&[-1], false), &[9.0, 12.0], 0.0);
    check("sum both", x.sum(&[0, 1], false), &[21.0], 0.0);
    let k = x.sum(&[1], true).unwrap();
    assert_eq!(k.shape(), &[2, 1]);
    assert_eq!(x.sum(&[], true).unwrap().shape(), &[1, 1]);
    check("mean all", x.mean(&[], false), &[3.5], 1e-15);
    check("mean axis 1", x.mean(&[1], false), &[3.0, 4.0], 1e-15);
    check("mean axis 0", x.mean(&[0], true), &[2.5, 3.5, 4.5], 1e-15);
    check("max axis 1", x.max(&[1], false), &[5.0, 6.0], 0.0);
    check("max axis 0", x.max(&[0], false), &[4.0, 5.0, 6.0], 0.0);
    check("max all", x.max(&[], false), &[6.0], 0.0);
    check("min axis 1", x.min(&[1], false), &[1.0, 2.0], 0.0);
    check("min axis 0", x.min(&[0], false), &[1.0, 2.0, 3.0], 0.0);
    check("min all", x.min(&[], false), &[1.0], 0.0);
    assert_eq!(x.max(&[0], true).unwrap().shape(), &[1, 3]);
    // Reductions of a strided view.
    check("sum of transpose axis 1", x.transpose(0, 1).unwrap().sum(&[1], false), &[5.0, 7.0, 9.0], 0.0);
    // f32 sums of many elements stay accurate.
    let ones = Tensor::ones(&[1 << 20], DType::F32).unwrap();
    assert_eq!(ones.sum_all().unwrap().item().unwrap(), (1 << 20) as f64);
}

#[test]
fn argmax_argmin() {
    let x = t(&M, &[2, 3]);
    let am = x.argmax(Some(1), false).unwrap();
    assert_eq!(am.dtype(), DType::I32);
    assert_eq!(am.to_vec::<i32>().unwrap(), vec![1, 2]);
    assert_eq!(x.argmax(Some(0), false).unwrap().to_vec::<i32>().unwrap(), vec![1, 0, 1]);
    assert_eq!(x.argmax(None, false).unwrap().to_vec::<i32>().unwrap(), vec![5]);
    assert_eq!(x.argmax(Some(-1), true).unwrap().shape(), &[2, 1]);
    assert_eq!(x.argmax(None, true).unwrap().shape(), &[1, 1]);
    assert_eq!(x.argmin(Some(1), false).unwrap().to_vec::<i32>().unwrap(), vec![0, 1]);
    assert_eq!(x.argmin(Some(0), false).unwrap().to_vec::<i32>().unwrap(), vec![0, 1, 0]);
    assert_eq!(x.argmin(None, false).unwrap().to_vec::<i32>().unwrap(), vec![0]);
    // Ties resolve to the first occurrence (as NumPy and PyTorch).
    let ties = t(&[2.0, 7.0, 7.0, 1.0, 1.0], &[5]);
    assert_eq!(ties.argmax(None, false).unwrap().to_vec::<i32>().unwrap(), vec![1]);
    assert_eq!(ties.argmin(None, false).unwrap().to_vec::<i32>().unwrap(), vec![3]);
}

#[test]
fn var_std_with_correction_and_logsumexp() {
    // Every row and column has its own variance, so a wrong axis, swapped
    // rows, the other correction or std for var changes the answer. By hand:
    //   rows:    [1, 2, 6] mean 3, squared deviations 4 + 1 + 9 = 14;
    //            [3, 9, 0] mean 4, squared deviations 1 + 25 + 16 = 42
    //   columns: (1, 3) sum of squares 2; (2, 9) 24.5; (6, 0) 18
    //   all six: mean 3.5, squared deviations 57.5
    let v = t(&[1.0, 2.0, 6.0, 3.0, 9.0, 0.0], &[2, 3]);
    check("var axis 1 unbiased", v.var(&[1], 1.0, false), &[7.0, 21.0], 1e-15);
    check("var axis 1 biased", v.var(&[1], 0.0, false), &[14.0 / 3.0, 14.0], 1e-15);
    check("var axis 1 correction 2", v.var(&[1], 2.0, false), &[14.0, 42.0], 1e-15);
    check("var all unbiased", v.var(&[], 1.0, false), &[11.5], 1e-15);
    check("var all biased", v.var(&[], 0.0, false), &[57.5 / 6.0], 1e-15);
    check("var axis 0 unbiased", v.var(&[0], 1.0, false), &[2.0, 24.5, 18.0], 1e-15);
    check("var axis 0 biased", v.var(&[0], 0.0, false), &[1.0, 12.25, 9.0], 1e-15);
    let keep = v.var(&[1], 1.0, true).unwrap();
    assert_eq!(keep.shape(), &[2, 1]);
    assert_close(&vals(&keep), &[7.0, 21.0], 1e-15);
    check("std axis 1 unbiased", v.std(&[1], 1.0, false), &[7f64.sqrt(), 21f64.sqrt()], 1e-15);
    check("std axis 0 biased", v.std(&[0], 0.0, false), &[1.0, 3.5, 3.0], 1e-15);
    check("std all biased", v.std(&[], 0.0, false), &[(57.5f64 / 6.0).sqrt()], 1e-15);

    let x = t(&M, &[2, 3]);
    let l = x.logsumexp(&[1], true).unwrap();
    assert_eq!(l.shape(), &[2, 1]);
    assert_close(&vals(&l), &[5.1429316284999, 6.142931628499899], 1e-14);
    let l = x.logsumexp(&[1], false).unwrap();
    assert_eq!(l.shape(), &[2]);
    let all: f64 = M.iter().map(|v| v.exp()).sum::<f64>().ln();
    check("logsumexp all", x.logsumexp(&[], false), &[all], 1e-14);
    // Stable for large inputs, and for -inf rows.
    check(
        "logsumexp large",
        t(&[1000.0, 1000.0], &[2]).logsumexp(&[0], false),
        &[1000.0 + std::f64::consts::LN_2],
        1e-15,
    );
    check("logsumexp -inf", t(&[f64::NEG_INFINITY, 0.0], &[2]).logsumexp(&[0], false), &[0.0], 0.0);
    let ninf = t(&[f64::NEG_INFINITY; 2], &[2]).logsumexp(&[0], false).unwrap().item().unwrap();
    assert_eq!(ninf, f64::NEG_INFINITY);
}

#[test]
fn softmax_and_log_softmax_values() {
    let x = t(&M, &[2, 3]);
    let s = x.softmax(1).unwrap();
    let mut want = Vec::new();
    for r in 0..2 {
        let e: Vec<f64> = M[3 * r..3 * r + 3].iter().map(|v| v.exp()).collect();
        want.extend(e.iter().map(|v| v / e.iter().sum::<f64>()));
    }
    assert_close(&vals(&s), &want, 1e-15);
    check("softmax rows sum to 1", s.sum(&[1], false), &[1.0, 1.0], 1e-15);
    let ls = x.log_softmax(-1).unwrap();
    assert_close(&vals(&ls), &want.iter().map(|v| v.ln()).collect::<Vec<_>>(), 1e-14);
    check("softmax of huge logits", t(&[1000.0, 1000.0], &[2]).softmax(0), &[0.5, 0.5], 0.0);
}

/// ReLU's gradient is PyTorch's threshold_backward: where the output is 0 the
/// input's gradient is 0 even when the incoming one is NaN or infinite (a
/// product with a 0/1 mask would give NaN there). The same on the GPU.
#[test]
fn relu_passes_no_nan_or_inf_gradient_where_its_output_is_zero() {
    #[cfg(feature = "gpu")]
    let devices = [Some(skiff::Device::Cpu), common::gpu()];
    #[cfg(not(feature = "gpu"))]
    let devices = [Some(skiff::Device::Cpu)];
    for device in devices.into_iter().flatten() {
        let x = Tensor::from_slice(&[-1.0f32, 2.0, -3.0, 0.0, 5.0], &[5]).unwrap().to(&device).unwrap();
        let x = x.requires_grad_(true).unwrap();
        let upstream = Tensor::from_slice(&[f32::NAN, 1.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &[5]).unwrap();
        x.relu().unwrap().backward_with(Some(&upstream.to(&device).unwrap()), Default::default()).unwrap();
        let g = x.grad().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(&g[..4], &[0.0, 1.5, 0.0, 0.0], "{device:?}");
        assert!(g[4].is_nan(), "{device:?}: a NaN gradient where the output is positive passes on");
    }
}
