//! MultiHeadAttention against a hand-written host computation.

use crate::common::{expect_err, Kind};

const MHA: &str = "MultiHeadAttention";
use skiff::nn::{Layer, MultiHeadAttention};
use skiff::{DType, Tensor};

struct Dims {
    b: usize,
    l: usize,
    s: usize,
    e: usize,
    h: usize,
}

fn host(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// x [B, T, E] @ w[rows r0..r0+E]^T + bias[r0..]: [B, T, E].
fn project(x: &[f64], t: usize, d: &Dims, w: &[f64], bias: &[f64], r0: usize) -> Vec<f64> {
    let mut out = vec![0.0; d.b * t * d.e];
    for bt in 0..d.b * t {
        for o in 0..d.e {
            let row = &w[(r0 + o) * d.e..(r0 + o + 1) * d.e];
            out[bt * d.e + o] = bias[r0 + o] + (0..d.e).map(|i| x[bt * d.e + i] * row[i]).sum::<f64>();
        }
    }
    out
}

fn reference(
    m: &MultiHeadAttention,
    q: &Tensor,
    kv: &Tensor,
    d: &Dims,
    pad: Option<&[bool]>,
    causal: bool,
) -> Vec<f64> {
    let sd = m.state_dict();
    let (w, bias, wo, bo) = (host(&sd[0].1), host(&sd[1].1), host(&sd[2].1), host(&sd[3].1));
    let (xq, xkv) = (host(q), host(kv));
    let qp = project(&xq, d.l, d, &w, &bias, 0);
    let kp = project(&xkv, d.s, d, &w, &bias, d.e);
    let vp = project(&xkv, d.s, d, &w, &bias, 2 * d.e);
    let hd = d.e / d.h;
    let mut out = vec![0.0; d.b * d.l * d.e];
    for b in 0..d.b {
        for h in 0..d.h {
            for l in 0..d.l {
                let masked = |s: usize| (causal && s > l) || pad.is_some_and(|p| p[b * d.s + s]);
                let score = |s: usize| {
                    (0..hd)
                        .map(|j| qp[(b * d.l + l) * d.e + h * hd + j] * kp[(b * d.s + s) * d.e + h * hd + j])
                        .sum::<f64>()
                        / (hd as f64).sqrt()
                };
                let sc: Vec<f64> = (0..d.s).map(|s| if masked(s) { f64::NEG_INFINITY } else { score(s) }).collect();
                let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let ex: Vec<f64> = sc.iter().map(|v| (v - mx).exp()).collect();
                let z: f64 = ex.iter().sum();
                for j in 0..hd {
                    out[(b * d.l + l) * d.e + h * hd + j] =
                        (0..d.s).map(|s| ex[s] / z * vp[(b * d.s + s) * d.e + h * hd + j]).sum::<f64>();
                }
            }
        }
    }
    let mut o = vec![0.0; d.b * d.l * d.e];
    for bt in 0..d.b * d.l {
        for k in 0..d.e {
            o[bt * d.e + k] = bo[k] + (0..d.e).map(|i| out[bt * d.e + i] * wo[k * d.e + i]).sum::<f64>();
        }
    }
    o
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "element {i}: got {a}, want {b}");
    }
}

fn randomise(m: &MultiHeadAttention) {
    // Non-zero biases, so the bias paths are checked too.
    let entries: Vec<(String, Tensor)> = m
        .state_dict()
        .into_iter()
        .map(|(k, v)| (k, Tensor::uniform(v.shape(), -0.5, 0.5, DType::F32).unwrap()))
        .collect();
    m.load_state_dict(&entries, true).unwrap();
}

#[test]
fn self_attention_matches_hand_computation() {
    skiff::manual_seed(5);
    let d = Dims { b: 2, l: 3, s: 3, e: 4, h: 2 };
    let m = MultiHeadAttention::new(4, 2).unwrap();
    randomise(&m);
    let x = Tensor::randn(&[2, 3, 4], DType::F32).unwrap();
    let y = m.forward(&x).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
    close(&host(&y), &reference(&m, &x, &x, &d, None, false), 1e-5);
    let causal = m.attend(&x, &x, &x, None, true).unwrap();
    close(&host(&causal.0), &reference(&m, &x, &x, &d, None, true), 1e-5);
    // The causal weights are lower-triangular and rows sum to 1.
    let w = host(&causal.1);
    assert_eq!(causal.1.shape(), &[2, 2, 3, 3]);
    for row in w.chunks(3).enumerate() {
        let l = row.0 % 3;
        assert!((row.1.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        assert!(row.1[l + 1..].iter().all(|&v| v == 0.0));
    }
    let mc = MultiHeadAttention::new(4, 2).unwrap().with_causal(true);
    mc.load_state_dict(&m.state_dict(), true).unwrap();
    close(&host(&mc.forward(&x).unwrap()), &host(&causal.0), 0.0);
}

#[test]
fn cross_attention_with_key_padding_mask() {
    skiff::manual_seed(6);
    let d = Dims { b: 2, l: 2, s: 4, e: 6, h: 3 };
    let m = MultiHeadAttention::new(6, 3).unwrap();
    randomise(&m);
    let q = Tensor::randn(&[2, 2, 6], DType::F32).unwrap();
    let kv = Tensor::randn(&[2, 4, 6], DType::F32).unwrap();
    let pad = [false, false, true, true, false, true, false, false];
    let mask = Tensor::from_bools(&pad, &[2, 4]).unwrap();
    let (y, w) = m.attend(&q, &kv, &kv, Some(&mask), false).unwrap();
    assert_eq!(y.shape(), &[2, 2, 6]);
    close(&host(&y), &reference(&m, &q, &kv, &d, Some(&pad), false), 1e-5);
    let w = host(&w);
    for (i, row) in w.chunks(4).enumerate() {
        let b = i / (3 * 2);
        for s in 0..4 {
            if pad[b * 4 + s] {
                assert_eq!(row[s], 0.0);
            }
        }
    }
    expect_err(
        m.attend(&q, &kv, &kv, Some(&Tensor::from_bools(&pad[..4], &[1, 4]).unwrap()), false),
        Kind::Shape,
        MHA,
        &["key_padding_mask must be a bool [2, 4] tensor, got bool [1, 4]"],
    );
    expect_err(
        m.attend(&q, &kv.narrow(2, 0, 4).unwrap(), &kv, None, false),
        Kind::Shape,
        MHA,
        &["key must be [B, T, 6] (batch first), got shape [2, 4, 4]"],
    );
    expect_err(
        MultiHeadAttention::new(6, 4),
        Kind::Value,
        MHA,
        &["embed_dim 6 must be a positive multiple of num_heads 4"],
    );
}

#[test]
fn attention_gradients_reach_every_parameter() {
    let m = MultiHeadAttention::new(4, 2).unwrap();
    let x = Tensor::randn(&[1, 3, 4], DType::F32).unwrap();
    m.forward(&x).unwrap().sum_all().unwrap().backward().unwrap();
    for (name, p) in m.named_parameters() {
        let g = p.grad().unwrap_or_else(|| panic!("{name} has no gradient"));
        assert_eq!(g.shape(), p.shape());
        assert!(host(&g).iter().any(|v| *v != 0.0), "{name}");
    }
}
