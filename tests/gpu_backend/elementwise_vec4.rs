//! The 4-wide elementwise kernels (`shaders/elementwise4.wgsl`): where every
//! operand's four consecutive elements are an aligned vec4 or one repeated
//! element, a kernel computes four outputs per invocation. Checked here:
//! which layouts qualify (`vec4_lanes`, a pure function), that a qualifying
//! op really runs another pipeline, and that its results are bit for bit
//! those of the one-element kernel on the same values (the same values read
//! through a view at offset 1, which never qualifies), for every kind of
//! template kernel: unary, binary (with both kinds of broadcast),
//! comparisons, where, casts, fills and copies into a strided destination.
#![cfg(feature = "gpu")]

use crate::common;

use skiff::backend::gpu::kernels::{vec4_lanes, Lanes};
use skiff::shape::Layout;
use skiff::{DType, Device, Result, Tensor};

fn strided(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
    Layout { shape: shape.into(), strides: strides.into(), offset }
}

#[test]
fn which_layouts_the_4_wide_kernel_reads() {
    use Lanes::{Splat, Vector};
    let c = |s: &[usize]| Layout::contiguous(s);
    // Contiguous operands of a shape whose last dim is a multiple of 4.
    assert_eq!(vec4_lanes(&[3, 8], &[&c(&[3, 8]), &c(&[3, 8])]), Some(vec![Vector, Vector]));
    // A row broadcast over the rows is still a vec4; a column is one element repeated.
    assert_eq!(vec4_lanes(&[3, 8], &[&c(&[3, 8]), &c(&[8])]), Some(vec![Vector, Vector]));
    assert_eq!(vec4_lanes(&[3, 8], &[&c(&[3, 8]), &c(&[3, 1])]), Some(vec![Vector, Splat]));
    // A conv bias [O, 1, 1] over [N, O, H, W]: dims merge to [N, O, H*W].
    assert_eq!(vec4_lanes(&[2, 3, 4, 5], &[&c(&[2, 3, 4, 5]), &c(&[3, 1, 1])]), Some(vec![Vector, Splat]));
    // Contiguous dims merge: [4, 6] is 24 elements in a row. With a row
    // broadcast they do not, and a last dim of 6 does not qualify.
    assert_eq!(vec4_lanes(&[4, 6], &[&c(&[4, 6])]), Some(vec![Vector]));
    assert_eq!(vec4_lanes(&[4, 6], &[&c(&[4, 6]), &c(&[6])]), None);
    // An offset off a vec4 boundary, or an outer stride that is not a multiple of 4.
    assert_eq!(vec4_lanes(&[8], &[&strided(&[8], &[1], 2)]), None);
    assert_eq!(vec4_lanes(&[8], &[&strided(&[8], &[1], 4)]), Some(vec![Vector]));
    assert_eq!(vec4_lanes(&[2, 4], &[&strided(&[2, 4], &[6, 1], 0)]), None);
    // A transposed view steps by more than 1 along the last dim.
    assert_eq!(vec4_lanes(&[4, 4], &[&strided(&[4, 4], &[1, 4], 0)]), None);
    // Empty and 0-d.
    assert_eq!(vec4_lanes(&[0, 4], &[&c(&[0, 4])]), None);
    assert_eq!(vec4_lanes(&[], &[&c(&[])]), None);
    // A fill reads nothing.
    assert_eq!(vec4_lanes(&[12], &[]), Some(vec![]));
}

/// `v` as a [rows, cols] tensor on `device`, at offset 0 (`aligned`) or as a
/// view at offset 1 of a longer buffer.
fn on(device: &Device, v: &[f32], shape: &[usize], aligned: bool) -> Result<Tensor> {
    let pad: Vec<f32> = if aligned { v.to_vec() } else { [0.5].iter().chain(v).copied().collect() };
    let n = pad.len();
    let t = Tensor::from_slice(&pad, &[n])?.to(device)?;
    let t = if aligned { t } else { t.narrow(0, 1, v.len())? };
    t.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
}

fn bits(t: &Tensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().iter().map(|&v| v as u32).collect(),
        _ => t.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap().iter().map(|&v| v as u32).collect(),
    }
}

type Case = (&'static str, fn(&[Tensor]) -> Result<Tensor>);

#[test]
fn the_4_wide_kernels_compute_what_the_one_element_kernels_do() {
    // It counts the pipelines its context compiles: a private context's.
    let Some((gpu, g)) = common::private_gpu() else { return };
    let (rows, cols) = (6, 8);
    let n = rows * cols;
    let a: Vec<f32> = (0..n).map(|i| ((i * 37 % 23) as f32 - 11.0) / 3.0).collect();
    let b: Vec<f32> = (0..n).map(|i| ((i * 11 % 17) as f32 - 8.0) / 5.0 + 0.1).collect();
    let row: Vec<f32> = (0..cols).map(|i| i as f32 * 0.75 - 2.0).collect();
    let col: Vec<f32> = (0..rows).map(|i| i as f32 * 0.5 - 1.0).collect();
    let cases: &[Case] = &[
        ("exp", |x| x[0].exp()),
        ("tanh", |x| x[0].tanh()),
        ("relu", |x| x[0].relu()),
        ("abs then sqrt", |x| x[0].abs()?.sqrt()),
        ("add", |x| x[0].add(&x[1])),
        ("div", |x| x[0].div(&x[1])),
        ("relu_backward", |x| x[0].relu_backward(&x[1])),
        ("mul by a row", |x| x[0].mul(&x[2])),
        ("sub a column", |x| x[0].sub(&x[3])),
        ("a column minus the matrix", |x| x[3].sub(&x[0])),
        ("gt (bool)", |x| x[0].gt(&x[1])),
        ("where", |x| Tensor::where_(&x[0].gt(&x[1])?, &x[0], &x[3])),
        ("cast to i32", |x| x[0].mul_scalar(3.0)?.to_dtype(DType::I32)),
        ("cast i32 back", |x| x[0].mul_scalar(3.0)?.to_dtype(DType::I32)?.to_dtype(DType::F32)),
    ];
    for &(name, f) in cases {
        let run = |aligned: bool| -> Result<Tensor> {
            let x = [
                on(&gpu, &a, &[rows, cols], aligned)?,
                on(&gpu, &b, &[rows, cols], aligned)?,
                on(&gpu, &row, &[cols], aligned)?,
                on(&gpu, &col, &[rows, 1], aligned)?,
            ];
            f(&x)
        };
        let (one, four) = (run(false).unwrap(), run(true).unwrap());
        assert_eq!(bits(&four), bits(&one), "{name}: the 4-wide kernel differs from the one-element kernel");
        let cpu = f(&[
            on(&Device::Cpu, &a, &[rows, cols], true).unwrap(),
            on(&Device::Cpu, &b, &[rows, cols], true).unwrap(),
            on(&Device::Cpu, &row, &[cols], true).unwrap(),
            on(&Device::Cpu, &col, &[rows, 1], true).unwrap(),
        ])
        .unwrap();
        let (got, want) = (four.to_dtype(DType::F32).unwrap(), cpu.to_dtype(DType::F32).unwrap());
        for (g, w) in got.to_vec::<f32>().unwrap().iter().zip(want.to_vec::<f32>().unwrap()) {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{name}: GPU {g} against cpu {w}");
        }
    }

    // A qualifying op runs its own pipeline: one more compiled the first time
    // the aligned layout meets an op the misaligned one already compiled.
    let x1 = on(&gpu, &a, &[rows, cols], false).unwrap();
    let x4 = on(&gpu, &a, &[rows, cols], true).unwrap();
    x1.sin().unwrap().to_vec::<f32>().unwrap();
    let before = g.counters().pipelines_compiled;
    x4.sin().unwrap().to_vec::<f32>().unwrap();
    x1.sin().unwrap().to_vec::<f32>().unwrap();
    x4.sin().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(g.counters().pipelines_compiled - before, 1, "the aligned sin compiled the 4-wide kernel once");

    // Fills and copies into a strided destination (a slice of columns).
    for (len, value) in [(12, 2.5), (10, -1.0)] {
        let f = Tensor::full_on(&[len], value, DType::F32, &gpu).unwrap();
        assert_eq!(f.to_vec::<f32>().unwrap(), vec![value as f32; len]);
    }
    for (start, width) in [(4, 4), (1, 4), (0, 8), (2, 3)] {
        let dst = Tensor::zeros_on(&[rows, 12], DType::F32, &gpu).unwrap();
        let src = on(&gpu, &a[..rows * width], &[rows, width], true).unwrap();
        dst.narrow(1, start, width).unwrap().copy_(&src).unwrap();
        let got = dst.to_vec::<f32>().unwrap();
        for r in 0..rows {
            for c in 0..12 {
                let want = if (start..start + width).contains(&c) { a[r * width + c - start] } else { 0.0 };
                assert_eq!(got[r * 12 + c], want, "copy of width {width} at column {start}: [{r}, {c}]");
            }
        }
    }
}
