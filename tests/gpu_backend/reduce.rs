//! GPU reductions against the cpu kernels: sum/max/min/mean over axis sets
//! and argmax/argmin along each axis, on contiguous and strided views
//! (permute, slice, expand), keepdim, size-1 and empty axes, large rows, many
//! short rows, column reductions, a grid over 65,535 workgroups, NaN and ties.
//! Without a GPU adapter each test prints a loud SKIPPED line and passes.
#![cfg(feature = "gpu")]

use crate::common;

use skiff::random::Generator;
use skiff::{Device, Result, Tensor};

use crate::common::{expect_err, Kind};

/// A private context per test: `check` switches its reduction kernels.
fn gpu() -> Option<Device> {
    common::private_gpu().map(|(d, _)| d)
}

/// Values in [-1, 1); with `levels` > 0 rounded to that many steps, so ties are common.
fn data(shape: &[usize], seed: u64, levels: u32) -> Tensor {
    let mut g = Generator::new(seed);
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            let u = 2.0 * g.uniform() - 1.0;
            (if levels > 0 { (u * levels as f64).round() / levels as f64 } else { u }) as f32
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn same_shape(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert!(got.device().is_gpu(), "{what}: the result left the GPU");
}

/// Bitwise equal (NaN equals NaN): max, min, argmax and argmin choose, they do not compute.
fn exact(what: &str, got: &Tensor, want: &Tensor) {
    same_shape(what, got, want);
    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(a == b || (a.is_nan() && b.is_nan()), "{what}[{i}]: gpu {a} vs cpu {b}");
    }
}

/// Within 1e-5 of the sum of magnitudes `scale` (rounding differs with summation order).
fn close(what: &str, got: &Tensor, want: &Tensor, scale: &Tensor) {
    same_shape(what, got, want);
    let (g, w, s) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap(), scale.to_f64_vec().unwrap());
    for i in 0..w.len() {
        let (a, b) = (g[i], w[i]);
        let ok = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-5 * s[i] + 1e-6;
        assert!(ok, "{what}[{i}]: gpu {a} vs cpu {b} (scale {})", s[i]);
    }
}

/// Compares every reduction of `view(x)` on both devices over each axis set
/// (with and without keepdim), and argmax/argmin along each axis and overall,
/// in both kernel modes: a workgroup tree per output (real GPUs) and one
/// thread per output or part (software adapters, `row_kernels`), switched on
/// the test's private context (`gpu`).
fn check(dev: &Device, name: &str, x: &Tensor, view: impl Fn(&Tensor) -> Result<Tensor>, axis_sets: &[&[isize]]) {
    for serial in [false, true] {
        common::set_gpu_options(dev, skiff::device::GpuOptions { row_kernels: Some(serial), ..Default::default() });
        check_mode(dev, &format!("{name} (serial {serial})"), x, &view, axis_sets);
    }
}

fn check_mode(dev: &Device, name: &str, x: &Tensor, view: impl Fn(&Tensor) -> Result<Tensor>, axis_sets: &[&[isize]]) {
    let c = view(x).unwrap();
    let g = view(&x.to(dev).unwrap()).unwrap();
    for &axes in axis_sets {
        for keep in [false, true] {
            let what = format!("{name} {:?} axes {axes:?} keepdim {keep}", c.shape());
            let scale = c.abs().unwrap().sum(axes, keep).unwrap();
            close(&format!("sum {what}"), &g.sum(axes, keep).unwrap(), &c.sum(axes, keep).unwrap(), &scale);
            let mscale = c.abs().unwrap().mean(axes, keep).unwrap();
            close(&format!("mean {what}"), &g.mean(axes, keep).unwrap(), &c.mean(axes, keep).unwrap(), &mscale);
            if c.numel() > 0 {
                exact(&format!("max {what}"), &g.max(axes, keep).unwrap(), &c.max(axes, keep).unwrap());
                exact(&format!("min {what}"), &g.min(axes, keep).unwrap(), &c.min(axes, keep).unwrap());
            }
        }
    }
    if c.numel() == 0 {
        return;
    }
    let mut axes: Vec<Option<isize>> = (0..c.ndim() as isize).map(Some).collect();
    axes.push(None);
    for a in axes {
        for keep in [false, true] {
            let what = format!("{name} {:?} axis {a:?} keepdim {keep}", c.shape());
            exact(&format!("argmax {what}"), &g.argmax(a, keep).unwrap(), &c.argmax(a, keep).unwrap());
            exact(&format!("argmin {what}"), &g.argmin(a, keep).unwrap(), &c.argmin(a, keep).unwrap());
        }
    }
}

const ALL_3D: &[&[isize]] = &[&[], &[0], &[1], &[2], &[-1], &[0, 1], &[0, 2], &[1, 2], &[0, 1, 2]];

#[test]
fn contiguous_inputs_over_every_axis_set() {
    let Some(dev) = gpu() else { return };
    check(&dev, "contiguous", &data(&[3, 4, 5], 1, 0), |t| Ok(t.clone()), ALL_3D);
    // Ties everywhere: argmax/argmin must return the first extreme.
    check(&dev, "ties", &data(&[6, 7, 9], 2, 2), |t| Ok(t.clone()), ALL_3D);
    check(&dev, "vector", &data(&[37], 3, 0), |t| Ok(t.clone()), &[&[], &[0]]);
    check(&dev, "scalar", &Tensor::from_vec(vec![2.5f32], &[]).unwrap(), |t| Ok(t.clone()), &[&[]]);
}

#[test]
fn strided_views() {
    let Some(dev) = gpu() else { return };
    let x = data(&[4, 5, 6], 4, 0);
    check(&dev, "permuted", &x, |t| t.permute(&[2, 0, 1]), ALL_3D);
    check(&dev, "transposed", &x, |t| t.transpose(0, 2), ALL_3D);
    // Non-zero offset and step 2 on two axes.
    check(&dev, "sliced", &x, |t| t.slice(1, 1, 5, 2)?.slice(2, 1, 6, 2), ALL_3D);
    check(&dev, "sliced then permuted", &x, |t| t.narrow(0, 1, 3)?.permute(&[1, 2, 0]), ALL_3D);
    // Broadcast (stride-0) dims, reduced and kept.
    let b = data(&[6, 1, 4], 5, 0);
    check(&dev, "expanded", &b, |t| t.expand(&[6, 3, 4]), ALL_3D);
    check(&dev, "expanded leading", &data(&[5], 6, 0), |t| t.expand(&[7, 2, 5]), ALL_3D);
    // Rank 4 with reduced axes that do not merge.
    let y = data(&[3, 4, 2, 5], 7, 3);
    check(&dev, "rank 4", &y, |t| t.permute(&[1, 3, 0, 2]), &[&[0, 2], &[1, 3], &[0, 1, 3], &[2], &[]]);
}

#[test]
fn size_one_and_empty_axes() {
    let Some(dev) = gpu() else { return };
    check(&dev, "size-1 dims", &data(&[1, 7, 1], 8, 0), |t| Ok(t.clone()), ALL_3D);
    check(&dev, "all size 1", &data(&[1, 1, 1], 9, 0), |t| Ok(t.clone()), ALL_3D);
    // Summing an empty axis gives zeros; an empty output is empty.
    let e = Tensor::from_vec(Vec::<f32>::new(), &[3, 0]).unwrap();
    check(&dev, "empty", &e, |t| Ok(t.clone()), &[&[1], &[0], &[]]);
    // The op layer rejects max and argmax over an empty axis on both devices;
    // argmax along a non-empty axis of an empty tensor is empty (as PyTorch).
    let eg = e.to(&dev).unwrap();
    expect_err(eg.max(&[1], false), Kind::Shape, "max", &["cannot reduce an empty axis of shape [3, 0]"]);
    expect_err(eg.argmax(Some(1), false), Kind::Shape, "argmax", &["along the empty axis 1 of shape [3, 0]"]);
    expect_err(eg.argmin(None, false), Kind::Shape, "argmin", &["of an empty tensor of shape [3, 0]"]);
    let a = eg.argmax(Some(0), false).unwrap();
    assert_eq!((a.shape(), a.dtype(), a.device()), (&[0usize][..], skiff::DType::I32, dev.clone()));
}

#[test]
fn large_rows_many_short_rows_and_columns() {
    let Some(dev) = gpu() else { return };
    let long = data(&[100_000], 10, 0);
    check(&dev, "100k", &long, |t| Ok(t.clone()), &[&[0]]);
    check(&dev, "100k as 2 rows", &long, |t| t.reshape(&[2, 50_000]), &[&[1], &[0], &[]]);
    check(&dev, "100k as 4 columns", &long, |t| t.reshape(&[25_000, 4]), &[&[0]]);
    check(&dev, "100k strided", &long, |t| t.slice(0, 3, 100_000, 7), &[&[0]]);
    // Many outputs, few elements each: rows and columns.
    let many = data(&[20_000, 3], 11, 0);
    check(&dev, "20k rows of 3", &many, |t| Ok(t.clone()), &[&[1]]);
    check(&dev, "3 rows of 20k columns", &many, |t| t.reshape(&[3, 20_000]), &[&[0]]);
    check(&dev, "bias gradient", &data(&[300, 500], 12, 0), |t| Ok(t.clone()), &[&[0], &[1]]);
    // Positive data: a long sum that cannot hide errors in cancellation.
    let pos = long.abs().unwrap();
    check(&dev, "100k positive", &pos, |t| Ok(t.clone()), &[&[0]]);
    // Two unmergeable reduced dims, long enough that every lane takes many
    // steps and its inner index wraps many times (the kernel follows the
    // offset by additions): a convolution's bias gradient, over (N, H, W) of
    // [N, C, H, W], and the same over a permuted view. Positive data, so a
    // wrong element cannot cancel out.
    let act = data(&[16, 3, 26, 26], 14, 0).abs().unwrap();
    check(&dev, "conv bias gradient", &act, |t| Ok(t.clone()), &[&[0, 2, 3]]);
    check(&dev, "conv bias gradient, permuted", &act, |t| t.permute(&[0, 2, 3, 1]), &[&[0, 1, 2]]);
    check(&dev, "inner size 7, odd strides", &data(&[40, 5, 7], 15, 0).abs().unwrap(), |t| Ok(t.clone()), &[&[0, 2]]);
}

/// More outputs than one grid dimension holds (70,000 workgroups of one output each).
#[test]
fn grids_beyond_65535_workgroups() {
    let Some(dev) = gpu() else { return };
    let x = data(&[70_000, 129], 13, 0);
    let (c, g) = (x.clone(), x.to(&dev).unwrap());
    let scale = c.abs().unwrap().sum(&[1], false).unwrap();
    close("sum 70000x129", &g.sum(&[1], false).unwrap(), &c.sum(&[1], false).unwrap(), &scale);
    exact("argmax 70000x129", &g.argmax(Some(1), false).unwrap(), &c.argmax(Some(1), false).unwrap());
}

#[test]
fn nan_and_infinities() {
    let Some(dev) = gpu() else { return };
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let v = vec![1.0, nan, 3.0, nan, -inf, 2.0, -inf, -inf, inf, 0.0, inf, -1.0, 5.0, 4.0, 5.0, -2.0];
    let x = Tensor::from_vec(v, &[4, 4]).unwrap();
    check(&dev, "nan", &x, |t| Ok(t.clone()), &[&[0], &[1], &[]]);
    let g = x.to(&dev).unwrap();
    let m = g.max(&[1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(m[0].is_nan() && m[1] == 2.0 && m[2] == inf && m[3] == 5.0, "max rows: {m:?}");
    assert_eq!(g.argmax(Some(1), false).unwrap().to_vec::<i32>().unwrap(), vec![1, 1, 0, 0]);
    assert_eq!(g.argmin(Some(1), false).unwrap().to_vec::<i32>().unwrap(), vec![1, 0, 3, 3]);
    assert!(g.sum_all().unwrap().item().unwrap().is_nan());
    // A NaN deep in a long row, found by a lane other than the first.
    let mut long = vec![0.5f32; 10_000];
    long[7_777] = nan;
    long[9_000] = nan;
    let t = Tensor::from_vec(long, &[10_000]).unwrap().to(&dev).unwrap();
    assert!(t.min(&[], false).unwrap().item().unwrap().is_nan());
    assert_eq!(t.argmax(None, false).unwrap().item().unwrap(), 7_777.0);
    assert_eq!(t.argmin(None, false).unwrap().item().unwrap(), 7_777.0);
}

/// A view whose kept dims cannot merge into eight is an error, not a panic.
#[test]
fn too_many_unmergeable_dims_is_an_error() {
    let Some(dev) = gpu() else { return };
    let x = data(&[2; 18], 14, 0).to(&dev).unwrap();
    let odd: Vec<isize> = (0..18).filter(|d| d % 2 == 1).collect();
    let facts = ["at most 8 non-mergeable kept dims", &format!("got shape {:?}", [2; 18])];
    expect_err(x.sum(&odd, false), Kind::Shape, "sum", &facts);
    // Eight a side is fine.
    let x = data(&[2; 16], 15, 0);
    let odd: Vec<isize> = (0..16).filter(|d| d % 2 == 1).collect();
    let scale = x.abs().unwrap().sum(&odd, false).unwrap();
    close("sum 2^16", &x.to(&dev).unwrap().sum(&odd, false).unwrap(), &x.sum(&odd, false).unwrap(), &scale);
}

/// Every reduction source validates with naga (no GPU needed).
#[test]
fn reduce_sources_validate() {
    for (name, src) in skiff::backend::gpu::reduce::sources() {
        common::validate_wgsl(&name, &src);
    }
}
