//! Every layer's output shape and values on small inputs, against
//! hand-computed results (weights set through load_state_dict or init).

use crate::common::{expect_err, Kind};
use skiff::nn::loss::{BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss};
use skiff::nn::*;
use skiff::{DType, Tensor};

fn t(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}
fn arange(n: usize, shape: &[usize]) -> Tensor {
    Tensor::arange(0.0, n as f64, 1.0, DType::F32).unwrap().reshape_dims(shape).unwrap()
}
fn close(got: &Tensor, want: &[f64], tol: f64) {
    let g = got.to_f64_vec().unwrap();
    assert_eq!(g.len(), want.len(), "got {g:?}, want {want:?}");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "element {i}: got {a}, want {b} ({g:?} vs {want:?})");
    }
}
fn load(layer: &dyn Layer, entries: &[(&str, Tensor)]) {
    let e: Vec<(String, Tensor)> = entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    layer.load_state_dict(&e, true).unwrap();
}

#[test]
fn linear_values_and_shapes() {
    let l = Linear::new(2, 3).unwrap();
    load(&l, &[("weight", t(&[1., 2., 3., 4., 5., 6.], &[3, 2])), ("bias", t(&[0.5, -0.5, 1.], &[3]))]);
    let y = l.forward(&t(&[1., -1., 2., 0.5], &[2, 2])).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    close(&y, &[-0.5, -1.5, 0.0, 3.5, 7.5, 14.0], 1e-6);
    // Leading axes broadcast; no bias.
    let nb = Linear::with_bias(2, 1, false).unwrap();
    init::constant_(&nb.weight.get(), 2.0).unwrap();
    let y = nb.forward(&arange(8, &[2, 2, 2])).unwrap();
    assert_eq!(y.shape(), &[2, 2, 1]);
    close(&y, &[2., 10., 18., 26.], 1e-6);
    expect_err(
        l.forward(&arange(3, &[1, 3])),
        Kind::Shape,
        "Linear",
        &["last dim 2 (weight [3, 2]), got shape [1, 3]"],
    );
}

#[test]
fn conv2d_values_padding_stride_groups() {
    let c = Conv2d::new(1, 1, [2, 2]).unwrap();
    init::constant_(&c.weight.get(), 1.0).unwrap();
    init::constant_(&c.bias.as_ref().unwrap().get(), 0.5).unwrap();
    let x = Tensor::arange(1.0, 10.0, 1.0, DType::F32).unwrap().reshape_dims(&[1, 1, 3, 3]).unwrap();
    let y = c.forward(&x).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    close(&y, &[12.5, 16.5, 24.5, 28.5], 1e-6);

    let cfg = Conv2dConfig { stride: [2, 2], padding: [1, 1], bias: false, ..Default::default() };
    let c = Conv2d::with_config(1, 1, [2, 2], cfg).unwrap();
    assert_eq!(c.state_dict().len(), 1);
    init::constant_(&c.weight.get(), 1.0).unwrap();
    close(&c.forward(&x).unwrap(), &[1., 5., 11., 28.], 1e-6);

    let cfg = Conv2dConfig { groups: 2, bias: false, ..Default::default() };
    let g = Conv2d::with_config(2, 2, [1, 1], cfg).unwrap();
    assert_eq!(g.weight.get().shape(), &[2, 1, 1, 1]);
    load(&g, &[("weight", t(&[2., 3.], &[2, 1, 1, 1]))]);
    close(&g.forward(&arange(4, &[1, 2, 1, 2])).unwrap(), &[0., 2., 6., 9.], 1e-6);
    expect_err(
        Conv2d::with_config(3, 2, [1, 1], Conv2dConfig { groups: 2, ..Default::default() }),
        Kind::Value,
        "Conv2d",
        &["groups 2 must divide in_channels 3 and out_channels 2"],
    );
}

#[test]
fn pools_and_flatten() {
    let x = arange(16, &[1, 1, 4, 4]);
    let y = MaxPool2d::new([2, 2]).unwrap().forward(&x).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    close(&y, &[5., 7., 13., 15.], 0.0);
    close(&AvgPool2d::new([2, 2]).unwrap().forward(&x).unwrap(), &[2.5, 4.5, 10.5, 12.5], 1e-6);
    // Padding 1 around a 3x3 input of negative values (-10 .. -2): each window's
    // maximum is its bottom-right in-bounds element; padding never wins (a
    // zero padding would give 0 on the border).
    let neg = arange(9, &[1, 1, 3, 3]).add_scalar(-10.0).unwrap();
    let y = MaxPool2d::with_options([3, 3], [1, 1], [1, 1]).unwrap().forward(&neg).unwrap();
    assert_eq!(y.shape(), &[1, 1, 3, 3]);
    close(&y, &[-6., -5., -5., -3., -2., -2., -3., -2., -2.], 0.0);
    // A kernel larger than the input fits once padded: every window holds it all.
    let y = MaxPool2d::with_options([3, 3], [1, 1], [1, 1]).unwrap().forward(&arange(4, &[1, 1, 2, 2])).unwrap();
    close(&y, &[3., 3., 3., 3.], 0.0);
    // Adaptive: divisible (one avg_pool2d) and overlapping cells.
    close(&AdaptiveAvgPool2d::new([2, 2]).unwrap().forward(&x).unwrap(), &[2.5, 4.5, 10.5, 12.5], 1e-6);
    let y = AdaptiveAvgPool2d::new([2, 2]).unwrap().forward(&arange(9, &[1, 1, 3, 3])).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    close(&y, &[2., 3., 5., 6.], 1e-6);
    let y = AdaptiveAvgPool2d::new([1, 2]).unwrap().forward(&arange(6, &[1, 1, 2, 3])).unwrap();
    // columns {0,1} and {1,2} over both rows.
    close(&y, &[2.0, 3.0], 1e-6);
    expect_err(
        AdaptiveAvgPool2d::new([5, 5]).unwrap().forward(&x),
        Kind::Shape,
        "AdaptiveAvgPool2d",
        &["output size [5, 5] is larger than the input's [4, 4]"],
    );
    expect_err(MaxPool2d::new([0, 2]), Kind::Value, "MaxPool2d", &["kernel [0, 2] and stride [0, 2] must be positive"]);

    let x = arange(24, &[2, 3, 4]);
    assert_eq!(Flatten::new().forward(&x).unwrap().shape(), &[2, 12]);
    assert_eq!(Flatten::with_axes(0, 1).forward(&x).unwrap().shape(), &[6, 4]);
}

#[test]
fn batch_norm_train_then_eval() {
    let bn = BatchNorm1d::new(2).unwrap();
    // Three samples, so the channels' normalized values are not just +-1 and
    // their statistics differ (a mix-up of channels or of the biased and
    // unbiased variance shows). By hand:
    //   channel 0 (1, 2, 6): mean 3, deviations [-2, -1, 3], variance 14/3 (unbiased 7)
    //   channel 1 (0, 4, 2): mean 2, deviations [-2, 2, 0],  variance 8/3 (unbiased 4)
    let x = t(&[1., 0., 2., 4., 6., 2.], &[3, 2]);
    let y = bn.forward(&x).unwrap();
    let (s0, s1) = ((14.0f64 / 3.0 + 1e-5).sqrt(), (8.0f64 / 3.0 + 1e-5).sqrt());
    close(&y, &[-2. / s0, -2. / s1, -1. / s0, 2. / s1, 3. / s0, 0.], 1e-5);
    let sd = bn.state_dict();
    close(&sd[2].1, &[0.3, 0.2], 1e-6); // running_mean: 0.9 * 0 + 0.1 * mean
    close(&sd[3].1, &[1.6, 1.3], 1e-6); // running_var: 0.9 * 1 + 0.1 * unbiased var (7, 4)
    close(&sd[4].1, &[1.0], 0.0); // num_batches_tracked
    bn.eval();
    let y = bn.forward(&x).unwrap();
    let e = |v: f64, m: f64, var: f64| (v - m) / (var + 1e-5).sqrt();
    let want = [e(1., 0.3, 1.6), e(0., 0.2, 1.3), e(2., 0.3, 1.6), e(4., 0.2, 1.3), e(6., 0.3, 1.6), e(2., 0.2, 1.3)];
    close(&y, &want, 1e-5);
    close(&bn.named_buffers()[0].1, &[0.3, 0.2], 1e-6); // eval leaves the stats alone

    // 2-D: one channel over N, H, W; affine parameters apply per channel.
    let bn = BatchNorm2d::new(1).unwrap();
    load(
        &bn,
        &[
            ("weight", t(&[2.], &[1])),
            ("bias", t(&[1.], &[1])),
            ("running_mean", t(&[0.], &[1])),
            ("running_var", t(&[1.], &[1])),
            ("num_batches_tracked", Tensor::from_vec(vec![0i32], &[]).unwrap()),
        ],
    );
    let y = bn.forward(&t(&[1., 2., 3., 6.], &[2, 1, 1, 2])).unwrap();
    let s = (3.5f64 + 1e-5).sqrt();
    close(&y, &[1. - 4. / s, 1. - 2. / s, 1., 1. + 6. / s], 1e-5);
    close(&bn.named_buffers()[1].1, &[0.9 + 0.1 * 14.0 / 3.0], 1e-6);
    expect_err(
        bn.forward(&t(&[1., 2.], &[2, 1])),
        Kind::Shape,
        "BatchNorm",
        &["[N, C, H, W] input with C = 1, got shape [2, 1]"],
    );
    expect_err(
        BatchNorm1d::new(2).unwrap().forward(&t(&[1., 2.], &[1, 2])),
        Kind::Value,
        "BatchNorm",
        &["more than 1 value per channel, got input shape [1, 2]"],
    );
}

#[test]
fn layer_norm_and_embedding() {
    // Two rows with their own statistics, no zero in the normalized values
    // (so each weight and bias is seen). By hand:
    //   row 0 [1, 2, 6]:  mean 3, deviations [-2, -1, 3], variance 14/3
    //   row 1 [1, 3, 11]: mean 5, deviations [-4, -2, 6], variance 56/3
    let ln = LayerNorm::new(&[3]).unwrap();
    let x = t(&[1., 2., 6., 1., 3., 11.], &[2, 3]);
    let (s0, s1) = ((14.0f64 / 3.0 + 1e-5).sqrt(), (56.0f64 / 3.0 + 1e-5).sqrt());
    let normalized = [-2. / s0, -1. / s0, 3. / s0, -4. / s1, -2. / s1, 6. / s1];
    close(&ln.forward(&x).unwrap(), &normalized, 1e-5);
    let (w, b) = ([1.5, -2., 3.], [0.5, 1., -1.]);
    load(&ln, &[("weight", t(&w.map(|v| v as f32), &[3])), ("bias", t(&b.map(|v| v as f32), &[3]))]);
    let want: Vec<f64> = normalized.iter().enumerate().map(|(i, n)| n * w[i % 3] + b[i % 3]).collect();
    close(&ln.forward(&x).unwrap(), &want, 1e-5);

    let e = Embedding::new(3, 2).unwrap();
    load(&e, &[("weight", arange(6, &[3, 2]))]);
    let y = e.forward(&Tensor::from_vec(vec![2i32, 0], &[1, 2]).unwrap()).unwrap();
    assert_eq!(y.shape(), &[1, 2, 2]);
    close(&y, &[4., 5., 0., 1.], 0.0);
    expect_err(
        e.forward(&Tensor::from_vec(vec![3i32], &[1]).unwrap()),
        Kind::Value,
        "embedding",
        &["index 3 is out of range for axis 0 of size 3 (input shape [3, 2], index shape [1])"],
    );
}

#[test]
fn dropout_train_and_eval() {
    skiff::manual_seed(7);
    let d = Dropout::new(0.5).unwrap();
    let x = Tensor::ones(&[4000], DType::F32).unwrap();
    let v = d.forward(&x).unwrap().to_f64_vec().unwrap();
    assert!(v.iter().all(|&e| e == 0.0 || e == 2.0));
    let zeros = v.iter().filter(|&&e| e == 0.0).count() as f64 / 4000.0;
    assert!((zeros - 0.5).abs() < 0.05, "{zeros}");
    d.eval();
    assert!(!d.is_training());
    close(&d.forward(&x).unwrap(), &vec![1.0; 4000], 0.0);
    expect_err(Dropout::new(1.5), Kind::Value, "Dropout", &["p must be in [0, 1], got 1.5"]);
    assert!(Dropout::new(1.0).is_ok(), "p = 1 is legal (PyTorch: every element dropped)");
}

#[test]
fn activations() {
    let xs = [-2.0f64, -0.5, 0.0, 1.5];
    let x = t(&xs.map(|v| v as f32), &[4]);
    let map = |f: &dyn Fn(f64) -> f64| xs.iter().map(|&v| f(v)).collect::<Vec<_>>();
    close(&ReLU::new().forward(&x).unwrap(), &map(&|v| v.max(0.0)), 0.0);
    close(&LeakyReLU::new(0.1).forward(&x).unwrap(), &map(&|v| if v > 0.0 { v } else { 0.1 * v }), 1e-6);
    close(&LeakyReLU::default().forward(&x).unwrap(), &map(&|v| if v > 0.0 { v } else { 0.01 * v }), 1e-6);
    // x * Phi(x), from tables.
    close(&GELU::new().forward(&x).unwrap(), &[-0.04550026, -0.15426877, 0.0, 1.39978606], 1e-5);
    let k = (2.0 / std::f64::consts::PI).sqrt();
    let tanh_gelu = map(&|v| 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh()));
    close(&GELU::with_approximate(GeluApproximate::Tanh).forward(&x).unwrap(), &tanh_gelu, 1e-5);
    close(&SiLU::new().forward(&x).unwrap(), &map(&|v| v / (1.0 + (-v).exp())), 1e-6);
    close(&Tanh::new().forward(&x).unwrap(), &map(&|v| v.tanh()), 1e-6);
    close(&Sigmoid::new().forward(&x).unwrap(), &map(&|v| 1.0 / (1.0 + (-v).exp())), 1e-6);
    // Softmax of two entries is a logistic of their difference: sigma(-d) and
    // sigma(d). The differences (1 and 3 along rows, 2 and 4 along columns)
    // all differ, so a wrong axis or mixed-up rows or columns shows.
    let sigma = |v: f64| 1.0 / (1.0 + (-v).exp());
    let s = t(&[0., 1., 2., 5.], &[2, 2]);
    close(&Softmax::new(-1).forward(&s).unwrap(), &[sigma(-1.), sigma(1.), sigma(-3.), sigma(3.)], 1e-6);
    close(&Softmax::new(0).forward(&s).unwrap(), &[sigma(-2.), sigma(-4.), sigma(2.), sigma(4.)], 1e-6);
}

#[test]
fn losses() {
    let logits = t(&[1., 2., 3., 0., 0., 0.], &[2, 3]);
    let labels = Tensor::from_vec(vec![2i32, 0], &[2]).unwrap();
    let lse = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
    let ce = [lse - 3.0, 3f64.ln()];
    close(&CrossEntropyLoss::new().forward(&logits, &labels).unwrap(), &[(ce[0] + ce[1]) / 2.0], 1e-6);
    let none = CrossEntropyLoss::with_reduction(skiff::Reduction::None);
    close(&none.forward(&logits, &labels).unwrap(), &ce, 1e-6);
    let smooth = CrossEntropyLoss { label_smoothing: 0.3, reduction: skiff::Reduction::Sum };
    let u0 = (lse * 3.0 - 6.0) / 3.0;
    close(&smooth.forward(&logits, &labels).unwrap(), &[0.7 * ce[0] + 0.3 * u0 + ce[1]], 1e-6);
    let logp = t(&[-1., -2.], &[1, 2]);
    close(&NLLLoss::new().forward(&logp, &Tensor::from_vec(vec![1i32], &[1]).unwrap()).unwrap(), &[2.0], 1e-6);
    let (a, b) = (t(&[1., -2.], &[2]), t(&[0., 1.], &[2]));
    close(&MSELoss::new().forward(&a, &b).unwrap(), &[5.0], 1e-6);
    close(&L1Loss::new().forward(&a, &b).unwrap(), &[2.0], 1e-6);
    close(&L1Loss::with_reduction(skiff::Reduction::Sum).forward(&a, &b).unwrap(), &[4.0], 1e-6);
    let bce = BCEWithLogitsLoss::new().forward(&t(&[0., 2.], &[2]), &t(&[1., 0.], &[2])).unwrap();
    close(&bce, &[(2f64.ln() + (1.0 + 2f64.exp()).ln()) / 2.0], 1e-6);
    expect_err(
        L1Loss::new().forward(&a, &t(&[1.], &[1])),
        Kind::Shape,
        "l1_loss",
        &["input and target shapes differ: [2] vs [1]"],
    );
}
