//! `Module`'s static factories: one per skiff layer, plus the containers.
//! Sizes arrive as `JsValue` and are checked (no silent coercion of
//! fractional or negative numbers), and a layer's parameter count is capped
//! so that a typo cannot ask wasm32 for more memory than it has (an
//! allocation failure would abort the whole instance).

use super::module::{module_arg, Entry, JsModule, Kind, Spec};
use super::{bag, py_bool, py_float};
use crate::nn::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNormConfig, Conv2d, Conv2dConfig, Dropout, Embedding,
    Flatten, GeluApproximate, Layer, LayerDict, LayerList, LayerNorm, LeakyReLU, Linear, MaxPool2d, MultiHeadAttention,
    ReLU, Sequential, SiLU, Sigmoid, Softmax, Tanh, GELU,
};
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

/// `2` or `(2, 3)`, as PyTorch prints the sizes it was given.
fn py_pair(p: [usize; 2]) -> String {
    format!("({}, {})", p[0], p[1])
}

fn py_shape(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
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

fn container(layer: Arc<dyn Layer>, kind: Kind, name: &'static str, children: Vec<(String, Rc<Entry>)>) -> JsModule {
    Spec { layer, kind, name, extra: String::new(), children, fixed: Vec::new() }.build()
}

#[wasm_bindgen(js_class = Module)]
impl JsModule {
    /// y = x W^T + b (PyTorch's `nn.Linear`): weight [outFeatures, inFeatures].
    pub fn linear(
        #[wasm_bindgen(js_name = inFeatures, unchecked_param_type = "number")] in_features: JsValue,
        #[wasm_bindgen(js_name = outFeatures, unchecked_param_type = "number")] out_features: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ bias?: boolean }")] options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "Linear";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["bias"])?;
        let (i, n) = (size(OP, "inFeatures", &in_features)?, size(OP, "outFeatures", &out_features)?);
        let bias = o.bool("bias", true)?;
        budget(OP, &[n, i])?;
        let extra = format!("in_features={i}, out_features={n}, bias={}", py_bool(bias));
        Ok(Spec::layer(Linear::with_bias(i, n, bias).named("Linear")?, "Linear", extra).build())
    }

    /// 2-D convolution over [N, C, H, W] (PyTorch's `nn.Conv2d`); sizes are
    /// an integer or `[h, w]`.
    pub fn conv2d(
        #[wasm_bindgen(js_name = inChannels, unchecked_param_type = "number")] in_channels: JsValue,
        #[wasm_bindgen(js_name = outChannels, unchecked_param_type = "number")] out_channels: JsValue,
        #[wasm_bindgen(js_name = kernelSize, unchecked_param_type = "number | [number, number]")] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number | [number, number]; groups?: number; bias?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "Conv2d";
        let options = options.unwrap_or(JsValue::UNDEFINED);
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
        let mut extra = format!("{ci}, {co}, kernel_size={}, stride={}", py_pair(k), py_pair(c.stride));
        if c.padding != [0, 0] {
            extra += &format!(", padding={}", py_pair(c.padding));
        }
        if c.dilation != [1, 1] {
            extra += &format!(", dilation={}", py_pair(c.dilation));
        }
        if c.groups != 1 {
            extra += &format!(", groups={}", c.groups);
        }
        if !c.bias {
            extra += ", bias=False";
        }
        Ok(Spec::layer(Conv2d::with_config(ci, co, k, c).named("Conv2d")?, "Conv2d", extra).build())
    }

    /// Max over windows of [N, C, H, W] (stride defaults to the kernel size).
    #[wasm_bindgen(js_name = maxPool2d)]
    pub fn max_pool2d(
        #[wasm_bindgen(js_name = kernelSize, unchecked_param_type = "number | [number, number]")] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number] }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "MaxPool2d";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["stride", "padding"])?;
        let k = args::pair(OP, "kernelSize", &kernel_size)?;
        let (s, p) = (opt_pair(OP, &o, "stride", k)?, opt_pair(OP, &o, "padding", [0, 0])?);
        let extra = format!("kernel_size={}, stride={}, padding={}", py_pair(k), py_pair(s), py_pair(p));
        Ok(Spec::layer(MaxPool2d::with_options(k, s, p).named("MaxPool2d")?, "MaxPool2d", extra).build())
    }

    /// Mean over windows of [N, C, H, W] (stride defaults to the kernel size;
    /// zero padding is counted).
    #[wasm_bindgen(js_name = avgPool2d)]
    pub fn avg_pool2d(
        #[wasm_bindgen(js_name = kernelSize, unchecked_param_type = "number | [number, number]")] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number] }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "AvgPool2d";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["stride", "padding"])?;
        let k = args::pair(OP, "kernelSize", &kernel_size)?;
        let (s, p) = (opt_pair(OP, &o, "stride", k)?, opt_pair(OP, &o, "padding", [0, 0])?);
        let extra = format!("kernel_size={}, stride={}, padding={}", py_pair(k), py_pair(s), py_pair(p));
        Ok(Spec::layer(AvgPool2d::with_options(k, s, p).named("AvgPool2d")?, "AvgPool2d", extra).build())
    }

    /// Averages [N, C, H, W] down to [N, C, outH, outW] (PyTorch's cell rule).
    #[wasm_bindgen(js_name = adaptiveAvgPool2d)]
    pub fn adaptive_avg_pool2d(
        #[wasm_bindgen(js_name = outputSize, unchecked_param_type = "number | [number, number]")] output_size: JsValue,
    ) -> JsResult<JsModule> {
        const OP: &str = "AdaptiveAvgPool2d";
        let s = args::pair(OP, "outputSize", &output_size)?;
        let extra = format!("output_size={}", py_pair(s));
        Ok(Spec::layer(AdaptiveAvgPool2d::new(s).named("AdaptiveAvgPool2d")?, "AdaptiveAvgPool2d", extra).build())
    }

    /// Batch normalisation of [N, C] or [N, C, L] over the channel axis.
    #[wasm_bindgen(js_name = batchNorm1d)]
    pub fn batch_norm1d(
        #[wasm_bindgen(js_name = numFeatures, unchecked_param_type = "number")] num_features: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        let (n, c, extra) = batch_norm_args("BatchNorm1d", &num_features, options)?;
        Ok(Spec::layer(BatchNorm1d::with_config(n, c).named("BatchNorm1d")?, "BatchNorm1d", extra).build())
    }

    /// Batch normalisation of [N, C, H, W] over the channel axis.
    #[wasm_bindgen(js_name = batchNorm2d)]
    pub fn batch_norm2d(
        #[wasm_bindgen(js_name = numFeatures, unchecked_param_type = "number")] num_features: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        let (n, c, extra) = batch_norm_args("BatchNorm2d", &num_features, options)?;
        Ok(Spec::layer(BatchNorm2d::with_config(n, c).named("BatchNorm2d")?, "BatchNorm2d", extra).build())
    }

    /// Layer normalisation over the trailing `normalizedShape` axes.
    #[wasm_bindgen(js_name = layerNorm)]
    pub fn layer_norm(
        #[wasm_bindgen(js_name = normalizedShape, unchecked_param_type = "number | number[]")]
        normalized_shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ eps?: number; elementwiseAffine?: boolean }")]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "LayerNorm";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["eps", "elementwiseAffine"])?;
        let shape = args::dims(OP, "normalizedShape", &normalized_shape)?;
        let (eps, affine) = (o.f64("eps", 1e-5)?, o.bool("elementwiseAffine", true)?);
        budget(OP, &shape)?;
        let extra = format!("{}, eps={}, elementwise_affine={}", py_shape(&shape), py_float(eps), py_bool(affine));
        Ok(Spec::layer(LayerNorm::with_options(&shape, eps, affine).named("LayerNorm")?, "LayerNorm", extra).build())
    }

    /// Zeroes elements with probability `p` (default 0.5) in training mode.
    pub fn dropout(#[wasm_bindgen(unchecked_optional_param_type = "number")] p: Option<JsValue>) -> JsResult<JsModule> {
        let p = match p {
            Some(v) if !v.is_undefined() => args::finite_arg("Dropout", "p", &v)?,
            _ => 0.5,
        };
        Ok(Spec::layer(Dropout::new(p).named("Dropout")?, "Dropout", format!("p={}", py_float(p))).build())
    }

    /// A lookup table [numEmbeddings, embeddingDim] (N(0, 1)) indexed by int32 tensors.
    pub fn embedding(
        #[wasm_bindgen(js_name = numEmbeddings, unchecked_param_type = "number")] num_embeddings: JsValue,
        #[wasm_bindgen(js_name = embeddingDim, unchecked_param_type = "number")] embedding_dim: JsValue,
    ) -> JsResult<JsModule> {
        const OP: &str = "Embedding";
        let (n, d) = (size(OP, "numEmbeddings", &num_embeddings)?, size(OP, "embeddingDim", &embedding_dim)?);
        budget(OP, &[n, d])?;
        Ok(Spec::layer(Embedding::new(n, d).named("Embedding")?, "Embedding", format!("{n}, {d}")).build())
    }

    /// Flattens axes startDim..=endDim (default 1..=-1) into one.
    pub fn flatten(
        #[wasm_bindgen(unchecked_optional_param_type = "{ startDim?: number; endDim?: number }")] options: Option<
            JsValue,
        >,
    ) -> JsResult<JsModule> {
        const OP: &str = "Flatten";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["startDim", "endDim"])?;
        let axis = |key: &str, default: isize| -> JsResult<isize> {
            args::opt_axis(OP, key, &o.get(key)).map(|a| a.unwrap_or(default))
        };
        let (s, e) = (axis("startDim", 1)?, axis("endDim", -1)?);
        Ok(Spec::layer(Flatten::with_axes(s, e), "Flatten", format!("start_dim={s}, end_dim={e}")).build())
    }

    /// max(x, 0).
    pub fn relu() -> JsModule {
        Spec::layer(ReLU::new(), "ReLU", String::new()).build()
    }

    /// x where positive, negativeSlope * x elsewhere (default 0.01).
    #[wasm_bindgen(js_name = leakyRelu)]
    pub fn leaky_relu(
        #[wasm_bindgen(unchecked_optional_param_type = "{ negativeSlope?: number }")] options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let s = bag("LeakyReLU", &options, &["negativeSlope"])?.f64("negativeSlope", 0.01)?;
        Ok(Spec::layer(LeakyReLU::new(s), "LeakyReLU", format!("negative_slope={}", py_float(s))).build())
    }

    /// GELU: exact (erf) by default, or `{ approximate: 'tanh' }`.
    pub fn gelu(
        #[wasm_bindgen(unchecked_optional_param_type = "{ approximate?: 'none' | 'tanh' }")] options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "GELU";
        let options = options.unwrap_or(JsValue::UNDEFINED);
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
        Ok(Spec::layer(GELU::with_approximate(approximate), "GELU", format!("approximate='{a}'")).build())
    }

    /// 1 / (1 + exp(-x)).
    pub fn sigmoid() -> JsModule {
        Spec::layer(Sigmoid::new(), "Sigmoid", String::new()).build()
    }

    /// tanh(x).
    pub fn tanh() -> JsModule {
        Spec::layer(Tanh::new(), "Tanh", String::new()).build()
    }

    /// x * sigmoid(x) (a.k.a. swish).
    pub fn silu() -> JsModule {
        Spec::layer(SiLU::new(), "SiLU", String::new()).build()
    }

    /// Softmax along `dim` (default -1, the last axis).
    pub fn softmax(
        #[wasm_bindgen(unchecked_optional_param_type = "number")] dim: Option<JsValue>,
    ) -> JsResult<JsModule> {
        let dim = match dim {
            Some(v) => args::opt_axis("Softmax", "dim", &v)?.unwrap_or(-1),
            None => -1,
        };
        Ok(Spec::layer(Softmax::new(dim), "Softmax", format!("dim={dim}")).build())
    }

    /// Multi-head self-attention over [B, L, embedDim] (batch first); `forward`
    /// attends x to itself, `attention(q, k, v)` takes separate inputs.
    #[wasm_bindgen(js_name = multiheadAttention)]
    pub fn multihead_attention(
        #[wasm_bindgen(js_name = embedDim, unchecked_param_type = "number")] embed_dim: JsValue,
        #[wasm_bindgen(js_name = numHeads, unchecked_param_type = "number")] num_heads: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ bias?: boolean; dropout?: number; causal?: boolean }")]
        options: Option<JsValue>,
    ) -> JsResult<JsModule> {
        const OP: &str = "MultiheadAttention";
        let options = options.unwrap_or(JsValue::UNDEFINED);
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
        let mut extra = format!("embed_dim={e}, num_heads={h}");
        if dropout != 0.0 {
            extra += &format!(", dropout={}", py_float(dropout));
        }
        if !bias {
            extra += ", bias=False";
        }
        if causal {
            extra += ", causal=True";
        }
        let out_proj = format!("Linear(in_features={e}, out_features={e}, bias={})", py_bool(bias));
        Ok(Spec {
            layer: mha.clone(),
            kind: Kind::Attention(mha),
            name: "MultiheadAttention",
            extra,
            children: Vec::new(),
            fixed: vec![("out_proj".to_string(), out_proj)],
        }
        .build())
    }

    /// Runs `modules` in order; their state is named '0.weight', '1.bias', ...
    /// The modules are shared, not copied (their handles stay usable).
    pub fn sequential(#[wasm_bindgen(unchecked_param_type = "Module[]")] modules: JsValue) -> JsResult<JsModule> {
        let entries = modules_arg("Sequential", &modules)?;
        let layer = Arc::new(Sequential::from(boxed(&entries)));
        Ok(container(layer, Kind::Sequential, "Sequential", indexed(entries)))
    }

    /// An indexed list of modules (PyTorch's `ModuleList`): it holds their
    /// state ('0.weight', ...) but has no forward; use `get(i)`.
    #[wasm_bindgen(js_name = moduleList)]
    pub fn module_list(#[wasm_bindgen(unchecked_param_type = "Module[]")] modules: JsValue) -> JsResult<JsModule> {
        let entries = modules_arg("ModuleList", &modules)?;
        let layer = Arc::new(LayerList::from(boxed(&entries)));
        Ok(container(layer, Kind::List, "ModuleList", indexed(entries)))
    }

    /// Modules by name, in insertion order (PyTorch's `ModuleDict`): state
    /// names are 'key.weight', ...; no forward; use `get(key)`. Keys may not
    /// be empty or contain '.'.
    #[wasm_bindgen(js_name = moduleDict)]
    pub fn module_dict(
        #[wasm_bindgen(unchecked_param_type = "Record<string, Module> | [string, Module][]")] modules: JsValue,
    ) -> JsResult<JsModule> {
        const OP: &str = "ModuleDict";
        let pairs = super::io::pairs(OP, "modules", &modules, "Module")?;
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
        Ok(container(Arc::new(dict), Kind::Dict, "ModuleDict", children))
    }
}

/// The size, config and repr of a batch-norm factory call.
fn batch_norm_args(
    op: &str,
    num_features: &JsValue,
    options: Option<JsValue>,
) -> JsResult<(usize, BatchNormConfig, String)> {
    let options = options.unwrap_or(JsValue::UNDEFINED);
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
    let extra = format!(
        "{n}, eps={}, momentum={}, affine={}, track_running_stats={}",
        py_float(c.eps),
        py_float(c.momentum),
        py_bool(c.affine),
        py_bool(c.track_running_stats)
    );
    Ok((n, c, extra))
}
