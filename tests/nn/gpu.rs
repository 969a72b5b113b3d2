//! Every layer on the GPU against the cpu, in f32. A layer is built on the
//! cpu with random state (parameters and running statistics drawn uniformly:
//! ones, zeros and unit variances hide mistakes), its twin is moved with
//! `to(gpu)` and loaded with the same state. In train mode, then in eval mode
//! (which then uses the running statistics the train step updated), both run
//! the same input; the outputs, the gradients of the weighted loss
//! sum(out * w) (random w: `sum_all` makes batch norm's weight gradient
//! exactly 0 on both devices) with respect to the INPUTS and to every
//! parameter, and the state afterwards must agree.
//!
//! Tolerance: |gpu - cpu| <= 1e-4 * (1 + |cpu|). Both devices compute in f32
//! (unit roundoff 6e-8) but sum in different orders (tiled GPU reductions and
//! matmuls vs the cpu's sequential loops); the sums here have at most ~100
//! terms of size O(1), so the devices differ by O(1e-6), and the transcendental
//! functions (exp, tanh, erf, rsqrt) of WGSL are accurate to a few ulp on these
//! ranges. 1e-4 leaves a 100x margin for that, while any real mistake (a
//! missing term, a wrong index, a dropped gradient path) moves results by
//! O(1e-2) or more, as the non-degeneracy check below guarantees the
//! gradients are that large.
#![cfg(feature = "gpu")]

use crate::common;

use crate::common::gradcheck::{randomise, uniform};
use skiff::nn::loss::{BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss};
use skiff::nn::*;
use skiff::{manual_seed, no_grad, DType, Device, Error, Result, Tensor};

const ATOL_RTOL: f64 = 1e-4;

fn close(what: &str, cpu: &Tensor, gpu: &Tensor) {
    assert_eq!(cpu.shape(), gpu.shape(), "{what}");
    let (a, b) = (cpu.to_f64_vec().unwrap(), gpu.to_f64_vec().unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= ATOL_RTOL * (1.0 + x.abs()), "{what}: element {i}: cpu {x}, gpu {y}");
    }
}

/// A gradient compared against 0 vs 0 proves nothing: the cpu's must be sizeable.
fn assert_not_degenerate(what: &str, g: &Tensor) {
    let max = g.to_f64_vec().unwrap().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(max > 1e-3, "{what}: the gradient is degenerate (max |g| = {max:e})");
}

/// f32 uniform values from a private generator.
fn rand32(shape: &[usize], seed: u64) -> Tensor {
    uniform(shape, -1.0, 1.0, seed).to_dtype(DType::F32).unwrap()
}

/// The layer's `forward` of its one input.
fn forward<L: Layer>(layer: &L, xs: &[Tensor]) -> Result<Tensor> {
    layer.forward(&xs[0])
}

/// Fresh leaves on `device` for the float inputs (indices are moved as they are).
fn leaves(xs: &[Tensor], device: &Device) -> Vec<Tensor> {
    let leaf = |x: &Tensor| {
        let x = x.to(device).unwrap().detach();
        if x.dtype().is_float() {
            x.requires_grad_(true).unwrap()
        } else {
            x
        }
    };
    xs.iter().map(leaf).collect()
}

/// Builds `make()` on the cpu with random state and its twin on `gpu`, then
/// compares them in train mode and in eval mode (see the file note).
fn parity<L: Layer>(
    name: &str,
    gpu: &Device,
    make: &dyn Fn() -> L,
    run: &dyn Fn(&L, &[Tensor]) -> Result<Tensor>,
    xs: &[Tensor],
) {
    let cpu_layer = make();
    randomise(&cpu_layer.state_dict(), -1.0, 1.0, 3);
    for (n, t) in cpu_layer.state_dict() {
        if n.ends_with("running_var") {
            no_grad(|| t.copy_(&t.abs()?.add_scalar(0.5)?)).unwrap();
        }
    }
    let gpu_layer = make();
    gpu_layer.to(gpu).unwrap();
    gpu_layer.load_state_dict(&cpu_layer.state_dict(), true).unwrap();
    for (n, t) in gpu_layer.state_dict() {
        assert_eq!(&t.device(), gpu, "{name}: {n} not moved");
    }
    for train in [true, false] {
        let name = format!("{name} ({})", if train { "train" } else { "eval" });
        cpu_layer.train(train);
        gpu_layer.train(train);
        let (xc, xg) = (leaves(xs, &Device::Cpu), leaves(xs, gpu));
        manual_seed(7);
        let yc = run(&cpu_layer, &xc).unwrap();
        manual_seed(7);
        let yg = run(&gpu_layer, &xg).unwrap();
        assert_eq!(&yg.device(), gpu, "{name}");
        close(&format!("{name} output"), &yc, &yg);
        let w = rand32(yc.shape(), 5);
        yc.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
        yg.mul(&w.to(gpu).unwrap()).unwrap().sum_all().unwrap().backward().unwrap();
        for (i, (c, g)) in xc.iter().zip(&xg).enumerate().filter(|(_, (c, _))| c.dtype().is_float()) {
            let what = format!("{name} grad of input {i}");
            let gc = c.grad().unwrap_or_else(|| panic!("{what}: none on the cpu"));
            assert_not_degenerate(&what, &gc);
            close(&what, &gc, &g.grad().unwrap_or_else(|| panic!("{what}: none on the GPU")));
        }
        for ((n, pc), (_, pg)) in cpu_layer.named_parameters().into_iter().zip(gpu_layer.named_parameters()) {
            let what = format!("{name} grad of {n}");
            let gc = pc.grad().unwrap_or_else(|| panic!("{what}: none on the cpu"));
            assert_not_degenerate(&what, &gc);
            let gg = pg.grad().unwrap_or_else(|| panic!("{what}: none on the GPU"));
            assert_eq!(&gg.device(), gpu, "{what}");
            close(&what, &gc, &gg);
        }
        // Running statistics after the train step; unchanged by the eval one.
        for ((n, c), (_, g)) in cpu_layer.state_dict().into_iter().zip(gpu_layer.state_dict()) {
            close(&format!("{name} state {n}"), &c, &g);
        }
        cpu_layer.zero_grad();
        gpu_layer.zero_grad();
    }
}

type Make = Box<dyn Fn() -> Box<dyn Layer>>;

fn boxed(l: impl Layer + 'static) -> Box<dyn Layer> {
    Box::new(l)
}

#[test]
fn every_layer_matches_the_cpu() {
    // Both devices draw the same dropout masks after re-seeding.
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let img = rand32(&[2, 3, 6, 6], 1);
    let vec2 = rand32(&[4, 6], 2);
    let seq = rand32(&[2, 5, 8], 3);
    let vec3 = rand32(&[3, 4, 5], 4);
    let pixels = rand32(&[2, 8, 3, 2], 5);
    let conv = |c: Conv2dConfig, i, o, k| -> Make { Box::new(move || boxed(Conv2d::with_config(i, o, k, c).unwrap())) };
    let cases: Vec<(&str, Make, &Tensor)> = vec![
        ("Linear", Box::new(|| boxed(Linear::new(6, 3).unwrap())), &vec2),
        ("Linear no bias 3-d", Box::new(|| boxed(Linear::with_bias(8, 4, false).unwrap())), &seq),
        ("Conv2d", conv(Conv2dConfig::default(), 3, 4, [3, 3]), &img),
        (
            "Conv2d grouped",
            conv(Conv2dConfig { stride: [2, 2], padding: [1, 1], groups: 3, ..Default::default() }, 3, 6, [3, 3]),
            &img,
        ),
        (
            "Conv2d dilated",
            conv(Conv2dConfig { dilation: [2, 1], stride: [1, 2], bias: false, ..Default::default() }, 3, 2, [2, 3]),
            &img,
        ),
        ("MaxPool2d", Box::new(|| boxed(MaxPool2d::new([2, 2]).unwrap())), &img),
        ("MaxPool2d padded", Box::new(|| boxed(MaxPool2d::with_options([3, 3], [2, 1], [1, 1]).unwrap())), &img),
        ("AvgPool2d", Box::new(|| boxed(AvgPool2d::with_options([3, 3], [2, 2], [1, 1]).unwrap())), &img),
        ("AdaptiveAvgPool2d even", Box::new(|| boxed(AdaptiveAvgPool2d::new([3, 2]).unwrap())), &img),
        ("AdaptiveAvgPool2d uneven", Box::new(|| boxed(AdaptiveAvgPool2d::new([4, 5]).unwrap())), &img),
        ("BatchNorm2d", Box::new(|| boxed(BatchNorm2d::new(3).unwrap())), &img),
        ("BatchNorm1d", Box::new(|| boxed(BatchNorm1d::new(6).unwrap())), &vec2),
        ("BatchNorm1d [N, C, L]", Box::new(|| boxed(BatchNorm1d::new(4).unwrap())), &vec3),
        (
            "BatchNorm2d untracked",
            Box::new(|| {
                boxed(
                    BatchNorm2d::with_config(3, BatchNormConfig { track_running_stats: false, ..Default::default() })
                        .unwrap(),
                )
            }),
            &img,
        ),
        ("LayerNorm", Box::new(|| boxed(LayerNorm::new(&[8]).unwrap())), &seq),
        ("LayerNorm 2-d", Box::new(|| boxed(LayerNorm::new(&[4, 5]).unwrap())), &vec3),
        ("Dropout", Box::new(|| boxed(Dropout::new(0.3).unwrap())), &seq),
        ("Flatten", Box::new(|| boxed(Flatten::new())), &img),
        ("ReLU", Box::new(|| boxed(ReLU::new())), &seq),
        ("LeakyReLU", Box::new(|| boxed(LeakyReLU::new(0.2))), &seq),
        ("GELU", Box::new(|| boxed(GELU::new())), &seq),
        ("GELU tanh", Box::new(|| boxed(GELU::with_approximate(GeluApproximate::Tanh))), &seq),
        ("SiLU", Box::new(|| boxed(SiLU::new())), &seq),
        ("Tanh", Box::new(|| boxed(Tanh::new())), &seq),
        ("Sigmoid", Box::new(|| boxed(Sigmoid::new())), &seq),
        ("Softmax", Box::new(|| boxed(Softmax::new(1))), &seq),
        ("ELU", Box::new(|| boxed(ELU::new(0.7))), &seq),
        ("SELU", Box::new(|| boxed(SELU::new())), &seq),
        ("Mish", Box::new(|| boxed(Mish::new())), &seq),
        ("Hardswish", Box::new(|| boxed(Hardswish::new())), &seq),
        ("Hardsigmoid", Box::new(|| boxed(Hardsigmoid::new())), &seq),
        ("PReLU", Box::new(|| boxed(PReLU::new(5, 0.25).unwrap())), &seq),
        ("Identity", Box::new(|| boxed(Identity::new())), &img),
        ("Unflatten", Box::new(|| boxed(Unflatten::new(1, &[3, 1]).unwrap())), &img),
        ("ZeroPad2d", Box::new(|| boxed(ZeroPad2d::new([1, 2, 0, 3]))), &img),
        ("PixelShuffle", Box::new(|| boxed(PixelShuffle::new(2))), &pixels),
        ("PixelUnshuffle", Box::new(|| boxed(PixelUnshuffle::new(3))), &img),
        ("GroupNorm", Box::new(|| boxed(GroupNorm::new(3, 3).unwrap())), &img),
        ("InstanceNorm2d", Box::new(|| boxed(InstanceNorm::new_2d(3, 1e-5, true).unwrap())), &img),
        ("RMSNorm", Box::new(|| boxed(RMSNorm::new(&[8]).unwrap())), &seq),
        (
            "Conv1d",
            Box::new(|| {
                boxed(Conv1d::with_config(5, 4, 3, Conv1dConfig { padding: 1, ..Default::default() }).unwrap())
            }),
            &seq,
        ),
        (
            "ConvTranspose2d",
            Box::new(|| {
                let c = ConvTranspose2dConfig {
                    stride: [2, 2],
                    padding: [1, 1],
                    output_padding: [1, 1],
                    ..Default::default()
                };
                boxed(ConvTranspose2d::with_config(3, 2, [3, 3], c).unwrap())
            }),
            &img,
        ),
        ("Upsample nearest", Box::new(|| boxed(Upsample::with_scale(2.0, Interpolation::Nearest).unwrap())), &img),
        (
            "Upsample bilinear",
            Box::new(|| boxed(Upsample::with_size(&[4, 9], Interpolation::Bilinear { align_corners: false }).unwrap())),
            &img,
        ),
        ("MultiHeadAttention", Box::new(|| boxed(MultiHeadAttention::new(8, 2).unwrap())), &seq),
        (
            "MultiHeadAttention causal",
            Box::new(|| boxed(MultiHeadAttention::new(8, 4).unwrap().with_causal(true))),
            &seq,
        ),
        (
            "MultiHeadAttention dropout",
            Box::new(|| boxed(MultiHeadAttention::with_options(8, 2, false, 0.2).unwrap())),
            &seq,
        ),
        (
            "Sequential CNN",
            Box::new(|| {
                boxed(
                    Sequential::new()
                        .push(Conv2d::new(3, 4, [3, 3]).unwrap())
                        // After the ReLU: a batch norm right after the conv would
                        // make the conv bias's gradient exactly 0 in train mode.
                        .push(ReLU::new())
                        .push(BatchNorm2d::new(4).unwrap())
                        .push(MaxPool2d::new([2, 2]).unwrap())
                        .push(Flatten::new())
                        .push(Linear::new(16, 5).unwrap()),
                )
            }),
            &img,
        ),
    ];
    for (name, make, x) in &cases {
        parity(name, &gpu, make.as_ref(), &forward, std::slice::from_ref(*x));
    }
    let idx = Tensor::from_vec(vec![0i32, 3, 2, 3, 1, 0], &[2, 3]).unwrap();
    parity("Embedding", &gpu, &|| Embedding::new(4, 5).unwrap(), &forward, &[idx]);
}

/// The attention output and weights in one tensor, so both are compared.
fn out_and_weights((out, weights): (Tensor, Tensor)) -> Result<Tensor> {
    Tensor::concat(&[out.flatten(0, -1)?, weights.flatten(0, -1)?], 0)
}

/// Cross attention with a key padding mask (and causal on top): the
/// gradients of query, key and value, and the attention weights too.
#[test]
fn cross_attention_matches_the_cpu() {
    // Both devices draw the same dropout masks after re-seeding.
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let pad = Tensor::from_bools(&[false, true, false, false, true, false, true, false], &[2, 4]).unwrap();
    let qkv = [rand32(&[2, 3, 6], 1), rand32(&[2, 4, 6], 2), rand32(&[2, 4, 6], 3)];
    for causal in [false, true] {
        let run = |m: &MultiHeadAttention, xs: &[Tensor]| {
            let mask = pad.to(&xs[0].device())?;
            out_and_weights(m.attend(&xs[0], &xs[1], &xs[2], Some(&mask), causal)?)
        };
        let name = format!("MultiHeadAttention attend causal {causal}");
        parity(&name, &gpu, &|| MultiHeadAttention::new(6, 3).unwrap(), &run, &qkv);
    }
}

#[test]
fn f64_stays_on_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let l = Linear::new(2, 2).unwrap();
    l.to(&gpu).unwrap();
    assert!(matches!(l.to_dtype(DType::F64), Err(Error::DType { .. })));
    assert!(l.parameters().iter().all(|p| p.dtype() == DType::F32 && p.device() == gpu));
}

/// A loss's value and its gradients with respect to every float input.
fn loss_parity(name: &str, gpu: &Device, f: &dyn Fn(&[Tensor]) -> Result<Tensor>, xs: &[Tensor]) {
    let (xc, xg) = (leaves(xs, &Device::Cpu), leaves(xs, gpu));
    let (lc, lg) = (f(&xc).unwrap(), f(&xg).unwrap());
    close(&format!("{name} value"), &lc, &lg);
    lc.backward().unwrap();
    lg.backward().unwrap();
    for (i, (c, g)) in xc.iter().zip(&xg).enumerate().filter(|(_, (c, _))| c.dtype().is_float()) {
        let what = format!("{name} grad of input {i}");
        let gc = c.grad().unwrap();
        assert_not_degenerate(&what, &gc);
        close(&what, &gc, &g.grad().unwrap());
    }
}

#[test]
fn losses_match_the_cpu() {
    // Both devices draw the same dropout masks after re-seeding.
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let logits = rand32(&[5, 4], 1).mul_scalar(2.0).unwrap();
    let labels = Tensor::from_vec(vec![0i32, 3, 1, 1, 2], &[5]).unwrap();
    let a = rand32(&[3, 4], 2);
    let probs = uniform(&[3, 4], 0.0, 1.0, 3).to_dtype(DType::F32).unwrap();
    let smooth = CrossEntropyLoss { label_smoothing: 0.1, ..Default::default() };
    loss_parity("ce", &gpu, &|x| smooth.forward(&x[0], &x[1]), &[logits.clone(), labels.clone()]);
    let nll = NLLLoss::new();
    loss_parity("nll", &gpu, &|x| nll.forward(&x[0].log_softmax(1)?, &x[1]), &[logits, labels]);
    loss_parity("mse", &gpu, &|x| MSELoss::new().forward(&x[0], &x[1]), &[a.clone(), probs.clone()]);
    loss_parity("l1", &gpu, &|x| L1Loss::new().forward(&x[0], &x[1]), &[a.clone(), probs.clone()]);
    let bce = BCEWithLogitsLoss::new();
    loss_parity("bce", &gpu, &|x| bce.forward(&x[0], &x[1]), &[a, probs]);
    // Initialisers write on the tensor's device.
    let w = Tensor::zeros(&[3, 4], DType::F32).unwrap().to(&gpu).unwrap();
    manual_seed(9);
    init::xavier_uniform_(&w, 1.0).unwrap();
    let c = Tensor::zeros(&[3, 4], DType::F32).unwrap();
    manual_seed(9);
    init::xavier_uniform_(&c, 1.0).unwrap();
    assert_eq!(w.device(), gpu);
    close("xavier", &c, &w);
}

/// The recurrent layers (with their states in and out, dropout between
/// layers), their cells and the transformer layers, cpu against GPU.
#[test]
fn recurrent_and_transformer_layers_match_the_cpu() {
    // Both devices draw the same dropout masks after re-seeding.
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let joined = |out: Tensor, s: RecurrentState| -> Result<Tensor> {
        let mut parts = vec![out.flatten(0, -1)?, s.h.flatten(0, -1)?];
        parts.extend(s.c.map(|c| c.flatten(0, -1)).transpose()?);
        Tensor::concat(&parts, 0)
    };
    let seq = rand32(&[4, 3, 5], 1);
    let kinds = [RecurrentKind::RnnTanh, RecurrentKind::RnnRelu, RecurrentKind::Lstm, RecurrentKind::Gru];
    for kind in kinds {
        let c = RecurrentConfig { num_layers: 2, bidirectional: true, dropout: 0.25, ..Default::default() };
        let make = || Recurrent::new(kind, 5, 6, c).unwrap();
        let run = |m: &Recurrent, xs: &[Tensor]| {
            let (out, s) = m.forward_with_state(&xs[0], None)?;
            joined(out, s)
        };
        parity(&format!("{kind:?} stack"), &gpu, &make, &run, std::slice::from_ref(&seq));
        let states = if kind == RecurrentKind::Lstm { 3 } else { 2 };
        let xs = [rand32(&[3, 5], 2), rand32(&[3, 6], 3), rand32(&[3, 6], 4)];
        let run = |m: &RecurrentCell, xs: &[Tensor]| {
            let s = m.step(&xs[0], Some(&RecurrentState { h: xs[1].clone(), c: xs.get(2).cloned() }))?;
            joined(s.h.clone(), s)
        };
        parity(&format!("{kind:?} cell"), &gpu, &|| RecurrentCell::new(kind, 5, 6, true).unwrap(), &run, &xs[..states]);
    }
    let c = TransformerConfig { dim_feedforward: 12, dropout: 0.2, batch_first: true, ..Default::default() };
    let src = rand32(&[2, 4, 6], 5);
    parity(
        "TransformerEncoderLayer",
        &gpu,
        &|| TransformerEncoderLayer::with_config(6, 3, c).unwrap(),
        &forward,
        &[src],
    );
    let pre = TransformerConfig { norm_first: true, activation: FeedForwardActivation::Gelu, ..c };
    let run = |m: &TransformerDecoderLayer, xs: &[Tensor]| m.decode(&xs[0], &xs[1], true, None, None);
    let (tgt, memory) = (rand32(&[2, 3, 6], 6), rand32(&[2, 5, 6], 7));
    parity(
        "TransformerDecoderLayer pre-norm",
        &gpu,
        &|| TransformerDecoderLayer::with_config(6, 3, pre).unwrap(),
        &run,
        &[tgt, memory],
    );
}
