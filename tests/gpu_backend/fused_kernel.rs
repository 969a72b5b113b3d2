//! The fused elementwise kernel (`KernelSpec::Fused`) on its own, against
//! its steps run one by one as the eager kernels they are: bit for bit on
//! the cpu (broadcast, offset and transposed inputs, more elements than one
//! chunk, f32 and f64), within f32 rounding on the GPU; a malformed program
//! is an error. The pass that builds these is tested in tests/capture/fusion.rs.

use crate::common;

use skiff::backend::{self, Buffer, CpuBuffer, View};
use skiff::kernel::{FusedElementwise, FusedOp, FusedStep, KernelSpec, Operand, Scalar};
use skiff::shape::Layout;
use skiff::DType;

/// Deterministic values in [-1, 1).
fn values(seed: u64, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((seed as f32 * 7.31 + i as f32 * 1.37).sin() * 43758.547).fract()).collect()
}

fn unary(row: &'static skiff::kernel::UnaryKernel, p0: f64) -> FusedOp {
    FusedOp::Unary { row, params: [Scalar(p0), Scalar(0.0)] }
}

/// t0 = x0 * 1.5; t1 = t0 + x1; t2 = t1 > x2; t3 = tanh(t1); t4 = t2 ? t3 : x2;
/// t5 = f(t2); t6 = t4 * t5; t7 = t6 - x3: a transposed input with an offset,
/// a bias with an offset, a column and a 0-d scalar, over [6, 300].
fn direct_spec(dtype: DType) -> (FusedElementwise, Vec<Layout>, Vec<usize>) {
    use skiff::ops::{binary, compare, unary as u};
    use Operand::{Input as X, Step as T};
    let step = |op, args: Vec<Operand>, dtype| FusedStep { op, args, dtype };
    let steps = vec![
        step(unary(&u::MUL_SCALAR.kernel, 1.5), vec![X(0)], dtype),
        step(FusedOp::Binary { row: &binary::ADD.kernel }, vec![T(0), X(1)], dtype),
        step(FusedOp::Compare { row: &compare::GT.kernel }, vec![T(1), X(2)], DType::Bool),
        step(unary(&u::TANH.kernel, 0.0), vec![T(1)], dtype),
        step(FusedOp::Where, vec![T(2), T(3), X(2)], dtype),
        step(FusedOp::Cast { to: dtype }, vec![T(2)], dtype),
        step(FusedOp::Binary { row: &binary::MUL.kernel }, vec![T(4), T(5)], dtype),
        step(FusedOp::Binary { row: &binary::SUB.kernel }, vec![T(6), X(3)], dtype),
    ];
    let l = |shape: &[usize], strides: &[usize], offset| Layout {
        shape: shape.iter().copied().collect(),
        strides: strides.iter().copied().collect(),
        offset,
    };
    let layouts = vec![
        l(&[6, 300], &[1, 6], 2), // a [300, 6] matrix (from element 2) transposed
        l(&[300], &[1], 5),       // a bias row from element 5
        l(&[6, 1], &[1, 1], 0),   // a column
        l(&[], &[], 7),           // a 0-d scalar
    ];
    (FusedElementwise { inputs: vec![dtype; 4], steps }, layouts, vec![6, 300])
}

fn host(dtype: DType, seed: u64) -> CpuBuffer {
    let v = values(seed, 1810);
    match dtype {
        DType::F64 => CpuBuffer::F64(v.into_iter().map(f64::from).collect()),
        _ => CpuBuffer::F32(v),
    }
}

fn host_bits(b: &CpuBuffer) -> Vec<u64> {
    match b {
        CpuBuffer::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        CpuBuffer::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => panic!("unexpected {:?}", other.dtype()),
    }
}

/// Each step as its own kernel (the specs eager code runs), over the same views.
fn step_by_step(spec: &FusedElementwise, inputs: &[View], shape: &[usize]) -> Buffer {
    let whole = Layout::contiguous(shape);
    let mut done: Vec<Buffer> = Vec::new();
    for s in &spec.steps {
        let kernel = match &s.op {
            FusedOp::Unary { row, params } => KernelSpec::Unary { row, params: *params },
            FusedOp::Binary { row } => KernelSpec::Binary { row },
            FusedOp::Compare { row } => KernelSpec::Compare { row },
            FusedOp::Where => KernelSpec::Where,
            FusedOp::Cast { to } => KernelSpec::Cast { to: *to },
            FusedOp::Copy => KernelSpec::Copy,
        };
        let views: Vec<View> = s
            .args
            .iter()
            .map(|a| match *a {
                Operand::Input(k) => inputs[k],
                Operand::Step(i) => View::new(&done[i], &whole),
            })
            .collect();
        let out = backend::run("step", &kernel, &views, shape).unwrap();
        done.push(out);
    }
    done.pop().unwrap()
}

#[test]
fn the_fused_kernel_computes_its_steps_bit_for_bit_on_the_cpu() {
    for dtype in [DType::F32, DType::F64] {
        let (spec, layouts, shape) = direct_spec(dtype);
        let bufs: Vec<Buffer> = (0..4).map(|k| Buffer::Cpu(host(dtype, 50 + k))).collect();
        let views: Vec<View> = bufs.iter().zip(&layouts).map(|(b, l)| View::new(b, l)).collect();
        let got = backend::run("fused", &KernelSpec::Fused(spec.clone().into()), &views, &shape).unwrap();
        let want = step_by_step(&spec, &views, &shape);
        let (got, want) = (got.as_cpu().unwrap(), want.as_cpu().unwrap());
        assert_eq!(got.len(), 1800);
        assert_eq!(host_bits(got), host_bits(want), "{dtype}");
        // Not vacuous: both where branches and both mask values occur.
        let m = match got {
            CpuBuffer::F32(v) => v.iter().filter(|&&x| x != -values(53, 8)[7]).count(),
            CpuBuffer::F64(v) => v.iter().filter(|&&x| x != -f64::from(values(53, 8)[7])).count(),
            _ => 0,
        };
        assert!(m > 100 && m < 1800, "{m} of 1800 elements took the first branch");
    }
}

#[test]
fn a_malformed_fused_kernel_is_an_error() {
    let (mut spec, layouts, shape) = direct_spec(DType::F32);
    let bufs: Vec<Buffer> = (0..4).map(|k| Buffer::Cpu(host(DType::F32, 60 + k))).collect();
    let views: Vec<View> = bufs.iter().zip(&layouts).map(|(b, l)| View::new(b, l)).collect();
    spec.steps[1].args[0] = Operand::Step(5);
    let e = backend::run("fused", &KernelSpec::Fused(spec.into()), &views, &shape).unwrap_err();
    assert!(e.to_string().contains("step 1"), "{e}");
    let (spec, ..) = direct_spec(DType::F32);
    let e = backend::run("fused", &KernelSpec::Fused(spec.into()), &views[..3], &shape).unwrap_err();
    assert!(e.to_string().contains("takes 4 inputs"), "{e}");
}

#[test]
fn the_fused_kernel_on_the_gpu_matches_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let (spec, layouts, shape) = direct_spec(DType::F32);
    let hosts: Vec<CpuBuffer> = (0..4).map(|k| host(DType::F32, 70 + k)).collect();
    let cpu: Vec<Buffer> = hosts.iter().cloned().map(Buffer::Cpu).collect();
    let dev: Vec<Buffer> =
        hosts.iter().map(|h| backend::upload(h, &Layout::contiguous(&[h.len()]), &gpu).unwrap()).collect();
    let spec = KernelSpec::Fused(spec.into());
    let run = |bufs: &[Buffer]| {
        let views: Vec<View> = bufs.iter().zip(&layouts).map(|(b, l)| View::new(b, l)).collect();
        let out = backend::run("fused", &spec, &views, &shape).unwrap();
        let whole = Layout::contiguous(&shape);
        let host = backend::download(View::new(&out, &whole)).unwrap();
        let CpuBuffer::F32(v) = host else { panic!("f32 out") };
        v
    };
    let (got, want) = (run(&dev), run(&cpu));
    assert_eq!(got.len(), 1800);
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "element {i}: GPU {a}, cpu {b}");
    }
}
