//! Every nn layer gradchecked in f64 on the cpu, in train and in eval mode:
//! the gradient of sum(out * w) (random w, see `common::gradcheck`) with
//! respect to the inputs and to every parameter, against central
//! differences; and, for layers built from twice-differentiable ops, the
//! second-order gradient. Layers are built in f32, converted with
//! `Layer::to_dtype(F64)`, and their state randomised (ones/zeros/unit
//! variance are special points that hide mistakes).

use crate::common;
use crate::common::gradcheck::{gradcheck, randomise, uniform};
use skiff::nn::*;
use skiff::{manual_seed, no_grad, DType, Error, Result, Tensor};

/// `layer` in f64 with its parameters and buffers drawn from [-1, 1).
fn f64_layer<L: Layer>(layer: L, seed: u64) -> L {
    layer.to_dtype(DType::F64).unwrap();
    randomise(&layer.state_dict(), -1.0, 1.0, seed);
    layer
}

/// Gradchecks `layer.forward` at `x` in train mode, then in eval mode.
fn check_modes(name: &str, layer: &dyn Layer, x: &Tensor, second_order: bool) {
    for train in [true, false] {
        layer.train(train);
        let name = format!("{name} ({})", if train { "train" } else { "eval" });
        let cells = layer.named_parameter_cells();
        gradcheck(&name, &|xs| layer.forward(&xs[0]), std::slice::from_ref(x), &cells, second_order);
    }
}

fn x(shape: &[usize], seed: u64) -> Tensor {
    uniform(shape, -1.0, 1.0, seed)
}

#[test]
fn to_dtype_makes_an_f64_layer() {
    let net = Sequential::new().push(Linear::new(3, 2).unwrap()).push(BatchNorm1d::new(2).unwrap());
    let before = net.state_dict();
    net.to_dtype(DType::F64).unwrap();
    for ((n, a), (_, b)) in before.iter().zip(net.state_dict()) {
        let want = if n.ends_with("num_batches_tracked") { DType::I32 } else { DType::F64 };
        assert_eq!(b.dtype(), want, "{n}");
        assert_eq!(a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap(), "{n}: values kept");
    }
    for (n, p) in net.named_parameters() {
        assert!(p.requires_grad() && p.is_leaf(), "{n} is a trainable leaf");
    }
    let y = net.forward(&x(&[4, 3], 1)).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    // The running statistics stay f64 after a training step.
    assert!(net.named_buffers().iter().all(|(n, b)| n.ends_with("tracked") || b.dtype() == DType::F64));
    // Mixed dtypes stay errors; integer dtypes are refused.
    let f32_in = Tensor::zeros(&[4, 3], DType::F32).unwrap();
    assert!(matches!(net.forward(&f32_in), Err(Error::DType { .. })));
    assert!(matches!(net.to_dtype(DType::I32), Err(Error::DType { .. })));
    // And back: f32 again.
    net.to_dtype(DType::F32).unwrap();
    assert!(net.parameters().iter().all(|p| p.dtype() == DType::F32 && p.requires_grad()));
}

#[test]
fn linear_and_conv2d() {
    check_modes("Linear", &f64_layer(Linear::new(3, 4).unwrap(), 1), &x(&[2, 3], 2), true);
    check_modes(
        "Linear no bias, 3-d input",
        &f64_layer(Linear::with_bias(3, 2, false).unwrap(), 3),
        &x(&[2, 2, 3], 4),
        true,
    );
    check_modes("Conv2d", &f64_layer(Conv2d::new(2, 3, [2, 2]).unwrap(), 5), &x(&[2, 2, 4, 4], 6), true);
    let cfg = Conv2dConfig { stride: [2, 1], padding: [1, 0], dilation: [1, 2], groups: 2, bias: true };
    let conv = f64_layer(Conv2d::with_config(4, 4, [2, 3], cfg).unwrap(), 7);
    check_modes("Conv2d stride/padding/dilation/groups", &conv, &x(&[1, 4, 5, 5], 8), true);
    let cfg = Conv2dConfig { padding: [1, 1], bias: false, ..Default::default() };
    check_modes(
        "Conv2d no bias",
        &f64_layer(Conv2d::with_config(1, 2, [3, 3], cfg).unwrap(), 9),
        &x(&[1, 1, 3, 3], 10),
        true,
    );
}

/// A batch norm in f64 with random affine parameters and running statistics
/// (a positive running variance).
fn batch_norm<const D: usize>(c: usize, config: BatchNormConfig, seed: u64) -> BatchNorm<D> {
    let bn = f64_layer(BatchNorm::<D>::with_config(c, config).unwrap(), seed);
    if let Some(rv) = &bn.running_var {
        no_grad(|| rv.get().copy_(&uniform(&[c], 0.5, 1.5, seed + 1))).unwrap();
    }
    bn
}

#[test]
fn batch_norm_differentiates_through_the_batch_statistics() {
    // Train mode normalises with the batch mean and variance: the input
    // gradient has the terms through both (a detach() of either fails here).
    // Eval mode uses the running statistics.
    let cfg = BatchNormConfig::default();
    check_modes("BatchNorm1d [N, C]", &batch_norm::<1>(3, cfg, 1), &x(&[4, 3], 2), true);
    check_modes("BatchNorm1d [N, C, L]", &batch_norm::<1>(2, cfg, 3), &x(&[3, 2, 3], 4), true);
    check_modes("BatchNorm2d", &batch_norm::<2>(2, cfg, 5), &x(&[2, 2, 3, 2], 6), true);
    let no_affine = BatchNormConfig { affine: false, ..cfg };
    check_modes("BatchNorm2d no affine", &batch_norm::<2>(2, no_affine, 7), &x(&[2, 2, 2, 2], 8), true);
    // Without running statistics eval mode uses the batch's too.
    let untracked = BatchNormConfig { track_running_stats: false, eps: 1e-3, ..cfg };
    check_modes("BatchNorm1d untracked", &batch_norm::<1>(3, untracked, 9), &x(&[3, 3], 10), true);
}

#[test]
fn batch_norm_running_statistics_in_f64() {
    let bn = batch_norm::<1>(2, BatchNormConfig { momentum: 0.25, ..Default::default() }, 1);
    let (rm, rv) = (bn.running_mean.as_ref().unwrap().get(), bn.running_var.as_ref().unwrap().get());
    let (m0, v0) = (rm.to_vec::<f64>().unwrap(), rv.to_vec::<f64>().unwrap());
    let input = x(&[3, 2], 2);
    bn.forward(&input).unwrap();
    let v = input.to_vec::<f64>().unwrap();
    for c in 0..2 {
        let col: Vec<f64> = (0..3).map(|n| v[n * 2 + c]).collect();
        let mean = col.iter().sum::<f64>() / 3.0;
        let unbiased = col.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / 2.0;
        let (got_m, got_v) = (rm.to_vec::<f64>().unwrap()[c], rv.to_vec::<f64>().unwrap()[c]);
        assert!((got_m - (0.75 * m0[c] + 0.25 * mean)).abs() < 1e-14, "running_mean {c}");
        assert!((got_v - (0.75 * v0[c] + 0.25 * unbiased)).abs() < 1e-14, "running_var {c}");
    }
}

#[test]
fn layer_norm() {
    check_modes("LayerNorm [4]", &f64_layer(LayerNorm::new(&[4]).unwrap(), 1), &x(&[3, 4], 2), true);
    check_modes("LayerNorm [2, 3]", &f64_layer(LayerNorm::new(&[2, 3]).unwrap(), 3), &x(&[2, 2, 3], 4), true);
    let plain = f64_layer(LayerNorm::with_options(&[3], 1e-3, false).unwrap(), 5);
    check_modes("LayerNorm no affine", &plain, &x(&[2, 3], 6), true);
}

#[test]
fn embedding_weight() {
    let emb = f64_layer(Embedding::new(5, 3).unwrap(), 1);
    // Repeated indices: their rows' gradients must accumulate.
    let idx = Tensor::from_vec(vec![0i32, 3, 3, 1, 0, 3], &[2, 3]).unwrap();
    for train in [true, false] {
        emb.train(train);
        gradcheck("Embedding", &|_| emb.forward(&idx), &[], &emb.named_parameter_cells(), true);
    }
}

/// The attention output and weights in one tensor, so both are checked.
fn out_and_weights((out, weights): (Tensor, Tensor)) -> Result<Tensor> {
    Tensor::concat(&[out.flatten(0, -1)?, weights.flatten(0, -1)?], 0)
}

#[test]
fn multi_head_attention() {
    let seq = x(&[2, 3, 4], 1);
    check_modes("MHA self", &f64_layer(MultiHeadAttention::new(4, 2).unwrap(), 2), &seq, true);
    let causal = f64_layer(MultiHeadAttention::new(4, 1).unwrap().with_causal(true), 3);
    check_modes("MHA causal", &causal, &seq, true);
    let no_bias = f64_layer(MultiHeadAttention::with_options(4, 2, false, 0.0).unwrap(), 4);
    check_modes("MHA no bias", &no_bias, &seq, true);
    // Cross attention: query, key and value are distinct inputs, with a key
    // padding mask (no row fully masked) and the causal mask on top.
    let m = f64_layer(MultiHeadAttention::new(4, 2).unwrap(), 5);
    let pad = Tensor::from_bools(&[false, true, false, true, false, false], &[2, 3]).unwrap();
    let qkv = [x(&[2, 2, 4], 6), x(&[2, 3, 4], 7), x(&[2, 3, 4], 8)];
    for (mask, causal) in [(None, false), (Some(&pad), false), (Some(&pad), true)] {
        for train in [true, false] {
            m.train(train);
            let name = format!("MHA attend mask {} causal {causal} train {train}", mask.is_some());
            let f = |xs: &[Tensor]| out_and_weights(m.attend(&xs[0], &xs[1], &xs[2], mask, causal)?);
            // Without dropout both modes run the same ops: second order once.
            gradcheck(&name, &f, &qkv, &m.named_parameter_cells(), !train);
        }
    }
}

#[test]
fn dropout_in_train_mode_reuses_its_mask() {
    // Re-seeding works only while no other test draws from the generator.
    if !common::own_process() {
        return;
    }
    // Re-seeding before each forward draws the same mask every time, so the
    // function is smooth in its inputs and central differences apply.
    let seeded = |layer: &dyn Layer, xs: &[Tensor]| {
        manual_seed(3);
        layer.forward(&xs[0])
    };
    let d = Dropout::new(0.4).unwrap();
    let input = x(&[3, 5], 1);
    let y = seeded(&d, std::slice::from_ref(&input)).unwrap().to_vec::<f64>().unwrap();
    assert!(y.contains(&0.0) && y.iter().any(|v| *v != 0.0), "some elements dropped, some kept");
    gradcheck("Dropout (train)", &|xs| seeded(&d, xs), std::slice::from_ref(&input), &[], true);
    d.eval();
    gradcheck("Dropout (eval)", &|xs| d.forward(&xs[0]), &[input], &[], true);
    let m = f64_layer(MultiHeadAttention::with_options(4, 2, true, 0.3).unwrap(), 2);
    let cells = m.named_parameter_cells();
    gradcheck("MHA dropout (train)", &|xs| seeded(&m, xs), &[x(&[2, 3, 4], 3)], &cells, false);
    m.eval();
    gradcheck("MHA dropout (eval)", &|xs| m.forward(&xs[0]), &[x(&[2, 3, 4], 3)], &cells, true);
}

#[test]
fn pools_and_flatten() {
    let img = x(&[1, 2, 5, 6], 1);
    // Max pools are piecewise linear: first order only (uniform inputs have
    // no ties within the step).
    check_modes("MaxPool2d", &MaxPool2d::new([2, 2]).unwrap(), &img, false);
    check_modes("MaxPool2d padded", &MaxPool2d::with_options([3, 3], [2, 1], [1, 1]).unwrap(), &img, false);
    check_modes("AvgPool2d", &AvgPool2d::new([2, 3]).unwrap(), &img, true);
    check_modes("AvgPool2d padded", &AvgPool2d::with_options([3, 3], [2, 2], [1, 1]).unwrap(), &img, true);
    check_modes("AdaptiveAvgPool2d even", &AdaptiveAvgPool2d::new([5, 3]).unwrap(), &img, true);
    check_modes("AdaptiveAvgPool2d uneven", &AdaptiveAvgPool2d::new([3, 4]).unwrap(), &img, true);
    check_modes("Flatten", &Flatten::with_axes(1, 2), &img, true);
    check_modes("Identity", &Identity::new(), &img, true);
    check_modes("Unflatten", &Unflatten::new(3, &[-1, 2]).unwrap(), &img, true);
    check_modes("ZeroPad2d", &ZeroPad2d::new([1, 0, 2, 3]), &img, true);
    check_modes("PixelUnshuffle", &PixelUnshuffle::new(2), &x(&[1, 2, 4, 6], 2), true);
    check_modes("PixelShuffle", &PixelShuffle::new(2), &x(&[1, 8, 2, 3], 3), true);
    check_modes("Upsample nearest", &Upsample::with_scale(1.5, Interpolation::Nearest).unwrap(), &img, true);
    let bilinear = Upsample::with_size(&[7, 4], Interpolation::Bilinear { align_corners: false }).unwrap();
    check_modes("Upsample bilinear", &bilinear, &img, true);
    let linear = Upsample::with_scale(2.0, Interpolation::Linear { align_corners: true }).unwrap();
    check_modes("Upsample linear", &linear, &x(&[2, 3, 4], 4), true);
}

#[test]
fn normalisations_and_convolutions_of_issue_48() {
    let img = x(&[2, 4, 3, 3], 1);
    check_modes("GroupNorm", &f64_layer(GroupNorm::new(2, 4).unwrap(), 2), &img, true);
    check_modes("InstanceNorm2d affine", &f64_layer(InstanceNorm::new_2d(4, 1e-5, true).unwrap(), 3), &img, true);
    check_modes("InstanceNorm1d", &InstanceNorm::new_1d(3, 1e-5, false).unwrap(), &x(&[2, 3, 5], 4), true);
    check_modes("InstanceNorm2d unbatched", &InstanceNorm::new_2d(4, 1e-5, false).unwrap(), &x(&[4, 3, 3], 5), true);
    check_modes("RMSNorm", &f64_layer(RMSNorm::new(&[3, 3]).unwrap(), 6), &img, true);
    let c1 = Conv1dConfig { stride: 2, padding: 1, dilation: 2, groups: 2, bias: true };
    check_modes("Conv1d", &f64_layer(Conv1d::with_config(4, 2, 3, c1).unwrap(), 7), &x(&[2, 4, 8], 8), true);
    check_modes("Conv1d unbatched", &f64_layer(Conv1d::new(4, 3, 2).unwrap(), 9), &x(&[4, 5], 10), true);
    let ct = ConvTranspose2dConfig {
        stride: [2, 1],
        padding: [1, 0],
        output_padding: [1, 0],
        groups: 2,
        ..Default::default()
    };
    check_modes("ConvTranspose2d", &f64_layer(ConvTranspose2d::with_config(4, 6, [3, 2], ct).unwrap(), 11), &img, true);
}

#[test]
fn activations() {
    let input = x(&[2, 3, 4], 1);
    check_modes("ReLU", &ReLU::new(), &input, false);
    check_modes("LeakyReLU", &LeakyReLU::new(0.2), &input, false);
    check_modes("GELU", &GELU::new(), &input, true);
    check_modes("GELU tanh", &GELU::with_approximate(GeluApproximate::Tanh), &input, true);
    check_modes("SiLU", &SiLU::new(), &input, true);
    check_modes("Tanh", &Tanh::new(), &input, true);
    check_modes("Sigmoid", &Sigmoid::new(), &input, true);
    check_modes("Softmax", &Softmax::new(1), &input, true);
    // The kinks (0 for ELU, SELU and PReLU, +-3 for Hardswish and
    // Hardsigmoid, whose inputs are scaled to [-4, 4) to reach their flat
    // parts) lie within a finite-difference step of no uniform input.
    let wide = input.mul_scalar(4.0).unwrap();
    check_modes("ELU", &ELU::new(0.7), &input, true);
    check_modes("SELU", &SELU::new(), &input, true);
    check_modes("Mish", &Mish::new(), &wide, true);
    check_modes("Hardswish", &Hardswish::new(), &wide, true);
    check_modes("Hardsigmoid", &Hardsigmoid::new(), &wide, true);
    check_modes("PReLU per channel", &f64_layer(PReLU::new(3, 0.25).unwrap(), 2), &input, true);
    check_modes("PReLU one slope", &f64_layer(PReLU::new(1, 0.25).unwrap(), 3), &input, true);
}

#[test]
fn sequential_models() {
    // Parameters reached through children ("0.weight", "1.running_mean", ...).
    let cnn = Sequential::new()
        .push(Conv2d::with_config(1, 2, [3, 3], Conv2dConfig { padding: [1, 1], ..Default::default() }).unwrap())
        .push(BatchNorm2d::new(2).unwrap())
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2]).unwrap())
        .push(Flatten::new())
        .push(Linear::new(8, 3).unwrap());
    let cnn = f64_layer(cnn, 1);
    let rv = cnn.state_dict().into_iter().find(|(n, _)| n == "1.running_var").unwrap().1;
    no_grad(|| rv.copy_(&uniform(&[2], 0.5, 1.5, 2))).unwrap();
    assert_eq!(cnn.named_parameter_cells().len(), 6);
    check_modes("CNN", &cnn, &x(&[2, 1, 4, 4], 3), false);
    let mlp = Sequential::new()
        .push(Linear::new(3, 4).unwrap())
        .push(LayerNorm::new(&[4]).unwrap())
        .push(Tanh::new())
        .push(Linear::new(4, 2).unwrap());
    check_modes("MLP", &f64_layer(mlp, 4), &x(&[3, 3], 5), true);
}

/// The output and the final states joined, so all of them are checked.
fn joined(out: Tensor, s: RecurrentState) -> Result<Tensor> {
    let mut parts = vec![out.flatten(0, -1)?, s.h.flatten(0, -1)?];
    parts.extend(s.c.map(|c| c.flatten(0, -1)).transpose()?);
    Tensor::concat(&parts, 0)
}

#[test]
fn recurrent_layers_and_cells() {
    let config = |num_layers, batch_first, bidirectional| RecurrentConfig {
        num_layers,
        batch_first,
        bidirectional,
        ..Default::default()
    };
    let kinds = [RecurrentKind::RnnTanh, RecurrentKind::RnnRelu, RecurrentKind::Lstm, RecurrentKind::Gru];
    for (seed, kind) in (1..).zip(kinds) {
        let stack = f64_layer(Recurrent::new(kind, 2, 3, config(2, true, true)).unwrap(), seed);
        check_modes(&format!("{kind:?} 2 layers bidirectional"), &stack, &x(&[2, 3, 2], seed + 10), true);
        // Initial states in, every output out, sequence first.
        let layer = f64_layer(Recurrent::new(kind, 2, 3, config(1, false, false)).unwrap(), seed + 20);
        let lstm = kind == RecurrentKind::Lstm;
        let mut ins = vec![x(&[3, 2, 2], seed + 30), x(&[1, 2, 3], seed + 40)];
        if lstm {
            ins.push(x(&[1, 2, 3], seed + 50));
        }
        let f = |xs: &[Tensor]| {
            let state = RecurrentState { h: xs[1].clone(), c: xs.get(2).cloned() };
            let (out, s) = layer.forward_with_state(&xs[0], Some(&state))?;
            joined(out, s)
        };
        gradcheck(&format!("{kind:?} with states"), &f, &ins, &layer.named_parameter_cells(), true);
        let cell = f64_layer(RecurrentCell::new(kind, 2, 3, true).unwrap(), seed + 60);
        let f = |xs: &[Tensor]| {
            let s = cell.step(&xs[0], Some(&RecurrentState { h: xs[1].clone(), c: xs.get(2).cloned() }))?;
            joined(s.h.clone(), s)
        };
        let ins =
            [vec![x(&[2, 2], seed + 70)], ins[1..].iter().map(|t| t.squeeze(Some(0)).unwrap()).collect()].concat();
        gradcheck(&format!("{kind:?} cell"), &f, &ins, &cell.named_parameter_cells(), true);
    }
}

#[test]
fn transformer_layers() {
    let base = TransformerConfig { dim_feedforward: 6, dropout: 0.0, ..Default::default() };
    let pre_gelu =
        TransformerConfig { norm_first: true, activation: FeedForwardActivation::Gelu, batch_first: true, ..base };
    for (name, c) in [("post-norm", base), ("pre-norm gelu", pre_gelu)] {
        let enc = f64_layer(TransformerEncoderLayer::with_config(4, 2, c).unwrap(), 1);
        check_modes(&format!("TransformerEncoderLayer {name}"), &enc, &x(&[3, 2, 4], 2), true);
        let pad = Tensor::from_bools(&[false, false, true, false, true, false], &[2, 3]).unwrap();
        // Sequence-first inputs [L, N, E] made [N, L, E] for a batch-first layer.
        let order = |t: Tensor| if c.batch_first { t.transpose(0, 1).unwrap().contiguous().unwrap() } else { t };
        let f = |xs: &[Tensor]| enc.encode(&xs[0], Some(&pad), true);
        let src = [order(x(&[3, 2, 4], 3))];
        gradcheck(&format!("encode {name} masked causal"), &f, &src, &enc.named_parameter_cells(), true);
        let dec = f64_layer(TransformerDecoderLayer::with_config(4, 2, c).unwrap(), 4);
        let f = |xs: &[Tensor]| dec.decode(&xs[0], &xs[1], true, None, Some(&pad));
        let ins = [order(x(&[2, 2, 4], 5)), order(x(&[3, 2, 4], 6))];
        gradcheck(&format!("decode {name}"), &f, &ins, &dec.named_parameter_cells(), true);
    }
}

#[test]
fn recurrent_and_transformer_dropout_in_train_mode() {
    // Re-seeding works only while no other test draws from the generator.
    if !common::own_process() {
        return;
    }
    let seeded = |layer: &dyn Layer, xs: &[Tensor]| {
        manual_seed(5);
        layer.forward(&xs[0])
    };
    let lstm = RecurrentConfig { num_layers: 2, dropout: 0.4, ..Default::default() };
    let lstm = f64_layer(Recurrent::new(RecurrentKind::Lstm, 2, 3, lstm).unwrap(), 1);
    let enc = TransformerConfig { dim_feedforward: 6, dropout: 0.3, ..Default::default() };
    let enc = f64_layer(TransformerEncoderLayer::with_config(4, 2, enc).unwrap(), 2);
    for (name, layer, input) in [("LSTM", &lstm as &dyn Layer, x(&[4, 2, 2], 3)), ("encoder", &enc, x(&[3, 2, 4], 4))] {
        let cells = layer.named_parameter_cells();
        gradcheck(
            &format!("{name} dropout (train)"),
            &|xs| seeded(layer, xs),
            std::slice::from_ref(&input),
            &cells,
            false,
        );
        // Dropout acts in train mode only: the two modes differ, and eval is deterministic.
        let train = seeded(layer, std::slice::from_ref(&input)).unwrap().to_vec::<f64>().unwrap();
        layer.eval();
        let eval = layer.forward(&input).unwrap().to_vec::<f64>().unwrap();
        assert_ne!(train, eval, "{name}: dropout changed nothing in train mode");
        assert_eq!(eval, layer.forward(&input).unwrap().to_vec::<f64>().unwrap(), "{name}: eval is deterministic");
        gradcheck(&format!("{name} dropout (eval)"), &|xs| layer.forward(&xs[0]), &[input], &cells, true);
    }
}
