//! DType::F16: storage in half the bytes, kernels in f32 with one rounding
//! per op (`backend::half`), on the cpu and on GPUs with shader-f16
//! (lavapipe has it). The registry-wide check is tests/gpu_backend/half_registry.rs.

use crate::common;

use skiff::nn::{Layer, Linear};
use skiff::{f16, jit, DType, Device, Tensor};

fn h(v: &[f32]) -> Vec<f16> {
    v.iter().map(|&x| f16::from_f32(x)).collect()
}

fn f16_tensor(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(h(v), shape).unwrap()
}

/// Deterministic values in about [-2, 2), already representable in f16.
fn values(n: usize, salt: u32) -> Vec<f32> {
    (0..n as u32).map(|i| f16::from_f32(((i * 37 + salt * 11) % 64) as f32 / 16.0 - 2.0).to_f32()).collect()
}

fn bits(t: &Tensor) -> Vec<u16> {
    t.to_vec::<f16>().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[cfg(feature = "gpu")]
fn gpu_with_f16() -> Option<Device> {
    let dev = common::gpu()?;
    let Device::Gpu(g) = &dev else { return None };
    if !g.shader_f16() {
        eprintln!("SKIPPED: {} has no shader-f16", g.name());
        return None;
    }
    Some(dev)
}

#[test]
fn casts_round_to_nearest_even_and_overflow_to_infinity() {
    let x = Tensor::from_vec(vec![1.0f32, 1.0 + 1.0 / 4096.0, 65504.0, 65520.0, -1e-8, 0.1], &[6]).unwrap();
    let y = x.to_dtype(DType::F16).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    let got = y.to_vec::<f16>().unwrap();
    // 1 + 2^-12 is halfway between 1 and the next f16 (2^-10 apart): ties go to even (1).
    assert_eq!(&got[..3], &[f16::ONE, f16::ONE, f16::MAX]);
    assert!(got[3].is_infinite(), "65520 rounds past f16::MAX: {}", got[3]);
    assert_eq!(got[4].to_bits(), f16::NEG_ZERO.to_bits());
    assert_eq!(got[5], f16::from_f32(0.1));
    let back = y.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(back[5], f16::from_f32(0.1).to_f32());
    assert_eq!(y.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap()[..3], [1, 1, 65504]);
}

#[test]
fn an_op_rounds_its_f32_result_once() {
    let (a, b) = (values(24, 1), values(24, 2));
    let (x, y) = (f16_tensor(&a, &[4, 6]), f16_tensor(&b, &[4, 6]));
    let mul = x.mul(&y).unwrap();
    assert_eq!(mul.dtype(), DType::F16);
    let want: Vec<f16> = a.iter().zip(&b).map(|(p, q)| f16::from_f32(p * q)).collect();
    assert_eq!(mul.to_vec::<f16>().unwrap(), want);
    let e = x.exp().unwrap().to_vec::<f16>().unwrap();
    assert_eq!(e, a.iter().map(|v| f16::from_f32(v.exp())).collect::<Vec<_>>());
    // A product accumulates in f32 and rounds once: [4, 6] x [6, 4].
    let p = x.matmul(&y.transpose(0, 1).unwrap()).unwrap();
    for i in 0..4 {
        for j in 0..4 {
            let dot: f32 = (0..6).map(|k| a[i * 6 + k] * b[j * 6 + k]).sum();
            let got = p.to_vec::<f16>().unwrap()[i * 4 + j].to_f32();
            // f32 summation order may differ from this loop's: one f16 step at most.
            assert!((got - dot).abs() <= dot.abs() * 2f32.powi(-10), "({i}, {j}): {got} vs {dot}");
        }
    }
    // A sum of 4096 ones is exact in f32: f16 accumulation would stall at 2048.
    let ones = Tensor::ones(&[4096], DType::F16).unwrap();
    assert_eq!(ones.sum_all().unwrap().to_vec::<f16>().unwrap(), vec![f16::from_f32(4096.0)]);
    // Comparisons give masks, argmax positions: not rounded.
    assert_eq!(x.gt(&y).unwrap().dtype(), DType::Bool);
    assert_eq!(x.argmax(Some(1), false).unwrap().dtype(), DType::I32);
}

#[test]
fn f16_leaves_get_f16_gradients() {
    let a = values(12, 3);
    let x = f16_tensor(&a, &[3, 4]).requires_grad_(true).unwrap();
    let loss = x.mul(&x).unwrap().sum_all().unwrap();
    assert_eq!(loss.dtype(), DType::F16);
    loss.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F16);
    assert_eq!(g.to_vec::<f16>().unwrap(), a.iter().map(|v| f16::from_f32(2.0 * v)).collect::<Vec<_>>());
}

#[test]
fn in_place_updates_write_back_into_f16_storage() {
    let x = f16_tensor(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let alias = x.clone();
    x.add_scalar_(0.5).unwrap();
    assert_eq!(alias.to_vec::<f16>().unwrap(), h(&[1.5, 2.5, 3.5, 4.5]));
    // A strided view written in place leaves the other elements as they were.
    let m = f16_tensor(&values(6, 4), &[2, 3]);
    let before = m.to_vec::<f16>().unwrap();
    m.narrow(1, 1, 1).unwrap().mul_scalar_(2.0).unwrap();
    let after = m.to_vec::<f16>().unwrap();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        let want = if i % 3 == 1 { f16::from_f32(b.to_f32() * 2.0) } else { *b };
        assert_eq!(*a, want, "element {i}");
    }
}

#[test]
fn f16_layers_train_with_sgd() {
    skiff::manual_seed(3);
    let layer = Linear::new(4, 2).unwrap();
    layer.to_dtype(DType::F16).unwrap();
    let x = f16_tensor(&values(8, 5), &[2, 4]);
    let config = skiff::optim::SgdConfig { lr: 0.1, ..Default::default() };
    let mut opt = skiff::optim::Sgd::new(layer.parameters(), config).unwrap();
    let loss = |layer: &Linear| layer.forward(&x).unwrap().pow_scalar(2.0).unwrap().mean(&[], false).unwrap();
    let first = loss(&layer).to_dtype(DType::F32).unwrap().item().unwrap();
    for _ in 0..20 {
        use skiff::optim::Optimizer;
        opt.zero_grad();
        loss(&layer).backward().unwrap();
        opt.step().unwrap();
    }
    let last = loss(&layer).to_dtype(DType::F32).unwrap().item().unwrap();
    assert!(last < first * 0.5, "loss {first} -> {last}");
    assert!(layer.parameters().iter().all(|p| p.dtype() == DType::F16));
}

#[test]
fn safetensors_keep_f16_bits() {
    let x = f16_tensor(&[0.1, -2.5, 65504.0], &[3]);
    let bytes = skiff::io::safetensors::to_bytes(&[("x".into(), x.clone())]).unwrap();
    let back = skiff::io::safetensors::from_bytes(&bytes, &Device::Cpu).unwrap();
    assert_eq!(back[0].1.dtype(), DType::F16);
    assert_eq!(bits(&back[0].1), bits(&x));
}

#[test]
fn a_compiled_f16_function_gives_eager_bits() {
    let f = |xs: &[Tensor]| -> skiff::Result<Vec<Tensor>> {
        let y = xs[0].mul(&xs[1])?.add_scalar(1.0)?.relu()?.matmul(&xs[1].transpose(0, 1)?)?;
        Ok(vec![y.softmax(1)?])
    };
    let inputs = |salt| vec![f16_tensor(&values(12, salt), &[3, 4]), f16_tensor(&values(12, salt + 1), &[3, 4])];
    let mut step = jit::compile(f);
    for salt in 0..3 {
        let xs = inputs(salt);
        let got = step.call(&xs).unwrap();
        assert_eq!(bits(&got[0]), bits(&f(&xs).unwrap()[0]), "call {salt}");
    }
    assert_eq!(step.replays(), 2);
}

#[cfg(feature = "gpu")]
#[test]
fn the_gpu_stores_f16_in_half_the_bytes_and_matches_the_cpu() {
    if gpu_with_f16().is_none() {
        return;
    }
    // A private device: other tests' buffers on the shared one would move its counters.
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    let (a, b) = (values(4096, 6), values(4096, 7));
    let (x, y) = (f16_tensor(&a, &[64, 64]), f16_tensor(&b, &[64, 64]));
    g.synchronize().unwrap();
    let live = g.counters().bytes_live;
    let (xg, yg) = (x.to(&dev).unwrap(), y.to(&dev).unwrap());
    g.synchronize().unwrap();
    assert_eq!(g.counters().bytes_live - live, 2 * 4096 * 2, "two 4096-element f16 buffers");
    assert_eq!(bits(&xg), bits(&x), "upload and download keep the bits");
    // The elementwise templates load f16 and round at the store: one kernel, no conversions.
    let before = g.counters().dispatches;
    let _ = xg.mul(&yg).unwrap().relu().unwrap();
    assert_eq!(g.counters().dispatches - before, 2, "mul and relu of f16 are one kernel each");
    // Exact f32 ops rounded once agree to the bit; others within one f16 step.
    assert_eq!(bits(&xg.mul(&yg).unwrap()), bits(&x.mul(&y).unwrap()));
    assert_eq!(
        bits(&xg.transpose(0, 1).unwrap().add(&yg).unwrap()),
        bits(&x.transpose(0, 1).unwrap().add(&y).unwrap())
    );
    // A column broadcast along the innermost dim: the 4-wide kernel reads it as one element, repeated.
    let col = f16_tensor(&values(64, 8), &[64, 1]);
    assert_eq!(bits(&xg.add(&col.to(&dev).unwrap()).unwrap()), bits(&x.add(&col).unwrap()));
    assert_eq!(bits(&col.to(&dev).unwrap().sub(&yg).unwrap()), bits(&col.sub(&y).unwrap()));
    let close = |g: &Tensor, c: &Tensor| {
        let (g, c) = (g.to_f64_vec().unwrap(), c.to_f64_vec().unwrap());
        for (i, (p, q)) in g.iter().zip(&c).enumerate() {
            assert!((p - q).abs() <= 1e-3 * q.abs().max(1.0), "element {i}: gpu {p} vs cpu {q}");
        }
    };
    close(&xg.matmul(&yg).unwrap(), &x.matmul(&y).unwrap());
    close(&xg.sum(&[1], false).unwrap(), &x.sum(&[1], false).unwrap());
    close(&xg.tanh().unwrap(), &x.tanh().unwrap());
    // In place on the device.
    let z = xg.clone();
    z.add_scalar_(1.0).unwrap();
    assert_eq!(bits(&xg), bits(&x.add_scalar(1.0).unwrap()));
}

#[cfg(feature = "gpu")]
#[test]
fn a_compiled_f16_function_replays_on_the_gpu_as_eager() {
    let Some(dev) = gpu_with_f16() else { return };
    let f = |xs: &[Tensor]| -> skiff::Result<Vec<Tensor>> {
        let h = xs[0].matmul(&xs[1])?.relu()?.mul_scalar(0.5)?;
        Ok(vec![h.sum(&[1], false)?, h])
    };
    let inputs =
        |salt| [values(64, salt), values(64, salt + 1)].map(|v| f16_tensor(&v, &[8, 8]).to(&dev).unwrap()).to_vec();
    let mut step = jit::compile(f);
    for salt in 0..3 {
        let xs = inputs(salt);
        let got = step.call(&xs).unwrap();
        let want = f(&xs).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.dtype(), DType::F16);
            assert_eq!(bits(g), bits(w), "call {salt}");
        }
    }
    assert_eq!(step.replays(), 2);
}

/// The GPU products read f16 operands in place (`array<f16>`, converted at
/// each load), accumulate in f32 and round once at the store: the same bits
/// as widening both operands, multiplying in f32 and rounding the product,
/// in one dispatch instead of four. Covers every block size, the vec4 loads
/// (K unrolled or not), transposed views, broadcast batches and ragged edges.
#[cfg(feature = "gpu")]
#[test]
fn f16_products_on_the_gpu_read_f16_and_round_once() {
    if gpu_with_f16().is_none() {
        return;
    }
    // A private device: its counters and its K unrolling are this test's alone.
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    skiff::manual_seed(18);
    let half = |shape: &[usize]| Tensor::randn(shape, DType::F32).unwrap().to_dtype(DType::F16).unwrap();
    type View = fn(&Tensor) -> Tensor;
    let plain: View = |t| t.clone();
    let transposed: View = |t| t.transpose(-1, -2).unwrap();
    for steps in [1, 4] {
        common::set_gpu_options(&dev, skiff::device::GpuOptions { matmul_unroll: Some(steps), ..Default::default() });
        for &(m, k, n) in &[(1, 1, 1), (3, 5, 7), (8, 9, 16), (16, 64, 128), (33, 70, 65), (64, 300, 256)] {
            // (A's storage shape, how A is viewed; the same for B), per case.
            let cases: [(Vec<usize>, View, Vec<usize>, View); 4] = [
                (vec![m, k], plain, vec![k, n], plain),
                (vec![k, m], transposed, vec![n, k], transposed),
                (vec![3, m, k], plain, vec![1, k, n], plain),
                (vec![2, k, m], transposed, vec![k, n], plain),
            ];
            for (sa, va, sb, vb) in cases {
                let what = format!("{m}x{k}x{n}, A {sa:?}, B {sb:?}, K unrolled {steps}x");
                let (a, b) = (half(&sa), half(&sb));
                let (ag, bg) = (va(&a.to(&dev).unwrap()), vb(&b.to(&dev).unwrap()));
                let before = g.counters().dispatches;
                let got = ag.matmul(&bg).unwrap();
                assert_eq!(g.counters().dispatches - before, 1, "{what}: one kernel");
                assert_eq!(got.dtype(), DType::F16, "{what}");
                let wide = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
                let want = wide(&ag).matmul(&wide(&bg)).unwrap().to_dtype(DType::F16).unwrap();
                assert_eq!(bits(&got), bits(&want), "{what}: widened and rounded once");
                // And the cpu's product, up to the two kernels' summation orders.
                let cpu = va(&a).matmul(&vb(&b)).unwrap().to_f64_vec().unwrap();
                for (i, (p, q)) in got.to_f64_vec().unwrap().iter().zip(&cpu).enumerate() {
                    assert!((p - q).abs() <= 2e-3 * q.abs().max(1.0), "{what}: element {i}: gpu {p} vs cpu {q}");
                }
            }
        }
    }
    // Where the blocked kernel runs (software adapters), every load mode ran on f16.
    let kernels = g.compiled_kernels();
    let f16_blocked: Vec<&String> = kernels.iter().filter(|k| k.starts_with("matmul:f16:blocked:")).collect();
    if !f16_blocked.is_empty() {
        for modes in ["u1ss", "u1sx", "u1xs", "u1xx", "u4kx", "u4xs"] {
            assert!(f16_blocked.iter().any(|k| k.ends_with(modes)), "{modes}: {f16_blocked:?}");
        }
    } else {
        assert!(kernels.iter().any(|k| k == "matmul:f16"), "{kernels:?}");
    }
}

/// The GPU reductions read f16 in place, reduce in f32 and round once at the
/// store: the bits of widening, reducing in f32 and rounding, in one dispatch
/// (two where a long reduction splits into f32 partials) instead of three.
/// Rows, columns, all axes, a transposed view, NaN and indices.
#[cfg(feature = "gpu")]
#[test]
fn f16_reductions_on_the_gpu_read_f16_and_round_once() {
    if gpu_with_f16().is_none() {
        return;
    }
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    skiff::manual_seed(19);
    let wide = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
    let narrow = |t: Tensor| t.to_dtype(DType::F16).unwrap();
    type Reduction = fn(&Tensor) -> Tensor;
    let reductions: [(&str, Reduction); 6] = [
        ("sum rows", |t| t.sum(&[-1], false).unwrap()),
        ("sum columns", |t| t.sum(&[0], true).unwrap()),
        ("sum all", |t| t.sum(&[0, 1], false).unwrap()),
        ("max rows", |t| t.max(&[-1], false).unwrap()),
        ("min columns", |t| t.min(&[0], false).unwrap()),
        ("argmax rows", |t| t.argmax(Some(-1), false).unwrap()),
    ];
    // [300, 700] sums over all 210,000 elements in two passes (f32 partials).
    for shape in [[5, 7], [64, 33], [300, 700]] {
        let x = narrow(Tensor::randn(&shape, DType::F32).unwrap().mul_scalar(4.0).unwrap()).to(&dev).unwrap();
        for (view, how) in [(x.clone(), "contiguous"), (x.transpose(0, 1).unwrap(), "transposed")] {
            for (what, reduce) in reductions {
                let what = format!("{what} of {:?} ({how})", view.shape());
                let before = g.counters().dispatches;
                let got = reduce(&view);
                let dispatches = g.counters().dispatches - before;
                let want = reduce(&wide(&view));
                if what.starts_with("argmax") {
                    assert_eq!(got.to_vec::<i32>().unwrap(), want.to_vec::<i32>().unwrap(), "{what}");
                } else {
                    assert_eq!(got.dtype(), DType::F16, "{what}");
                    assert_eq!(bits(&got), bits(&narrow(want)), "{what}: reduced in f32, rounded once");
                }
                assert!(
                    dispatches == 1 || (dispatches == 2 && what.contains("sum all")),
                    "{what}: {dispatches} dispatches"
                );
            }
        }
    }
    // The split sum ran: f16 into f32 partials, then f32 partials into f16.
    let kernels = g.compiled_kernels();
    for key in ["reduce:Sum:f16:f16", "reduce:Sum:f16:f32", "reduce:Sum:f32:f16", "reduce:ArgMax:f16:i32"] {
        // (":wg64" where each thread reduces alone: software adapters.)
        assert!(kernels.iter().any(|k| k == key || *k == format!("{key}:wg64")), "{key}: {kernels:?}");
    }
    // NaN propagates through f16 max and sum; argmax finds it first.
    let mut v = values(12, 3);
    v[5] = f32::NAN;
    let x = f16_tensor(&v, &[3, 4]).to(&dev).unwrap();
    let row1 = |t: Tensor| t.to_f64_vec().unwrap()[1];
    assert!(row1(x.max(&[1], false).unwrap()).is_nan() && row1(x.sum(&[1], false).unwrap()).is_nan());
    assert_eq!(x.argmax(Some(1), false).unwrap().to_vec::<i32>().unwrap()[1], 1);
}

/// The GPU's convolution and index kernels move f16 as is, add it in f32 and
/// round once (fold, the scatters), and compare it as f32 (window argmax):
/// the cpu's bits (its kernels widen, run in f32 and round; the GPU's f32
/// kernels sum in the cpu's order), with no conversion kernel on the GPU.
#[cfg(feature = "gpu")]
#[test]
fn f16_convolution_and_index_kernels_on_the_gpu_match_the_cpu_bits() {
    if gpu_with_f16().is_none() {
        return;
    }
    let g = skiff::device::GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    skiff::manual_seed(20);
    let half = |shape: &[usize]| Tensor::randn(shape, DType::F32).unwrap().to_dtype(DType::F16).unwrap();
    let x = half(&[2, 3, 9, 8]);
    let cols = half(&[2, 3 * 3 * 3, 5 * 3]);
    let idx = Tensor::from_vec(vec![2i32, 0, 2, 1, 2], &[5]).unwrap();
    let gather_idx = Tensor::from_vec((0..2 * 3 * 5).map(|i: i32| i * 7 % 8).collect::<Vec<_>>(), &[2, 3, 5]).unwrap();
    let src = half(&[2, 3, 5]);
    // Targets 0..4 along the last axis of `src`, each hit more than once.
    let scatter_idx = Tensor::from_vec((0..2 * 3 * 5).map(|i: i32| i * 3 % 4).collect::<Vec<_>>(), &[2, 3, 5]).unwrap();
    type Case = (&'static str, fn(&[Tensor]) -> Tensor);
    let cases: [Case; 8] = [
        ("unfold2d", |t| t[0].unfold2d([3, 3], [2, 2], [1, 1], [1, 1]).unwrap()),
        ("fold2d", |t| t[1].fold2d([9, 8], [3, 3], [2, 2], [1, 0], [1, 1]).unwrap()),
        ("max_pool2d_indices", |t| t[0].max_pool2d_indices([3, 2], [2, 2], [1, 0]).unwrap()),
        ("max_pool2d", |t| t[0].max_pool2d([2, 2], [2, 2], [0, 0]).unwrap()),
        ("index_select", |t| t[0].index_select(1, &t[2]).unwrap()),
        ("gather", |t| t[0].reshape(&[2, 3, 72]).unwrap().gather(2, &t[3]).unwrap()),
        ("index_add", |t| t[0].index_add(1, &t[2], &t[0].index_select(1, &t[2]).unwrap()).unwrap()),
        ("scatter_add", |t| t[4].scatter_add(2, &t[5], &t[4]).unwrap()),
    ];
    let cpu = [x, cols, idx, gather_idx, src, scatter_idx];
    let gpu: Vec<Tensor> = cpu.iter().map(|t| t.to(&dev).unwrap()).collect();
    for (what, f) in cases {
        let (want, got) = (f(&cpu), f(&gpu));
        assert_eq!(got.dtype(), want.dtype(), "{what}");
        if want.dtype() == DType::F16 {
            assert_eq!(bits(&got), bits(&want), "{what}");
        } else {
            assert_eq!(got.to_vec::<i32>().unwrap(), want.to_vec::<i32>().unwrap(), "{what}");
        }
    }
    // The backward of unfold (fold) and of max pooling (the windowed
    // scatter), of sum(y * y): an upstream gradient of f16 values, 2y.
    for (what, f) in [cases[0], cases[3]] {
        let grad = |x: &Tensor| {
            let x = x.detach().requires_grad_(true).unwrap();
            let y = f(std::slice::from_ref(&x));
            y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
            x.grad().unwrap()
        };
        assert_eq!(bits(&grad(&gpu[0])), bits(&grad(&cpu[0])), "{what} backward");
    }
    let kernels = g.compiled_kernels();
    // (Fills of f16 are made in f32 and rounded: `cast:f32:f16` is expected.)
    assert!(!kernels.iter().any(|k| k.starts_with("cast:f16:f32")), "nothing widened: {kernels:?}");
    let f16_kernels = ["conv:unfold:", "conv:fold:", "conv:window_argmax:", "index:gather:", "index:scatter_add:"];
    for prefix in f16_kernels.into_iter().chain(["index:scatter_add_window:"]) {
        assert!(kernels.iter().any(|k| k.starts_with(prefix) && k.contains("f16")), "{prefix}: {kernels:?}");
    }
}
