//! `TransformerEncoderLayer` and `TransformerDecoderLayer` (PyTorch's, with
//! its parameter names: `self_attn.in_proj_weight`, `linear1.weight`,
//! `norm1.bias`, ...), post-norm by default or pre-norm (`norm_first`),
//! ReLU or GELU in the feed-forward block, sequence-first by default or
//! batch-first.

use super::{py_float, Core, Layer, LayerNorm, Linear, MultiHeadAttention};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The feed-forward block's activation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedForwardActivation {
    #[default]
    Relu,
    /// Exact GELU (erf).
    Gelu,
}

/// Options of the transformer layers (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct TransformerConfig {
    pub dim_feedforward: usize,
    pub dropout: f64,
    pub activation: FeedForwardActivation,
    pub layer_norm_eps: f64,
    /// Inputs `[N, L, E]` instead of `[L, N, E]`.
    pub batch_first: bool,
    /// Pre-norm: normalise before each block instead of after its residual sum.
    pub norm_first: bool,
    pub bias: bool,
}

impl Default for TransformerConfig {
    fn default() -> Self {
        TransformerConfig {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: FeedForwardActivation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// The parts both layers share: attention blocks, the feed-forward block and its norms.
struct Blocks {
    d_model: usize,
    config: TransformerConfig,
    linear1: Linear,
    linear2: Linear,
    norms: Vec<LayerNorm>,
}

impl Blocks {
    fn new(op: &'static str, d_model: usize, nhead: usize, c: TransformerConfig, norms: usize) -> Result<Blocks> {
        if d_model == 0 || nhead == 0 || d_model % nhead != 0 || c.dim_feedforward == 0 {
            return Err(Error::value(
                op,
                format!("d_model {d_model} must be a positive multiple of nhead {nhead}, and dim_feedforward positive"),
            ));
        }
        if !(0.0..1.0).contains(&c.dropout) {
            return Err(Error::value(op, format!("dropout must be in [0, 1), got {}", c.dropout)));
        }
        let norms = (0..norms)
            .map(|_| {
                let mut n = LayerNorm::with_options(&[d_model], c.layer_norm_eps, true)?;
                if !c.bias {
                    n.bias = None;
                }
                Ok(n)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Blocks {
            d_model,
            config: c,
            linear1: Linear::with_bias(d_model, c.dim_feedforward, c.bias)?,
            linear2: Linear::with_bias(c.dim_feedforward, d_model, c.bias)?,
            norms,
        })
    }

    fn attention(&self, nhead: usize) -> Result<MultiHeadAttention> {
        MultiHeadAttention::with_options(self.d_model, nhead, self.config.bias, self.config.dropout)
    }

    /// `x` as `[N, L, E]` (transposed from sequence-first when needed), checked.
    fn batch_first(&self, op: &'static str, what: &str, x: &Tensor) -> Result<Tensor> {
        if x.ndim() != 3 || x.shape()[2] != self.d_model {
            let want = if self.config.batch_first { "[N, L, E]" } else { "[L, N, E]" };
            return Err(Error::shape(
                op,
                format!("{what} must be {want} with E = d_model {}, got shape {:?}", self.d_model, x.shape()),
            ));
        }
        if self.config.batch_first {
            Ok(x.clone())
        } else {
            x.transpose(0, 1)
        }
    }

    fn restore(&self, y: Tensor) -> Result<Tensor> {
        if self.config.batch_first {
            Ok(y)
        } else {
            y.transpose(0, 1)
        }
    }

    fn dropout(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        x.dropout(self.config.dropout, train)
    }

    /// linear2(dropout(activation(linear1(x)))), then dropout.
    fn feed_forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let h = self.linear1.forward(x)?;
        let h = match self.config.activation {
            FeedForwardActivation::Relu => h.relu()?,
            FeedForwardActivation::Gelu => h.gelu_erf()?,
        };
        self.dropout(&self.linear2.forward(&self.dropout(&h, train)?)?, train)
    }

    /// `x + block(norm(x))` (pre-norm) or `norm(x + block(x))` (post-norm).
    fn residual(&self, x: &Tensor, norm: usize, block: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let n = &self.norms[norm];
        if self.config.norm_first {
            x.add(&block(&n.forward(x)?)?)
        } else {
            n.forward(&x.add(&block(x)?)?)
        }
    }

    fn extra_repr(&self, nhead: usize) -> String {
        let c = &self.config;
        format!(
            "d_model={}, nhead={nhead}, dim_feedforward={}, dropout={}, activation={}, layer_norm_eps={}, batch_first={}, norm_first={}",
            self.d_model,
            c.dim_feedforward,
            py_float(c.dropout),
            match c.activation {
                FeedForwardActivation::Relu => "relu",
                FeedForwardActivation::Gelu => "gelu",
            },
            py_float(c.layer_norm_eps),
            super::py_bool(c.batch_first),
            super::py_bool(c.norm_first),
        )
    }
}

/// Self-attention then a feed-forward block, each with a residual connection
/// and layer norm (PyTorch's `nn.TransformerEncoderLayer`).
pub struct TransformerEncoderLayer {
    core: Core,
    pub self_attn: MultiHeadAttention,
    nhead: usize,
    blocks: Blocks,
}

impl TransformerEncoderLayer {
    pub fn new(d_model: usize, nhead: usize) -> Result<TransformerEncoderLayer> {
        TransformerEncoderLayer::with_config(d_model, nhead, TransformerConfig::default())
    }
    pub fn with_config(d_model: usize, nhead: usize, c: TransformerConfig) -> Result<TransformerEncoderLayer> {
        let blocks = Blocks::new("TransformerEncoderLayer", d_model, nhead, c, 2)?;
        Ok(TransformerEncoderLayer { core: Core::default(), self_attn: blocks.attention(nhead)?, nhead, blocks })
    }

    /// The layer over `src`, with an optional bool `src_key_padding_mask`
    /// `[N, S]` (true: ignore that key) and causal self-attention.
    pub fn encode(&self, src: &Tensor, src_key_padding_mask: Option<&Tensor>, is_causal: bool) -> Result<Tensor> {
        const OP: &str = "TransformerEncoderLayer";
        let b = &self.blocks;
        let train = self.is_training();
        let x = b.batch_first(OP, "src", src)?;
        let x = b.residual(&x, 0, |h| {
            let (out, _) = self.self_attn.attend(h, h, h, src_key_padding_mask, is_causal)?;
            b.dropout(&out, train)
        })?;
        let x = b.residual(&x, 1, |h| b.feed_forward(h, train))?;
        b.restore(x)
    }
}

impl Layer for TransformerEncoderLayer {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        self.encode(x, None, false)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        let b = &self.blocks;
        vec![
            ("self_attn".to_string(), &self.self_attn as &dyn Layer),
            ("linear1".to_string(), &b.linear1),
            ("linear2".to_string(), &b.linear2),
            ("norm1".to_string(), &b.norms[0]),
            ("norm2".to_string(), &b.norms[1]),
        ]
    }
    fn type_name(&self) -> &'static str {
        "TransformerEncoderLayer"
    }
    fn extra_repr(&self) -> String {
        self.blocks.extra_repr(self.nhead)
    }
}

/// Self-attention over the target, attention to the encoder's `memory`, then
/// a feed-forward block, each with a residual connection and layer norm
/// (PyTorch's `nn.TransformerDecoderLayer`). It needs the memory: call
/// `decode` (`forward` alone is an error).
pub struct TransformerDecoderLayer {
    core: Core,
    pub self_attn: MultiHeadAttention,
    pub multihead_attn: MultiHeadAttention,
    nhead: usize,
    blocks: Blocks,
}

impl TransformerDecoderLayer {
    pub fn new(d_model: usize, nhead: usize) -> Result<TransformerDecoderLayer> {
        TransformerDecoderLayer::with_config(d_model, nhead, TransformerConfig::default())
    }
    pub fn with_config(d_model: usize, nhead: usize, c: TransformerConfig) -> Result<TransformerDecoderLayer> {
        let blocks = Blocks::new("TransformerDecoderLayer", d_model, nhead, c, 3)?;
        Ok(TransformerDecoderLayer {
            core: Core::default(),
            self_attn: blocks.attention(nhead)?,
            multihead_attn: blocks.attention(nhead)?,
            nhead,
            blocks,
        })
    }

    /// The layer over `tgt` attending to `memory`; `tgt_is_causal` masks each
    /// target position's future (the usual decoder mask); the bool padding
    /// masks `[N, T]` and `[N, S]` mark keys to ignore.
    pub fn decode(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        tgt_is_causal: bool,
        tgt_key_padding_mask: Option<&Tensor>,
        memory_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        const OP: &str = "TransformerDecoderLayer";
        let b = &self.blocks;
        let train = self.is_training();
        let x = b.batch_first(OP, "tgt", tgt)?;
        let mem = b.batch_first(OP, "memory", memory)?;
        let x = b.residual(&x, 0, |h| {
            let (out, _) = self.self_attn.attend(h, h, h, tgt_key_padding_mask, tgt_is_causal)?;
            b.dropout(&out, train)
        })?;
        let x = b.residual(&x, 1, |h| {
            let (out, _) = self.multihead_attn.attend(h, &mem, &mem, memory_key_padding_mask, false)?;
            b.dropout(&out, train)
        })?;
        let x = b.residual(&x, 2, |h| b.feed_forward(h, train))?;
        b.restore(x)
    }
}

impl Layer for TransformerDecoderLayer {
    fn forward_impl(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::value(
            "TransformerDecoderLayer",
            "needs the encoder's memory: call decode(tgt, memory, ...) instead of forward",
        ))
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        let b = &self.blocks;
        vec![
            ("self_attn".to_string(), &self.self_attn as &dyn Layer),
            ("multihead_attn".to_string(), &self.multihead_attn),
            ("linear1".to_string(), &b.linear1),
            ("linear2".to_string(), &b.linear2),
            ("norm1".to_string(), &b.norms[0]),
            ("norm2".to_string(), &b.norms[1]),
            ("norm3".to_string(), &b.norms[2]),
        ]
    }
    fn type_name(&self) -> &'static str {
        "TransformerDecoderLayer"
    }
    fn extra_repr(&self) -> String {
        self.blocks.extra_repr(self.nhead)
    }
}
