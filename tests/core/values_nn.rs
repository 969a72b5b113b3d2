//! Value tests for the index primitives and the nn composites, against results
//! computed by hand (or by the naive formula), plus every error path: bad
//! inputs must come back as an `Error` naming the op, never a panic.

use crate::common;
use crate::common::{expect_err, Kind};
use skiff::{manual_seed, DType, Reduction, Tensor};

fn t(v: &[f64], s: &[usize]) -> Tensor {
    Tensor::from_slice(v, s).unwrap()
}
fn ix(v: &[i32], s: &[usize]) -> Tensor {
    Tensor::from_slice(v, s).unwrap()
}
fn vals(x: &Tensor) -> Vec<f64> {
    x.to_f64_vec().unwrap()
}
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: {g} vs {w} (got {got:?}, want {want:?})");
    }
}
fn leaf(v: &[f64], s: &[usize]) -> Tensor {
    t(v, s).requires_grad_(true).unwrap()
}
fn lse(row: &[f64]) -> f64 {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + row.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

// ---- index primitives --------------------------------------------------------

#[test]
fn index_select_and_index_add_hand_cases() {
    let x = t(&[0., 1., 2., 3., 4., 5.], &[3, 2]);
    let y = x.index_select(0, &ix(&[2, 0, 2], &[3])).unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(vals(&y), vec![4., 5., 0., 1., 4., 5.]);
    let y = x.index_select(-1, &ix(&[1], &[1])).unwrap();
    assert_eq!((y.shape(), vals(&y)), (&[3, 1][..], vec![1., 3., 5.]));
    // Integer data selects too (e.g. labels of a shuffled batch).
    let labels = ix(&[7, 8, 9], &[3]).index_select(0, &ix(&[2, 2, 0], &[3])).unwrap();
    assert_eq!(labels.to_vec::<i32>().unwrap(), vec![9, 9, 7]);

    let base = t(&[1.; 6], &[3, 2]);
    let out = base.index_add(0, &ix(&[2, 0, 2], &[3]), &t(&[1., 1., 2., 2., 3., 3.], &[3, 2])).unwrap();
    assert_eq!(vals(&out), vec![3., 3., 1., 1., 5., 5.]);
    assert_eq!(vals(&base), vec![1.; 6], "index_add is out of place");

    // Repeated indices accumulate in the gradient.
    let x = leaf(&[0., 1., 2., 3., 4., 5.], &[3, 2]);
    x.index_select(0, &ix(&[2, 0, 2], &[3])).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1., 1., 0., 0., 2., 2.]);
}

#[test]
fn gather_and_scatter_add_hand_cases() {
    // PyTorch: torch.gather(x, 1, idx) with x = [[0,1,2],[3,4,5]].
    let x = t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let g = x.gather(1, &ix(&[2, 2, 0, 1], &[2, 2])).unwrap();
    assert_eq!(vals(&g), vec![2., 2., 3., 4.]);
    let g = x.gather(0, &ix(&[1, 0, 1], &[1, 3])).unwrap();
    assert_eq!(vals(&g), vec![3., 1., 5.]);
    // On a transposed view: xt = [[0,3],[1,4],[2,5]].
    let g = x.transpose(0, 1).unwrap().gather(1, &ix(&[1, 0, 1], &[3, 1])).unwrap();
    assert_eq!(vals(&g), vec![3., 1., 5.]);

    let base = t(&[10.; 6], &[2, 3]);
    let out = base.scatter_add(1, &ix(&[2, 2, 0, 1], &[2, 2]), &t(&[1., 2., 3., 4.], &[2, 2])).unwrap();
    assert_eq!(vals(&out), vec![10., 10., 13., 13., 14., 10.]);
    // src larger than index: only the index's positions are used.
    let out = Tensor::zeros(&[2, 3], DType::F64)
        .unwrap()
        .scatter_add(0, &ix(&[1, 1], &[1, 2]), &t(&[1., 2., 3., 4.], &[2, 2]))
        .unwrap();
    assert_eq!(vals(&out), vec![0., 0., 0., 1., 2., 0.]);

    let x = leaf(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    x.gather(1, &ix(&[2, 2, 0, 1], &[2, 2])).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![0., 0., 2., 1., 1., 0.]);
    let src = leaf(&[1., 2., 3., 4.], &[2, 2]);
    let w = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    base.scatter_add(1, &ix(&[2, 2, 0, 1], &[2, 2]), &src)
        .unwrap()
        .mul(&w)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(vals(&src.grad().unwrap()), vec![3., 3., 4., 5.]);
}

#[test]
fn index_errors_are_errors_not_panics() {
    let x = t(&[0.; 6], &[3, 2]);
    expect_err(
        x.index_select(0, &ix(&[0, 3], &[2])),
        Kind::Value,
        "index_select",
        &["index 3 is out of range for axis 0 of size 3 (input shape [3, 2], index shape [2])"],
    );
    expect_err(
        x.index_select(0, &ix(&[-1], &[1])),
        Kind::Value,
        "index_select",
        &["index -1 is out of range for axis 0 of size 3 (input shape [3, 2], index shape [1])"],
    );
    expect_err(
        x.index_select(0, &t(&[0.], &[1])),
        Kind::DType,
        "index_select",
        &["index must be i32, got f64 of shape [1]"],
    );
    expect_err(
        x.index_select(0, &ix(&[0, 1], &[1, 2])),
        Kind::Shape,
        "index_select",
        &["index must be 1-D, got shape [1, 2]"],
    );
    expect_err(
        x.index_select(2, &ix(&[0], &[1])),
        Kind::Axis,
        "index_select",
        &["axis 2 is out of range for a tensor of rank 2 (shape [3, 2])"],
    );
    expect_err(
        Tensor::scalar(1.0, DType::F64).index_select(0, &ix(&[0], &[1])),
        Kind::Shape,
        "index_select",
        &["needs a tensor with at least one axis, got a scalar (shape [])"],
    );

    expect_err(
        x.gather(1, &ix(&[0, 2], &[2, 1])),
        Kind::Value,
        "gather",
        &["index 2 is out of range for axis 1 of size 2 (input shape [3, 2], index shape [2, 1])"],
    );
    expect_err(
        x.gather(0, &ix(&[0, 1], &[2])),
        Kind::Shape,
        "gather",
        &["index of shape [2] must have the rank of input [3, 2] and be no larger in every dim but the axis (axis 0)"],
    );
    let facts =
        ["index of shape [2, 3] must have the rank of input [3, 2]", "no larger in every dim but the axis (axis 0)"];
    expect_err(x.gather(0, &ix(&[0; 6], &[2, 3])), Kind::Shape, "gather", &facts);
    let facts = ["index must be i32, got f64 of shape [1, 1]"];
    expect_err(x.gather(0, &t(&[0.], &[1, 1])), Kind::DType, "gather", &facts);

    let src = t(&[1.; 4], &[2, 2]);
    expect_err(
        x.scatter_add(0, &ix(&[5, 0, 0, 0], &[2, 2]), &src),
        Kind::Value,
        "scatter_add",
        &["index 5 is out of range for axis 0 of size 3 (input shape [3, 2], index shape [2, 2])"],
    );
    expect_err(
        x.scatter_add(0, &ix(&[0; 3], &[3, 1]), &src),
        Kind::Shape,
        "scatter_add",
        &["index of shape [3, 1] must have the rank of src [2, 2] and be no larger in every dim (axis 0)"],
    );
    expect_err(
        x.scatter_add(0, &ix(&[0; 4], &[2, 2]), &src.to_dtype(DType::F32).unwrap()),
        Kind::DType,
        "scatter_add",
        &["dtypes differ: f64 [3, 2] vs f32 [2, 2] (cast one with to_dtype)"],
    );
    expect_err(
        x.index_add(0, &ix(&[0], &[1]), &src),
        Kind::Shape,
        "index_add",
        &["source must have shape [1, 2] (input [3, 2] with 1 index entries on axis 0), got [2, 2]"],
    );
    expect_err(
        x.index_add(0, &ix(&[7], &[1]), &t(&[1., 1.], &[1, 2])),
        Kind::Value,
        "index_add",
        &["index 7 is out of range for axis 0 of size 3 (input shape [3, 2], index shape [1])"],
    );
    let mask = Tensor::from_bools(&[true, false], &[2]).unwrap();
    expect_err(
        mask.index_add(0, &ix(&[0], &[1]), &mask.index_select(0, &ix(&[0], &[1])).unwrap()),
        Kind::DType,
        "index_add",
        &["cannot add into a bool tensor of shape [2]"],
    );
}

// ---- softmax family ----------------------------------------------------------

#[test]
fn softmax_matches_hand_computation() {
    let rows = [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1000.0, 1001.0, 1002.0]];
    let x = t(&rows.concat(), &[3, 3]);
    let s = x.softmax(1).unwrap();
    let mut want = Vec::new();
    for r in &rows {
        let shifted: Vec<f64> = r.iter().map(|v| (v - r[2]).exp()).collect();
        let sum: f64 = shifted.iter().sum();
        want.extend(shifted.iter().map(|e| e / sum));
    }
    assert_close(&vals(&s), &want, 1e-12);
    for r in vals(&s).chunks(3) {
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
    // Along axis 0, by hand: column (0, ln 3) gives [1/4, 3/4], column (1, 0)
    // gives [e/(1+e), 1/(1+e)].
    let e = std::f64::consts::E;
    let z = t(&[0.0, 1.0, 3f64.ln(), 0.0], &[2, 2]);
    assert_close(&vals(&z.softmax(0).unwrap()), &[0.25, e / (1.0 + e), 0.75, 1.0 / (1.0 + e)], 1e-12);
    // Large f32 logits: the same values as in f64, not just finite ones.
    let big = vals(&x.to_dtype(DType::F32).unwrap().softmax(-1).unwrap());
    assert_close(&big, &want, 1e-6);
}

#[test]
fn log_softmax_is_log_of_softmax_and_stable() {
    let x = t(&[0.5, -1.0, 2.0, 3.0, 0.1, -0.2], &[2, 3]);
    let want: Vec<f64> = vals(&x.softmax(1).unwrap().log().unwrap());
    assert_close(&vals(&x.log_softmax(1).unwrap()), &want, 1e-12);
    let y = t(&[1000.0, 0.0], &[1, 2]).log_softmax(1).unwrap();
    assert_close(&vals(&y), &[0.0, -1000.0], 1e-12);
}

#[test]
fn cross_entropy_by_hand() {
    let logits = [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]];
    let labels = ix(&[2, 0], &[2]);
    let x = t(&logits.concat(), &[2, 3]);
    let per: Vec<f64> = logits.iter().zip([2usize, 0]).map(|(r, y)| lse(r) - r[y]).collect();
    assert_close(&vals(&x.cross_entropy(&labels, Reduction::None, 0.0).unwrap()), &per, 1e-12);
    assert_close(&vals(&x.cross_entropy(&labels, Reduction::Sum, 0.0).unwrap()), &[per[0] + per[1]], 1e-12);
    assert_close(&vals(&x.cross_entropy(&labels, Reduction::Mean, 0.0).unwrap()), &[(per[0] + per[1]) / 2.0], 1e-12);
    assert!((per[1] - 3f64.ln()).abs() < 1e-12);

    // Smoothing s: target 1-s on the label plus s/C on every class.
    let s = 0.2;
    let smooth: Vec<f64> = logits
        .iter()
        .zip([2usize, 0])
        .map(|(r, y)| (1.0 - s) * (lse(r) - r[y]) + s * r.iter().map(|v| lse(r) - v).sum::<f64>() / 3.0)
        .collect();
    assert_close(&vals(&x.cross_entropy(&labels, Reduction::None, s).unwrap()), &smooth, 1e-12);
    assert_close(
        &vals(&x.cross_entropy(&labels, Reduction::Mean, s).unwrap()),
        &[(smooth[0] + smooth[1]) / 2.0],
        1e-12,
    );

    // d(mean CE)/dlogits = (softmax - onehot) / N.
    let x = leaf(&logits.concat(), &[2, 3]);
    x.cross_entropy(&labels, Reduction::Mean, 0.0).unwrap().backward().unwrap();
    let mut want = vals(&x.softmax(1).unwrap());
    want[2] -= 1.0;
    want[3] -= 1.0;
    assert_close(&vals(&x.grad().unwrap()), &want.iter().map(|v| v / 2.0).collect::<Vec<_>>(), 1e-12);
}

#[test]
fn nll_and_class_loss_errors() {
    let lp = t(&[-0.1, -2.0, -3.0, -1.5, -0.4, -2.5], &[2, 3]);
    let labels = ix(&[0, 2], &[2]);
    assert_close(&vals(&lp.nll_loss(&labels, Reduction::Mean).unwrap()), &[(0.1 + 2.5) / 2.0], 1e-12);
    assert_close(&vals(&lp.nll_loss(&labels, Reduction::None).unwrap()), &[0.1, 2.5], 1e-12);

    expect_err(
        lp.cross_entropy(&ix(&[0, 3], &[2]), Reduction::Mean, 0.0),
        Kind::Value,
        "cross_entropy",
        &["label 3 at position 1 is out of range [0, 3) for scores of shape [2, 3]"],
    );
    expect_err(
        lp.cross_entropy(&ix(&[-1, 0], &[2]), Reduction::Sum, 0.0),
        Kind::Value,
        "cross_entropy",
        &["label -1 at position 0 is out of range [0, 3) for scores of shape [2, 3]"],
    );
    expect_err(
        lp.nll_loss(&ix(&[0, 9], &[2]), Reduction::Sum),
        Kind::Value,
        "nll_loss",
        &["label 9 at position 1 is out of range [0, 3) for scores of shape [2, 3]"],
    );
    expect_err(
        lp.cross_entropy(&t(&[0., 1.], &[2]), Reduction::Mean, 0.0),
        Kind::DType,
        "cross_entropy",
        &["labels must be i32 class indices, got f64 of shape [2]"],
    );
    expect_err(
        lp.cross_entropy(&ix(&[0, 1, 1], &[3]), Reduction::Mean, 0.0),
        Kind::Shape,
        "cross_entropy",
        &["labels must have shape [2] for scores of shape [2, 3], got [3]"],
    );
    expect_err(
        t(&[0.; 3], &[3]).cross_entropy(&ix(&[0], &[1]), Reduction::Mean, 0.0),
        Kind::Shape,
        "cross_entropy",
        &["expects [N, C] scores, got shape [3]"],
    );
    expect_err(
        lp.cross_entropy(&labels, Reduction::Mean, 1.5),
        Kind::Value,
        "cross_entropy",
        &["label_smoothing must be in [0, 1], got 1.5"],
    );
    expect_err(
        ix(&[0; 6], &[2, 3]).cross_entropy(&labels, Reduction::Mean, 0.0),
        Kind::DType,
        "cross_entropy",
        &["expected a float tensor, got i32 of shape [2, 3]"],
    );
}

// ---- elementwise losses ------------------------------------------------------

#[test]
fn mse_and_bce_with_logits() {
    let a = t(&[1., 2., 3.], &[3]);
    let b = t(&[1., 0., 5.], &[3]);
    assert_close(&vals(&a.mse_loss(&b, Reduction::Mean).unwrap()), &[8.0 / 3.0], 1e-12);
    assert_close(&vals(&a.mse_loss(&b, Reduction::Sum).unwrap()), &[8.0], 1e-12);
    assert_close(&vals(&a.mse_loss(&b, Reduction::None).unwrap()), &[0., 4., 4.], 1e-12);
    expect_err(
        a.mse_loss(&t(&[1., 2.], &[2]), Reduction::Mean),
        Kind::Shape,
        "mse_loss",
        &["input and target shapes differ: [3] vs [2]"],
    );

    let x: [f64; 5] = [-3.0, -0.5, 0.0, 2.0, 4.0];
    let y: [f64; 5] = [0.0, 1.0, 0.5, 1.0, 0.3];
    let naive: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(&x, &y)| {
            let s = 1.0 / (1.0 + (-x).exp());
            -(y * s.ln() + (1.0 - y) * (1.0 - s).ln())
        })
        .collect();
    let (xt, yt) = (t(&x, &[5]), t(&y, &[5]));
    assert_close(&vals(&xt.binary_cross_entropy_with_logits(&yt, Reduction::None).unwrap()), &naive, 1e-12);
    let mean = naive.iter().sum::<f64>() / 5.0;
    assert_close(&vals(&xt.binary_cross_entropy_with_logits(&yt, Reduction::Mean).unwrap()), &[mean], 1e-12);
    // Large logits: the naive formula overflows, the stable one does not (f32 too).
    let big = t(&[100.0, -100.0], &[2]).to_dtype(DType::F32).unwrap();
    let l = vals(
        &big.binary_cross_entropy_with_logits(&t(&[0.0, 0.0], &[2]).to_dtype(DType::F32).unwrap(), Reduction::None)
            .unwrap(),
    );
    assert_close(&l, &[100.0, 0.0], 1e-6);
    expect_err(
        xt.binary_cross_entropy_with_logits(&yt.to_dtype(DType::F32).unwrap(), Reduction::Sum),
        Kind::DType,
        "binary_cross_entropy_with_logits",
        &["dtypes differ: f64 [5] vs f32 [5] (cast one with to_dtype)"],
    );
}

// ---- layer norm, dropout, embedding ------------------------------------------

#[test]
fn layer_norm_normalises_and_applies_affine() {
    // Rows with different means and (biased) variances, asymmetric within a
    // row: a wrong axis, the unbiased variance, a missing eps, a sign or a
    // permutation all change the result. By hand:
    //   row 0 [1, 2, 2, 7]:  mean 3, deviations [-2, -1, -1, 4], variance 22 / 4 = 5.5
    //   row 1 [-3, 5, 1, 1]: mean 1, deviations [-4, 4, 0, 0],   variance 32 / 4 = 8
    let x = t(&[1.0, 2.0, 2.0, 7.0, -3.0, 5.0, 1.0, 1.0], &[2, 4]);
    let eps = 1e-5;
    let (s0, s1) = ((5.5f64 + eps).sqrt(), (8.0f64 + eps).sqrt());
    let normalized = [-2.0 / s0, -1.0 / s0, -1.0 / s0, 4.0 / s0, -4.0 / s1, 4.0 / s1, 0.0, 0.0];
    assert_close(&vals(&x.layer_norm(&[4], None, None, eps).unwrap()), &normalized, 1e-12);
    // The affine part: y = normalized * weight + bias, per position in the row
    // (a negative weight, so weight and bias cannot trade places unnoticed).
    let (w, b) = ([1.0, 2.0, 0.5, -1.0], [0.0, 1.0, -1.0, 0.5]);
    let want: Vec<f64> = normalized.iter().enumerate().map(|(i, n)| n * w[i % 4] + b[i % 4]).collect();
    let got = x.layer_norm(&[4], Some(&t(&w, &[4])), Some(&t(&b, &[4])), eps).unwrap();
    assert_close(&vals(&got), &want, 1e-12);
    // Over the last two dims of a 3-D input: all 8 values together, mean 2,
    // deviations [-1, 0, 0, 5, -5, 3, -1, -1], variance 62 / 8 = 7.75 (eps 0).
    let z = x.reshape(&[1, 2, 4]).unwrap().layer_norm(&[2, 4], None, None, 0.0).unwrap();
    let s = 7.75f64.sqrt();
    assert_eq!(z.shape(), &[1, 2, 4]);
    assert_close(&vals(&z), &[-1.0, 0.0, 0.0, 5.0, -5.0, 3.0, -1.0, -1.0].map(|d| d / s), 1e-12);
    expect_err(
        x.layer_norm(&[3], None, None, 1e-5),
        Kind::Shape,
        "layer_norm",
        &["normalized_shape [3] must be a non-empty suffix of the input shape [2, 4]"],
    );
    expect_err(
        x.layer_norm(&[4], Some(&t(&[1.; 2], &[2])), None, 1e-5),
        Kind::Shape,
        "layer_norm",
        &["weight must have shape [4], got [2]"],
    );
    expect_err(
        x.layer_norm(&[], None, None, 1e-5),
        Kind::Shape,
        "layer_norm",
        &["normalized_shape [] must be a non-empty suffix of the input shape [2, 4]"],
    );
}

#[test]
fn dropout_masks_scales_and_reproduces() {
    if !common::own_process() {
        return;
    }
    let n = 20_000;
    let x = Tensor::ones(&[n], DType::F32).unwrap();
    manual_seed(42);
    let a = vals(&x.dropout(0.3, true).unwrap());
    let zeros = a.iter().filter(|&&v| v == 0.0).count() as f64 / n as f64;
    assert!((zeros - 0.3).abs() < 0.02, "zero fraction {zeros}");
    assert!(a.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-6), "kept values are scaled by 1/(1-p)");
    manual_seed(42);
    assert_eq!(a, vals(&x.dropout(0.3, true).unwrap()), "same seed, same mask");
    manual_seed(43);
    assert_ne!(a, vals(&x.dropout(0.3, true).unwrap()), "another seed, another mask");

    let y = t(&[1., -2., 3.], &[3]);
    assert_eq!(vals(&y.dropout(0.5, false).unwrap()), vals(&y), "eval is the identity");
    assert_eq!(vals(&y.dropout(0.0, true).unwrap()), vals(&y), "p = 0 is the identity");
    // p = 1 drops everything: PyTorch multiplies by zero (NaN stays NaN), gradient 0.
    let all = t(&[1., -2., f64::NAN], &[3]).requires_grad_(true).unwrap();
    let dropped = vals(&all.dropout(1.0, true).unwrap());
    assert!(dropped[..2].iter().all(|&v| v == 0.0) && dropped[2].is_nan(), "p = 1: {dropped:?}");
    all.dropout(1.0, true).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(&all.grad().unwrap()), vec![0.0; 3], "p = 1: no gradient passes");
    for p in [1.5, -0.1, f64::NAN] {
        expect_err(y.dropout(p, true), Kind::Value, "dropout", &[&format!("probability p must be in [0, 1], got {p}")]);
    }
    expect_err(
        ix(&[1], &[1]).dropout(0.5, true),
        Kind::DType,
        "dropout",
        &["expected a float tensor, got i32 of shape [1]"],
    );

    // The gradient is the same mask and scale.
    let xl = leaf(&[1.0; 64], &[64]);
    manual_seed(7);
    let out = xl.dropout(0.5, true).unwrap();
    out.sum_all().unwrap().backward().unwrap();
    let want: Vec<f64> = vals(&out).iter().map(|&v| if v == 0.0 { 0.0 } else { 2.0 }).collect();
    assert_eq!(vals(&xl.grad().unwrap()), want);
}

#[test]
fn embedding_picks_rows_and_accumulates_grads() {
    let wv: Vec<f64> = (0..12).map(f64::from).collect();
    let w = leaf(&wv, &[4, 3]);
    let e = w.embedding(&ix(&[3, 0, 3, 1], &[2, 2])).unwrap();
    assert_eq!(e.shape(), &[2, 2, 3]);
    assert_eq!(vals(&e), vec![9., 10., 11., 0., 1., 2., 9., 10., 11., 3., 4., 5.]);
    e.sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(&w.grad().unwrap()), vec![1., 1., 1., 1., 1., 1., 0., 0., 0., 2., 2., 2.]);

    expect_err(
        w.embedding(&ix(&[0, 4], &[2])),
        Kind::Value,
        "embedding",
        &["index 4 is out of range for axis 0 of size 4 (input shape [4, 3], index shape [2])"],
    );
    expect_err(w.embedding(&t(&[0.], &[1])), Kind::DType, "embedding", &["indices must be i32, got f64 of shape [1]"]);
    expect_err(
        t(&[0.; 3], &[3]).embedding(&ix(&[0], &[1])),
        Kind::Shape,
        "embedding",
        &["weight must be [num_embeddings, dim], got shape [3]"],
    );
}

#[test]
fn wrong_dtypes_and_axes_are_errors() {
    let i = ix(&[1, 2, 3], &[3]);
    expect_err(i.softmax(0), Kind::DType, "softmax", &["expected a float tensor, got i32 of shape [3]"]);
    expect_err(i.log_softmax(0), Kind::DType, "log_softmax", &["expected a float tensor, got i32 of shape [3]"]);
    expect_err(
        t(&[1.; 3], &[3]).softmax(1),
        Kind::Axis,
        "softmax",
        &["axis 1 is out of range for a tensor of rank 1 (shape [3])"],
    );
    expect_err(
        i.mse_loss(&i, Reduction::Mean),
        Kind::DType,
        "mse_loss",
        &["expected a float tensor, got i32 of shape [3]"],
    );
    expect_err(
        i.layer_norm(&[3], None, None, 1e-5),
        Kind::DType,
        "layer_norm",
        &["expected a float tensor, got i32 of shape [3]"],
    );
}
