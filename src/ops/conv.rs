//! 2-D convolution and pooling (DESIGN principle 1). Two primitives carry
//! everything: `unfold2d` (im2col) and its adjoint `fold2d` (col2im); each is
//! the other's backward, so gradients of any order come for free. `conv2d`
//! is unfold + matmul (+ bias), average pooling a mean over the window axis
//! of an unfold, and max pooling a `gather` at per-window argmax indices (a
//! non-differentiable kernel, like `argmax`): composites, with no backward
//! rule of their own. On a GPU, conv2d's product (groups 1) is one implicit
//! GEMM instead (`conv_product`: no columns made), whose backward is written
//! with fold, matmul and the weight gradient's implicit GEMM (unfold + matmul
//! while a backward graph is being built). Max pooling skips the unfold because reducing a
//! `[N, C, kh*kw, L]` view over its strided window axis cost several passes
//! forward and more backward, as much as the convolutions themselves.

use super::args::Args;
#[cfg(feature = "testing")]
use super::reference as r;
use super::{expect_float, same_device, same_dtype, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::conv as be;
use crate::error::{Error, Result};
use crate::kernel::Window2d;
use crate::tensor::Tensor;

/// Kernel, stride, padding and dilation of one sliding-window op.
#[derive(Clone, Copy, Debug)]
struct Params {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
}

impl Params {
    fn from_attrs(a: &Attrs) -> (Params, [usize; 2]) {
        let Attrs::Window { kernel, stride, padding, dilation, input } = *a else {
            unreachable!("window op without Window attrs")
        };
        (Params { kernel, stride, padding, dilation }, input)
    }
    fn attrs(&self, input: [usize; 2]) -> Attrs {
        Attrs::Window {
            kernel: self.kernel,
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            input,
        }
    }
    /// Rejects zero kernel, stride or dilation (which would divide by zero or loop forever).
    fn check(&self, op: &'static str) -> Result<()> {
        for (what, v) in [("kernel", self.kernel), ("stride", self.stride), ("dilation", self.dilation)] {
            if v.contains(&0) {
                return Err(Error::value(op, format!("{what} must be at least 1 in both dims, got {v:?}")));
            }
        }
        Ok(())
    }
    /// The grid of windows over an `[h, w]` input, or an error when the dilated
    /// kernel does not fit the padded input.
    fn out_size(&self, op: &'static str, x_shape: &[usize]) -> Result<[usize; 2]> {
        self.check(op)?;
        use crate::shape::{add_sizes, mul_sizes};
        let input = [x_shape[x_shape.len() - 2], x_shape[x_shape.len() - 1]];
        let mut out = [0; 2];
        for i in 0..2 {
            let span = add_sizes(
                op,
                "the dilated kernel",
                mul_sizes(op, "dilation x (kernel - 1)", self.dilation[i], self.kernel[i] - 1)?,
                1,
            )?;
            let padded =
                add_sizes(op, "the padded input", input[i], mul_sizes(op, "2 x padding", 2, self.padding[i])?)?;
            out[i] = padded.checked_sub(span).map(|r| r / self.stride[i] + 1).ok_or_else(|| {
                Error::shape(
                    op,
                    format!(
                        "kernel {:?} (dilation {:?}) is larger than the padded input: input shape {x_shape:?}, padding {:?}",
                        self.kernel, self.dilation, self.padding
                    ),
                )
            })?;
        }
        Ok(out)
    }
    fn geometry(&self, n: usize, c: usize, input: [usize; 2], out: [usize; 2]) -> Window2d {
        let (kernel, stride, padding, dilation) = (self.kernel, self.stride, self.padding, self.dilation);
        Window2d { n, c, h: input[0], w: input[1], kernel, stride, padding, dilation, out_h: out[0], out_w: out[1] }
    }
}

/// `Tensor::max_pool2d` and its kin: kernel, stride, padding.
type PoolMethod = fn(&Tensor, [usize; 2], [usize; 2], [usize; 2]) -> Result<Tensor>;

/// A pool from its registry arguments: `stride` defaults to the kernel size
/// (PyTorch); the signature admits only the dilation and modes skiff has.
fn pool(a: &Args, run: PoolMethod) -> Result<Tensor> {
    let kernel = a.pair("kernel_size")?;
    run(a.this()?, kernel, a.opt_pair("stride")?.unwrap_or(kernel), a.pair("padding")?)
}

/// Rejects anything but a 4-D float tensor; `what` names it and its axes.
fn expect_4d(op: &'static str, what: &str, x: &Tensor) -> Result<()> {
    expect_float(op, x)?;
    if x.ndim() != 4 {
        return Err(Error::shape(op, format!("expected a 4-D {what}, got shape {:?}", x.shape())));
    }
    Ok(())
}

fn unfold_impl(op: &'static str, x: &Tensor, p: Params) -> Result<Tensor> {
    expect_4d(op, "input [N, C, H, W]", x)?;
    let out = p.out_size(op, x.shape())?;
    let s = x.shape();
    let taps = crate::shape::mul_sizes(op, "kernel taps", p.kernel[0], p.kernel[1])?;
    let rows = crate::shape::mul_sizes(op, "channels x kernel taps", s[1], taps)?;
    let windows = crate::shape::mul_sizes(op, "output windows", out[0], out[1])?;
    crate::shape::check_size(op, &[s[0], rows, windows])?;
    let input = [s[2], s[3]];
    let y = be::unfold2d(op, x, &p.geometry(s[0], s[1], input, out))?;
    if !needs_record(&[x]) {
        return Ok(y);
    }
    record(&UNFOLD2D, p.attrs(input), &[x], &[], false, y)
}

fn fold_impl(cols: &Tensor, input: [usize; 2], p: Params) -> Result<Tensor> {
    const OP: &str = "fold2d";
    expect_float(OP, cols)?;
    if cols.ndim() != 3 {
        return Err(Error::shape(OP, format!("expected a 3-D input [N, C*kh*kw, L], got shape {:?}", cols.shape())));
    }
    let out = p.out_size(OP, &input)?;
    let (n, rows, l) = (cols.shape()[0], cols.shape()[1], cols.shape()[2]);
    let taps = crate::shape::mul_sizes(OP, "kernel taps", p.kernel[0], p.kernel[1])?;
    let windows = crate::shape::mul_sizes(OP, "output windows", out[0], out[1])?;
    if rows % taps != 0 || l != windows {
        return Err(Error::shape(
            OP,
            format!(
                "input shape {:?} does not fit kernel {:?} over output size {input:?}: expected [N, C*{taps}, {}] ({}x{} windows)",
                cols.shape(),
                p.kernel,
                windows,
                out[0],
                out[1]
            ),
        ));
    }
    crate::shape::check_size(OP, &[n, rows / taps, input[0], input[1]])?;
    let y = be::fold2d(OP, cols, &p.geometry(n, rows / taps, input, out))?;
    if !needs_record(&[cols]) {
        return Ok(y);
    }
    record(&FOLD2D, p.attrs(input), &[cols], &[], false, y)
}

static UNFOLD2D: OpDef = OpDef {
    name: "unfold2d",
    signature: "unfold(input: Tensor, kernel_size: int | (int, int), *, stride: int | (int, int) = 1, padding: int | (int, int) = 0, dilation: int | (int, int) = 1) -> Tensor",
    doc: "im2col: [N, C, H, W] to [N, C*kh*kw, L], one column per window (Rust: `unfold2d`).",
    forward: Some(Forward::One(|a| a.tensor("input")?.unfold2d(a.pair("kernel_size")?, a.pair("stride")?, a.pair("padding")?, a.pair("dilation")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let (p, input) = Params::from_attrs(c.attrs());
        Ok(vec![Some(fold_impl(&g[0], input, p)?)])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let x = || vec![Input::Uniform(vec![2, 2, 5, 5], -1.0, 1.0)];
        vec![
            Case::new("unfold 3x3", x(), |x| x[0].unfold2d([3, 3], [1, 1], [0, 0], [1, 1]))
                .also(Sample::Empty, &[&[0, 2, 5, 5]])
                .reference(|h| r::unfold2d(&h[0], r::Window::new([3, 3], [1, 1], [0, 0], [1, 1]))),
            Case::new("unfold 2x3 stride 2 padding 1", x(), |x| x[0].unfold2d([2, 3], [2, 2], [1, 1], [1, 1]))
                .reference(|h| r::unfold2d(&h[0], r::Window::new([2, 3], [2, 2], [1, 1], [1, 1]))),
            Case::new("unfold dilation 2 padding [2, 1]", x(), |x| x[0].unfold2d([2, 2], [1, 2], [2, 1], [2, 2]))
                .reference(|h| r::unfold2d(&h[0], r::Window::new([2, 2], [1, 2], [2, 1], [2, 2]))),
            Case::new("unfold of a permuted view", vec![Input::Uniform(vec![2, 4, 5, 2], -1.0, 1.0)], |x| {
                x[0].permute(&[0, 3, 1, 2])?.unfold2d([2, 2], [1, 1], [0, 1], [1, 1])
            })
            .reference(|h| {
                r::unfold2d(&r::permute(&h[0], &[0, 3, 1, 2]), r::Window::new([2, 2], [1, 1], [0, 1], [1, 1]))
            }),
        ]
    },
};

static FOLD2D: OpDef = OpDef {
    name: "fold2d",
    signature: "fold(input: Tensor, output_size: int | (int, int), kernel_size: int | (int, int), *, stride: int | (int, int) = 1, padding: int | (int, int) = 0, dilation: int | (int, int) = 1) -> Tensor",
    doc: "col2im, the adjoint of `unfold`: overlapping windows sum (Rust: `fold2d`).",
    forward: Some(Forward::One(|a| {
        let (size, kernel) = (a.pair("output_size")?, a.pair("kernel_size")?);
        a.tensor("input")?.fold2d(size, kernel, a.pair("stride")?, a.pair("padding")?, a.pair("dilation")?)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let (p, _) = Params::from_attrs(c.attrs());
        Ok(vec![Some(unfold_impl("fold2d", &g[0], p)?)])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            // 2 channels x 2x2 taps over a 5x5 output: 4x4 windows.
            Case::new("fold 2x2 overlapping", vec![Input::Uniform(vec![2, 8, 16], -1.0, 1.0)], |x| {
                x[0].fold2d([5, 5], [2, 2], [1, 1], [0, 0], [1, 1])
            })
            .also(Sample::Empty, &[&[0, 8, 16]])
            .reference(|h| r::fold2d(&h[0], [5, 5], r::Window::new([2, 2], [1, 1], [0, 0], [1, 1]))),
            // 2 channels x 3x3 taps, stride 2, padding 1 over 5x5: 3x3 windows.
            Case::new("fold 3x3 stride 2 padding 1", vec![Input::Uniform(vec![2, 18, 9], -1.0, 1.0)], |x| {
                x[0].fold2d([5, 5], [3, 3], [2, 2], [1, 1], [1, 1])
            })
            .reference(|h| r::fold2d(&h[0], [5, 5], r::Window::new([3, 3], [2, 2], [1, 1], [1, 1]))),
            // Dilation 2 with a 2x2 kernel over 5x4: 3x2 windows.
            Case::new("fold dilation 2", vec![Input::Uniform(vec![1, 8, 6], -1.0, 1.0)], |x| {
                x[0].fold2d([5, 4], [2, 2], [1, 1], [0, 0], [2, 2])
            })
            .reference(|h| r::fold2d(&h[0], [5, 4], r::Window::new([2, 2], [1, 1], [0, 0], [2, 2]))),
        ]
    },
};

static CONV2D: OpDef = OpDef {
    name: "conv2d",
    signature: "conv2d(self, weight: Tensor, bias: Tensor | None = None, *, stride: int | (int, int) = 1, padding: int | (int, int) = 0, dilation: int | (int, int) = 1, groups: int = 1) -> Tensor",
    doc: "2-D cross-correlation of [N, C, H, W] with [O, C/groups, kh, kw] weights and an optional bias.",
    forward: Some(Forward::One(|a| {
        let (weight, bias) = (a.tensor("weight")?, a.opt_tensor("bias")?);
        let (stride, padding, dilation) = (a.pair("stride")?, a.pair("padding")?, a.pair("dilation")?);
        a.this()?.conv2d(weight, bias, stride, padding, dilation, a.size("groups")?)
    })),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: &[usize]| Input::Uniform(s.to_vec(), -1.0, 1.0);
        vec![
            Case::new("3x3 with bias", vec![u(&[2, 3, 5, 5]), u(&[4, 3, 3, 3]), u(&[4])], |x| {
                x[0].conv2d(&x[1], Some(&x[2]), [1, 1], [0, 0], [1, 1], 1)
            })
            .also(Sample::Empty, &[&[0, 3, 5, 5], &[4, 3, 3, 3], &[4]])
            .reference(|h| r::conv2d(&h[0], &h[1], Some(&h[2]), [1, 1], [0, 0], [1, 1], 1)),
            Case::new("stride 2 padding 1 no bias", vec![u(&[2, 2, 5, 5]), u(&[3, 2, 3, 3])], |x| {
                x[0].conv2d(&x[1], None, [2, 2], [1, 1], [1, 1], 1)
            })
            .reference(|h| r::conv2d(&h[0], &h[1], None, [2, 2], [1, 1], [1, 1], 1)),
            Case::new("dilation 2 padding 2", vec![u(&[2, 2, 5, 5]), u(&[2, 2, 3, 3]), u(&[2])], |x| {
                x[0].conv2d(&x[1], Some(&x[2]), [1, 1], [2, 2], [2, 2], 1)
            })
            .reference(|h| r::conv2d(&h[0], &h[1], Some(&h[2]), [1, 1], [2, 2], [2, 2], 1)),
            Case::new("groups 2 with bias", vec![u(&[2, 4, 5, 5]), u(&[6, 2, 3, 3]), u(&[6])], |x| {
                x[0].conv2d(&x[1], Some(&x[2]), [1, 1], [1, 1], [1, 1], 2)
            })
            .reference(|h| r::conv2d(&h[0], &h[1], Some(&h[2]), [1, 1], [1, 1], [1, 1], 2)),
            Case::new("rectangular kernel, mixed stride and padding", vec![u(&[2, 2, 5, 4]), u(&[3, 2, 2, 3])], |x| {
                x[0].conv2d(&x[1], None, [2, 1], [1, 0], [1, 1], 1)
            })
            .reference(|h| r::conv2d(&h[0], &h[1], None, [2, 1], [1, 0], [1, 1], 1)),
        ]
    },
};

/// `w [o, c*kh*kw]` times the columns of `x` as one implicit GEMM
/// (`KernelSpec::ConvGemm`): `[n, o, out_h * out_w]`, the values of
/// `w.matmul(unfold2d(x))` without the columns. conv2d runs its products
/// this way on GPUs (`Device::runs_implicit_gemm`); on the cpu, where
/// im2col is one cheap pass and the columns feed the weight gradient, it
/// keeps unfold + matmul.
fn conv_product(x: &Tensor, w: &Tensor, p: Params) -> Result<Tensor> {
    let s = x.shape();
    let input = [s[2], s[3]];
    let g = p.geometry(s[0], s[1], input, p.out_size("conv2d", s)?);
    let y = be::conv_gemm("conv2d", w, x, &g)?;
    if !needs_record(&[w, x]) {
        return Ok(y);
    }
    record(&CONV_PRODUCT, p.attrs(input), &[w, x], &[w, x], false, y)
}

/// The node `conv_product` records (not a registry op of its own: `conv2d`'s
/// cases cover it, to second order, on every backend).
static CONV_PRODUCT: OpDef = OpDef {
    name: "conv2d",
    signature: "",
    doc: "conv2d's product as one implicit GEMM (internal).",
    forward: None,
    kind: OpKind::Primitive,
    // The input's gradient goes through fold, as unfold's does, or for a
    // stride-1 convolution is one more implicit GEMM (`input_grad_gemm`).
    // The weight's is each image's gradient times its columns transposed,
    // read through the window (`ConvWeightGemm`), summed over the batch;
    // while a graph of the backward is being built (create_graph) both are
    // made from unfold, fold and matmul instead, which are differentiable again.
    backward: Some(|c, g| {
        let (p, input) = Params::from_attrs(c.attrs());
        let (w, x) = (c.saved(0), c.saved(1));
        let dx = match c.needs_input_grad(1) {
            true => match input_grad_gemm(w, &g[0], x.shape()[1], input, p)? {
                Some(dx) => Some(dx),
                None => Some(fold_impl(&w.transpose(0, 1)?.matmul(&g[0])?, input, p)?),
            },
            false => None,
        };
        let dw = if !c.needs_input_grad(0) {
            None
        } else if crate::autograd::is_grad_enabled() {
            Some(g[0].matmul(&unfold_impl("conv2d", x, p)?.transpose(1, 2)?)?.sum(&[0], false)?)
        } else {
            let s = x.shape();
            let geometry = p.geometry(s[0], s[1], input, p.out_size("conv2d", s)?);
            Some(be::conv_weight_gemm("conv2d", &g[0], x, &geometry)?.sum(&[0], false)?)
        };
        Ok(vec![dw, dx])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: Vec::new,
};

/// The input gradient of a stride-1, undilated convolution as one implicit
/// GEMM, where the device runs them: a convolution of the output gradient
/// `gy [n, o, out_h * out_w]`, padded by `kernel - 1 - padding`, with the
/// weight `w [o, c * kh * kw]` flipped in both spatial dims and its channel
/// dims swapped (`[c, o * kh * kw]`, a small copy), instead of a product of
/// `[n, c * kh * kw, out_h * out_w]` and its fold: one pass over memory
/// instead of a column-sized intermediate and a second pass to fold it. A
/// single input channel keeps the fold (a product of one row ran slower than
/// it), as do strided and dilated convolutions,
/// create_graph (fold and matmul are differentiable again) and SwiftShader,
/// where the padded gradient would be a copy of its own
/// (`Device::pads_images_first`) that eats what the GEMM saves. `None` where
/// it does not apply.
fn input_grad_gemm(w: &Tensor, gy: &Tensor, c: usize, input: [usize; 2], p: Params) -> Result<Option<Tensor>> {
    const MIN_CHANNELS: usize = 4;
    let [kh, kw] = p.kernel;
    let applies = p.stride == [1, 1]
        && p.dilation == [1, 1]
        && p.padding[0] < kh
        && p.padding[1] < kw
        && c >= MIN_CHANNELS
        && !crate::autograd::is_grad_enabled()
        && gy.device().runs_implicit_gemm()
        && !gy.device().pads_images_first();
    if !applies {
        return Ok(None);
    }
    let (n, o, taps) = (gy.shape()[0], gy.shape()[1], kh * kw);
    let [oh, ow] = p.out_size("conv2d", &input)?;
    // Tap (i, j) of the flipped kernel is tap (kh - 1 - i, kw - 1 - j): the
    // taps of each (o, c) pair in reverse order. The positions are made on
    // the device (an upload could not be captured) and checked like any
    // index (kh * kw values): a captured program keeps that check, which a
    // saved one needs to load.
    let reversed = Tensor::arange_on(taps as f64 - 1.0, -1.0, -1.0, crate::dtype::DType::I32, &gy.device())?;
    let flipped = w.reshape_dims(&[o, c, taps])?.index_select(2, &reversed)?;
    let swapped = flipped.transpose(0, 1)?.contiguous()?.reshape_dims(&[c, o * taps])?;
    let g = Window2d {
        n,
        c: o,
        h: oh,
        w: ow,
        kernel: p.kernel,
        stride: [1, 1],
        padding: [kh - 1 - p.padding[0], kw - 1 - p.padding[1]],
        dilation: [1, 1],
        out_h: input[0],
        out_w: input[1],
    };
    let dx = be::conv_gemm("conv2d", &swapped, &gy.reshape_dims(&[n, o, oh, ow])?, &g)?;
    Ok(Some(dx.reshape_dims(&[n, c, input[0], input[1]])?))
}

static MAX_POOL2D: OpDef = OpDef {
    name: "max_pool2d",
    signature: "max_pool2d(self, kernel_size: int | (int, int), *, stride: int | (int, int) | None = None, padding: int | (int, int) = 0, dilation: 1 = 1, ceil_mode: False = False) -> Tensor",
    doc: "Max over each window of [N, C, H, W] (`stride` defaults to the kernel size).",
    forward: Some(Forward::One(|a| pool(a, Tensor::max_pool2d))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        // Distinct values: no ties inside a window, so the max is differentiable.
        let x = || vec![Input::Distinct(vec![2, 3, 5, 5])];
        vec![
            Case::new("2x2 stride 2", x(), |x| x[0].max_pool2d([2, 2], [2, 2], [0, 0]))
                .reference(|h| r::max_pool2d(&h[0], [2, 2], [2, 2], [0, 0])),
            Case::new("3x3 stride 1 overlapping", x(), |x| x[0].max_pool2d([3, 3], [1, 1], [0, 0]))
                .reference(|h| r::max_pool2d(&h[0], [3, 3], [1, 1], [0, 0])),
            Case::new("3x3 stride 2 padding 1", x(), |x| x[0].max_pool2d([3, 3], [2, 2], [1, 1]))
                .also(Sample::Empty, &[&[2, 0, 5, 5]])
                .reference(|h| r::max_pool2d(&h[0], [3, 3], [2, 2], [1, 1])),
            Case::new("2x3 stride [1, 2] padding [1, 0]", x(), |x| x[0].max_pool2d([2, 3], [1, 2], [1, 0]))
                .reference(|h| r::max_pool2d(&h[0], [2, 3], [1, 2], [1, 0])),
            // Ties inside windows: the values are right whichever maximum wins;
            // the gradient goes to the first (PyTorch's rule), which central
            // differences cannot see (they split it), so forward only.
            Case::new("3x3 stride 1 with ties", vec![Input::Pairs(vec![1, 2, 4, 4])], |x| {
                x[0].max_pool2d([3, 3], [1, 1], [0, 0])
            })
            .reference(|h| r::max_pool2d(&h[0], [3, 3], [1, 1], [0, 0]))
            .forward_only(),
        ]
    },
};

static MAX_POOL2D_INDICES: OpDef = OpDef {
    name: "max_pool2d_indices",
    signature: "max_pool2d_indices(self, kernel_size: int | (int, int), *, stride: int | (int, int) | None = None, padding: int | (int, int) = 0, dilation: 1 = 1, ceil_mode: False = False) -> Tensor<int32>",
    doc: "Where each window's maximum is: flat indices into each H*W plane.",
    forward: Some(Forward::One(|a| pool(a, Tensor::max_pool2d_indices))),
    kind: OpKind::NoGrad,
    backward: None,
    second_order: false,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("3x3 stride 2 padding 1", vec![Input::Distinct(vec![2, 2, 5, 5])], |x| {
                x[0].max_pool2d_indices([3, 3], [2, 2], [1, 1])
            })
            .also(Sample::Empty, &[&[0, 2, 5, 5]])
            .reference(|h| r::max_pool2d_indices(&h[0], [3, 3], [2, 2], [1, 1])),
            Case::new("2x2 stride 1, the first of ties", vec![Input::Grid(vec![2, 2, 4, 5], -1.0, 1.0, 3)], |x| {
                x[0].max_pool2d_indices([2, 2], [1, 1], [0, 0])
            })
            .reference(|h| r::max_pool2d_indices(&h[0], [2, 2], [1, 1], [0, 0])),
        ]
    },
};

static AVG_POOL2D: OpDef = OpDef {
    name: "avg_pool2d",
    signature: "avg_pool2d(self, kernel_size: int | (int, int), *, stride: int | (int, int) | None = None, padding: int | (int, int) = 0, ceil_mode: False = False, count_include_pad: True = True) -> Tensor",
    doc: "Mean over each window of [N, C, H, W] (zero padding counts toward the mean).",
    forward: Some(Forward::One(|a| pool(a, Tensor::avg_pool2d))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let x = || vec![Input::Uniform(vec![2, 3, 5, 5], -1.0, 1.0)];
        vec![
            Case::new("2x2 stride 2", x(), |x| x[0].avg_pool2d([2, 2], [2, 2], [0, 0]))
                .also(Sample::Empty, &[&[2, 0, 5, 5]])
                .reference(|h| r::avg_pool2d(&h[0], [2, 2], [2, 2], [0, 0])),
            Case::new("3x3 stride 2 padding 1", x(), |x| x[0].avg_pool2d([3, 3], [2, 2], [1, 1]))
                .reference(|h| r::avg_pool2d(&h[0], [3, 3], [2, 2], [1, 1])),
            Case::new("3x2 stride 1 padding [1, 1]", x(), |x| x[0].avg_pool2d([3, 2], [1, 1], [1, 1]))
                .reference(|h| r::avg_pool2d(&h[0], [3, 2], [1, 1], [1, 1])),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&UNFOLD2D, &FOLD2D, &CONV2D, &MAX_POOL2D, &MAX_POOL2D_INDICES, &AVG_POOL2D]
}

/// Validates a pool's arguments; returns the output grid. Padding is capped
/// at half the kernel (as in PyTorch) so every window sees a real element.
fn pool_out(op: &'static str, x: &Tensor, p: &Params) -> Result<[usize; 2]> {
    expect_4d(op, "input [N, C, H, W]", x)?;
    let out = p.out_size(op, x.shape())?;
    if (0..2).any(|i| p.padding[i] > p.kernel[i] / 2) {
        return Err(Error::value(op, format!("padding {:?} must be at most half of kernel {:?}", p.padding, p.kernel)));
    }
    Ok(out)
}

/// The per-window argmax behind max pooling (no gradient: indices).
fn window_argmax(op: &'static str, x: &Tensor, p: Params) -> Result<Tensor> {
    let out = pool_out(op, x, &p)?;
    let s = x.shape();
    if s[2] * s[3] > i32::MAX as usize {
        return Err(Error::shape(op, format!("an H*W plane of input {s:?} is too large for i32 indices")));
    }
    be::window_argmax(op, x, &p.geometry(s[0], s[1], [s[2], s[3]], out))
}

/// Unfolds `x` and views the columns as `[N, C, kh*kw, L]` so a pool reduces axis 2.
fn pool_windows(x: &Tensor, p: Params) -> Result<Tensor> {
    let s = x.shape();
    let (n, c) = (s[0], s[1]);
    let cols = unfold_impl("unfold2d", x, p)?;
    let l = cols.shape()[2];
    cols.reshape_dims(&[n, c, p.kernel[0] * p.kernel[1], l])
}

impl Tensor {
    /// im2col, PyTorch's `F.unfold`: `[N, C, H, W]` -> `[N, C*kh*kw, L]`, one
    /// column per window position (L = out_h * out_w, row-major), rows
    /// ordered (channel, ki, kj); zero padding.
    pub fn unfold2d(
        &self,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
    ) -> Result<Tensor> {
        unfold_impl("unfold2d", self, Params { kernel, stride, padding, dilation })
    }

    /// col2im, PyTorch's `F.fold` (the adjoint of `unfold2d`): `[N, C*kh*kw, L]`
    /// -> `[N, C, H, W]` with `output_size = [H, W]`; overlapping windows sum.
    pub fn fold2d(
        &self,
        output_size: [usize; 2],
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
    ) -> Result<Tensor> {
        fold_impl(self, output_size, Params { kernel, stride, padding, dilation })
    }

    /// 2-D cross-correlation (PyTorch's `F.conv2d`): input `[N, C, H, W]`,
    /// weight `[O, C/groups, kh, kw]`, bias `[O]`; returns `[N, O, out_h, out_w]`.
    /// Computed as unfold + (grouped) matmul, so it is differentiable to any order.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        groups: usize,
    ) -> Result<Tensor> {
        // Under autocast a convolution is an f16 op (`amp`).
        let (x, weight, bias) =
            (crate::amp::lower(self)?, crate::amp::lower(weight)?, bias.map(crate::amp::lower).transpose()?);
        let (x, weight, bias) = (&x, &weight, bias.as_ref());
        super::as_op("conv2d", || {
            const OP: &str = "conv2d";
            let mut all = vec![x, weight];
            all.extend(bias);
            same_device(OP, &all)?;
            expect_4d(OP, "input [N, C, H, W]", x)?;
            expect_4d(OP, "weight [O, C/groups, kh, kw]", weight)?;
            same_dtype(OP, x, weight)?;
            let (s, ws) = (x.shape(), weight.shape());
            let (n, c, o, cg) = (s[0], s[1], ws[0], ws[1]);
            if groups == 0 || c % groups != 0 || o % groups != 0 {
                return Err(Error::value(
                OP,
                format!("groups {groups} must divide both the input channels ({c}, input {s:?}) and the output channels ({o}, weight {ws:?})"),
            ));
            }
            if cg * groups != c {
                return Err(Error::shape(
                    OP,
                    format!(
                    "weight {ws:?} expects {} input channels ({cg} per group x {groups} groups), input {s:?} has {c}",
                    cg * groups
                ),
                ));
            }
            if let Some(b) = bias {
                same_dtype(OP, x, b)?;
                if b.shape() != [o] {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "bias must have shape [{o}] (one per output channel of weight {ws:?}), got {:?}",
                            b.shape()
                        ),
                    ));
                }
            }
            let p = Params { kernel: [ws[2], ws[3]], stride, padding, dilation };
            let [oh, ow] = p.out_size(OP, s)?;
            let k = cg * ws[2] * ws[3];
            let y = if groups == 1 && x.device().runs_implicit_gemm() {
                // One implicit GEMM, no columns (`conv_product`).
                conv_product(x, &weight.reshape_dims(&[o, k])?, p)?
            } else if groups == 1 {
                // [O, K] @ [N, K, L]: the weight broadcasts over the batch.
                weight.reshape_dims(&[o, k])?.matmul(&unfold_impl(OP, x, p)?)?
            } else {
                // [G, O/G, K] @ [N, G, K, L] -> [N, G, O/G, L]: one product per group.
                let cols = unfold_impl(OP, x, p)?.reshape_dims(&[n, groups, k, oh * ow])?;
                weight.reshape_dims(&[groups, o / groups, k])?.matmul(&cols)?
            };
            let y = y.reshape_dims(&[n, o, oh, ow])?;
            match bias {
                Some(b) => y.add(&b.reshape_dims(&[o, 1, 1])?),
                None => Ok(y),
            }
        })
    }

    /// Max over each window (PyTorch's `F.max_pool2d`, floor mode): padding
    /// never wins. The gradient goes to the first maximum of each window, as
    /// in PyTorch. Composed as a gather at `max_pool2d_indices`, so it costs
    /// one pass forward and one scatter backward, and is differentiable again.
    pub fn max_pool2d(&self, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<Tensor> {
        super::as_op("max_pool2d", || {
            let idx = window_argmax("max_pool2d", self, Params { kernel, stride, padding, dilation: [1, 1] })?;
            let (s, o) = (self.shape(), idx.shape());
            let planes = s[0] * s[1];
            let flat_idx = idx.reshape_dims(&[planes, o[2] * o[3]])?;
            self.reshape_dims(&[planes, s[2] * s[3]])?.gather(1, &flat_idx)?.reshape_dims(o)
        })
    }

    /// Where each window's maximum is (PyTorch's `return_indices`): an i32
    /// `[N, C, out_h, out_w]` tensor of flat indices into each H*W plane.
    pub fn max_pool2d_indices(&self, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<Tensor> {
        window_argmax("max_pool2d_indices", self, Params { kernel, stride, padding, dilation: [1, 1] })
    }

    /// Mean over each window (PyTorch's `F.avg_pool2d`, floor mode,
    /// count_include_pad = true: zero padding counts toward the divisor).
    pub fn avg_pool2d(&self, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<Tensor> {
        super::as_op("avg_pool2d", || {
            const OP: &str = "avg_pool2d";
            let p = Params { kernel, stride, padding, dilation: [1, 1] };
            let [oh, ow] = pool_out(OP, self, &p)?;
            let s = self.shape();
            pool_windows(self, p)?.mean(&[2], false)?.reshape_dims(&[s[0], s[1], oh, ow])
        })
    }
}
