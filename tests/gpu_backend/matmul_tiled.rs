//! The tiled matmul kernel (`shaders/matmul.wgsl`, the one real GPUs run)
//! on whatever adapter is here: software adapters pick the blocked kernel,
//! so this test opens a device that runs the tiled one
//! (`GpuOptions::matmul_kernel`) and checks it against the cpu in
//! f32 and, where the adapter has shader-f16, against the f32 kernel's
//! widened and rounded product in f16, and its implicit GEMM (B read through
//! a window) against the explicit product; each with 64x64 tiles and with
//! the wide 128x128 ones, staging an aligned B as vec4s and other operands
//! one element per load (`matmul/tiled.rs`).

#![cfg(feature = "gpu")]

use crate::common;

use skiff::device::{GpuDevice, GpuOptions, MatmulKernel};
use skiff::{manual_seed, DType, Device, Tensor};

#[test]
fn the_tiled_kernel_matches_the_cpu_in_f32_and_rounds_f16_once() {
    let Some(_) = common::gpu() else { return };
    let tiled = GpuOptions { matmul_kernel: Some(MatmulKernel::Tiled), ..Default::default() };
    let g = GpuDevice::open_with_options(tiled).unwrap();
    let dev = Device::Gpu(g.clone());
    manual_seed(7);
    let shapes: [(&[usize], &[usize], bool); 8] = [
        (&[1, 1], &[1, 1], false),
        (&[65, 33], &[33, 17], false),
        (&[70, 64], &[64, 130], false),
        (&[3, 17, 40], &[1, 40, 9], false),
        // B read through a transposed view: [n, k] storage.
        (&[9, 20], &[66, 20], true),
        // Past one wide tile each way, K not a multiple of either slice.
        (&[2, 131, 37], &[2, 37, 257], false),
        (&[129, 8], &[130, 8], true),
        // Both operands aligned (B staged as vec4s), K = 36 ends inside a slice.
        (&[2, 132, 36], &[2, 36, 260], false),
    ];
    let wide_from =
        |tiles| common::set_gpu_options(&dev, GpuOptions { matmul_wide_from: Some(tiles), ..Default::default() });
    // Every shape with both tiles: 64x64, then 128x128 (from one tile on).
    for ((sa, sb, b_transposed), wide) in shapes.into_iter().flat_map(|s| [(s, false), (s, true)]) {
        wide_from(if wide { 1 } else { usize::MAX });
        let tiles = if wide { "128x128" } else { "64x64" };
        let what = format!("{sa:?} x {sb:?}{}, {tiles} tiles", if b_transposed { " (B transposed)" } else { "" });
        let (a, b) = (Tensor::randn(sa, DType::F32).unwrap(), Tensor::randn(sb, DType::F32).unwrap());
        let view = |t: Tensor| if b_transposed { t.transpose(-1, -2).unwrap() } else { t };
        let want = a.matmul(&view(b.clone())).unwrap().to_vec::<f32>().unwrap();
        let (ag, bg) = (a.to(&dev).unwrap(), view(b.to(&dev).unwrap()));
        let got = ag.matmul(&bg).unwrap().to_vec::<f32>().unwrap();
        let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        for (i, (w, v)) in want.iter().zip(&got).enumerate() {
            assert!((w - v).abs() <= 1e-4 * scale, "{what}: element {i}: cpu {w} vs gpu {v}");
        }
        if g.shader_f16() {
            let (ah, bh) = (ag.to_dtype(DType::F16).unwrap(), bg.to_dtype(DType::F16).unwrap());
            let product = ah.matmul(&bh).unwrap();
            assert_eq!(product.dtype(), DType::F16, "{what}");
            let wide = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let rounded = wide(&ah).matmul(&wide(&bh)).unwrap().to_dtype(DType::F16).unwrap();
            let bits = |t: &Tensor| t.to_vec::<skiff::f16>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&product), bits(&rounded), "{what}: f16 product");
        }
    }
    // Operands read through views whose rows are longer than the view, the
    // elements outside the views infinite: A's rows 24 apart, 18 long (at
    // offsets 0 and 1), B's 136 apart, 130 long, staged as vec4s whose last
    // one reaches 2 columns past the view. No infinity may reach C.
    let with_infinities = |shape: [usize; 2], start: usize, len: usize| {
        let values = Tensor::randn(&shape, DType::F32).unwrap().to_vec::<f32>().unwrap();
        let outside = |i: usize| i % shape[1] < start || i % shape[1] >= start + len;
        let values = values.iter().enumerate().map(|(i, &v)| if outside(i) { f32::INFINITY } else { v }).collect();
        Tensor::from_vec::<f32>(values, &shape).unwrap()
    };
    for (wide, start) in [(false, 0), (true, 0), (true, 1)] {
        wide_from(if wide { 1 } else { usize::MAX });
        let (a, b) = (with_infinities([140, 24], start, 18), with_infinities([18, 136], 0, 130));
        let want = a.narrow(1, start, 18).unwrap().matmul(&b.narrow(1, 0, 130).unwrap()).unwrap();
        let (ag, bg) = (a.to(&dev).unwrap(), b.to(&dev).unwrap());
        let got = ag.narrow(1, start, 18).unwrap().matmul(&bg.narrow(1, 0, 130).unwrap()).unwrap();
        let (want, got) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
        let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        for (i, (w, v)) in want.iter().zip(&got).enumerate() {
            assert!((w - v).abs() <= 1e-4 * scale, "views at {start}, wide {wide}: element {i}: cpu {w} vs gpu {v}");
        }
    }
    wide_from(g.context().default_options().matmul_wide_from.unwrap());
    // The implicit GEMM's tiled kernel: the explicit product's bits.
    let geo = skiff::kernel::Window2d {
        n: 2,
        c: 3,
        h: 9,
        w: 8,
        kernel: [3, 2],
        stride: [2, 1],
        padding: [1, 1],
        dilation: [1, 2],
        out_h: 5,
        out_w: 8,
    };
    let x = Tensor::randn(&[2, 3, 9, 8], DType::F32).unwrap().to(&dev).unwrap();
    let w = Tensor::randn(&[70, 18], DType::F32).unwrap().to(&dev).unwrap();
    let implicit = skiff::dispatch::conv::conv_gemm("conv_gemm", &w, &x, &geo).unwrap();
    let explicit = w.matmul(&x.unfold2d(geo.kernel, geo.stride, geo.padding, geo.dilation).unwrap()).unwrap();
    assert_eq!(implicit.shape(), explicit.shape());
    let f32_bits = |t: &Tensor| t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let differ = f32_bits(&implicit).iter().zip(f32_bits(&explicit)).filter(|(a, b)| **a != *b).count();
    assert_eq!(differ, 0, "implicit GEMM: {differ} elements differ from the explicit product");
    // And the weight gradient's, through the transposed window.
    let gy = Tensor::randn(&[2, 70, 40], DType::F32).unwrap().to(&dev).unwrap();
    let implicit = skiff::dispatch::conv::conv_weight_gemm("conv_weight_gemm", &gy, &x, &geo).unwrap();
    let cols = x.unfold2d(geo.kernel, geo.stride, geo.padding, geo.dilation).unwrap();
    let explicit = gy.matmul(&cols.transpose(1, 2).unwrap()).unwrap();
    let differ = f32_bits(&implicit).iter().zip(f32_bits(&explicit)).filter(|(a, b)| **a != *b).count();
    assert_eq!(differ, 0, "implicit weight GEMM: {differ} elements differ from the explicit product");
    let kernels = g.compiled_kernels();
    assert!(kernels.iter().any(|k| k == "matmul:f32:window"), "the tiled implicit GEMM ran: {kernels:?}");
    assert!(kernels.iter().any(|k| k == "matmul:f32:window_t"), "and its transpose: {kernels:?}");
    assert!(kernels.iter().any(|k| k == "matmul:f32"), "the tiled kernel ran: {kernels:?}");
    assert!(kernels.iter().any(|k| k == "matmul:f32:wide"), "with wide tiles too: {kernels:?}");
    if g.context().options().matmul_vec4 == Some(true) {
        for key in ["matmul:f32:b4", "matmul:f32:wide:b4"] {
            assert!(kernels.iter().any(|k| k == key), "{key} ran: {kernels:?}");
        }
    }
    assert!(!kernels.iter().any(|k| k.contains(":blocked:")), "no blocked kernel: {kernels:?}");
    if g.shader_f16() {
        assert!(kernels.iter().any(|k| k == "matmul:f16"), "{kernels:?}");
    }
}
