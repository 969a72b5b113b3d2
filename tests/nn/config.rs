//! Layer constructors and optimizers refuse configurations PyTorch refuses
//! (or that could only fail later, far from the mistake): each error is a
//! `Value` error naming the layer and the bad setting.

use crate::common::{expect_err, leaf, t, Kind};
use skiff::nn::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNormConfig, Conv2d, Conv2dConfig, Dropout, Embedding,
    LayerNorm, Linear, MaxPool2d, MultiHeadAttention,
};
use skiff::optim::{Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, RmsProp, RmsPropConfig, Sgd, SgdConfig};

#[test]
fn linear_and_embedding_need_positive_sizes() {
    let facts = ["in_features and out_features must be positive, got 0 and 3"];
    expect_err(Linear::new(0, 3), Kind::Value, "Linear", &facts);
    expect_err(Linear::with_bias(3, 0, false), Kind::Value, "Linear", &["got 3 and 0"]);
    expect_err(Embedding::new(0, 4), Kind::Value, "Embedding", &["sizes must be positive, got [0, 4]"]);
    expect_err(Embedding::new(4, 0), Kind::Value, "Embedding", &["[4, 0]"]);
    assert!(Linear::new(1, 1).is_ok() && Embedding::new(1, 1).is_ok());
}

#[test]
fn conv2d_refuses_zero_sizes_strides_dilations_and_bad_groups() {
    let c = Conv2dConfig::default();
    let conv = |i, o, k, c| Conv2d::with_config(i, o, k, c);
    let facts = ["in_channels and out_channels must be positive, got 0 and 4"];
    expect_err(conv(0, 4, [3, 3], c), Kind::Value, "Conv2d", &facts);
    expect_err(conv(4, 0, [3, 3], c), Kind::Value, "Conv2d", &["got 4 and 0"]);
    expect_err(
        conv(1, 1, [3, 0], c),
        Kind::Value,
        "Conv2d",
        &["kernel_size must be at least 1 in both dims, got [3, 0]"],
    );
    let stride0 = Conv2dConfig { stride: [0, 0], ..c };
    expect_err(
        conv(1, 1, [3, 3], stride0),
        Kind::Value,
        "Conv2d",
        &["stride must be at least 1 in both dims, got [0, 0]"],
    );
    let stride01 = Conv2dConfig { stride: [1, 0], ..c };
    expect_err(conv(1, 1, [3, 3], stride01), Kind::Value, "Conv2d", &["stride", "[1, 0]"]);
    let dil0 = Conv2dConfig { dilation: [0, 1], ..c };
    expect_err(
        conv(1, 1, [3, 3], dil0),
        Kind::Value,
        "Conv2d",
        &["dilation must be at least 1 in both dims, got [0, 1]"],
    );
    let g0 = Conv2dConfig { groups: 0, ..c };
    expect_err(
        conv(4, 4, [3, 3], g0),
        Kind::Value,
        "Conv2d",
        &["groups 0 must divide in_channels 4 and out_channels 4"],
    );
    let g3 = Conv2dConfig { groups: 3, ..c };
    expect_err(conv(4, 6, [3, 3], g3), Kind::Value, "Conv2d", &["groups 3", "in_channels 4"]);
    let g2 = Conv2dConfig { groups: 2, ..c };
    expect_err(conv(4, 3, [3, 3], g2), Kind::Value, "Conv2d", &["groups 2", "out_channels 3"]);
    // What is valid builds, with the weight shape the groups imply.
    let ok = conv(4, 6, [3, 1], Conv2dConfig { groups: 2, stride: [2, 1], dilation: [1, 2], padding: [5, 0], ..c });
    assert_eq!(ok.unwrap().weight.get().shape(), &[6, 2, 3, 1]);
}

#[test]
fn pools_refuse_zero_windows_and_padding_past_half_the_kernel() {
    for (name, r) in [
        ("MaxPool2d", MaxPool2d::with_options([2, 2], [0, 1], [0, 0]).map(|_| ())),
        ("AvgPool2d", AvgPool2d::with_options([2, 2], [1, 0], [0, 0]).map(|_| ())),
    ] {
        expect_err(r, Kind::Value, name, &["must be positive"]);
    }
    expect_err(AvgPool2d::new([0, 3]), Kind::Value, "AvgPool2d", &["kernel [0, 3]"]);
    // Padding beyond half the kernel leaves windows with no real element
    // (PyTorch: "pad should be at most half of effective kernel size").
    let facts = ["padding [2, 1] must be at most half of kernel [3, 3]"];
    expect_err(MaxPool2d::with_options([3, 3], [1, 1], [2, 1]), Kind::Value, "MaxPool2d", &facts);
    let facts = ["padding [0, 2] must be at most half of kernel [2, 2]"];
    expect_err(AvgPool2d::with_options([2, 2], [2, 2], [0, 2]), Kind::Value, "AvgPool2d", &facts);
    assert!(MaxPool2d::with_options([3, 3], [1, 1], [1, 1]).is_ok());
    expect_err(
        AdaptiveAvgPool2d::new([0, 2]),
        Kind::Value,
        "AdaptiveAvgPool2d",
        &["output size [0, 2] must be positive"],
    );
}

#[test]
fn norms_refuse_zero_features_and_eps_momentum_outside_their_ranges() {
    let d = BatchNormConfig::default();
    expect_err(BatchNorm1d::new(0), Kind::Value, "BatchNorm1d", &["num_features must be positive, got 0"]);
    expect_err(BatchNorm2d::new(0), Kind::Value, "BatchNorm2d", &["num_features"]);
    for eps in [0.0, -1e-5, f64::NAN, f64::INFINITY] {
        let facts = [format!("eps must be positive and finite, got {eps}")];
        expect_err(BatchNorm2d::with_config(3, BatchNormConfig { eps, ..d }), Kind::Value, "BatchNorm2d", &[&facts[0]]);
        expect_err(LayerNorm::with_options(&[3], eps, true), Kind::Value, "LayerNorm", &[&facts[0]]);
    }
    for momentum in [-0.1, 1.5, f64::NAN] {
        let facts = [format!("momentum must be in [0, 1], got {momentum}")];
        let r = BatchNorm1d::with_config(3, BatchNormConfig { momentum, ..d });
        expect_err(r, Kind::Value, "BatchNorm1d", &[&facts[0]]);
    }
    let facts = ["normalized_shape must be non-empty with positive sizes, got [3, 0]"];
    expect_err(LayerNorm::new(&[3, 0]), Kind::Value, "LayerNorm", &facts);
    expect_err(LayerNorm::new(&[]), Kind::Value, "LayerNorm", &["got []"]);
    assert!(BatchNorm1d::with_config(3, BatchNormConfig { momentum: 1.0, eps: 1e-12, ..d }).is_ok());
}

#[test]
fn dropout_and_attention_refuse_bad_probabilities_and_head_splits() {
    for p in [-0.1, 1.5, f64::NAN] {
        expect_err(Dropout::new(p), Kind::Value, "Dropout", &[&format!("p must be in [0, 1], got {p}")]);
        let r = MultiHeadAttention::with_options(4, 2, true, p);
        expect_err(r, Kind::Value, "MultiHeadAttention", &[&format!("dropout must be in [0, 1), got {p}")]);
    }
    let facts = ["embed_dim 10 must be a positive multiple of num_heads 3"];
    expect_err(MultiHeadAttention::new(10, 3), Kind::Value, "MultiHeadAttention", &facts);
    expect_err(MultiHeadAttention::new(4, 0), Kind::Value, "MultiHeadAttention", &["num_heads 0"]);
    expect_err(MultiHeadAttention::new(0, 2), Kind::Value, "MultiHeadAttention", &["embed_dim 0"]);
    assert!(Dropout::new(0.0).is_ok() && MultiHeadAttention::new(6, 3).is_ok());
}

#[test]
fn every_optimizer_refuses_non_leaves_and_tensors_without_grad() {
    type Make = fn(Vec<skiff::Tensor>) -> skiff::Result<()>;
    let makers: [(&str, Make); 5] = [
        ("SGD", |p| Sgd::new(p, SgdConfig::default()).map(|_| ())),
        ("Adam", |p| Adam::new(p, AdamConfig::default()).map(|_| ())),
        ("AdamW", |p| AdamW::new(p, AdamConfig::default()).map(|_| ())),
        ("RMSProp", |p| RmsProp::new(p, RmsPropConfig::default()).map(|_| ())),
        ("Adagrad", |p| Adagrad::new(p, AdagradConfig::default()).map(|_| ())),
    ];
    for (name, make) in makers {
        let w = leaf(&[1.0, 2.0], &[2]);
        let facts = ["group 0, parameter 1: can't optimize a non-leaf tensor (shape [2], made by mul_scalar)"];
        expect_err(make(vec![w.clone(), w.mul_scalar(2.0).unwrap()]), Kind::Value, name, &facts);
        let facts = ["group 0, parameter 0: a tensor of shape [2] that does not require grad"];
        expect_err(make(vec![t(&[1.0, 2.0], &[2])]), Kind::Value, name, &facts);
        make(vec![w]).unwrap();
    }
}
