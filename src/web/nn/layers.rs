//! The layer table: `Module`'s static factories, one row per skiff layer
//! plus the containers (`layer_table.rs` turns the rows into the factories,
//! the TypeScript `LayerConstructors` and the `nn` constructors). Sizes
//! arrive as `JsValue` and are checked (no silent coercion of fractional or
//! negative numbers), and a layer's parameter count is capped so that a typo
//! cannot ask wasm32 for more memory than it has (an allocation failure
//! would abort the whole instance). Names and reprs come from the layers
//! (`Layer::type_name`, `Layer::repr`).

use super::bag;
use super::layer_table::layer_table;
use super::module::{module_arg, Entry, JsModule, Kind, Spec};
use crate::nn::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNormConfig, Conv1d, Conv1dConfig, Conv2d,
    Conv2dConfig, ConvTranspose2d, ConvTranspose2dConfig, Dropout, Embedding, FeedForwardActivation, Flatten,
    GeluApproximate, GroupNorm, Hardsigmoid, Hardswish, Identity, InstanceNorm, Interpolation, Layer, LayerDict,
    LayerList, LayerNorm, LeakyReLU, Linear, MaxPool2d, Mish, MultiHeadAttention, PReLU, PixelShuffle, PixelUnshuffle,
    RMSNorm, ReLU, Recurrent, RecurrentCell, RecurrentConfig, RecurrentKind, Sequential, SiLU, Sigmoid, Softmax, Tanh,
    TransformerConfig, TransformerDecoderLayer, TransformerEncoderLayer, Unflatten, Upsample, ZeroPad2d, ELU, GELU,
    SELU,
};
use crate::web::args::Opts;
use crate::web::args::{self, describe};
use crate::web::{js_error, JsResult, Kind as ErrorKind, Named};
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

/// The most elements one layer's parameters may have (256 MiB of f32;
/// initialisation also draws them as f64 on the host).
const MAX_ELEMENTS: usize = 1 << 26;

fn size(op: &str, name: &str, v: &JsValue) -> JsResult<usize> {
    args::usize_arg(op, name, v)
}

/// Errors when `dims` multiply to more than `MAX_ELEMENTS`.
fn budget(op: &str, dims: &[usize]) -> JsResult<()> {
    let n = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match n {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(js_error(
            op,
            ErrorKind::Memory,
            format!("a parameter of shape {dims:?} is too large (at most {MAX_ELEMENTS} elements per parameter)"),
        )),
    }
}

/// An option given as one integer or `[a, b]`, with a default.
fn opt_pair(op: &str, o: &args::Opts, key: &str, default: [usize; 2]) -> JsResult<[usize; 2]> {
    let v = o.get(key);
    if v.is_undefined() || v.is_null() {
        Ok(default)
    } else {
        args::pair(op, key, &v)
    }
}

/// The modules of a JS array (each must be a live `Module`).
fn modules_arg(op: &str, v: &JsValue) -> JsResult<Vec<Rc<Entry>>> {
    let Some(list) = args::as_array(v) else {
        return Err(js_error(
            op,
            ErrorKind::Argument,
            format!("modules must be an array of Modules, got {}", describe(v)),
        ));
    };
    list.iter().enumerate().map(|(i, m)| module_arg(op, &format!("modules[{i}]"), &m)).collect()
}

fn boxed(entries: &[Rc<Entry>]) -> Vec<Box<dyn Layer>> {
    entries.iter().map(|e| Box::new(e.layer.clone()) as Box<dyn Layer>).collect()
}

fn indexed(entries: Vec<Rc<Entry>>) -> Vec<(String, Rc<Entry>)> {
    entries.into_iter().enumerate().map(|(i, e)| (i.to_string(), e)).collect()
}

fn container(layer: Arc<dyn Layer>, kind: Kind, children: Vec<(String, Rc<Entry>)>) -> JsModule {
    Spec { layer, kind, children }.build()
}

/// A leaf layer's new handle.
fn leaf(layer: impl Layer + 'static) -> JsResult<JsModule> {
    Ok(Spec::layer(layer).build())
}

fn options_of(options: Option<JsValue>) -> JsValue {
    options.unwrap_or(JsValue::UNDEFINED)
}

/// The kind an RNN row's `nonlinearity` option picks (tanh or relu).
fn nonlinearity(op: &str, kind: RecurrentKind, o: &Opts) -> JsResult<RecurrentKind> {
    if kind != RecurrentKind::RnnTanh {
        return Ok(kind);
    }
    match o.string("nonlinearity", "tanh")?.as_str() {
        "tanh" => Ok(RecurrentKind::RnnTanh),
        "relu" => Ok(RecurrentKind::RnnRelu),
        other => Err(js_error(op, ErrorKind::Value, format!("nonlinearity must be 'tanh' or 'relu', got '{other}'"))),
    }
}

/// The RNN, LSTM and GRU rows.
fn recurrent_row(
    kind: RecurrentKind,
    input: &JsValue,
    hidden: &JsValue,
    options: Option<JsValue>,
) -> JsResult<JsModule> {
    let op = recurrent_name(kind, false);
    let options = options_of(options);
    let mut known = vec!["numLayers", "bias", "batchFirst", "dropout", "bidirectional"];
    if kind == RecurrentKind::RnnTanh {
        known.push("nonlinearity");
    }
    let o = bag(op, &options, &known)?;
    let (input, hidden) = (size(op, "inputSize", input)?, size(op, "hiddenSize", hidden)?);
    let c = RecurrentConfig {
        num_layers: o.usize("numLayers", 1)?,
        bias: o.bool("bias", true)?,
        batch_first: o.bool("batchFirst", false)?,
        dropout: o.f64("dropout", 0.0)?,
        bidirectional: o.bool("bidirectional", false)?,
    };
    let kind = nonlinearity(op, kind, &o)?;
    recurrent_budget(op, kind, input.max(hidden * if c.bidirectional { 2 } else { 1 }), hidden)?;
    budget(op, &[c.num_layers, hidden])?;
    let layer = Arc::new(Recurrent::new(kind, input, hidden, c).named(op)?);
    Ok(Spec { layer: layer.clone(), kind: Kind::Recurrent(layer), children: Vec::new() }.build())
}

/// The RNNCell, LSTMCell and GRUCell rows.
fn cell_row(kind: RecurrentKind, input: &JsValue, hidden: &JsValue, options: Option<JsValue>) -> JsResult<JsModule> {
    let op = recurrent_name(kind, true);
    let options = options_of(options);
    let known: &[&str] = if kind == RecurrentKind::RnnTanh { &["bias", "nonlinearity"] } else { &["bias"] };
    let o = bag(op, &options, known)?;
    let (input, hidden) = (size(op, "inputSize", input)?, size(op, "hiddenSize", hidden)?);
    let kind = nonlinearity(op, kind, &o)?;
    recurrent_budget(op, kind, input, hidden)?;
    let cell = Arc::new(RecurrentCell::new(kind, input, hidden, o.bool("bias", true)?).named(op)?);
    Ok(Spec { layer: cell.clone(), kind: Kind::Cell(cell), children: Vec::new() }.build())
}

fn recurrent_name(kind: RecurrentKind, cell: bool) -> &'static str {
    match (kind, cell) {
        (RecurrentKind::Lstm, false) => "LSTM",
        (RecurrentKind::Gru, false) => "GRU",
        (_, false) => "RNN",
        (RecurrentKind::Lstm, true) => "LSTMCell",
        (RecurrentKind::Gru, true) => "GRUCell",
        (_, true) => "RNNCell",
    }
}

/// The budget of one layer's weights: [gates * hidden, inputs and hidden].
fn recurrent_budget(op: &str, kind: RecurrentKind, input: usize, hidden: usize) -> JsResult<()> {
    let gates = match kind {
        RecurrentKind::Lstm => 4,
        RecurrentKind::Gru => 3,
        _ => 1,
    };
    budget(op, &[gates, hidden, input.saturating_add(hidden)])
}

/// The transformer rows' sizes and options.
fn transformer_args(
    op: &str,
    d_model: &JsValue,
    nhead: &JsValue,
    options: Option<JsValue>,
) -> JsResult<(usize, usize, TransformerConfig)> {
    let options = options_of(options);
    let o = bag(
        op,
        &options,
        &["dimFeedforward", "dropout", "activation", "layerNormEps", "batchFirst", "normFirst", "bias"],
    )?;
    let (d, h) = (size(op, "dModel", d_model)?, size(op, "nhead", nhead)?);
    let activation = match o.string("activation", "relu")?.as_str() {
        "relu" => FeedForwardActivation::Relu,
        "gelu" => FeedForwardActivation::Gelu,
        other => {
            return Err(js_error(op, ErrorKind::Value, format!("activation must be 'relu' or 'gelu', got '{other}'")))
        }
    };
    let c = TransformerConfig {
        dim_feedforward: o.usize("dimFeedforward", 2048)?,
        dropout: o.f64("dropout", 0.1)?,
        activation,
        layer_norm_eps: o.f64("layerNormEps", 1e-5)?,
        batch_first: o.bool("batchFirst", false)?,
        norm_first: o.bool("normFirst", false)?,
        bias: o.bool("bias", true)?,
    };
    budget(op, &[4, d, d])?;
    budget(op, &[d, c.dim_feedforward])?;
    Ok((d, h, c))
}

layer_table! {
    /// y = x W^T + b (PyTorch's `nn.Linear`): weight [outFeatures, inFeatures].
    Linear = linear(in_features as inFeatures: "number", out_features as outFeatures: "number"; options: "{ bias?: boolean }") {
        const OP: &str = "Linear";
        let options = options_of(options);
        let o = bag(OP, &options, &["bias"])?;
        let (i, n) = (size(OP, "inFeatures", &in_features)?, size(OP, "outFeatures", &out_features)?);
        let bias = o.bool("bias", true)?;
        budget(OP, &[n, i])?;
        leaf(Linear::with_bias(i, n, bias).named(OP)?)
    }

    /// 2-D convolution over [N, C, H, W] (PyTorch's `nn.Conv2d`); sizes are
    /// an integer or `[h, w]`.
    Conv2d = conv2d(
        in_channels as inChannels: "number",
        out_channels as outChannels: "number",
        kernel_size as kernelSize: "number | [number, number]";
        options: "{ stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number | [number, number]; groups?: number; bias?: boolean }"
    ) {
        const OP: &str = "Conv2d";
        let options = options_of(options);
        let o = bag(OP, &options, &["stride", "padding", "dilation", "groups", "bias"])?;
        let (ci, co) = (size(OP, "inChannels", &in_channels)?, size(OP, "outChannels", &out_channels)?);
        let k = args::pair(OP, "kernelSize", &kernel_size)?;
        let c = Conv2dConfig {
            stride: opt_pair(OP, &o, "stride", [1, 1])?,
            padding: opt_pair(OP, &o, "padding", [0, 0])?,
            dilation: opt_pair(OP, &o, "dilation", [1, 1])?,
            groups: o.usize("groups", 1)?,
            bias: o.bool("bias", true)?,
        };
        budget(OP, &[co, ci / c.groups.max(1), k[0], k[1]])?;
        leaf(Conv2d::with_config(ci, co, k, c).named(OP)?)
    }

    /// 1-D convolution over [N, C, L] (PyTorch's `nn.Conv1d`): weight
    /// [outChannels, inChannels / groups, kernelSize].
    Conv1d = conv1d(
        in_channels as inChannels: "number",
        out_channels as outChannels: "number",
        kernel_size as kernelSize: "number";
        options: "{ stride?: number; padding?: number; dilation?: number; groups?: number; bias?: boolean }"
    ) {
        const OP: &str = "Conv1d";
        let options = options_of(options);
        let o = bag(OP, &options, &["stride", "padding", "dilation", "groups", "bias"])?;
        let (ci, co) = (size(OP, "inChannels", &in_channels)?, size(OP, "outChannels", &out_channels)?);
        let k = size(OP, "kernelSize", &kernel_size)?;
        let c = Conv1dConfig {
            stride: o.usize("stride", 1)?,
            padding: o.usize("padding", 0)?,
            dilation: o.usize("dilation", 1)?,
            groups: o.usize("groups", 1)?,
            bias: o.bool("bias", true)?,
        };
        budget(OP, &[co, ci / c.groups.max(1), k])?;
        leaf(Conv1d::with_config(ci, co, k, c).named(OP)?)
    }

    /// Transposed 2-D convolution over [N, C, H, W] (PyTorch's
    /// `nn.ConvTranspose2d`): weight [inChannels, outChannels / groups, kh, kw].
    ConvTranspose2d = conv_transpose2d as convTranspose2d(
        in_channels as inChannels: "number",
        out_channels as outChannels: "number",
        kernel_size as kernelSize: "number | [number, number]";
        options: "{ stride?: number | [number, number]; padding?: number | [number, number]; outputPadding?: number | [number, number]; groups?: number; bias?: boolean; dilation?: number | [number, number] }"
    ) {
        const OP: &str = "ConvTranspose2d";
        let options = options_of(options);
        let o = bag(OP, &options, &["stride", "padding", "outputPadding", "groups", "bias", "dilation"])?;
        let (ci, co) = (size(OP, "inChannels", &in_channels)?, size(OP, "outChannels", &out_channels)?);
        let k = args::pair(OP, "kernelSize", &kernel_size)?;
        let c = ConvTranspose2dConfig {
            stride: opt_pair(OP, &o, "stride", [1, 1])?,
            padding: opt_pair(OP, &o, "padding", [0, 0])?,
            output_padding: opt_pair(OP, &o, "outputPadding", [0, 0])?,
            groups: o.usize("groups", 1)?,
            bias: o.bool("bias", true)?,
            dilation: opt_pair(OP, &o, "dilation", [1, 1])?,
        };
        budget(OP, &[ci, co / c.groups.max(1), k[0], k[1]])?;
        leaf(ConvTranspose2d::with_config(ci, co, k, c).named(OP)?)
    }

    /// Max over windows of [N, C, H, W] (stride defaults to the kernel size).
    MaxPool2d = max_pool2d as maxPool2d(
        kernel_size as kernelSize: "number | [number, number]";
        options: "{ stride?: number | [number, number]; padding?: number | [number, number] }"
    ) {
        const OP: &str = "MaxPool2d";
        let (k, s, p) = pool_args(OP, &kernel_size, options)?;
        leaf(MaxPool2d::with_options(k, s, p).named(OP)?)
    }

    /// Mean over windows of [N, C, H, W] (stride defaults to the kernel size;
    /// zero padding is counted).
    AvgPool2d = avg_pool2d as avgPool2d(
        kernel_size as kernelSize: "number | [number, number]";
        options: "{ stride?: number | [number, number]; padding?: number | [number, number] }"
    ) {
        const OP: &str = "AvgPool2d";
        let (k, s, p) = pool_args(OP, &kernel_size, options)?;
        leaf(AvgPool2d::with_options(k, s, p).named(OP)?)
    }

    /// Averages [N, C, H, W] down to [N, C, outH, outW] (PyTorch's cell rule).
    AdaptiveAvgPool2d = adaptive_avg_pool2d as adaptiveAvgPool2d(output_size as outputSize: "number | [number, number]") {
        const OP: &str = "AdaptiveAvgPool2d";
        let s = args::pair(OP, "outputSize", &output_size)?;
        leaf(AdaptiveAvgPool2d::new(s).named(OP)?)
    }

    /// Batch normalisation of [N, C] or [N, C, L] over the channel axis.
    BatchNorm1d = batch_norm1d as batchNorm1d(
        num_features as numFeatures: "number";
        options: "{ eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }"
    ) {
        let (n, c) = batch_norm_args("BatchNorm1d", &num_features, options)?;
        leaf(BatchNorm1d::with_config(n, c).named("BatchNorm1d")?)
    }

    /// Batch normalisation of [N, C, H, W] over the channel axis.
    BatchNorm2d = batch_norm2d as batchNorm2d(
        num_features as numFeatures: "number";
        options: "{ eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }"
    ) {
        let (n, c) = batch_norm_args("BatchNorm2d", &num_features, options)?;
        leaf(BatchNorm2d::with_config(n, c).named("BatchNorm2d")?)
    }

    /// Layer normalisation over the trailing `normalizedShape` axes.
    LayerNorm = layer_norm as layerNorm(
        normalized_shape as normalizedShape: "number | number[]";
        options: "{ eps?: number; elementwiseAffine?: boolean }"
    ) {
        const OP: &str = "LayerNorm";
        let options = options_of(options);
        let o = bag(OP, &options, &["eps", "elementwiseAffine"])?;
        let shape = args::dims(OP, "normalizedShape", &normalized_shape)?;
        let (eps, affine) = (o.f64("eps", 1e-5)?, o.bool("elementwiseAffine", true)?);
        budget(OP, &shape)?;
        leaf(LayerNorm::with_options(&shape, eps, affine).named(OP)?)
    }

    /// Group normalisation of [N, C, *]: numChannels split into numGroups.
    GroupNorm = group_norm as groupNorm(
        num_groups as numGroups: "number",
        num_channels as numChannels: "number";
        options: "{ eps?: number; affine?: boolean }"
    ) {
        const OP: &str = "GroupNorm";
        let options = options_of(options);
        let o = bag(OP, &options, &["eps", "affine"])?;
        let (g, c) = (size(OP, "numGroups", &num_groups)?, size(OP, "numChannels", &num_channels)?);
        budget(OP, &[c])?;
        leaf(GroupNorm::with_options(g, c, o.f64("eps", 1e-5)?, o.bool("affine", true)?).named(OP)?)
    }

    /// Instance normalisation of [N, C, L] (no running statistics).
    InstanceNorm1d = instance_norm1d as instanceNorm1d(num_features as numFeatures: "number"; options: "{ eps?: number; affine?: boolean }") {
        let (n, eps, affine) = instance_norm_args("InstanceNorm1d", &num_features, options)?;
        leaf(InstanceNorm::new_1d(n, eps, affine).named("InstanceNorm1d")?)
    }

    /// Instance normalisation of [N, C, H, W] (no running statistics).
    InstanceNorm2d = instance_norm2d as instanceNorm2d(num_features as numFeatures: "number"; options: "{ eps?: number; affine?: boolean }") {
        let (n, eps, affine) = instance_norm_args("InstanceNorm2d", &num_features, options)?;
        leaf(InstanceNorm::new_2d(n, eps, affine).named("InstanceNorm2d")?)
    }

    /// RMS normalisation over the trailing normalizedShape axes (eps: the
    /// dtype's epsilon unless given).
    RMSNorm = rms_norm as rmsNorm(
        normalized_shape as normalizedShape: "number | number[]";
        options: "{ eps?: number; elementwiseAffine?: boolean }"
    ) {
        const OP: &str = "RMSNorm";
        let options = options_of(options);
        let o = bag(OP, &options, &["eps", "elementwiseAffine"])?;
        let shape = args::dims(OP, "normalizedShape", &normalized_shape)?;
        let eps = if o.get("eps").is_undefined() { None } else { Some(o.f64("eps", 0.0)?) };
        budget(OP, &shape)?;
        leaf(RMSNorm::with_options(&shape, eps, o.bool("elementwiseAffine", true)?).named(OP)?)
    }

    /// Resamples [N, C, L] or [N, C, H, W] to `size` or by `scaleFactor`
    /// (exactly one), in mode 'nearest' (default), 'linear' or 'bilinear'.
    Upsample = upsample(; options: "{ size?: number | number[]; scaleFactor?: number; mode?: 'nearest' | 'linear' | 'bilinear'; alignCorners?: boolean }") {
        const OP: &str = "Upsample";
        let options = options_of(options);
        let o = bag(OP, &options, &["size", "scaleFactor", "mode", "alignCorners"])?;
        let corners = if o.get("alignCorners").is_undefined() { None } else { Some(o.bool("alignCorners", false)?) };
        let mode = Interpolation::parse(OP, &o.string("mode", "nearest")?, corners).named(OP)?;
        let (size_v, scale_v) = (o.get("size"), o.get("scaleFactor"));
        let layer = match (size_v.is_undefined(), scale_v.is_undefined()) {
            (false, true) => Upsample::with_size(&args::dims(OP, "size", &size_v)?, mode),
            (true, false) => Upsample::with_scale(args::finite_arg(OP, "scaleFactor", &scale_v)?, mode),
            _ => return Err(js_error(OP, ErrorKind::Value, "give exactly one of size and scaleFactor")),
        };
        leaf(layer.named(OP)?)
    }

    /// Zeroes elements with probability `p` (default 0.5) in training mode.
    Dropout = dropout(; p: "number") {
        let p = match p {
            Some(v) if !v.is_undefined() => args::finite_arg("Dropout", "p", &v)?,
            _ => 0.5,
        };
        leaf(Dropout::new(p).named("Dropout")?)
    }

    /// A lookup table [numEmbeddings, embeddingDim] (N(0, 1)) indexed by int32 tensors.
    Embedding = embedding(num_embeddings as numEmbeddings: "number", embedding_dim as embeddingDim: "number") {
        const OP: &str = "Embedding";
        let (n, d) = (size(OP, "numEmbeddings", &num_embeddings)?, size(OP, "embeddingDim", &embedding_dim)?);
        budget(OP, &[n, d])?;
        leaf(Embedding::new(n, d).named(OP)?)
    }

    /// Flattens axes startDim..=endDim (default 1..=-1) into one.
    Flatten = flatten(; options: "{ startDim?: number; endDim?: number }") {
        const OP: &str = "Flatten";
        let options = options_of(options);
        let o = bag(OP, &options, &["startDim", "endDim"])?;
        let axis = |key: &str, default: isize| -> JsResult<isize> {
            args::opt_axis(OP, key, &o.get(key)).map(|a| a.unwrap_or(default))
        };
        leaf(Flatten::with_axes(axis("startDim", 1)?, axis("endDim", -1)?))
    }

    /// max(x, 0).
    ReLU = relu() {
        leaf(ReLU::new())
    }

    /// x where positive, negativeSlope * x elsewhere (default 0.01).
    LeakyReLU = leaky_relu as leakyRelu(; options: "{ negativeSlope?: number }") {
        let options = options_of(options);
        let s = bag("LeakyReLU", &options, &["negativeSlope"])?.f64("negativeSlope", 0.01)?;
        leaf(LeakyReLU::new(s))
    }

    /// GELU: exact (erf) by default, or `{ approximate: 'tanh' }`.
    GELU = gelu(; options: "{ approximate?: 'none' | 'tanh' }") {
        const OP: &str = "GELU";
        let options = options_of(options);
        let a = bag(OP, &options, &["approximate"])?.string("approximate", "none")?;
        let approximate = match a.as_str() {
            "none" => GeluApproximate::None,
            "tanh" => GeluApproximate::Tanh,
            other => {
                return Err(js_error(
                    OP,
                    ErrorKind::Argument,
                    format!("approximate must be 'none' or 'tanh', got {other:?}"),
                ))
            }
        };
        leaf(GELU::with_approximate(approximate))
    }

    /// 1 / (1 + exp(-x)).
    Sigmoid = sigmoid() {
        leaf(Sigmoid::new())
    }

    /// tanh(x).
    Tanh = tanh() {
        leaf(Tanh::new())
    }

    /// x * sigmoid(x) (a.k.a. swish).
    SiLU = silu() {
        leaf(SiLU::new())
    }

    /// x where positive, alpha * (exp(x) - 1) elsewhere (default alpha 1).
    ELU = elu(; options: "{ alpha?: number }") {
        let options = options_of(options);
        let alpha = bag("ELU", &options, &["alpha"])?.f64("alpha", 1.0)?;
        leaf(ELU::new(alpha))
    }

    /// scale * elu(x, alpha) with SELU's fixed alpha (1.6733) and scale (1.0507).
    SELU = selu() {
        leaf(SELU::new())
    }

    /// x * tanh(softplus(x)).
    Mish = mish() {
        leaf(Mish::new())
    }

    /// x * relu6(x + 3) / 6.
    Hardswish = hardswish() {
        leaf(Hardswish::new())
    }

    /// relu6(x + 3) / 6.
    Hardsigmoid = hardsigmoid() {
        leaf(Hardsigmoid::new())
    }

    /// x where positive, weight * x elsewhere, with a learned `weight` of
    /// `numParameters` slopes (1, or one per channel), each `init` (0.25).
    PReLU = prelu(; options: "{ numParameters?: number; init?: number }") {
        const OP: &str = "PReLU";
        let options = options_of(options);
        let o = bag(OP, &options, &["numParameters", "init"])?;
        let (n, init) = (o.usize("numParameters", 1)?, o.f64("init", 0.25)?);
        budget(OP, &[n])?;
        leaf(PReLU::new(n, init).named(OP)?)
    }

    /// Returns its input unchanged (a placeholder layer).
    Identity = identity() {
        leaf(Identity::new())
    }

    /// Splits axis `dim` into `unflattenedSize` (one entry may be -1).
    Unflatten = unflatten(dim: "number", unflattened_size as unflattenedSize: "number[]") {
        const OP: &str = "Unflatten";
        let dim = args::int_arg(OP, "dim", &dim)?;
        let sizes = args::signed_dims(OP, "unflattenedSize", &unflattened_size)?;
        leaf(Unflatten::new(dim, &sizes).named(OP)?)
    }

    /// [*, C r^2, H, W] to [*, C, H r, W r] with r = upscaleFactor.
    PixelShuffle = pixel_shuffle as pixelShuffle(upscale_factor as upscaleFactor: "number") {
        leaf(PixelShuffle::new(size("PixelShuffle", "upscaleFactor", &upscale_factor)?))
    }

    /// [*, C, H r, W r] to [*, C r^2, H, W] with r = downscaleFactor.
    PixelUnshuffle = pixel_unshuffle as pixelUnshuffle(downscale_factor as downscaleFactor: "number") {
        leaf(PixelUnshuffle::new(size("PixelUnshuffle", "downscaleFactor", &downscale_factor)?))
    }

    /// Pads the last two axes with zeros: one number for every side, or
    /// [left, right, top, bottom].
    ZeroPad2d = zero_pad2d as zeroPad2d(padding: "number | [number, number, number, number]") {
        const OP: &str = "ZeroPad2d";
        let p = args::sizes(OP, "padding", &padding)?;
        let padding = match p.as_slice() {
            [all] => [*all; 4],
            [l, r, t, b] => [*l, *r, *t, *b],
            _ => {
                return Err(js_error(
                    OP,
                    ErrorKind::Argument,
                    format!("padding must be one number or [left, right, top, bottom], got {} numbers", p.len()),
                ))
            }
        };
        leaf(ZeroPad2d::new(padding))
    }

    /// Softmax along `dim` (default -1, the last axis).
    Softmax = softmax(; dim: "number") {
        let dim = match dim {
            Some(v) => args::opt_axis("Softmax", "dim", &v)?.unwrap_or(-1),
            None => -1,
        };
        leaf(Softmax::new(dim))
    }

    /// Multi-head self-attention over [B, L, embedDim] (batch first); `forward`
    /// attends x to itself, `attention(q, k, v)` takes separate inputs.
    MultiheadAttention = multihead_attention as multiheadAttention(
        embed_dim as embedDim: "number",
        num_heads as numHeads: "number";
        options: "{ bias?: boolean; dropout?: number; causal?: boolean }"
    ) {
        const OP: &str = "MultiheadAttention";
        let options = options_of(options);
        let o = bag(OP, &options, &["bias", "dropout", "causal"])?;
        let (e, h) = (size(OP, "embedDim", &embed_dim)?, size(OP, "numHeads", &num_heads)?);
        let (bias, dropout, causal) = (o.bool("bias", true)?, o.f64("dropout", 0.0)?, o.bool("causal", false)?);
        if h == 0 || e % h != 0 {
            return Err(js_error(
                OP,
                ErrorKind::Value,
                format!("embedDim {e} must be a positive multiple of numHeads {h}"),
            ));
        }
        if !(0.0..1.0).contains(&dropout) {
            return Err(js_error(OP, ErrorKind::Value, format!("dropout must be in [0, 1), got {dropout}")));
        }
        budget(OP, &[3, e, e])?;
        let mha = Arc::new(MultiHeadAttention::with_options(e, h, bias, dropout).named(OP)?.with_causal(causal));
        Ok(Spec { layer: mha.clone(), kind: Kind::Attention(mha), children: Vec::new() }.build())
    }

    /// An Elman RNN over [L, N, inputSize] ([N, L, inputSize] with
    /// batchFirst, or unbatched [L, inputSize]); `forwardWithState(x, h0)`
    /// also gives the final state. Parameters as PyTorch's: weight_ih_l0, ...
    RNN = rnn(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ numLayers?: number; nonlinearity?: 'tanh' | 'relu'; bias?: boolean; batchFirst?: boolean; dropout?: number; bidirectional?: boolean }"
    ) {
        recurrent_row(RecurrentKind::RnnTanh, &input_size, &hidden_size, options)
    }

    /// A long short-term memory layer (PyTorch's gate order: input, forget,
    /// cell, output); `forwardWithState(x, [h0, c0])` gives `[output, [hN, cN]]`.
    LSTM = lstm(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ numLayers?: number; bias?: boolean; batchFirst?: boolean; dropout?: number; bidirectional?: boolean }"
    ) {
        recurrent_row(RecurrentKind::Lstm, &input_size, &hidden_size, options)
    }

    /// A gated recurrent unit layer (PyTorch's: reset, update, new gates);
    /// `forwardWithState(x, h0)` gives `[output, hN]`.
    GRU = gru(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ numLayers?: number; bias?: boolean; batchFirst?: boolean; dropout?: number; bidirectional?: boolean }"
    ) {
        recurrent_row(RecurrentKind::Gru, &input_size, &hidden_size, options)
    }

    /// One Elman RNN step: `forward(x)` from a zero state, `forwardWithState(x, h)`.
    RNNCell = rnn_cell as rnnCell(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ bias?: boolean; nonlinearity?: 'tanh' | 'relu' }"
    ) {
        cell_row(RecurrentKind::RnnTanh, &input_size, &hidden_size, options)
    }

    /// One LSTM step: `forwardWithState(x, [h, c])` gives `[h, c]`.
    LSTMCell = lstm_cell as lstmCell(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ bias?: boolean }"
    ) {
        cell_row(RecurrentKind::Lstm, &input_size, &hidden_size, options)
    }

    /// One GRU step: `forwardWithState(x, h)` gives the next `h`.
    GRUCell = gru_cell as gruCell(
        input_size as inputSize: "number",
        hidden_size as hiddenSize: "number";
        options: "{ bias?: boolean }"
    ) {
        cell_row(RecurrentKind::Gru, &input_size, &hidden_size, options)
    }

    /// Self-attention then a feed-forward block, each with a residual and a
    /// layer norm (post-norm, or pre-norm with normFirst), over [L, N, dModel]
    /// ([N, L, dModel] with batchFirst); `encode(src, { srcKeyPaddingMask,
    /// isCausal })` takes masks.
    TransformerEncoderLayer = transformer_encoder_layer as transformerEncoderLayer(
        d_model as dModel: "number",
        nhead: "number";
        options: "{ dimFeedforward?: number; dropout?: number; activation?: 'relu' | 'gelu'; layerNormEps?: number; batchFirst?: boolean; normFirst?: boolean; bias?: boolean }"
    ) {
        const OP: &str = "TransformerEncoderLayer";
        let (d, h, c) = transformer_args(OP, &d_model, &nhead, options)?;
        let layer = Arc::new(TransformerEncoderLayer::with_config(d, h, c).named(OP)?);
        Ok(Spec { layer: layer.clone(), kind: Kind::Encoder(layer), children: Vec::new() }.build())
    }

    /// Self-attention over the target, attention to the encoder's memory,
    /// then a feed-forward block: call `decode(tgt, memory, { tgtIsCausal,
    /// tgtKeyPaddingMask, memoryKeyPaddingMask })` (`forward` needs the memory).
    TransformerDecoderLayer = transformer_decoder_layer as transformerDecoderLayer(
        d_model as dModel: "number",
        nhead: "number";
        options: "{ dimFeedforward?: number; dropout?: number; activation?: 'relu' | 'gelu'; layerNormEps?: number; batchFirst?: boolean; normFirst?: boolean; bias?: boolean }"
    ) {
        const OP: &str = "TransformerDecoderLayer";
        let (d, h, c) = transformer_args(OP, &d_model, &nhead, options)?;
        let layer = Arc::new(TransformerDecoderLayer::with_config(d, h, c).named(OP)?);
        Ok(Spec { layer: layer.clone(), kind: Kind::Decoder(layer), children: Vec::new() }.build())
    }

    /// Runs `modules` in order; their state is named '0.weight', '1.bias', ...
    /// The modules are shared, not copied (their handles stay usable).
    Sequential [rest] = sequential(modules: "Module[]") {
        let entries = modules_arg("Sequential", &modules)?;
        let layer = Arc::new(Sequential::from(boxed(&entries)));
        Ok(container(layer, Kind::Sequential, indexed(entries)))
    }

    /// An indexed list of modules (PyTorch's `ModuleList`; none when left
    /// out): it holds their state ('0.weight', ...) but has no forward; use `get(i)`.
    ModuleList = module_list as moduleList(; modules: "Module[]") {
        let entries = match modules {
            Some(m) if !m.is_undefined() => modules_arg("ModuleList", &m)?,
            _ => Vec::new(),
        };
        let layer = Arc::new(LayerList::from(boxed(&entries)));
        Ok(container(layer, Kind::List, indexed(entries)))
    }

    /// Modules by name, in insertion order (PyTorch's `ModuleDict`; empty when
    /// left out): state names are 'key.weight', ...; no forward; use
    /// `get(key)`. Keys may not be empty or contain '.'.
    ModuleDict = module_dict as moduleDict(; modules: "Record<string, Module> | [string, Module][]") {
        const OP: &str = "ModuleDict";
        let modules = options_of(modules);
        let pairs = if modules.is_undefined() { Vec::new() } else { super::io::pairs(OP, "modules", &modules, "Module")? };
        let mut dict = LayerDict::new();
        let mut children: Vec<(String, Rc<Entry>)> = Vec::new();
        for (key, v) in pairs {
            let e = module_arg(OP, &format!("modules[{key:?}]"), &v)?;
            dict.insert_boxed(&key, Box::new(e.layer.clone())).named(OP)?;
            match children.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = e,
                None => children.push((key, e)),
            }
        }
        Ok(container(Arc::new(dict), Kind::Dict, children))
    }
}

/// A pool's kernel, stride (the kernel's by default) and padding.
fn pool_args(
    op: &str,
    kernel_size: &JsValue,
    options: Option<JsValue>,
) -> JsResult<([usize; 2], [usize; 2], [usize; 2])> {
    let options = options_of(options);
    let o = bag(op, &options, &["stride", "padding"])?;
    let k = args::pair(op, "kernelSize", kernel_size)?;
    Ok((k, opt_pair(op, &o, "stride", k)?, opt_pair(op, &o, "padding", [0, 0])?))
}

/// The size, eps and affine flag of an instance-norm factory call.
fn instance_norm_args(op: &str, num_features: &JsValue, options: Option<JsValue>) -> JsResult<(usize, f64, bool)> {
    let options = options_of(options);
    let o = bag(op, &options, &["eps", "affine"])?;
    let n = size(op, "numFeatures", num_features)?;
    budget(op, &[n])?;
    Ok((n, o.f64("eps", 1e-5)?, o.bool("affine", false)?))
}

/// The size and config of a batch-norm factory call.
fn batch_norm_args(op: &str, num_features: &JsValue, options: Option<JsValue>) -> JsResult<(usize, BatchNormConfig)> {
    let options = options_of(options);
    let o = bag(op, &options, &["eps", "momentum", "affine", "trackRunningStats"])?;
    let n = size(op, "numFeatures", num_features)?;
    budget(op, &[n])?;
    let d = BatchNormConfig::default();
    let c = BatchNormConfig {
        eps: o.f64("eps", d.eps)?,
        momentum: o.f64("momentum", d.momentum)?,
        affine: o.bool("affine", d.affine)?,
        track_running_stats: o.bool("trackRunningStats", d.track_running_stats)?,
    };
    // Checked here so the message names the JS class and option, not skiff's config struct.
    if n == 0 {
        return Err(js_error(op, ErrorKind::Value, "numFeatures must be positive, got 0"));
    }
    if !(c.eps > 0.0 && c.eps.is_finite()) {
        return Err(js_error(op, ErrorKind::Value, format!("eps must be positive and finite, got {}", c.eps)));
    }
    if !(0.0..=1.0).contains(&c.momentum) {
        return Err(js_error(op, ErrorKind::Value, format!("momentum must be in [0, 1], got {}", c.momentum)));
    }
    Ok((n, c))
}
