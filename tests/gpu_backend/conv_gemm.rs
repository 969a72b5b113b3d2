//! The implicit GEMM (`KernelSpec::ConvGemm` and `ConvWeightGemm`,
//! `backend/gpu/conv_gemm.rs`): a convolution's products read straight from
//! the image, with no im2col columns made. On the GPU each must give the bits
//! of the product over `unfold2d`'s columns (the same sums in the same
//! order), in one dispatch (three where a padded image is made first, as on
//! SwiftShader); on the cpu (columns, then the product) the cpu's values.
//! Covers strides, padding, dilation, 1x1 kernels, permuted images,
//! transposed operands, every block and load mode of the blocked kernel
//! (loads with and without the padding test), f16, bad input, and conv2d
//! itself on the GPU (no unfold, the same bits as the explicit products,
//! forward and backward).

#![cfg(feature = "gpu")]

use crate::common;

use skiff::device::{GpuDevice, GpuOptions};
use skiff::dispatch::conv::{conv_gemm, conv_weight_gemm};
use skiff::kernel::Window2d;
use skiff::{manual_seed, DType, Device, Tensor};

/// The window geometry of a [n, c, h, w] image under a kernel.
fn window(
    x: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
) -> Window2d {
    let out = |i: usize| (x[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) / stride[i] + 1;
    let (out_h, out_w) = (out(0), out(1));
    Window2d { n: x[0], c: x[1], h: x[2], w: x[3], kernel, stride, padding, dilation, out_h, out_w }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn columns(x: &Tensor, g: &Window2d) -> Tensor {
    x.unfold2d(g.kernel, g.stride, g.padding, g.dilation).unwrap()
}

/// The product the implicit GEMM replaces: the weight times unfold2d's columns.
fn explicit(w: &Tensor, x: &Tensor, g: &Window2d) -> Tensor {
    w.matmul(&columns(x, g)).unwrap()
}

/// The weight gradient's product it replaces: each image's gradient times its columns transposed.
fn explicit_weight(gy: &Tensor, x: &Tensor, g: &Window2d) -> Tensor {
    gy.matmul(&columns(x, g).transpose(1, 2).unwrap()).unwrap()
}

struct Case {
    image: [usize; 4],
    out_channels: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
}

const CASES: [Case; 7] = [
    Case { image: [2, 3, 9, 8], out_channels: 5, kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] },
    // The benchmark CNN's two convolutions (a smaller batch).
    Case { image: [4, 1, 28, 28], out_channels: 8, kernel: [3, 3], stride: [1, 1], padding: [0, 0], dilation: [1, 1] },
    Case { image: [4, 8, 13, 13], out_channels: 16, kernel: [3, 3], stride: [1, 1], padding: [0, 0], dilation: [1, 1] },
    Case { image: [1, 2, 11, 7], out_channels: 3, kernel: [2, 3], stride: [2, 1], padding: [1, 2], dilation: [2, 1] },
    Case { image: [3, 4, 6, 6], out_channels: 7, kernel: [1, 1], stride: [1, 1], padding: [0, 0], dilation: [1, 1] },
    // 40 output channels: several 16-row blocks; K = 36 lines A up for vec4
    // loads, and 144 windows take 32-column blocks.
    Case { image: [2, 4, 12, 12], out_channels: 40, kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] },
    Case { image: [2, 3, 7, 9], out_channels: 20, kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] },
];

#[test]
fn the_implicit_gemm_gives_the_explicit_products_bits_in_one_dispatch() {
    let Some(_) = common::gpu() else { return };
    // A private device: its counters and its K unrolling are this test's alone.
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    let ctx = g.context();
    manual_seed(17);
    // Whether a padded window reads a zero-padded copy of the image: both
    // ways, except where the adapter cannot build loads that test for the
    // padding (SwiftShader).
    let pads: &[bool] = if ctx.default_options().pad_first == Some(true) { &[true] } else { &[false, true] };
    for (steps, pad_first) in pads.iter().flat_map(|&p| [(1, p), (4, p)]) {
        let options = GpuOptions { matmul_unroll: Some(steps), pad_first: Some(pad_first), ..Default::default() };
        common::set_gpu_options(&dev, options);
        for c in &CASES {
            let geo = window(c.image, c.kernel, c.stride, c.padding, c.dilation);
            // The padded copy: a fill and a copy before the product.
            let kernels = if pad_first && c.padding != [0, 0] { 3 } else { 1 };
            let [n, ch, h, w] = c.image;
            // The image stored NHWC and viewed NCHW; the weight stored [k, o] and viewed [o, k].
            let x = Tensor::randn(&[n, h, w, ch], DType::F32).unwrap().permute(&[0, 3, 1, 2]).unwrap();
            let wt = Tensor::randn(&[geo.col_rows(), c.out_channels], DType::F32).unwrap().transpose(0, 1).unwrap();
            let views: [(&str, Tensor, Tensor); 2] =
                [("contiguous", x.contiguous().unwrap(), wt.contiguous().unwrap()), ("strided", x, wt)];
            for (how, x, wt) in views {
                let what = format!(
                    "{:?} x {} {:?} ({how}, K unrolled {steps}x, pad first {pad_first})",
                    c.image, c.out_channels, geo
                );
                let cpu = conv_gemm("conv_gemm", &wt, &x, &geo).unwrap();
                assert_eq!(cpu.shape(), [n, c.out_channels, geo.windows()], "{what}");
                common::assert_close(&cpu.to_f64_vec().unwrap(), &explicit(&wt, &x, &geo).to_f64_vec().unwrap(), 1e-5);
                let (xg, wg) = (x.to(&dev).unwrap(), wt.to(&dev).unwrap());
                let before = g.counters().dispatches;
                let got = conv_gemm("conv_gemm", &wg, &xg, &geo).unwrap();
                assert_eq!(g.counters().dispatches - before, kernels, "{what}: kernels");
                assert_eq!(bits(&got), bits(&explicit(&wg, &xg, &geo)), "{what}: the explicit product's bits");
                common::assert_close(&got.to_f64_vec().unwrap(), &cpu.to_f64_vec().unwrap(), 1e-4);
                // The weight gradient's product, with a gradient of the output's shape.
                let gy = Tensor::randn(&[n, c.out_channels, geo.windows()], DType::F32).unwrap();
                let cpu = conv_weight_gemm("conv_weight_gemm", &gy, &x, &geo).unwrap();
                assert_eq!(cpu.shape(), [n, c.out_channels, geo.col_rows()], "{what}");
                common::assert_close(
                    &cpu.to_f64_vec().unwrap(),
                    &explicit_weight(&gy, &x, &geo).to_f64_vec().unwrap(),
                    1e-5,
                );
                let gyg = gy.to(&dev).unwrap();
                let before = g.counters().dispatches;
                let got = conv_weight_gemm("conv_weight_gemm", &gyg, &xg, &geo).unwrap();
                assert_eq!(g.counters().dispatches - before, kernels, "{what}: kernels for the weight gradient");
                assert_eq!(bits(&got), bits(&explicit_weight(&gyg, &xg, &geo)), "{what}: weight gradient");
                common::assert_close(&got.to_f64_vec().unwrap(), &cpu.to_f64_vec().unwrap(), 1e-4);
                if g.shader_f16() && steps == 1 {
                    let half = |t: &Tensor| t.to_dtype(DType::F16).unwrap();
                    let (got, want) = (
                        conv_gemm("conv_gemm", &half(&wg), &half(&xg), &geo).unwrap(),
                        explicit(&half(&wg), &half(&xg), &geo),
                    );
                    assert_eq!(got.dtype(), DType::F16);
                    assert_eq!(
                        got.to_vec::<skiff::f16>().unwrap(),
                        want.to_vec::<skiff::f16>().unwrap(),
                        "{what}: f16"
                    );
                }
            }
        }
    }
    // Where the blocked kernel runs (software adapters), each load mode of A
    // ran with the window, its loads with the padding test (w, t) and without (i, j).
    let kernels = g.compiled_kernels();
    let windowed: Vec<&String> = kernels.iter().filter(|k| k.contains(":blocked:")).collect();
    if !windowed.is_empty() {
        let tested: &[&str] = if pads.contains(&false) { &["u1sw", "u4sw", "u4kw", "u1st", "u4st"] } else { &[] };
        for a in tested.iter().chain(&["u1si", "u4si", "u4ki", "u1sj", "u4sj"]) {
            assert!(windowed.iter().any(|k| k.ends_with(a)), "{a}: {windowed:?}");
        }
    } else {
        assert!(kernels.iter().any(|k| k == "matmul:f32:window"), "{kernels:?}");
        assert!(kernels.iter().any(|k| k == "matmul:f32:window_t"), "{kernels:?}");
    }
}

#[test]
fn bad_shapes_and_dtypes_are_errors_naming_the_kernel() {
    let geo = window([1, 2, 5, 5], [3, 3], [1, 1], [0, 0], [1, 1]);
    let x = Tensor::randn(&[1, 2, 5, 5], DType::F32).unwrap();
    let w = Tensor::randn(&[4, 18], DType::F32).unwrap();
    assert!(conv_gemm("conv_gemm", &w, &x, &geo).is_ok());
    let err = |w: &Tensor, x: &Tensor| conv_gemm("conv_gemm", w, x, &geo).unwrap_err().to_string();
    let e = err(&Tensor::randn(&[4, 17], DType::F32).unwrap(), &x);
    assert!(e.contains("conv_gemm") && e.contains("[4, 17]") && e.contains("[O, 18]"), "{e}");
    let e = err(&w, &Tensor::randn(&[1, 2, 5, 6], DType::F32).unwrap());
    assert!(e.contains("conv_gemm") && e.contains("[1, 2, 5, 6]"), "{e}");
    let bad = Window2d { out_w: 4, ..geo };
    let e = conv_gemm("conv_gemm", &w, &x, &bad).unwrap_err().to_string();
    assert!(e.contains("conv_gemm") && e.contains("inconsistent"), "{e}");
    let e = err(&w.to_dtype(DType::F64).unwrap(), &x);
    assert!(e.contains("conv_gemm") && e.contains("f64") && e.contains("f32"), "{e}");
    let e = err(&w.to_dtype(DType::I32).unwrap(), &x.to_dtype(DType::I32).unwrap());
    assert!(e.contains("conv_gemm") && e.contains("float"), "{e}");
    // On the GPU, too (and across devices).
    if let Some(dev) = common::gpu() {
        let (wg, xg) = (w.to(&dev).unwrap(), x.to(&dev).unwrap());
        assert!(conv_gemm(
            "conv_gemm",
            &wg,
            &Tensor::randn(&[1, 2, 5, 6], DType::F32).unwrap().to(&dev).unwrap(),
            &geo
        )
        .is_err());
        let e = conv_gemm("conv_gemm", &wg, &x, &geo).unwrap_err().to_string();
        assert!(e.contains("conv_gemm"), "{e}");
        assert!(conv_gemm("conv_gemm", &wg, &xg, &geo).is_ok());
    }
}

/// conv2d on a GPU runs its products as implicit GEMMs: no unfold kernel,
/// forward or backward, and the bits of the explicit products (unfold2d and
/// matmul, as conv2d composes them on the cpu) for the output and every
/// gradient. Second derivatives go through the explicit columns.
#[test]
fn conv2d_on_the_gpu_runs_without_columns_and_gives_the_explicit_bits() {
    let Some(_) = common::gpu() else { return };
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    manual_seed(21);
    let leaf =
        |shape: &[usize]| Tensor::randn(shape, DType::F32).unwrap().to(&dev).unwrap().requires_grad_(true).unwrap();
    let (x, w, b) = (leaf(&[3, 4, 9, 8]), leaf(&[6, 4, 3, 3]), leaf(&[6]));
    let y = x.conv2d(&w, Some(&b), [2, 1], [1, 1], [1, 1], 1).unwrap();
    y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
    let kernels = g.compiled_kernels();
    assert!(!kernels.iter().any(|k| k.starts_with("conv:unfold")), "no columns made: {kernels:?}");
    // The explicit products, from the same leaves' values.
    let (x2, w2, b2) = (
        x.detach().requires_grad_(true).unwrap(),
        w.detach().requires_grad_(true).unwrap(),
        b.detach().requires_grad_(true).unwrap(),
    );
    let cols = x2.unfold2d([3, 3], [2, 1], [1, 1], [1, 1]).unwrap();
    let y2 = w2
        .reshape(&[6, 36])
        .unwrap()
        .matmul(&cols)
        .unwrap()
        .reshape(&y.shape().iter().map(|&d| d as isize).collect::<Vec<_>>())
        .unwrap()
        .add(&b2.reshape(&[6, 1, 1]).unwrap())
        .unwrap();
    y2.mul(&y2).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(bits(&y), bits(&y2), "output");
    for (what, a, e) in [("input", &x, &x2), ("weight", &w, &w2), ("bias", &b, &b2)] {
        assert_eq!(bits(&a.grad().unwrap()), bits(&e.grad().unwrap()), "{what} gradient");
    }
    // Second order: the gradient of a gradient's norm, against the explicit form's.
    let grad_norm = |x: &Tensor, w: &Tensor, explicit: bool| {
        let y = if explicit {
            let cols = x.unfold2d([3, 3], [1, 1], [0, 0], [1, 1]).unwrap();
            w.reshape(&[6, 36]).unwrap().matmul(&cols).unwrap().reshape(&[3, 6, 7, 6]).unwrap()
        } else {
            x.conv2d(w, None, [1, 1], [0, 0], [1, 1], 1).unwrap()
        };
        let create = skiff::GradOptions { create_graph: true, ..Default::default() };
        let gw = skiff::grad(&[y.mul(&y).unwrap().sum_all().unwrap()], std::slice::from_ref(w), None, create).unwrap();
        let gw = gw[0].clone().unwrap();
        let gx =
            skiff::grad(&[gw.mul(&gw).unwrap().sum_all().unwrap()], std::slice::from_ref(x), None, Default::default())
                .unwrap();
        gx[0].clone().unwrap().to_f64_vec().unwrap()
    };
    let (x3, w3) = (x.detach().requires_grad_(true).unwrap(), w.detach().requires_grad_(true).unwrap());
    common::assert_close(&grad_norm(&x3, &w3, false), &grad_norm(&x3, &w3, true), 1e-5);
}

/// A stride-1, undilated convolution's input gradient is one more implicit
/// GEMM on the GPU (the output gradient convolved with the flipped weight,
/// no product over the columns and no fold), from 4 input channels on:
/// against the cpu's gradient over kernel shapes and paddings up to kernel - 1.
/// Strided convolutions, a single input channel and an adapter that pads
/// images first (SwiftShader) keep the fold.
#[test]
fn a_stride_1_input_gradient_is_one_more_implicit_gemm() {
    // The profiler sees every thread's ops: this test's must be the only ones.
    if !common::own_process() {
        return;
    }
    let Some(_) = common::gpu() else { return };
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    manual_seed(23);
    // (image, out channels, kernel, stride, padding, whether the fold is used)
    type Geometry = ([usize; 4], usize, [usize; 2], [usize; 2], [usize; 2], bool);
    let cases: [Geometry; 8] = [
        ([3, 4, 9, 8], 6, [3, 3], [1, 1], [1, 1], false),
        // The benchmark CNN's conv2 (batch 16).
        ([16, 8, 13, 13], 16, [3, 3], [1, 1], [0, 0], false),
        ([2, 8, 7, 7], 5, [2, 3], [1, 1], [1, 0], false),
        ([2, 4, 6, 6], 3, [5, 5], [1, 1], [2, 2], false),
        ([2, 4, 5, 5], 3, [1, 1], [1, 1], [0, 0], false),
        ([2, 5, 6, 7], 4, [3, 3], [1, 1], [2, 2], false),
        ([2, 1, 8, 8], 4, [3, 3], [1, 1], [0, 0], true),
        ([2, 4, 9, 9], 3, [3, 3], [2, 2], [1, 1], true),
    ];
    let pads: &[bool] = if g.context().default_options().pad_first == Some(true) { &[true] } else { &[false, true] };
    for ((image, o, kernel, stride, padding, folds), &pad_first) in
        cases.iter().flat_map(|c| pads.iter().map(|p| (*c, p)))
    {
        common::set_gpu_options(&dev, GpuOptions { pad_first: Some(pad_first), ..Default::default() });
        let what = format!(
            "{image:?} * [{o}, {}, {kernel:?}], stride {stride:?}, padding {padding:?}, pad first {pad_first}",
            image[1]
        );
        let x = Tensor::randn(&image, DType::F32).unwrap();
        let w = Tensor::randn(&[o, image[1], kernel[0], kernel[1]], DType::F32).unwrap();
        let input_grad = |dev: &Device| {
            let x = x.detach().to(dev).unwrap().requires_grad_(true).unwrap();
            let y = x.conv2d(&w.to(dev).unwrap(), None, stride, padding, [1, 1], 1).unwrap();
            let up = Tensor::from_vec((0..y.numel()).map(|i| ((i * 37 % 11) as f32 - 5.0) / 4.0).collect(), y.shape())
                .unwrap()
                .to(dev)
                .unwrap();
            let (_, profile) = skiff::profile(|| y.mul(&up).unwrap().sum_all().unwrap().backward().unwrap()).unwrap();
            (x.grad().unwrap().to_f64_vec().unwrap(), profile.op("fold2d").is_some())
        };
        let (want, _) = input_grad(&Device::Cpu);
        let (got, folded) = input_grad(&dev);
        // An adapter that pads images first (SwiftShader) keeps the fold.
        assert_eq!(folded, folds || !dev.runs_implicit_gemm() || pad_first, "{what}: fold used");
        common::assert_close(&got, &want, 1e-5);
    }
}

/// A captured function that takes a stride-1 convolution's input gradient
/// on the GPU (the flipped weight's gather included) passes the checks a
/// loaded program gets, and replays to the eager gradient.
#[test]
fn a_captured_input_gradient_gemm_passes_the_load_checks() {
    let Some(dev) = common::gpu() else { return };
    manual_seed(24);
    let w = Tensor::randn(&[6, 4, 3, 3], DType::F32).unwrap().to(&dev).unwrap();
    let input_grad = |x: &Tensor| -> skiff::Result<Vec<Tensor>> {
        let x = x.detach().requires_grad_(true)?;
        let y = x.conv2d(&w, None, [1, 1], [1, 1], [1, 1], 1)?;
        let g = skiff::grad(&[y.mul(&y)?.sum_all()?], std::slice::from_ref(&x), None, Default::default())?;
        Ok(vec![g[0].clone().expect("a gradient")])
    };
    let x = Tensor::randn(&[2, 4, 7, 7], DType::F32).unwrap().to(&dev).unwrap();
    let (_, traced) = skiff::jit::trace(std::slice::from_ref(&x), |i| input_grad(&i[0])).unwrap();
    traced.program().validate().unwrap();
    let x2 = Tensor::randn(&[2, 4, 7, 7], DType::F32).unwrap().to(&dev).unwrap();
    let got = traced.run(std::slice::from_ref(&x2)).unwrap()[0].to_f64_vec().unwrap();
    common::assert_close(&got, &input_grad(&x2).unwrap()[0].to_f64_vec().unwrap(), 1e-6);
}

/// With the implicit GEMM off (`GpuOptions::implicit_gemm`), both products make the columns and multiply
/// them: the same bits, two dispatches.
#[test]
fn without_the_window_kernels_the_products_make_the_columns() {
    let Some(_) = common::gpu() else { return };
    let g = GpuDevice::open_with_options(GpuOptions { implicit_gemm: Some(false), ..Default::default() }).unwrap();
    let dev = Device::Gpu(g.clone());
    assert!(!dev.runs_implicit_gemm());
    manual_seed(22);
    let c = &CASES[3];
    let geo = window(c.image, c.kernel, c.stride, c.padding, c.dilation);
    let x = Tensor::randn(&c.image, DType::F32).unwrap().to(&dev).unwrap();
    let w = Tensor::randn(&[c.out_channels, geo.col_rows()], DType::F32).unwrap().to(&dev).unwrap();
    let gy = Tensor::randn(&[c.image[0], c.out_channels, geo.windows()], DType::F32).unwrap().to(&dev).unwrap();
    let before = g.counters().dispatches;
    let y = conv_gemm("conv_gemm", &w, &x, &geo).unwrap();
    let dw = conv_weight_gemm("conv_weight_gemm", &gy, &x, &geo).unwrap();
    assert_eq!(g.counters().dispatches - before, 4, "unfold and product, twice");
    assert_eq!(bits(&y), bits(&explicit(&w, &x, &geo)));
    assert_eq!(bits(&dw), bits(&explicit_weight(&gy, &x, &geo)));
    let kernels = g.compiled_kernels();
    assert!(
        !kernels.iter().any(|k| k.contains("window") || (k.contains(":blocked:") && k.ends_with(['w', 't']))),
        "{kernels:?}"
    );
}
