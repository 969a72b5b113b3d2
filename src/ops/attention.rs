//! `scaled_dot_product_attention` (PyTorch's `F.scaled_dot_product_attention`),
//! composed from matmul, softmax and selection: both backends, gradients of
//! every order and capture come from those.

#[cfg(feature = "testing")]
use super::reference::{Host, Kind};
use super::{expect_float, same_device, same_dtype, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The score given to a masked key: the most negative f32, not -inf, since
/// WGSL may assume there are no infinities (and a GPU replay must match).
const MASKED: f64 = f32::MIN as f64;

impl Tensor {
    /// softmax(q k^T * scale + mask) v over the last two axes of `query`
    /// `[*, L, E]`, `key` `[*, S, E]` and `value` `[*, S, Ev]` (leading axes
    /// broadcast). `attn_mask` broadcasts to `[*, L, S]`: bool (true: the key
    /// takes part) or float (added to the scores). `is_causal` keeps the keys
    /// at or before each query (top-left aligned, as PyTorch). `scale`
    /// defaults to 1 / sqrt(E). As PyTorch's, a query whose every key is
    /// masked attends to nothing: its output row is 0.
    pub fn scaled_dot_product_attention(
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let op = "scaled_dot_product_attention";
        super::as_op(op, || {
            let mut all = vec![query, key, value];
            all.extend(attn_mask);
            same_device(op, &all)?;
            expect_float(op, query)?;
            same_dtype(op, query, key)?;
            same_dtype(op, query, value)?;
            let (q, k, v) = (query.shape(), key.shape(), value.shape());
            let ok = q.len() >= 2
                && k.len() >= 2
                && v.len() >= 2
                && q[q.len() - 1] == k[k.len() - 1]
                && k[k.len() - 2] == v[v.len() - 2];
            if !ok {
                return Err(Error::shape(
                    op,
                    format!("expects query [*, L, E], key [*, S, E] and value [*, S, Ev], got {q:?}, {k:?} and {v:?}"),
                ));
            }
            if is_causal && attn_mask.is_some() {
                return Err(Error::value(op, "give attn_mask or is_causal, not both (as PyTorch)"));
            }
            if !(0.0..1.0).contains(&dropout_p) {
                return Err(Error::value(op, format!("dropout_p must be in [0, 1), got {dropout_p}")));
            }
            let scale = scale.unwrap_or(1.0 / (q[q.len() - 1] as f64).sqrt());
            if !scale.is_finite() {
                return Err(Error::value(op, format!("scale must be finite, got {scale}")));
            }
            let mut scores = query.matmul(&key.transpose(-2, -1)?)?.mul_scalar(scale)?;
            let (l, s) = (q[q.len() - 2], k[k.len() - 2]);
            let keep = match attn_mask {
                _ if is_causal => {
                    let row =
                        Tensor::arange_on(0.0, l as f64, 1.0, DType::I32, &query.device())?.reshape_dims(&[l, 1])?;
                    let col =
                        Tensor::arange_on(0.0, s as f64, 1.0, DType::I32, &query.device())?.reshape_dims(&[1, s])?;
                    Some(col.le(&row)?)
                }
                Some(m) if m.dtype() == DType::Bool => Some(m.clone()),
                Some(m) => {
                    same_dtype(op, query, m)?;
                    scores = scores.add(m)?;
                    None
                }
                None => None,
            };
            if let Some(keep) = &keep {
                scores = Tensor::where_(keep, &scores, &scores.scalar_like(MASKED)?)?;
            }
            let mut weights = scores.softmax(-1)?;
            if let Some(keep) = &keep {
                // A row with no key left: 0, not the uniform average that
                // softmax of equal masked scores gives.
                weights = Tensor::where_(&keep.any(&[-1], true)?, &weights, &weights.zeros_scalar()?)?;
            }
            if dropout_p > 0.0 {
                weights = weights.dropout(dropout_p, true)?;
            }
            weights.matmul(value)
        })
    }
}

/// Attention of `q` `[B, L, E]` over `k` `[B, S, E]`, `v` `[B, S, Ev]` from
/// the definition: per query, softmax over the keys it may see (none: 0).
#[cfg(feature = "testing")]
fn attention_ref(q: &Host, k: &Host, v: &Host, keep: impl Fn(usize, usize) -> bool, bias: Option<&Host>) -> Host {
    let (b, l, e) = (q.shape[0], q.shape[1], q.shape[2]);
    let (s, ev) = (k.shape[1], v.shape[2]);
    let scale = 1.0 / (e as f64).sqrt();
    Host::build(&[b, l, ev], Kind::Float, |i| {
        let (bi, li, c) = (i[0], i[1], i[2]);
        let scores: Vec<Option<f64>> = (0..s)
            .map(|si| {
                keep(li, si).then(|| {
                    let dot: f64 = (0..e).map(|j| q.at(&[bi, li, j]) * k.at(&[bi, si, j])).sum();
                    dot * scale + bias.map_or(0.0, |m| m.at(&[li, si]))
                })
            })
            .collect();
        let m = scores.iter().flatten().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m == f64::NEG_INFINITY {
            return 0.0;
        }
        let z: f64 = scores.iter().flatten().map(|x| (x - m).exp()).sum();
        scores.iter().enumerate().filter_map(|(si, x)| x.map(|x| (x - m).exp() / z * v.at(&[bi, si, c]))).sum()
    })
}

static SDPA: OpDef = OpDef {
    name: "scaled_dot_product_attention",
    signature: "scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, *, attn_mask: Tensor<any> | None = None, dropout_p: float = 0, is_causal: bool = False, scale: float | None = None) -> Tensor",
    doc: "softmax(q k^T * scale + mask) v; a bool mask marks the keys that take part; is_causal keeps keys up to each query.",
    forward: Some(Forward::One(|a| {
        Tensor::scaled_dot_product_attention(
            a.tensor("query")?,
            a.tensor("key")?,
            a.tensor("value")?,
            a.opt_tensor("attn_mask")?,
            a.finite("dropout_p")?,
            a.bool("is_causal")?,
            a.opt_float("scale")?,
        )
    })),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let qkv = || {
            vec![
                Input::Uniform(vec![2, 3, 4], -1.0, 1.0),
                Input::Uniform(vec![2, 5, 4], -1.0, 1.0),
                Input::Uniform(vec![2, 5, 3], -1.0, 1.0),
            ]
        };
        let with = |extra: Input| {
            let mut v = qkv();
            v.push(extra);
            v
        };
        vec![
            Case::new("attention", qkv(), |x| Tensor::scaled_dot_product_attention(&x[0], &x[1], &x[2], None, 0.0, false, None))
                .reference(|h| attention_ref(&h[0], &h[1], &h[2], |_, _| true, None)),
            Case::new("attention, causal", qkv(), |x| Tensor::scaled_dot_product_attention(&x[0], &x[1], &x[2], None, 0.0, true, None))
                .reference(|h| attention_ref(&h[0], &h[1], &h[2], |l, s| s <= l, None)),
            // A random [3, 5] mask: rows with no key left give 0.
            Case::new("attention, bool mask", with(Input::Mask(vec![3, 5])), |x| {
                Tensor::scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&x[3]), 0.0, false, None)
            })
            .reference(|h| {
                let m = h[3].clone();
                attention_ref(&h[0], &h[1], &h[2], move |l, s| m.at(&[l, s]) != 0.0, None)
            }),
            Case::new("attention, float mask", with(Input::Uniform(vec![3, 5], -2.0, 2.0)), |x| {
                Tensor::scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&x[3]), 0.0, false, None)
            })
            .reference(|h| attention_ref(&h[0], &h[1], &h[2], |_, _| true, Some(&h[3]))),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&SDPA]
}
