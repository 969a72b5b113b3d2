//! Neural-network functions: convolution and pooling (plus the `unfold` /
//! `fold` functions behind them), softmax, losses, layer norm, dropout and
//! embedding. PyTorch has most of these only in `torch.nn.functional`; here
//! they are `Tensor` methods on the input (`x.conv2d(w)`, `logits.crossEntropy(labels)`).

use super::{check_numel, is_absent, out, reduction, undef, MAX_NUMEL};
use crate::tensor::Tensor;
use crate::web::args::{self, Opts};
use crate::web::{js_error, JsResult, JsTensor, Kind};
use wasm_bindgen::prelude::*;

/// Kernel, stride, padding and dilation of a sliding-window op.
struct Window {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
}

/// The options of `unfold` and `fold`.
const WINDOW: &[&str] = &["stride", "padding", "dilation"];

/// An optional `number | [number, number]` option.
fn pair_opt(op: &str, o: &Opts, key: &str, default: [usize; 2]) -> JsResult<[usize; 2]> {
    let v = o.get(key);
    if is_absent(&v) {
        Ok(default)
    } else {
        args::pair(op, key, &v)
    }
}

impl Window {
    /// `{ stride, padding, dilation }` around a kernel; `stride` defaults to `default_stride`.
    fn parse(op: &str, kernel: [usize; 2], o: &Opts, default_stride: [usize; 2]) -> JsResult<Window> {
        Ok(Window {
            kernel,
            stride: pair_opt(op, o, "stride", default_stride)?,
            padding: pair_opt(op, o, "padding", [0, 0])?,
            dilation: pair_opt(op, o, "dilation", [1, 1])?,
        })
    }

    /// The output grid over an input of spatial size `size` (0 where the kernel
    /// does not fit: skiff then reports it), or an error when the sizes are too
    /// large for skiff's (32-bit on wasm32) size arithmetic.
    fn grid(&self, op: &str, size: [usize; 2]) -> JsResult<[u64; 2]> {
        let mut out = [0u64; 2];
        for (i, o) in out.iter_mut().enumerate() {
            let span = self.dilation[i] as u64 * (self.kernel[i] as u64).saturating_sub(1) + 1;
            let padded = size[i] as u64 + 2 * self.padding[i] as u64;
            if span > MAX_NUMEL || padded > MAX_NUMEL {
                return Err(js_error(
                    op,
                    Kind::Shape,
                    format!(
                        "kernel {:?} with dilation {:?} over size {size:?} with padding {:?} is too large",
                        self.kernel, self.dilation, self.padding
                    ),
                ));
            }
            *o = if self.stride[i] == 0 || span > padded { 0 } else { (padded - span) / self.stride[i] as u64 + 1 };
        }
        Ok(out)
    }

    /// Checks that the unfolded columns of a 4-D input (when it is one) fit.
    fn check_unfold(&self, op: &str, x: &Tensor) -> JsResult<()> {
        if let &[n, c, h, w] = x.shape() {
            let [oh, ow] = self.grid(op, [h, w])?;
            let taps = (self.kernel[0] as u64).saturating_mul(self.kernel[1] as u64);
            check_numel(op, "the unfolded input", [n as u64, c as u64, taps, oh, ow])?;
        }
        Ok(())
    }
}

/// Rejects pooling options skiff does not implement, rather than ignoring them.
fn pool_unsupported(op: &str, o: &Opts, avg: bool) -> JsResult<()> {
    if pair_opt(op, o, "dilation", [1, 1])? != [1, 1] {
        return Err(js_error(op, Kind::Value, "option dilation is not supported (only 1)"));
    }
    if o.bool("ceilMode", false)? {
        return Err(js_error(op, Kind::Value, "option ceilMode is not supported (floor mode only)"));
    }
    if avg && !o.bool("countIncludePad", true)? {
        return Err(js_error(
            op,
            Kind::Value,
            "option countIncludePad: false is not supported (padding counts toward the mean)",
        ));
    }
    Ok(())
}

/// Kernel and window of a pool call (`stride` defaults to the kernel size, as in PyTorch).
fn pool_args(op: &str, x: &Tensor, kernel: &JsValue, options: &JsValue, avg: bool) -> JsResult<Window> {
    let kernel = args::pair(op, "kernelSize", kernel)?;
    let known: &[&str] = if avg {
        &["stride", "padding", "ceilMode", "countIncludePad"]
    } else {
        &["stride", "padding", "ceilMode", "dilation"]
    };
    let o = Opts::known(op, options, known)?;
    pool_unsupported(op, &o, avg)?;
    let w = Window::parse(op, kernel, &o, kernel)?;
    w.check_unfold(op, x)?;
    Ok(w)
}

/// Loss methods `name(target, { reduction? })` calling `Tensor::name(&target, reduction)`.
macro_rules! loss_methods {
    ($($name:ident, $js:ident: $doc:literal;)*) => {
        #[wasm_bindgen(js_class = Tensor)]
        impl JsTensor {
            $(
                #[doc = $doc]
                #[wasm_bindgen(js_name = $js, unchecked_return_type = "Tensor<D>")]
                pub fn $name(
                    &self,
                    #[wasm_bindgen(unchecked_param_type = "Tensor")] target: JsValue,
                    #[wasm_bindgen(unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none' }")]
                    options: Option<JsValue>,
                ) -> JsResult<JsTensor> {
                    const OP: &str = stringify!($js);
                    let options = undef(options);
                    let x = self.get(OP)?;
                    let target = args::tensor(OP, "target", &target)?;
                    let r = reduction(OP, &Opts::known(OP, &options, &["reduction"])?)?;
                    out(OP, x.$name(&target, r))
                }
            )*
        }
    };
}

loss_methods! {
    nll_loss, nllLoss: "Negative log-likelihood of [N, C] log-probabilities against [N] int32 labels.";
    mse_loss, mseLoss: "Mean squared error against `target` (same shape).";
    l1_loss, l1Loss: "Mean absolute error against `target` (same shape).";
    binary_cross_entropy_with_logits, binaryCrossEntropyWithLogits:
        "Binary cross-entropy of logits (this) against probabilities `target` (same shape), computed stably.";
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// 2-D cross-correlation of this [N, C, H, W] with `weight` [O, C/groups, kh, kw] and optional `bias` [O].
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn conv2d(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] weight: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Tensor | null")] bias: Option<JsValue>,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number | [number, number]; groups?: number }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "conv2d";
        let (bias, options) = (undef(bias), undef(options));
        let x = self.get(OP)?;
        let weight = args::tensor(OP, "weight", &weight)?;
        let bias = if is_absent(&bias) { None } else { Some(args::tensor(OP, "bias", &bias)?) };
        let o = Opts::known(OP, &options, &["stride", "padding", "dilation", "groups"])?;
        let kernel = match weight.shape() {
            &[_, _, kh, kw] => [kh, kw],
            _ => [1, 1], // skiff reports the weight's shape
        };
        let w = Window::parse(OP, kernel, &o, [1, 1])?;
        let groups = o.usize("groups", 1)?;
        w.check_unfold(OP, &x)?;
        out(OP, x.conv2d(&weight, bias.as_ref(), w.stride, w.padding, w.dilation, groups))
    }

    /// Max over each kernelSize window of this [N, C, H, W] (`stride` defaults to the kernel size).
    #[wasm_bindgen(js_name = maxPool2d, unchecked_return_type = "Tensor<D>")]
    pub fn max_pool2d(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = kernelSize)] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; ceilMode?: false; dilation?: 1 }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "maxPool2d";
        let x = self.get(OP)?;
        let w = pool_args(OP, &x, &kernel_size, &undef(options), false)?;
        out(OP, x.max_pool2d(w.kernel, w.stride, w.padding))
    }

    /// Where each window's maximum is (PyTorch's `return_indices`): int32 flat indices into each H*W plane.
    #[wasm_bindgen(js_name = maxPool2dIndices, unchecked_return_type = "Tensor<'int32'>")]
    pub fn max_pool2d_indices(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = kernelSize)] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; ceilMode?: false; dilation?: 1 }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "maxPool2dIndices";
        let x = self.get(OP)?;
        let w = pool_args(OP, &x, &kernel_size, &undef(options), false)?;
        out(OP, x.max_pool2d_indices(w.kernel, w.stride, w.padding))
    }

    /// Mean over each kernelSize window of this [N, C, H, W] (zero padding counts toward the mean).
    #[wasm_bindgen(js_name = avgPool2d, unchecked_return_type = "Tensor<D>")]
    pub fn avg_pool2d(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = kernelSize)] kernel_size: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; ceilMode?: false; countIncludePad?: true }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "avgPool2d";
        let x = self.get(OP)?;
        let w = pool_args(OP, &x, &kernel_size, &undef(options), true)?;
        out(OP, x.avg_pool2d(w.kernel, w.stride, w.padding))
    }

    /// exp(x) / sum(exp(x)) along `dim`.
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn softmax(&self, #[wasm_bindgen(unchecked_param_type = "number")] dim: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "softmax";
        let x = self.get(OP)?;
        out(OP, x.softmax(args::int_arg(OP, "dim", &dim)?))
    }

    /// log(softmax(x)) along `dim`, computed stably.
    #[wasm_bindgen(js_name = logSoftmax, unchecked_return_type = "Tensor<D>")]
    pub fn log_softmax(&self, #[wasm_bindgen(unchecked_param_type = "number")] dim: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "logSoftmax";
        let x = self.get(OP)?;
        out(OP, x.log_softmax(args::int_arg(OP, "dim", &dim)?))
    }

    /// Cross-entropy of [N, C] logits (this) against [N] int32 class labels, with optional label smoothing.
    #[wasm_bindgen(js_name = crossEntropy, unchecked_return_type = "Tensor<D>")]
    pub fn cross_entropy(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Tensor")] target: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ reduction?: 'mean' | 'sum' | 'none'; labelSmoothing?: number }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "crossEntropy";
        let options = undef(options);
        let x = self.get(OP)?;
        let target = args::tensor(OP, "target", &target)?;
        let o = Opts::known(OP, &options, &["reduction", "labelSmoothing"])?;
        let r = reduction(OP, &o)?;
        out(OP, x.cross_entropy(&target, r, o.f64("labelSmoothing", 0.0)?))
    }

    /// Normalises over the trailing `normalizedShape` dims (biased variance), then applies optional `weight`/`bias`.
    #[wasm_bindgen(js_name = layerNorm, unchecked_return_type = "Tensor<D>")]
    pub fn layer_norm(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | number[]", js_name = normalizedShape)]
        normalized_shape: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Tensor | null")] weight: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "Tensor | null")] bias: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "{ eps?: number }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "layerNorm";
        let (weight, bias, options) = (undef(weight), undef(bias), undef(options));
        let x = self.get(OP)?;
        let shape = args::dims(OP, "normalizedShape", &normalized_shape)?;
        let opt = |name: &str, v: &JsValue| if is_absent(v) { Ok(None) } else { args::tensor(OP, name, v).map(Some) };
        let (weight, bias) = (opt("weight", &weight)?, opt("bias", &bias)?);
        let eps = Opts::known(OP, &options, &["eps"])?.f64("eps", 1e-5)?;
        out(OP, x.layer_norm(&shape, weight.as_ref(), bias.as_ref(), eps))
    }

    /// Zeroes elements with probability `p` (default 0.5) and scales the rest by 1/(1-p); the identity unless `training` (default true).
    #[wasm_bindgen(unchecked_return_type = "Tensor<D>")]
    pub fn dropout(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] p: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "{ training?: boolean }")] options: Option<JsValue>,
    ) -> JsResult<JsTensor> {
        const OP: &str = "dropout";
        let (p, options) = (undef(p), undef(options));
        let x = self.get(OP)?;
        let p = if is_absent(&p) { 0.5 } else { args::finite_arg(OP, "p", &p)? };
        let training = Opts::known(OP, &options, &["training"])?.bool("training", true)?;
        out(OP, x.dropout(p, training))
    }

    /// Embedding lookup with this int32 tensor of indices into the rows of `weight` [V, D] (F.embedding(input, weight)).
    #[wasm_bindgen(skip_typescript)]
    pub fn embedding(&self, #[wasm_bindgen(unchecked_param_type = "Tensor")] weight: JsValue) -> JsResult<JsTensor> {
        const OP: &str = "embedding";
        let indices = self.get(OP)?;
        out(OP, args::tensor(OP, "weight", &weight)?.embedding(&indices))
    }
}

/// im2col (`F.unfold`): [N, C, H, W] -> [N, C*kh*kw, L], one column per window position.
#[wasm_bindgen(js_name = unfold)]
pub fn unfold(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = kernelSize)] kernel_size: JsValue,
    #[wasm_bindgen(
        unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number | [number, number] }"
    )]
    options: Option<JsValue>,
) -> JsResult<JsTensor> {
    const OP: &str = "unfold";
    let options = undef(options);
    let x = args::tensor(OP, "input", &input)?;
    let kernel = args::pair(OP, "kernelSize", &kernel_size)?;
    let w = Window::parse(OP, kernel, &Opts::known(OP, &options, WINDOW)?, [1, 1])?;
    w.check_unfold(OP, &x)?;
    out(OP, x.unfold2d(w.kernel, w.stride, w.padding, w.dilation))
}

/// col2im (`F.fold`, the adjoint of `unfold`): [N, C*kh*kw, L] -> [N, C, H, W]; overlapping windows sum.
#[wasm_bindgen(js_name = fold)]
pub fn fold(
    #[wasm_bindgen(unchecked_param_type = "Tensor")] input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = outputSize)] output_size: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | [number, number]", js_name = kernelSize)] kernel_size: JsValue,
    #[wasm_bindgen(
        unchecked_optional_param_type = "{ stride?: number | [number, number]; padding?: number | [number, number]; dilation?: number | [number, number] }"
    )]
    options: Option<JsValue>,
) -> JsResult<JsTensor> {
    const OP: &str = "fold";
    let options = undef(options);
    let cols = args::tensor(OP, "input", &input)?;
    let size = args::pair(OP, "outputSize", &output_size)?;
    let kernel = args::pair(OP, "kernelSize", &kernel_size)?;
    let w = Window::parse(OP, kernel, &Opts::known(OP, &options, WINDOW)?, [1, 1])?;
    w.grid(OP, size)?;
    if let &[n, rows, _] = cols.shape() {
        let channels = rows as u64 / (w.kernel[0] as u64 * w.kernel[1] as u64).max(1);
        check_numel(OP, "the output", [n as u64, channels, size[0] as u64, size[1] as u64])?;
    }
    out(OP, cols.fold2d(size, w.kernel, w.stride, w.padding, w.dilation))
}
