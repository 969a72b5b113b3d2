//! Recurrent layers, attention and the transformer layers against PyTorch
//! (the entries of scripts/torch-fixtures/layers48.py after "recurrent
//! layers"): run from `torch_fixtures::every_entry`, so in f64 on the cpu
//! and in f32 on the GPU. A layer with several outputs is compared as
//! PyTorch's fixture stores it: out, h_n (and c_n) flattened and joined.

use super::torch_fixtures::{check, check_layer_with, Fixture};
use skiff::nn::{
    FeedForwardActivation, Layer, Recurrent, RecurrentCell, RecurrentConfig, RecurrentKind, RecurrentState,
    TransformerConfig, TransformerDecoderLayer, TransformerEncoderLayer,
};
use skiff::{Device, Result, Tensor};

fn flat(parts: &[&Tensor]) -> Result<Tensor> {
    let flat: Vec<Tensor> = parts.iter().map(|t| t.reshape(&[-1])).collect::<Result<_>>()?;
    Tensor::concat(&flat, 0)
}

/// The layer on `x` (and `h0`, `c0` when the entry has them), its outputs joined.
fn recurrent(layer: &Recurrent, x: &[Tensor]) -> Result<Tensor> {
    let state = match x.len() {
        1 => None,
        2 => Some(RecurrentState { h: x[1].clone(), c: None }),
        _ => Some(RecurrentState { h: x[1].clone(), c: Some(x[2].clone()) }),
    };
    let (out, s) = layer.forward_with_state(&x[0], state.as_ref())?;
    match &s.c {
        Some(c) => flat(&[&out, &s.h, c]),
        None => flat(&[&out, &s.h]),
    }
}

pub(super) fn every_entry(fx: &Fixture, tol: f64, device: &Device) {
    let config = |num_layers, batch_first, bidirectional, bias| RecurrentConfig {
        num_layers,
        batch_first,
        bidirectional,
        bias,
        dropout: 0.0,
    };
    let layers = [
        ("rnn_tanh", RecurrentKind::RnnTanh, config(2, true, true, true), &["x", "h0"][..]),
        ("rnn_relu", RecurrentKind::RnnRelu, config(1, false, false, true), &["x"][..]),
        ("lstm", RecurrentKind::Lstm, config(2, false, true, true), &["x", "h0", "c0"][..]),
        ("lstm_unbatched", RecurrentKind::Lstm, config(1, false, false, true), &["x"][..]),
        ("gru", RecurrentKind::Gru, config(2, true, false, true), &["x", "h0"][..]),
        ("gru_bidirectional_nobias", RecurrentKind::Gru, config(1, false, true, false), &["x"][..]),
    ];
    for (e, kind, c, inputs) in layers {
        let layer = Recurrent::new(kind, 3, 4, c).unwrap();
        check_layer_with(fx, tol, e, &layer, device, inputs, |x| recurrent(&layer, x));
    }
    for (e, kind) in
        [("rnn_cell", RecurrentKind::RnnTanh), ("lstm_cell", RecurrentKind::Lstm), ("gru_cell", RecurrentKind::Gru)]
    {
        let cell = RecurrentCell::new(kind, 3, 4, true).unwrap();
        let inputs: &[&str] = if kind == RecurrentKind::Lstm { &["x", "h0", "c0"] } else { &["x", "h0"] };
        check_layer_with(fx, tol, e, &cell, device, inputs, |x| {
            let s = cell.step(&x[0], Some(&RecurrentState { h: x[1].clone(), c: x.get(2).cloned() }))?;
            match &s.c {
                Some(c) => flat(&[&s.h, c]),
                None => Ok(s.h),
            }
        });
    }
    attention(fx, tol);
    transformers(fx, tol, device);
}

fn attention(fx: &Fixture, tol: f64) {
    let sdpa = Tensor::scaled_dot_product_attention;
    let qkv = &["q", "k", "v"];
    check(fx, tol, "sdpa", qkv, &[], |x| sdpa(&x[0], &x[1], &x[2], None, 0.0, false, None));
    check(fx, tol, "sdpa_causal", qkv, &[], |x| sdpa(&x[0], &x[1], &x[2], None, 0.0, true, None));
    check(fx, tol, "sdpa_scale", qkv, &[], |x| sdpa(&x[0], &x[1], &x[2], None, 0.0, false, Some(0.3)));
    let mask = fx.get("sdpa_bool_mask.mask");
    check(fx, tol, "sdpa_bool_mask", qkv, &[], |x| sdpa(&x[0], &x[1], &x[2], Some(&mask), 0.0, false, None));
    check(fx, tol, "sdpa_float_mask", &["q", "k", "v", "bias"], &[], |x| {
        sdpa(&x[0], &x[1], &x[2], Some(&x[3]), 0.0, false, None)
    });
}

fn transformers(fx: &Fixture, tol: f64, device: &Device) {
    let config = TransformerConfig { dim_feedforward: 16, dropout: 0.0, ..Default::default() };
    let post = TransformerEncoderLayer::with_config(8, 2, config).unwrap();
    post.eval();
    check_layer_with(fx, tol, "encoder_post_relu", &post, device, &["x"], |x| post.forward(&x[0]));

    let pre =
        TransformerConfig { activation: FeedForwardActivation::Gelu, batch_first: true, norm_first: true, ..config };
    let pre = TransformerEncoderLayer::with_config(8, 2, pre).unwrap();
    pre.eval();
    let padding = fx.get("encoder_pre_gelu_masked.padding");
    check_layer_with(fx, tol, "encoder_pre_gelu_masked", &pre, device, &["x"], |x| {
        pre.encode(&x[0], Some(&padding), true)
    });

    let dec = TransformerDecoderLayer::with_config(8, 2, config).unwrap();
    dec.eval();
    check_layer_with(fx, tol, "decoder_causal", &dec, device, &["x", "memory"], |x| {
        dec.decode(&x[0], &x[1], true, None, None)
    });
}

#[test]
fn recurrent_layers_print_and_name_their_parameters_as_pytorch_does() {
    // The strings PyTorch 2.15 prints for the same constructions.
    let c = RecurrentConfig { num_layers: 2, bias: false, batch_first: true, dropout: 0.5, bidirectional: true };
    let cases: Vec<(Box<dyn Layer>, &str)> = vec![
        (
            Box::new(Recurrent::new(RecurrentKind::RnnRelu, 4, 8, c).unwrap()),
            "RNN(4, 8, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)",
        ),
        (Box::new(Recurrent::lstm(4, 8).unwrap()), "LSTM(4, 8)"),
        (
            Box::new(
                Recurrent::new(
                    RecurrentKind::Gru,
                    4,
                    8,
                    RecurrentConfig { num_layers: 2, dropout: 0.25, ..Default::default() },
                )
                .unwrap(),
            ),
            "GRU(4, 8, num_layers=2, dropout=0.25)",
        ),
        (
            Box::new(RecurrentCell::new(RecurrentKind::RnnRelu, 4, 8, false).unwrap()),
            "RNNCell(4, 8, bias=False, nonlinearity=relu)",
        ),
        (Box::new(RecurrentCell::new(RecurrentKind::Lstm, 4, 8, true).unwrap()), "LSTMCell(4, 8)"),
        (Box::new(RecurrentCell::new(RecurrentKind::Gru, 4, 8, false).unwrap()), "GRUCell(4, 8, bias=False)"),
    ];
    for (layer, want) in cases {
        assert_eq!(layer.repr(), want);
    }
    // PyTorch's state-dict order: per layer, per direction, weight_ih, weight_hh, bias_ih, bias_hh.
    let lstm = RecurrentConfig { num_layers: 2, bidirectional: true, ..Default::default() };
    let lstm = Recurrent::new(RecurrentKind::Lstm, 3, 5, lstm).unwrap();
    let names: Vec<(String, Vec<usize>)> =
        lstm.state_dict().into_iter().map(|(n, t)| (n, t.shape().to_vec())).collect();
    let mut want = Vec::new();
    for (l, input) in [(0, 3), (1, 10)] {
        for suffix in ["", "_reverse"] {
            want.push((format!("weight_ih_l{l}{suffix}"), vec![20, input]));
            want.push((format!("weight_hh_l{l}{suffix}"), vec![20, 5]));
            want.push((format!("bias_ih_l{l}{suffix}"), vec![20]));
            want.push((format!("bias_hh_l{l}{suffix}"), vec![20]));
        }
    }
    assert_eq!(names, want);
}

/// PyTorch's unbatched forms: an LSTM layer on [L, H_in] with states
/// [layers, H], and a cell on [H_in] with states [H], give the batch of
/// one's results with the batch dim taken out.
#[test]
fn unbatched_inputs_and_states_are_a_batch_of_one() -> Result<()> {
    skiff::manual_seed(3);
    let f64s = |shape: &[usize]| Tensor::randn(shape, skiff::DType::F64);
    let config = RecurrentConfig { num_layers: 2, ..Default::default() };
    let layer = Recurrent::new(RecurrentKind::Lstm, 3, 4, config)?;
    layer.to_dtype(skiff::DType::F64)?;
    let (x, h, c) = (f64s(&[5, 3])?, f64s(&[2, 4])?, f64s(&[2, 4])?);
    let state = RecurrentState { h: h.clone(), c: Some(c.clone()) };
    let (out, s) = layer.forward_with_state(&x, Some(&state))?;
    let batch = RecurrentState { h: h.unsqueeze(1)?, c: Some(c.unsqueeze(1)?) };
    let (want, ws) = layer.forward_with_state(&x.unsqueeze(1)?, Some(&batch))?;
    assert_eq!(out.to_vec::<f64>()?, want.squeeze(Some(1))?.to_vec::<f64>()?);
    assert_eq!(s.h.shape(), &[2, 4]);
    assert_eq!(s.h.to_vec::<f64>()?, ws.h.to_vec::<f64>()?);

    let cell = RecurrentCell::new(RecurrentKind::Lstm, 3, 4, true)?;
    cell.to_dtype(skiff::DType::F64)?;
    let (x, h, c) = (f64s(&[3])?, f64s(&[4])?, f64s(&[4])?);
    let s = cell.step(&x, Some(&RecurrentState { h: h.clone(), c: Some(c.clone()) }))?;
    let batch = RecurrentState { h: h.unsqueeze(0)?, c: Some(c.unsqueeze(0)?) };
    let want = cell.step(&x.unsqueeze(0)?, Some(&batch))?;
    assert_eq!(s.h.shape(), &[4]);
    assert_eq!(s.h.to_vec::<f64>()?, want.h.to_vec::<f64>()?);
    assert_eq!(s.c.expect("an LSTM cell's c").to_vec::<f64>()?, want.c.expect("c").to_vec::<f64>()?);
    Ok(())
}
