//! The Layer machinery: state-dict names (PyTorch's), round trips, load
//! errors, hooks, train/eval propagation, initialiser statistics, training.

use crate::common::{expect_err, Kind};
use skiff::nn::init::{self, FanMode, Nonlinearity};
use skiff::nn::*;
use skiff::{no_grad, DType, Error, Tensor};
use std::sync::{Arc, Mutex};

fn names(entries: &[(String, Tensor)]) -> Vec<String> {
    entries.iter().map(|(k, _)| k.clone()).collect()
}
fn mlp() -> Sequential {
    Sequential::new().push(Linear::new(3, 4).unwrap()).push(ReLU::new()).push(Linear::new(4, 2).unwrap())
}
fn snapshot(l: &dyn Layer) -> Vec<(String, Tensor)> {
    l.state_dict().into_iter().map(|(k, v)| (k, v.contiguous_copy().unwrap().detach())).collect()
}

#[test]
fn state_dict_names_match_pytorch() {
    let m = mlp();
    assert_eq!(names(&m.state_dict()), ["0.weight", "0.bias", "2.weight", "2.bias"]);
    assert_eq!(names(&m.named_parameters()), ["0.weight", "0.bias", "2.weight", "2.bias"]);
    assert_eq!(m.parameters().len(), 4);
    assert!(m.parameters().iter().all(|p| p.requires_grad() && p.is_leaf()));

    let bn = BatchNorm2d::new(3).unwrap();
    let want = ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"];
    assert_eq!(names(&bn.state_dict()), want);
    assert_eq!(names(&bn.named_parameters()), ["weight", "bias"]);
    assert_eq!(names(&bn.named_buffers()), ["running_mean", "running_var", "num_batches_tracked"]);
    assert!(bn.named_buffers().iter().all(|(_, b)| !b.requires_grad()));

    let net = Sequential::new().push(Conv2d::new(1, 2, [3, 3]).unwrap()).push(BatchNorm2d::new(2).unwrap());
    let sd = names(&net.state_dict());
    assert_eq!(sd[..4], ["0.weight", "0.bias", "1.weight", "1.bias"]);
    assert_eq!(sd[4..], ["1.running_mean", "1.running_var", "1.num_batches_tracked"]);

    let mha = MultiHeadAttention::new(4, 2).unwrap();
    assert_eq!(names(&mha.state_dict()), ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]);

    let mut list = LayerList::new();
    list.push(Linear::new(2, 2).unwrap());
    list.push(LayerNorm::new(&[2]).unwrap());
    assert_eq!(names(&list.state_dict()), ["0.weight", "0.bias", "1.weight", "1.bias"]);
    let r = list.forward(&Tensor::zeros(&[1, 2], DType::F32).unwrap());
    expect_err(r, Kind::Value, "LayerList::forward", &["a LayerList has no forward"]);
    let mut dict = LayerDict::new();
    dict.insert("encoder", Linear::with_bias(2, 2, false).unwrap()).unwrap();
    dict.insert("head", Embedding::new(3, 2).unwrap()).unwrap();
    assert_eq!(names(&dict.state_dict()), ["encoder.weight", "head.weight"]);
    expect_err(dict.insert("a.b", ReLU::new()), Kind::Value, "LayerDict::insert", &["key \"a.b\"", "no '.'"]);
    let boxed: Vec<Box<dyn Layer>> = vec![Box::new(ReLU::new()), Box::new(Linear::new(2, 2).unwrap())];
    assert_eq!(names(&Sequential::from(boxed).state_dict()), ["1.weight", "1.bias"]);
    // A shared (Arc) layer appears under each name in the state dict, once among the parameters.
    let shared = Arc::new(Linear::new(2, 2).unwrap());
    let tied = Sequential::new().push(shared.clone()).push(Tanh::new()).push(shared);
    assert_eq!(names(&tied.state_dict()), ["0.weight", "0.bias", "2.weight", "2.bias"]);
    assert_eq!(names(&tied.named_parameters()), ["0.weight", "0.bias"]);
}

#[test]
fn state_dict_round_trip_reproduces_outputs() {
    let x = Tensor::randn(&[5, 3], DType::F32).unwrap();
    let (a, b) = (mlp(), mlp());
    let ya = a.forward(&x).unwrap().to_vec::<f32>().unwrap();
    assert_ne!(ya, b.forward(&x).unwrap().to_vec::<f32>().unwrap());
    let report = b.load_state_dict(&snapshot(&a), true).unwrap();
    assert_eq!(report, LoadReport::default());
    assert_eq!(ya, b.forward(&x).unwrap().to_vec::<f32>().unwrap());
    // Loading writes into the existing tensors: held handles see the new values.
    let held = b.parameters();
    b.load_state_dict(&snapshot(&mlp()), true).unwrap();
    assert!(held[0].same_tensor(&b.parameters()[0]));
}

#[test]
fn load_errors_strict_and_non_strict() {
    let m = mlp();
    let mut sd = snapshot(&mlp());
    let before = snapshot(&m);
    // Wrong shape: always an error naming the key; nothing written.
    let mut bad = sd.clone();
    bad[2].1 = Tensor::zeros(&[4, 4], DType::F32).unwrap();
    for strict in [true, false] {
        let facts = ["size mismatch for 2.weight: the entry has shape [4, 4], the layer's tensor has shape [2, 4]"];
        expect_err(m.load_state_dict(&bad, strict), Kind::Shape, "load_state_dict", &facts);
    }
    assert_eq!(before[0].1.to_vec::<f32>().unwrap(), m.state_dict()[0].1.to_vec::<f32>().unwrap());
    // Missing and unexpected keys.
    let removed = sd.remove(1);
    sd.push(("3.weight".to_string(), removed.1.clone()));
    expect_err(
        m.load_state_dict(&sd, true),
        Kind::Value,
        "load_state_dict",
        &["missing keys in the entries: [\"0.bias\"]"],
    );
    let r = m.load_state_dict(&sd, false).unwrap();
    assert_eq!(r.missing_keys, ["0.bias"]);
    assert_eq!(r.unexpected_keys, ["3.weight"]);
    assert_eq!(m.state_dict()[2].1.to_vec::<f32>().unwrap(), sd[1].1.to_vec::<f32>().unwrap());
    sd.insert(1, removed);
    let facts = ["unexpected keys in the entries: [\"3.weight\"]"];
    expect_err(m.load_state_dict(&sd, true), Kind::Value, "load_state_dict", &facts);
}

#[test]
fn hooks_fire_in_order_replace_and_remove() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let lin = Linear::with_bias(1, 1, false).unwrap();
    init::constant_(&lin.weight.get(), 3.0).unwrap();
    let l = log.clone();
    let h1 = lin.register_forward_pre_hook(Box::new(move |_| {
        l.lock().unwrap().push("pre1".into());
        Ok(None)
    }));
    let l = log.clone();
    let h2 = lin.register_forward_pre_hook(Box::new(move |x| {
        l.lock().unwrap().push("pre2".into());
        Ok(Some(x.add_scalar(1.0)?)) // replaces the input
    }));
    let l = log.clone();
    let h3 = lin.register_forward_hook(Box::new(move |x, y| {
        l.lock().unwrap().push(format!("post {} {}", x.item()?, y.item()?));
        Ok(Some(y.mul_scalar(10.0)?)) // replaces the output
    }));
    let x = Tensor::ones(&[1, 1], DType::F32).unwrap();
    assert_eq!(lin.forward(&x).unwrap().item().unwrap(), 60.0);
    assert_eq!(*log.lock().unwrap(), ["pre1", "pre2", "post 2 6"]);
    h2.remove();
    assert_eq!(lin.forward(&x).unwrap().item().unwrap(), 30.0);
    h1.remove();
    h3.remove();
    assert_eq!(lin.forward(&x).unwrap().item().unwrap(), 3.0);
    assert_eq!(log.lock().unwrap().len(), 5);

    // Containers have hooks too, and children's hooks fire inside them.
    let seq = Sequential::new().push(ReLU::new()).push(Tanh::new());
    let l = log.clone();
    seq.register_forward_pre_hook(Box::new(move |_| {
        l.lock().unwrap().push("seq pre".into());
        Ok(None)
    }));
    let l = log.clone();
    seq.get(1).unwrap().register_forward_hook(Box::new(move |_, _| {
        l.lock().unwrap().push("tanh post".into());
        Ok(None)
    }));
    let l = log.clone();
    seq.register_forward_hook(Box::new(move |_, y| {
        l.lock().unwrap().push("seq post".into());
        Ok(Some(y.neg()?))
    }));
    let y = seq.forward(&Tensor::full(&[1], 100.0, DType::F32).unwrap()).unwrap();
    assert_eq!(y.item().unwrap(), -1.0);
    assert_eq!(log.lock().unwrap()[5..], ["seq pre", "tanh post", "seq post"]);
    // A failing hook fails the forward.
    seq.register_forward_pre_hook(Box::new(|x| Ok(Some(x.reshape(&[7])?))));
    // The hook's own error comes through unchanged.
    let facts = ["cannot reshape tensor of shape [1] (1 elements) to [7]"];
    expect_err(seq.forward(&Tensor::ones(&[1], DType::F32).unwrap()), Kind::Shape, "reshape", &facts);
}

#[test]
fn train_eval_propagates_through_containers() {
    let net = Sequential::new().push(Linear::new(2, 2).unwrap()).push(Dropout::new(0.5).unwrap());
    assert!(net.is_training() && net.get(1).unwrap().is_training());
    net.eval();
    assert!(!net.is_training() && !net.get(1).unwrap().is_training());
    let x = Tensor::randn(&[8, 2], DType::F32).unwrap();
    let a = net.forward(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, net.forward(&x).unwrap().to_vec::<f32>().unwrap()); // deterministic in eval
    net.train(true);
    assert!(net.get(1).unwrap().is_training());

    // Batch norm: running stats change only in training mode.
    let bn = BatchNorm1d::new(2).unwrap();
    let x = Tensor::randn(&[6, 2], DType::F32).unwrap();
    bn.eval();
    let out_eval = bn.forward(&x).unwrap();
    assert_eq!(bn.named_buffers()[0].1.to_vec::<f32>().unwrap(), [0.0, 0.0]);
    assert_eq!(
        out_eval.to_vec::<f32>().unwrap(),
        x.div_scalar((1.0f64 + 1e-5).sqrt()).unwrap().to_vec::<f32>().unwrap()
    );
    bn.train(true);
    bn.forward(&x).unwrap();
    bn.forward(&x).unwrap();
    assert_eq!(bn.named_buffers()[2].1.item().unwrap(), 2.0);
    assert_ne!(bn.named_buffers()[0].1.to_vec::<f32>().unwrap(), [0.0, 0.0]);
}

fn moments(t: &Tensor) -> (f64, f64, f64) {
    let v = t.to_f64_vec().unwrap();
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt(), v.iter().fold(0.0f64, |a, x| a.max(x.abs())))
}

#[test]
fn initialiser_statistics() {
    skiff::manual_seed(11);
    let w = Tensor::zeros(&[200, 300], DType::F32).unwrap();
    init::normal_(&w, 1.0, 2.0).unwrap();
    let (m, s, _) = moments(&w);
    assert!((m - 1.0).abs() < 0.03 && (s - 2.0).abs() < 0.03, "{m} {s}");
    init::uniform_(&w, -1.0, 3.0).unwrap();
    let (m, s, mx) = moments(&w);
    assert!((m - 1.0).abs() < 0.02 && (s - 4.0 / 12f64.sqrt()).abs() < 0.02 && mx <= 3.0, "{m} {s}");
    init::constant_(&w, 0.25).unwrap();
    assert_eq!(moments(&w), (0.25, 0.0, 0.25));
    // fan_in = 300, fan_out = 200.
    init::xavier_uniform_(&w, 1.0).unwrap();
    let b = (6.0f64 / 500.0).sqrt();
    let (m, s, mx) = moments(&w);
    assert!(mx <= b && mx > 0.99 * b && m.abs() < 1e-3 && (s - b / 3f64.sqrt()).abs() < 1e-3, "{m} {s} {mx}");
    init::xavier_normal_(&w, 2.0).unwrap();
    assert!((moments(&w).1 - 2.0 * (2.0f64 / 500.0).sqrt()).abs() < 2e-3);
    init::kaiming_uniform_(&w, FanMode::FanIn, Nonlinearity::Relu).unwrap();
    let b = 2f64.sqrt() * (3.0f64 / 300.0).sqrt();
    let (_, _, mx) = moments(&w);
    assert!(mx <= b && mx > 0.99 * b);
    init::kaiming_normal_(&w, FanMode::FanOut, Nonlinearity::Tanh).unwrap();
    assert!((moments(&w).1 - 5.0 / 3.0 / 200f64.sqrt()).abs() < 3e-3);
    assert!((init::calculate_gain(Nonlinearity::LeakyRelu(0.2)) - (2.0f64 / 1.04).sqrt()).abs() < 1e-12);
    assert_eq!(init::calculate_gain(Nonlinearity::Sigmoid), 1.0);
    let v = Tensor::zeros(&[3], DType::F32).unwrap();
    let facts = ["fan in/out needs a tensor of at least 2 dims, got shape [3]"];
    expect_err(init::xavier_uniform_(&v, 1.0), Kind::Shape, "xavier_uniform_", &facts);
    expect_err(init::kaiming_normal_(&v, FanMode::FanIn, Nonlinearity::Relu), Kind::Shape, "kaiming_normal_", &facts);
    expect_err(init::uniform_(&w, 1.0, 0.0), Kind::Value, "uniform_", &["finite lo <= hi, got [1, 0)"]);

    // Layer defaults: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for Linear and Conv2d weights and biases.
    let lin = Linear::new(400, 300).unwrap();
    let b = 1.0 / 20.0;
    for p in lin.parameters() {
        let (m, _, mx) = moments(&p);
        assert!(mx <= b && mx > 0.9 * b && m.abs() < 0.01);
    }
    let conv = Conv2d::new(8, 16, [3, 3]).unwrap();
    let (_, s, mx) = moments(&conv.weight.get());
    let b = 1.0 / 72f64.sqrt();
    assert!(mx <= b && mx > 0.98 * b && (s - b / 3f64.sqrt()).abs() < 0.01 * b * 10.0);
    let (m, s, _) = moments(&Embedding::new(100, 100).unwrap().weight.get());
    assert!(m.abs() < 0.03 && (s - 1.0).abs() < 0.03);
    let mha = MultiHeadAttention::new(8, 2).unwrap();
    assert_eq!(moments(&mha.state_dict()[1].1).2, 0.0);
    assert_eq!(moments(&mha.state_dict()[3].1).2, 0.0);
}

#[test]
fn sgd_steps_reduce_the_loss_and_zero_grad_clears() {
    skiff::manual_seed(3);
    let net = Sequential::new().push(Linear::new(2, 8).unwrap()).push(GELU::new()).push(Linear::new(8, 1).unwrap());
    let x = Tensor::randn(&[32, 2], DType::F32).unwrap();
    let y = x.narrow(1, 0, 1).unwrap().mul(&x.narrow(1, 1, 1).unwrap()).unwrap();
    let loss_fn = loss::MSELoss::new();
    let mut losses = Vec::new();
    for _ in 0..60 {
        net.zero_grad();
        let loss = loss_fn.forward(&net.forward(&x).unwrap(), &y).unwrap();
        losses.push(loss.item().unwrap());
        loss.backward().unwrap();
        no_grad(|| {
            for p in net.parameters() {
                p.sub_(&p.grad().unwrap().mul_scalar(0.1)?)?;
            }
            Ok::<_, Error>(())
        })
        .unwrap();
    }
    assert!(losses[59] < 0.7 * losses[0], "{losses:?}");
    assert!(net.parameters().iter().all(|p| p.grad().is_some()));
    net.zero_grad();
    assert!(net.parameters().iter().all(|p| p.grad().is_none()));
    // to() on the current device keeps the same tensors.
    let before = net.parameters();
    net.to(&skiff::Device::Cpu).unwrap();
    assert!(before[0].same_tensor(&net.parameters()[0]));
}
