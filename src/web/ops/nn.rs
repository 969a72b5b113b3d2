//! Convolution and pooling (plus the `unfold` / `fold` functions behind
//! them). PyTorch has these only in `torch.nn.functional`; here they are
//! `Tensor` methods on the input (`x.conv2d(w)`). Softmax, the losses, layer
//! norm, dropout and embedding are generated from the registry (`call.rs`).

use super::{check_numel, is_absent, out, undef, MAX_NUMEL};
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
