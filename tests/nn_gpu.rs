//! Every layer on the GPU against the cpu: a layer built with one seed runs on
//! the cpu, its twin (same seed) is moved with `to(gpu)`; outputs, parameter
//! gradients and buffers must agree within 1e-4. Without a GPU adapter the
//! test prints a loud SKIPPED line and passes.
#![cfg(feature = "gpu")]

mod common;

use skiff::nn::loss::{BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss};
use skiff::nn::*;
use skiff::{manual_seed, DType, Device, Tensor};
use std::sync::Mutex;

/// Both tests seed and draw from the global generator: they must not interleave.
static RNG: Mutex<()> = Mutex::new(());

fn close(what: &str, a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    let (a, b) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= 1e-4 * (1.0 + x.abs()), "{what}: element {i}: cpu {x}, gpu {y}");
    }
}

/// Runs `make()` twice with the same seed, once per device, in train mode
/// (or eval), and compares outputs, gradients and the state afterwards.
fn parity(name: &str, gpu: &Device, make: &dyn Fn() -> Box<dyn Layer>, x: &Tensor, train: bool) {
    manual_seed(42);
    let cpu_layer = make();
    manual_seed(42);
    let gpu_layer = make();
    gpu_layer.to(gpu).unwrap();
    for (_, t) in gpu_layer.state_dict() {
        assert_eq!(&t.device(), gpu, "{name}: state not moved");
    }
    cpu_layer.train(train);
    gpu_layer.train(train);
    manual_seed(7);
    let yc = cpu_layer.forward(x).unwrap();
    manual_seed(7);
    let yg = gpu_layer.forward(&x.to(gpu).unwrap()).unwrap();
    assert_eq!(&yg.device(), gpu, "{name}");
    close(&format!("{name} output"), &yc, &yg);
    if !cpu_layer.parameters().is_empty() {
        yc.sum_all().unwrap().backward().unwrap();
        yg.sum_all().unwrap().backward().unwrap();
        for ((n, pc), (_, pg)) in cpu_layer.named_parameters().into_iter().zip(gpu_layer.named_parameters()) {
            close(&format!("{name} grad of {n}"), &pc.grad().unwrap(), &pg.grad().unwrap());
        }
    }
    for ((n, c), (_, g)) in cpu_layer.state_dict().into_iter().zip(gpu_layer.state_dict()) {
        close(&format!("{name} state {n}"), &c, &g);
    }
}

#[test]
fn every_layer_matches_the_cpu() {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = common::gpu() else { return };
    manual_seed(1);
    let img = Tensor::randn(&[2, 3, 6, 6], DType::F32);
    let vec2 = Tensor::randn(&[4, 6], DType::F32);
    let seq = Tensor::randn(&[2, 5, 8], DType::F32);
    type Make = Box<dyn Fn() -> Box<dyn Layer>>;
    let cases: Vec<(&str, Make, &Tensor, bool)> = vec![
        ("Linear", Box::new(|| Box::new(Linear::new(6, 3).unwrap())), &vec2, true),
        ("Conv2d", Box::new(|| Box::new(Conv2d::new(3, 4, [3, 3]).unwrap())), &img, true),
        (
            "Conv2d grouped",
            Box::new(|| {
                let c = Conv2dConfig { stride: [2, 2], padding: [1, 1], groups: 3, ..Default::default() };
                Box::new(Conv2d::with_config(3, 6, [3, 3], c).unwrap())
            }),
            &img,
            true,
        ),
        ("MaxPool2d", Box::new(|| Box::new(MaxPool2d::new([2, 2]).unwrap())), &img, true),
        ("AvgPool2d", Box::new(|| Box::new(AvgPool2d::with_options([3, 3], [2, 2], [1, 1]).unwrap())), &img, true),
        ("AdaptiveAvgPool2d even", Box::new(|| Box::new(AdaptiveAvgPool2d::new([3, 2]).unwrap())), &img, true),
        ("AdaptiveAvgPool2d uneven", Box::new(|| Box::new(AdaptiveAvgPool2d::new([4, 5]).unwrap())), &img, true),
        ("BatchNorm2d train", Box::new(|| Box::new(BatchNorm2d::new(3).unwrap())), &img, true),
        ("BatchNorm2d eval", Box::new(|| Box::new(BatchNorm2d::new(3).unwrap())), &img, false),
        ("BatchNorm1d train", Box::new(|| Box::new(BatchNorm1d::new(6).unwrap())), &vec2, true),
        ("LayerNorm", Box::new(|| Box::new(LayerNorm::new(&[8]).unwrap())), &seq, true),
        ("Dropout train", Box::new(|| Box::new(Dropout::new(0.3).unwrap())), &seq, true),
        ("Dropout eval", Box::new(|| Box::new(Dropout::new(0.3).unwrap())), &seq, false),
        ("Flatten", Box::new(|| Box::new(Flatten::new())), &img, true),
        ("ReLU", Box::new(|| Box::new(ReLU::new())), &seq, true),
        ("LeakyReLU", Box::new(|| Box::new(LeakyReLU::new(0.2))), &seq, true),
        ("GELU", Box::new(|| Box::new(GELU::new())), &seq, true),
        ("GELU tanh", Box::new(|| Box::new(GELU::with_approximate(GeluApproximate::Tanh))), &seq, true),
        ("SiLU", Box::new(|| Box::new(SiLU::new())), &seq, true),
        ("Tanh", Box::new(|| Box::new(Tanh::new())), &seq, true),
        ("Sigmoid", Box::new(|| Box::new(Sigmoid::new())), &seq, true),
        ("Softmax", Box::new(|| Box::new(Softmax::new(1))), &seq, true),
        ("MultiHeadAttention", Box::new(|| Box::new(MultiHeadAttention::new(8, 2).unwrap())), &seq, true),
        (
            "MultiHeadAttention causal",
            Box::new(|| Box::new(MultiHeadAttention::new(8, 4).unwrap().with_causal(true))),
            &seq,
            true,
        ),
        (
            "Sequential CNN",
            Box::new(|| {
                Box::new(
                    Sequential::new()
                        .push(Conv2d::new(3, 4, [3, 3]).unwrap())
                        .push(ReLU::new())
                        .push(MaxPool2d::new([2, 2]).unwrap())
                        .push(Flatten::new())
                        .push(Linear::new(16, 5).unwrap()),
                )
            }),
            &img,
            true,
        ),
    ];
    for (name, make, x, train) in &cases {
        parity(name, &gpu, make.as_ref(), x, *train);
    }
    let idx = Tensor::from_vec(vec![0i32, 3, 2, 3, 1, 0], &[2, 3]).unwrap();
    parity("Embedding", &gpu, &|| Box::new(Embedding::new(4, 5).unwrap()), &idx, true);
}

#[test]
fn losses_match_the_cpu() {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpu) = common::gpu() else { return };
    manual_seed(2);
    let logits = Tensor::randn(&[5, 4], DType::F32);
    let labels = Tensor::from_vec(vec![0i32, 3, 1, 1, 2], &[5]).unwrap();
    let a = Tensor::randn(&[3, 4], DType::F32);
    let b = Tensor::rand(&[3, 4], DType::F32);
    let g = |t: &Tensor| t.to(&gpu).unwrap();
    let smooth = CrossEntropyLoss { label_smoothing: 0.1, ..Default::default() };
    close("ce", &smooth.forward(&logits, &labels).unwrap(), &smooth.forward(&g(&logits), &g(&labels)).unwrap());
    let logp = logits.log_softmax(1).unwrap();
    let nll = NLLLoss::new();
    close("nll", &nll.forward(&logp, &labels).unwrap(), &nll.forward(&g(&logp), &g(&labels)).unwrap());
    close("mse", &MSELoss::new().forward(&a, &b).unwrap(), &MSELoss::new().forward(&g(&a), &g(&b)).unwrap());
    close("l1", &L1Loss::new().forward(&a, &b).unwrap(), &L1Loss::new().forward(&g(&a), &g(&b)).unwrap());
    let bce = BCEWithLogitsLoss::new();
    close("bce", &bce.forward(&a, &b).unwrap(), &bce.forward(&g(&a), &g(&b)).unwrap());
    // Initialisers write on the tensor's device.
    let w = Tensor::zeros(&[3, 4], DType::F32).to(&gpu).unwrap();
    manual_seed(9);
    init::xavier_uniform_(&w, 1.0).unwrap();
    let c = Tensor::zeros(&[3, 4], DType::F32);
    manual_seed(9);
    init::xavier_uniform_(&c, 1.0).unwrap();
    assert_eq!(w.device(), gpu);
    close("xavier", &c, &w);
}
