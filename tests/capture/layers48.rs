//! `jit::compile` over the layers of "The layers and ops that real models
//! need": a training step through recurrent layers (unrolled over the traced
//! sequence length), a transformer layer with a causal mask, 1-d and
//! transposed convolutions, the new normalisations and resampling is
//! captured once, then replays with the same bits as eager steps on a twin
//! model, on the cpu and on the GPU, the fusion passes included.

use crate::common;
use skiff::nn::{
    Conv1d, ConvTranspose2d, ConvTranspose2dConfig, GroupNorm, InstanceNorm, Interpolation, Layer, Linear, RMSNorm,
    Recurrent, RecurrentConfig, RecurrentKind, TransformerConfig, TransformerEncoderLayer, Upsample,
};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{jit, manual_seed, DType, Device, Result, Tensor};
use std::cell::RefCell;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

/// A sequence model: Conv1d over time, GroupNorm, a 2-layer bidirectional
/// GRU, a pre-norm causal transformer layer, an LSTM and a linear head.
struct Sequence {
    conv: Conv1d,
    norm: GroupNorm,
    gru: Recurrent,
    encoder: TransformerEncoderLayer,
    lstm: Recurrent,
    head: Linear,
}

impl Sequence {
    fn new() -> Sequence {
        let gru = RecurrentConfig { num_layers: 2, bidirectional: true, batch_first: true, ..Default::default() };
        let enc = TransformerConfig {
            dim_feedforward: 16,
            dropout: 0.0,
            batch_first: true,
            norm_first: true,
            ..Default::default()
        };
        Sequence {
            conv: Conv1d::new(3, 4, 3).unwrap(),
            norm: GroupNorm::new(2, 4).unwrap(),
            gru: Recurrent::new(RecurrentKind::Gru, 4, 4, gru).unwrap(),
            encoder: TransformerEncoderLayer::with_config(8, 2, enc).unwrap(),
            lstm: Recurrent::new(
                RecurrentKind::Lstm,
                8,
                5,
                RecurrentConfig { batch_first: true, ..Default::default() },
            )
            .unwrap(),
            head: Linear::new(5, 2).unwrap(),
        }
    }
    fn layers(&self) -> [&dyn Layer; 6] {
        [&self.conv, &self.norm, &self.gru, &self.encoder, &self.lstm, &self.head]
    }
    /// x [N, 3, L] -> [N, L - 2, 2]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.norm.forward(&self.conv.forward(x)?)?.transpose(1, 2)?;
        let h = self.gru.forward(&h)?;
        let h = self.encoder.encode(&h, None, true)?;
        self.head.forward(&self.lstm.forward(&h)?)
    }
}

/// An image model: ConvTranspose2d, InstanceNorm2d, Upsample (bilinear), RMSNorm.
struct Image {
    up: ConvTranspose2d,
    norm: InstanceNorm,
    resize: Upsample,
    rms: RMSNorm,
}

impl Image {
    fn new() -> Image {
        let c = ConvTranspose2dConfig { stride: [2, 2], padding: [1, 1], output_padding: [1, 1], ..Default::default() };
        Image {
            up: ConvTranspose2d::with_config(2, 3, [3, 3], c).unwrap(),
            norm: InstanceNorm::new_2d(3, 1e-5, true).unwrap(),
            resize: Upsample::with_scale(1.5, Interpolation::Bilinear { align_corners: false }).unwrap(),
            rms: RMSNorm::new(&[6]).unwrap(),
        }
    }
    fn layers(&self) -> [&dyn Layer; 4] {
        [&self.up, &self.norm, &self.resize, &self.rms]
    }
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.norm.forward(&self.up.forward(x)?)?.tanh()?;
        self.rms.forward(&self.resize.forward(&h)?)
    }
}

/// `steps` compiled Adam steps of `loss` on model `a` against eager steps on
/// its twin `b` (same state): losses, parameters and gradients bit for bit,
/// and every call after the first two replayed.
fn compiled_steps_match_eager(
    what: &str,
    device: &Device,
    a: &[&dyn Layer],
    b: &[&dyn Layer],
    loss_a: &dyn Fn(&Tensor) -> Result<Tensor>,
    loss_b: &dyn Fn(&Tensor) -> Result<Tensor>,
    input: &dyn Fn(u64) -> Tensor,
) {
    for (la, lb) in a.iter().zip(b) {
        la.to(device).unwrap();
        lb.to(device).unwrap();
        lb.load_state_dict(&la.state_dict(), true).unwrap();
    }
    let params = |ls: &[&dyn Layer]| ls.iter().flat_map(|l| l.parameters()).collect::<Vec<_>>();
    let (pa, pb) = (params(a), params(b));
    let config = AdamConfig { lr: 0.01, ..Default::default() };
    let opt_a = RefCell::new(Adam::new(pa.clone(), config).unwrap());
    let mut opt_b = Adam::new(pb.clone(), config).unwrap();
    let step = |opt: &mut Adam, loss: &dyn Fn(&Tensor) -> Result<Tensor>, x: &Tensor| -> Result<Tensor> {
        opt.zero_grad();
        let l = loss(x)?;
        l.backward()?;
        opt.step()?;
        Ok(l.detach())
    };
    let mut compiled = jit::compile(|i: &[Tensor]| Ok(vec![step(&mut opt_a.borrow_mut(), loss_a, &i[0])?]));
    let steps = 5;
    for s in 0..steps {
        let x = input(s).to(device).unwrap();
        let got = compiled.call(std::slice::from_ref(&x)).unwrap();
        let want = step(&mut opt_b, loss_b, &x).unwrap();
        assert_eq!(bits(&got[0]), bits(&want), "{what}: loss at step {s} on {device}\n{:#?}", compiled.log());
    }
    for (i, (x, y)) in pa.iter().zip(&pb).enumerate() {
        assert_eq!(bits(x), bits(y), "{what}: parameter {i} after {steps} steps on {device}");
        assert_eq!(bits(&x.grad().unwrap()), bits(&y.grad().unwrap()), "{what}: gradient {i} on {device}");
    }
    assert_eq!((compiled.captures(), compiled.replays()), (2, steps - 2), "{what}: {:#?}", compiled.log());
}

/// mean((y - target)^2), or mean(y^2) without a target.
fn squared_error(y: &Tensor, target: Option<&Tensor>) -> Result<Tensor> {
    let d = match target {
        Some(t) => y.sub(t)?,
        None => y.clone(),
    };
    d.mul(&d)?.mean(&[], false)
}

fn check(device: &Device) {
    manual_seed(11);
    let (a, b) = (Sequence::new(), Sequence::new());
    let target = Tensor::randn(&[2, 5, 2], DType::F32).unwrap().to(device).unwrap();
    let target = &target;
    let la = |x: &Tensor| squared_error(&a.forward(x)?, Some(target));
    let lb = |x: &Tensor| squared_error(&b.forward(x)?, Some(target));
    let seq = |s: u64| {
        manual_seed(100 + s);
        Tensor::randn(&[2, 3, 7], DType::F32).unwrap()
    };
    compiled_steps_match_eager("sequence model", device, &a.layers(), &b.layers(), &la, &lb, &seq);

    let (a, b) = (Image::new(), Image::new());
    let la = |x: &Tensor| squared_error(&a.forward(x)?, None);
    let lb = |x: &Tensor| squared_error(&b.forward(x)?, None);
    let img = |s: u64| {
        manual_seed(200 + s);
        Tensor::randn(&[2, 2, 2, 2], DType::F32).unwrap()
    };
    compiled_steps_match_eager("image model", device, &a.layers(), &b.layers(), &la, &lb, &img);
}

#[test]
fn compiled_steps_through_the_new_layers_train_as_eager_steps_do() {
    // The seeds of the inputs and the initial weights need the generator to itself.
    if !common::own_process() {
        return;
    }
    check(&Device::Cpu);
    if let Some(gpu) = common::gpu() {
        check(&gpu);
    }
}
