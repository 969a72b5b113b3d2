//! The GPU's index kernels (index_select, gather, index_add, scatter_add) and
//! sliding-window kernels (unfold, fold, window_argmax) against the cpu
//! kernels, on small and medium cases with strided and permuted views,
//! repeated indices, padding, stride and dilation, ties and NaN. These
//! kernels add in the cpu's order, so results must agree bit for bit. Then
//! the composites built on them (conv2d, pools, cross_entropy, embedding),
//! forward and backward, within float tolerance (they also use matmul and
//! reductions). Without a GPU adapter each test prints a loud SKIPPED line
//! and passes; the naga validation of the shaders runs everywhere.
#![cfg(feature = "gpu")]

use crate::common;

use crate::common::{expect_err, Kind};
use skiff::backend::gpu::{conv as gconv, index as gindex};
use skiff::device::GpuOptions;
use skiff::{DType, Device, Reduction, Result, Tensor};
/// A private context per test: `each_mode` switches its sliding-window kernels.
fn gpu() -> Option<Device> {
    common::private_gpu().map(|(d, _)| d)
}

/// Deterministic pseudo-random numbers in [0, 1) (xorshift64*), so failures reproduce.
fn unit(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

fn floats(shape: &[usize], seed: u64) -> Tensor {
    let v: Vec<f32> = unit(shape.iter().product(), seed).into_iter().map(|u| (2.0 * u - 1.0) as f32).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// Small integers as f32: many exact ties inside pooling windows.
fn coarse(shape: &[usize], levels: f64, seed: u64) -> Tensor {
    let v: Vec<f32> = unit(shape.iter().product(), seed).into_iter().map(|u| (u * levels).floor() as f32).collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn ints(shape: &[usize], lo: i32, hi: i32, seed: u64) -> Tensor {
    let span = (hi - lo) as f64;
    let v: Vec<i32> = unit(shape.iter().product(), seed).into_iter().map(|u| lo + (u * span) as i32).collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn bools(shape: &[usize], seed: u64) -> Tensor {
    let v: Vec<bool> = unit(shape.iter().product(), seed).into_iter().map(|u| u < 0.5).collect();
    Tensor::from_bools(&v, shape).unwrap()
}

/// Runs `f` on `inputs` on the cpu and on copies on the GPU (views taken
/// inside `f` therefore reach the GPU kernels as strided layouts).
fn both(dev: &Device, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Tensor>) -> (Tensor, Tensor) {
    let on_gpu: Vec<Tensor> = inputs.iter().map(|t| t.to(dev).unwrap()).collect();
    let g = f(&on_gpu).unwrap();
    assert!(matches!(g.device(), Device::Gpu(_)), "the result left the GPU");
    (f(inputs).unwrap(), g.to(&Device::Cpu).unwrap())
}

/// Bit-exact agreement (NaN equals NaN).
fn assert_same(what: &str, cpu: &Tensor, gpu: &Tensor) {
    assert_eq!(cpu.shape(), gpu.shape(), "{what}: shapes");
    assert_eq!(cpu.dtype(), gpu.dtype(), "{what}: dtypes");
    match cpu.dtype() {
        DType::F32 => {
            let (a, b) = (cpu.to_vec::<f32>().unwrap(), gpu.to_vec::<f32>().unwrap());
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{what}: [{i}] cpu {x} gpu {y}");
            }
        }
        DType::I32 => assert_eq!(cpu.to_vec::<i32>().unwrap(), gpu.to_vec::<i32>().unwrap(), "{what}"),
        DType::Bool => assert_eq!(cpu.to_vec::<u8>().unwrap(), gpu.to_vec::<u8>().unwrap(), "{what}"),
        DType::F16 => assert_eq!(cpu.to_vec::<skiff::f16>().unwrap(), gpu.to_vec::<skiff::f16>().unwrap(), "{what}"),
        DType::F64 => unreachable!("f64 does not reach the GPU"),
    }
}

fn check(dev: &Device, what: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let (c, g) = both(dev, inputs, f);
    assert_same(what, &c, &g);
}

/// Float agreement within `tol` relative to the largest magnitude (for composites).
fn assert_close(what: &str, cpu: &Tensor, gpu: &Tensor, tol: f32) {
    assert_eq!(cpu.shape(), gpu.shape(), "{what}: shapes");
    let (a, b) = (cpu.to_vec::<f32>().unwrap(), gpu.to_vec::<f32>().unwrap());
    let scale = a.iter().fold(1.0f32, |m, x| m.max(x.abs()));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= tol * scale, "{what}: [{i}] cpu {x} gpu {y}");
    }
}

#[test]
fn shaders_validate_with_naga() {
    let all: Vec<_> = gindex::sources().into_iter().chain(gconv::sources()).collect();
    // index: 4 gather (f32, i32, bool, f16), 1 range check, 6 scatter and 6 windowed
    // scatter (per element, per row) over f32, i32, f16; conv: 3 kernels x 2 modes x (f32, f16)
    assert_eq!(all.len(), 29);
    for (name, src) in all {
        common::validate_wgsl(&name, &src);
    }
}

#[test]
fn index_select_matches_cpu() {
    let Some(dev) = gpu() else { return };
    for (dt, x) in [("f32", floats(&[4, 5, 3], 1)), ("i32", ints(&[4, 5, 3], -9, 9, 2)), ("bool", bools(&[4, 5, 3], 3))]
    {
        for axis in 0..3isize {
            let n = x.shape()[axis as usize] as i32;
            let idx = ints(&[7], 0, n, 4 + axis as u64); // 7 > n: repeats
            check(&dev, &format!("{dt} axis {axis}"), &[x.clone(), idx], |t| t[0].index_select(axis, &t[1]));
        }
        // A permuted input and a strided (every other element) index.
        let idx = ints(&[10], 0, 3, 5);
        check(&dev, &format!("{dt} permuted, strided index"), &[x.clone(), idx], |t| {
            t[0].permute(&[2, 0, 1])?.index_select(0, &t[1].slice(0, 1, 10, 2)?)
        });
        check(&dev, &format!("{dt} empty index"), &[x.clone(), ints(&[0], 0, 1, 0)], |t| t[0].index_select(1, &t[1]));
    }
    // Medium: an embedding-sized lookup of a sliced table.
    check(&dev, "medium", &[floats(&[300, 70], 6), ints(&[2000], 0, 300, 7)], |t| {
        t[0].narrow(1, 3, 64)?.index_select(0, &t[1])
    });
}

#[test]
fn gather_matches_cpu() {
    let Some(dev) = gpu() else { return };
    for (dt, x) in [("f32", floats(&[3, 4, 5], 1)), ("i32", ints(&[3, 4, 5], -9, 9, 2)), ("bool", bools(&[3, 4, 5], 3))]
    {
        for axis in 0..3usize {
            // The index is smaller than x outside the axis and longer along it (repeats).
            let mut shape = vec![2, 3, 4];
            shape[axis] = 6;
            let idx = ints(&shape, 0, x.shape()[axis] as i32, 10 + axis as u64);
            check(&dev, &format!("{dt} axis {axis}"), &[x.clone(), idx], |t| t[0].gather(axis as isize, &t[1]));
        }
        // Permuted data and a transposed index.
        let idx = ints(&[4, 3, 2], 0, 4, 8);
        check(&dev, &format!("{dt} permuted"), &[x.clone(), idx], |t| {
            t[0].permute(&[2, 0, 1])?.gather(-1, &t[1].transpose(0, 2)?)
        });
    }
    // Medium: max pooling's gather of [planes, H*W] at per-window positions.
    check(&dev, "medium", &[floats(&[96, 784], 11), ints(&[96, 196], 0, 784, 12)], |t| t[0].gather(1, &t[1]));
}

#[test]
fn index_add_matches_cpu_bit_for_bit() {
    let Some(dev) = gpu() else { return };
    for (dt, base, src, src_t) in [
        ("f32", floats(&[4, 3, 5], 1), floats(&[4, 9, 5], 2), floats(&[9, 3, 5], 3)),
        ("i32", ints(&[4, 3, 5], -50, 50, 3), ints(&[4, 9, 5], -50, 50, 4), ints(&[9, 3, 5], -50, 50, 5)),
    ] {
        let idx = ints(&[9], 0, 3, 5);
        check(&dev, &format!("{dt} middle axis"), &[base.clone(), idx, src], |t| t[0].index_add(1, &t[1], &t[2]));
        // Transposed base and source, strided index.
        let idx = ints(&[18], 0, 4, 6);
        check(&dev, &format!("{dt} transposed"), &[base, idx, src_t], |t| {
            t[0].transpose(0, 1)?.index_add(1, &t[1].slice(0, 0, 18, 2)?, &t[2].transpose(0, 1)?)
        });
    }
    // Medium: an embedding backward (many repeats) into a broadcast zero base.
    check(
        &dev,
        "medium",
        &[Tensor::zeros(&[1, 1], DType::F32).unwrap(), ints(&[3000], 0, 50, 7), floats(&[3000, 32], 8)],
        |t| t[0].expand(&[50, 32])?.index_add(0, &t[1], &t[2]),
    );
}

#[test]
fn scatter_add_matches_cpu_bit_for_bit() {
    let Some(dev) = gpu() else { return };
    for (dt, base, src) in [
        ("f32", floats(&[3, 4, 5], 1), floats(&[5, 5, 6], 2)),
        ("i32", ints(&[3, 4, 5], -50, 50, 3), ints(&[5, 5, 6], -50, 50, 4)),
    ] {
        for axis in 0..3usize {
            // Index: along the axis up to src's extent (repeats), elsewhere smaller than both.
            let mut shape = vec![2, 3, 4];
            shape[axis] = 5;
            let idx = ints(&shape, 0, base.shape()[axis] as i32, 20 + axis as u64);
            check(&dev, &format!("{dt} axis {axis}"), &[base.clone(), idx, src.clone()], |t| {
                t[0].scatter_add(axis as isize, &t[1], &t[2])
            });
        }
        let idx = ints(&[4, 3, 2], 0, 3, 9);
        check(&dev, &format!("{dt} permuted"), &[base.clone(), idx, src.clone()], |t| {
            t[0].permute(&[1, 0, 2])?.scatter_add(1, &t[1].permute(&[0, 2, 1])?, &t[2].permute(&[1, 2, 0])?)
        });
    }
    // Medium: max pooling's backward and cross-entropy's (one index per row).
    check(&dev, "medium pool", &[floats(&[96, 784], 10), ints(&[96, 196], 0, 784, 11), floats(&[96, 196], 12)], |t| {
        t[0].scatter_add(1, &t[1], &t[2])
    });
    check(
        &dev,
        "medium one per row",
        &[floats(&[512, 100], 13), ints(&[512, 1], 0, 100, 14), floats(&[512, 1], 15)],
        |t| t[0].scatter_add(1, &t[1], &t[2]),
    );
}

#[test]
fn bad_indices_are_errors_on_the_gpu() {
    let Some(dev) = gpu() else { return };
    let x = floats(&[3, 4], 1).to(&dev).unwrap();
    for bad in [-1, 3, i32::MAX] {
        let idx1 = Tensor::from_vec(vec![0, bad, 1], &[3]).unwrap().to(&dev).unwrap();
        let idx2 = Tensor::from_vec(vec![0, 1, bad, 2], &[2, 2]).unwrap().to(&dev).unwrap();
        let src1 = floats(&[3, 4], 2).to(&dev).unwrap();
        let src2 = floats(&[2, 2], 3).to(&dev).unwrap();
        for (op, idx_shape, r) in [
            ("index_select", "[3]", x.index_select(0, &idx1)),
            ("index_add", "[3]", x.index_add(0, &idx1, &src1)),
            ("gather", "[2, 2]", x.gather(0, &idx2)),
            ("scatter_add", "[2, 2]", x.scatter_add(0, &idx2, &src2)),
        ] {
            let fact = format!(
                "index {bad} is out of range for axis 0 of size 3 (input shape [3, 4], index shape {idx_shape})"
            );
            expect_err(r, Kind::Value, op, &[&fact]);
        }
    }
    // The device is unharmed.
    let idx = Tensor::from_vec(vec![2, 0], &[2]).unwrap().to(&dev).unwrap();
    let got = x.index_select(0, &idx).unwrap().to_vec::<f32>().unwrap();
    let want = floats(&[3, 4], 1).index_select(0, &Tensor::from_vec(vec![2, 0], &[2]).unwrap()).unwrap();
    assert_eq!(got, want.to_vec::<f32>().unwrap());
}

type Geometry = ([usize; 2], [usize; 2], [usize; 2], [usize; 2]);

const GEOMETRIES: [Geometry; 6] = [
    // kernel, stride, padding, dilation
    ([3, 3], [1, 1], [0, 0], [1, 1]),
    ([2, 3], [2, 2], [1, 1], [1, 1]),
    ([2, 2], [1, 2], [2, 1], [2, 2]),
    ([3, 2], [2, 1], [1, 0], [1, 3]),
    ([1, 1], [3, 3], [0, 0], [1, 1]),
    ([5, 5], [1, 1], [2, 2], [1, 1]),
];

/// Runs `f` with the sliding-window kernels in each mode (one invocation
/// per output element, then per output row: `shaders/conv.wgsl`), naming
/// the mode (on the test's private context).
fn each_mode(dev: &Device, f: impl Fn(&str)) {
    for rows in [false, true] {
        common::set_gpu_options(dev, GpuOptions { row_kernels: Some(rows), ..Default::default() });
        f(if rows { "rows" } else { "elements" });
    }
}

#[test]
fn unfold_and_fold_match_cpu_bit_for_bit() {
    let Some(dev) = gpu() else { return };
    each_mode(&dev, |mode| unfold_and_fold(&dev, mode));
}

fn unfold_and_fold(dev: &Device, mode: &str) {
    let check = |what: &str, inputs: &[Tensor], f: &dyn Fn(&[Tensor]) -> Result<Tensor>| {
        check(dev, &format!("{what} ({mode})"), inputs, f)
    };
    for (i, &(k, s, p, d)) in GEOMETRIES.iter().enumerate() {
        check(&format!("unfold {i}"), &[floats(&[2, 3, 7, 6], i as u64)], &|t| t[0].unfold2d(k, s, p, d));
        // Through a permuted view ([N, H, W, C] storage).
        check(&format!("unfold {i} permuted"), &[floats(&[2, 7, 6, 3], 9 + i as u64)], &|t| {
            t[0].permute(&[0, 3, 1, 2])?.unfold2d(k, s, p, d)
        });
        let cols = floats(&[2, 3, 7, 6], 0).unfold2d(k, s, p, d).unwrap();
        let shape = cols.shape().to_vec();
        check(&format!("fold {i}"), &[floats(&shape, 20 + i as u64)], &|t| t[0].fold2d([7, 6], k, s, p, d));
        // Columns read through a transposed view.
        let (n, r, l) = (shape[0], shape[1], shape[2]);
        check(&format!("fold {i} strided"), &[floats(&[n, l, r], 30 + i as u64)], &|t| {
            t[0].transpose(1, 2)?.fold2d([7, 6], k, s, p, d)
        });
    }
    // Medium: a 28x28 batch, 3x3 padding 1, and its adjoint.
    check("unfold medium", &[floats(&[8, 16, 28, 28], 40)], &|t| t[0].unfold2d([3, 3], [1, 1], [1, 1], [1, 1]));
    check("fold medium", &[floats(&[8, 16 * 9, 28 * 28], 41)], &|t| {
        t[0].fold2d([28, 28], [3, 3], [1, 1], [1, 1], [1, 1])
    });
}

#[test]
fn window_argmax_matches_cpu() {
    let Some(dev) = gpu() else { return };
    each_mode(&dev, |mode| window_argmax(&dev, mode));
}

fn window_argmax(dev: &Device, mode: &str) {
    let check = |what: &str, inputs: &[Tensor], f: &dyn Fn(&[Tensor]) -> Result<Tensor>| {
        check(dev, &format!("{what} ({mode})"), inputs, f)
    };
    let nan_and_inf = |seed| {
        let mut v = coarse(&[2, 3, 7, 6], 4.0, seed).to_vec::<f32>().unwrap();
        for (i, u) in unit(v.len(), seed + 100).into_iter().enumerate() {
            v[i] = if u < 0.08 {
                f32::NAN
            } else if u < 0.3 {
                f32::NEG_INFINITY
            } else {
                v[i]
            };
        }
        Tensor::from_vec(v, &[2, 3, 7, 6]).unwrap()
    };
    let pools: [([usize; 2], [usize; 2], [usize; 2]); 5] = [
        ([2, 2], [2, 2], [0, 0]),
        ([3, 3], [1, 1], [1, 1]),
        ([3, 3], [2, 2], [1, 1]),
        ([2, 3], [1, 2], [1, 0]),
        ([5, 4], [3, 1], [2, 2]),
    ];
    for (i, &(k, s, p)) in pools.iter().enumerate() {
        // Ties (four levels), NaN and -inf, all -inf planes, and a permuted view.
        check(&format!("ties {i}"), &[coarse(&[2, 3, 7, 6], 4.0, i as u64)], &|t| t[0].max_pool2d_indices(k, s, p));
        check(&format!("nan/-inf {i}"), &[nan_and_inf(i as u64)], &|t| t[0].max_pool2d_indices(k, s, p));
        let ninf = Tensor::full(&[1, 2, 7, 6], f64::NEG_INFINITY, DType::F32).unwrap();
        check(&format!("all -inf {i}"), &[ninf], &|t| t[0].max_pool2d_indices(k, s, p));
        check(&format!("permuted {i}"), &[coarse(&[2, 7, 6, 3], 3.0, 50 + i as u64)], &|t| {
            t[0].permute(&[0, 3, 1, 2])?.max_pool2d_indices(k, s, p)
        });
        check(&format!("max_pool2d {i}"), &[nan_and_inf(60 + i as u64)], &|t| t[0].max_pool2d(k, s, p));
    }
    check("medium", &[coarse(&[8, 16, 28, 28], 16.0, 70)], &|t| t[0].max_pool2d_indices([2, 2], [2, 2], [0, 0]));
}

/// `f(inputs)` and the gradients of sum(f * w) for the float inputs, on the cpu and the GPU.
fn check_composite(dev: &Device, what: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let run = |on: &Device| -> Vec<Tensor> {
        let xs: Vec<Tensor> = inputs
            .iter()
            .map(|t| {
                let t = t.to(on).unwrap().detach();
                if t.dtype() == DType::F32 {
                    t.requires_grad_(true).unwrap()
                } else {
                    t
                }
            })
            .collect();
        let y = f(&xs).unwrap();
        assert_eq!(&y.device(), on, "{what}: the result left its device");
        let w = floats(y.shape(), 99).to(on).unwrap();
        y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
        let mut out = vec![y.detach().to(&Device::Cpu).unwrap()];
        out.extend(xs.iter().filter_map(|x| x.grad()).map(|g| g.to(&Device::Cpu).unwrap()));
        out
    };
    let (c, g) = (run(&Device::Cpu), run(dev));
    assert_eq!(c.len(), g.len(), "{what}: gradients");
    for (k, (c, g)) in c.iter().zip(&g).enumerate() {
        let part = if k == 0 { "forward".to_string() } else { format!("grad {k}") };
        assert_close(&format!("{what} {part}"), c, g, 1e-5);
    }
}

#[test]
fn composites_match_cpu_forward_and_backward() {
    let Some(dev) = gpu() else { return };
    let x = || floats(&[2, 4, 9, 8], 1);
    check_composite(&dev, "conv2d groups 2", &[x(), floats(&[6, 2, 3, 3], 2), floats(&[6], 3)], |t| {
        t[0].conv2d(&t[1], Some(&t[2]), [2, 1], [1, 2], [1, 2], 2)
    });
    check_composite(&dev, "conv2d dilation", &[x(), floats(&[3, 4, 2, 3], 4)], |t| {
        t[0].conv2d(&t[1], None, [1, 1], [0, 1], [2, 1], 1)
    });
    check_composite(&dev, "max_pool2d", &[x()], |t| t[0].max_pool2d([3, 3], [2, 2], [1, 1]));
    check_composite(&dev, "avg_pool2d", &[x()], |t| t[0].avg_pool2d([3, 2], [2, 1], [1, 1]));
    check_composite(&dev, "cross_entropy", &[floats(&[16, 10], 5), ints(&[16], 0, 10, 6)], |t| {
        t[0].cross_entropy(&t[1], Reduction::Mean, 0.1)
    });
    check_composite(&dev, "embedding", &[floats(&[20, 8], 7), ints(&[4, 9], 0, 20, 8)], |t| t[0].embedding(&t[1]));
}

/// Max-pool's backward scatters at the window argmax: with the index as
/// max-pool leaves it, each pixel visits only the windows covering it
/// (`scatter_add_window`; per row of pixels, windows that never overlap are
/// found by counting along the row, with padding and with pixels no window
/// covers), and the sums match the cpu bit for bit; any other
/// view of the same index scans whole lines (`scatter_add_scan`), also exactly.
#[test]
fn max_pool_backward_visits_only_covering_windows() {
    // A private context: its pipeline cache shows which kernels ran.
    let Some((dev, g)) = common::private_gpu() else { return };
    let pools: [([usize; 2], [usize; 2], [usize; 2]); 9] = [
        ([2, 2], [2, 2], [0, 0]),
        ([2, 2], [2, 2], [1, 1]),
        ([3, 2], [3, 3], [1, 0]),
        ([2, 3], [4, 3], [1, 1]),
        ([3, 3], [1, 1], [1, 1]),
        ([3, 3], [2, 2], [1, 1]),
        ([2, 3], [1, 2], [1, 0]),
        ([5, 4], [3, 1], [2, 2]),
        ([1, 1], [2, 3], [0, 0]),
    ];
    let grad_of = |x: &Tensor, (k, s, p): ([usize; 2], [usize; 2], [usize; 2])| {
        let x = x.detach().requires_grad_(true).unwrap();
        let y = x.max_pool2d(k, s, p).unwrap();
        let w = floats(y.shape(), 7).to(&x.device()).unwrap();
        y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
        x.grad().unwrap().to(&Device::Cpu).unwrap()
    };
    // One invocation per pixel, then per row of pixels (software adapters).
    for rows in [false, true] {
        common::set_gpu_options(&dev, GpuOptions { row_kernels: Some(rows), ..Default::default() });
        for (i, &pool) in pools.iter().enumerate() {
            // Four levels: many ties, where the first maximum must win on both.
            let x = coarse(&[2, 3, 7, 6], 4.0, 200 + i as u64);
            let what = format!("max_pool2d grad {i} (rows: {rows})");
            assert_same(&what, &grad_of(&x, pool), &grad_of(&x.to(&dev).unwrap(), pool));
        }
    }
    let kernels = g.compiled_kernels();
    for mode in ["elements", "rows"] {
        assert!(kernels.iter().any(|k| k == &format!("index:scatter_add_window:f32:{mode}")), "{mode}: {kernels:?}");
    }
    assert!(!kernels.iter().any(|k| k.starts_with("index:scatter_add_scan:")), "{kernels:?}");

    // Other views of a 2x2 window argmax (3x3 windows per 7x6 plane): not
    // one plane's windows per line.
    let x = coarse(&[2, 3, 7, 6], 4.0, 300);
    type View = fn(&Tensor) -> Result<Tensor>;
    let views: [(&str, View, usize); 3] = [
        ("windows sliced", |i| i.reshape(&[6, 9])?.narrow(1, 1, 8), 1),
        ("channels merged", |i| i.reshape(&[2, 27]), 1),
        ("planes on axis 0", |i| i.reshape(&[6, 9])?.transpose(0, 1), 0),
    ];
    for (what, view, axis) in views {
        let run = |x: &Tensor| {
            let idx = view(&x.max_pool2d_indices([2, 2], [2, 2], [0, 0]).unwrap()).unwrap();
            let src = floats(idx.shape(), 9).to(&x.device()).unwrap();
            let mut shape = idx.shape().to_vec();
            shape[axis] = if what == "channels merged" { 126 } else { 42 };
            if what == "planes on axis 0" {
                shape[1] = 6;
            }
            let base = Tensor::zeros(&shape, DType::F32).unwrap().to(&x.device()).unwrap();
            base.scatter_add(axis as isize, &idx, &src).unwrap().to(&Device::Cpu).unwrap()
        };
        assert_same(what, &run(&x), &run(&x.to(&dev).unwrap()));
    }
    let kernels = g.compiled_kernels();
    assert!(kernels.iter().any(|k| k.starts_with("index:scatter_add_scan:")), "{kernels:?}");
}
