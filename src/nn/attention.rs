//! Multi-head attention (PyTorch's `nn.MultiheadAttention` with batch_first).

use super::init;
use super::{py_float, Core, Layer, Linear, Param};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The score given to masked positions: the most negative finite f32, so the
/// masked weights are exactly 0 after softmax on every backend. (A row whose
/// keys are all masked gets uniform weights, where PyTorch gives NaN.)
const MASKED: f64 = f32::MIN as f64;

/// Multi-head scaled dot-product attention over `[B, L, E]` inputs
/// (batch first). State names follow PyTorch: `in_proj_weight` `[3E, E]`,
/// `in_proj_bias` `[3E]`, `out_proj.weight` `[E, E]`, `out_proj.bias` `[E]`.
/// Initialisation as in PyTorch: Xavier-uniform in-projection, zero biases.
pub struct MultiHeadAttention {
    core: Core,
    pub embed_dim: usize,
    pub num_heads: usize,
    /// Dropout on the attention weights in training mode (default 0).
    pub dropout: f64,
    /// Whether `forward` (self-attention) applies a causal mask.
    pub causal: bool,
    pub in_proj_weight: Param,
    pub in_proj_bias: Option<Param>,
    pub out_proj: Linear,
}

impl MultiHeadAttention {
    /// With biases, no dropout, no causal mask.
    pub fn new(embed_dim: usize, num_heads: usize) -> Result<MultiHeadAttention> {
        MultiHeadAttention::with_options(embed_dim, num_heads, true, 0.0)
    }
    pub fn with_options(embed_dim: usize, num_heads: usize, bias: bool, dropout: f64) -> Result<MultiHeadAttention> {
        if embed_dim == 0 || num_heads == 0 || embed_dim % num_heads != 0 {
            return Err(Error::value(
                "MultiHeadAttention",
                format!("embed_dim {embed_dim} must be a positive multiple of num_heads {num_heads}"),
            ));
        }
        if !(0.0..1.0).contains(&dropout) {
            return Err(Error::value("MultiHeadAttention", format!("dropout must be in [0, 1), got {dropout}")));
        }
        let w = Tensor::zeros(&[3 * embed_dim, embed_dim], DType::F32)?;
        init::xavier_uniform_(&w, 1.0)?;
        let in_proj_bias =
            if bias { Some(Param::parameter(Tensor::zeros(&[3 * embed_dim], DType::F32)?)?) } else { None };
        let out_proj = Linear::with_bias(embed_dim, embed_dim, bias)?;
        if let Some(b) = &out_proj.bias {
            init::constant_(&b.get(), 0.0)?;
        }
        Ok(MultiHeadAttention {
            core: Core::default(),
            embed_dim,
            num_heads,
            dropout,
            causal: false,
            in_proj_weight: Param::parameter(w)?,
            in_proj_bias,
            out_proj,
        })
    }
    /// Sets whether `forward` masks future positions (builder style).
    pub fn with_causal(mut self, causal: bool) -> MultiHeadAttention {
        self.causal = causal;
        self
    }

    /// Projection `i` (0: query, 1: key, 2: value) of `x` `[B, T, E]`, split
    /// into heads: `[B, H, T, E/H]`.
    fn project(&self, x: &Tensor, i: usize) -> Result<Tensor> {
        let e = self.embed_dim;
        let w = self.in_proj_weight.get().narrow(0, i * e, e)?;
        let mut y = x.matmul(&w.transpose(0, 1)?)?;
        if let Some(b) = &self.in_proj_bias {
            y = y.add(&b.get().narrow(0, i * e, e)?)?;
        }
        let (b, t, h) = (x.shape()[0], x.shape()[1], self.num_heads);
        y.reshape_dims(&[b, t, h, e / h])?.permute(&[0, 2, 1, 3])
    }

    fn check(&self, what: &str, x: &Tensor, batch: Option<usize>) -> Result<()> {
        let ok = x.ndim() == 3 && x.shape()[2] == self.embed_dim && batch.is_none_or(|b| x.shape()[0] == b);
        if !ok {
            return Err(Error::shape(
                "MultiHeadAttention",
                format!("{what} must be [B, T, {}] (batch first), got shape {:?}", self.embed_dim, x.shape()),
            ));
        }
        Ok(())
    }

    /// Attention of `query` `[B, L, E]` over `key`/`value` `[B, S, E]`. A bool
    /// `key_padding_mask` `[B, S]` marks keys to ignore (true = ignore, as in
    /// PyTorch); `causal` masks keys after each query position. Returns the
    /// output `[B, L, E]` and the attention weights `[B, H, L, S]`. (Hooks run
    /// only through `forward`.)
    pub fn attend(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        key_padding_mask: Option<&Tensor>,
        causal: bool,
    ) -> Result<(Tensor, Tensor)> {
        self.check("query", query, None)?;
        let b = query.shape()[0];
        self.check("key", key, Some(b))?;
        self.check("value", value, Some(b))?;
        let (l, s) = (query.shape()[1], key.shape()[1]);
        if value.shape()[1] != s {
            return Err(Error::shape(
                "MultiHeadAttention",
                format!("key {:?} and value {:?} lengths differ", key.shape(), value.shape()),
            ));
        }
        let (q, k, v) = (self.project(query, 0)?, self.project(key, 1)?, self.project(value, 2)?);
        let d = self.embed_dim / self.num_heads;
        let mut scores = q.matmul(&k.transpose(-2, -1)?)?.mul_scalar(1.0 / (d as f64).sqrt())?;
        let masked = Tensor::full_on(&[], MASKED, scores.dtype(), &scores.device())?;
        if let Some(m) = key_padding_mask {
            if m.dtype() != DType::Bool || m.shape() != [b, s] {
                return Err(Error::shape(
                    "MultiHeadAttention",
                    format!("key_padding_mask must be a bool [{b}, {s}] tensor, got {} {:?}", m.dtype(), m.shape()),
                ));
            }
            scores = Tensor::where_(&m.reshape_dims(&[b, 1, 1, s])?, &masked, &scores)?;
        }
        if causal {
            // Made on the scores' device (no host upload, so jit can capture it).
            let dev = scores.device();
            let row = Tensor::arange_on(0.0, l as f64, 1.0, DType::I32, &dev)?.reshape_dims(&[l, 1])?;
            let col = Tensor::arange_on(0.0, s as f64, 1.0, DType::I32, &dev)?.reshape_dims(&[1, s])?;
            scores = Tensor::where_(&col.gt(&row)?, &masked, &scores)?;
        }
        let weights = scores.softmax(-1)?;
        let attn = weights.dropout(self.dropout, self.is_training())?;
        let out = attn.matmul(&v)?.permute(&[0, 2, 1, 3])?.reshape_dims(&[b, l, self.embed_dim])?;
        Ok((self.out_proj.forward(&out)?, weights))
    }
}

impl Layer for MultiHeadAttention {
    /// Self-attention of `x` `[B, L, E]`, causal when `self.causal`.
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.attend(x, x, x, None, self.causal)?.0)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        let mut v = vec![("in_proj_weight".to_string(), self.in_proj_weight.clone())];
        v.extend(self.in_proj_bias.iter().map(|p| ("in_proj_bias".to_string(), p.clone())));
        v
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        vec![("out_proj".to_string(), &self.out_proj as &dyn Layer)]
    }
    fn type_name(&self) -> &'static str {
        "MultiheadAttention"
    }
    /// PyTorch prints no extra_repr for attention; skiff shows the sizes and
    /// the settings that differ from their defaults (`causal` is skiff's).
    fn extra_repr(&self) -> String {
        let mut s = format!("embed_dim={}, num_heads={}", self.embed_dim, self.num_heads);
        if self.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(self.dropout));
        }
        if self.in_proj_bias.is_none() {
            s += ", bias=False";
        }
        if self.causal {
            s += ", causal=True";
        }
        s
    }
}
