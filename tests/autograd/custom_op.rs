//! User-written ops (`skiff::custom`): a fused x * sigmoid(x) kernel whose
//! gradients are checked to second order against finite differences, with
//! its backward written in skiff ops and again with a further custom op;
//! broadcasting, scalars and a shape rule; the GPU kernel against the cpu on
//! lavapipe; capture under jit and a saved program; and every error path
//! (WGSL that does not compile names the user's line, calls that do not fit
//! name the op).

use crate::common;

use crate::common::gradcheck::{gradcheck, uniform};
use crate::common::{expect_err, Kind};
use skiff::custom::{BackwardCall, CpuCall, CustomOp};
use skiff::{DType, Device, Result, Tensor};
use std::sync::OnceLock;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// d/dx x s(x) = s (1 + x (1 - s)), in skiff ops.
fn silu_grad(x: &Tensor) -> Result<Tensor> {
    let s = x.sigmoid()?;
    s.mul(&x.mul(&s.neg()?.add_scalar(1.0)?)?.add_scalar(1.0)?)
}

const SILU_WGSL: &str = "fn compute(i: u32) -> f32 {
    let x = X0[i];
    return x / (1.0 + exp(-x));
}";

/// x * sigmoid(x) in one kernel, its backward in skiff ops.
fn silu() -> &'static CustomOp {
    static OP: OnceLock<CustomOp> = OnceLock::new();
    OP.get_or_init(|| {
        CustomOp::builder("test_silu", 1)
            .wgsl(SILU_WGSL)
            .cpu(|c: &CpuCall| Ok(c.inputs[0].data.iter().map(|&x| x * sigmoid(x)).collect()))
            .backward(|b: &BackwardCall| Ok(vec![Some(b.grad.mul(&silu_grad(&b.inputs[0])?)?)]))
            .register()
            .unwrap()
    })
}

/// silu'(x) as a custom kernel of its own, differentiable through skiff ops:
/// silu''(x) = s (1 - s) (2 + x (1 - 2 s)).
fn silu_prime() -> &'static CustomOp {
    static OP: OnceLock<CustomOp> = OnceLock::new();
    OP.get_or_init(|| {
        CustomOp::builder("test_silu_prime", 1)
            .wgsl(
                "fn compute(i: u32) -> f32 {
    let x = X0[i];
    let s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 + x * (1.0 - s));
}",
            )
            .cpu(|c: &CpuCall| {
                Ok(c.inputs[0].data.iter().map(|&x| sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x)))).collect())
            })
            .backward(|b: &BackwardCall| {
                let x = &b.inputs[0];
                let s = x.sigmoid()?;
                let one_minus = s.neg()?.add_scalar(1.0)?;
                let tail = x.mul(&s.mul_scalar(-2.0)?.add_scalar(1.0)?)?.add_scalar(2.0)?;
                Ok(vec![Some(b.grad.mul(&s.mul(&one_minus)?.mul(&tail)?)?)])
            })
            .register()
            .unwrap()
    })
}

/// silu again, its backward the custom kernel above.
fn silu_by_kernels() -> &'static CustomOp {
    static OP: OnceLock<CustomOp> = OnceLock::new();
    OP.get_or_init(|| {
        CustomOp::builder("test_silu_by_kernels", 1)
            .wgsl(SILU_WGSL)
            .cpu(|c: &CpuCall| Ok(c.inputs[0].data.iter().map(|&x| x * sigmoid(x)).collect()))
            .backward(|b: &BackwardCall| Ok(vec![Some(b.grad.mul(&silu_prime().call(&[&b.inputs[0]])?)?)]))
            .register()
            .unwrap()
    })
}

/// a + scalar(0) * b + scalar(1), broadcast: two inputs and two scalars.
fn axpb() -> &'static CustomOp {
    static OP: OnceLock<CustomOp> = OnceLock::new();
    OP.get_or_init(|| {
        CustomOp::builder("test_axpb", 2)
            .scalars(2)
            .wgsl("fn compute(i: u32) -> f32 { return X0[bcast(0u, i)] + scalar(0u) * X1[bcast(1u, i)] + scalar(1u); }")
            .cpu(|c: &CpuCall| {
                let (a, b, s) = (&c.inputs[0].data, &c.inputs[1].data, c.scalars);
                Ok((0..c.numel()).map(|i| a[c.bcast(0, i)] + s[0] * b[c.bcast(1, i)] + s[1]).collect())
            })
            .backward(|b: &BackwardCall| {
                let ga = b.grad.sum_to(b.inputs[0].shape())?;
                let gb = b.grad.mul_scalar(b.scalars[0])?.sum_to(b.inputs[1].shape())?;
                Ok(vec![Some(ga), Some(gb)])
            })
            .register()
            .unwrap()
    })
}

/// The sum of squares of each row of a [n, d] matrix, to [n]: a shape rule
/// and a kernel that loops.
fn row_sumsq() -> &'static CustomOp {
    static OP: OnceLock<CustomOp> = OnceLock::new();
    OP.get_or_init(|| {
        CustomOp::builder("test_row_sumsq", 1)
            .wgsl(
                "fn compute(i: u32) -> f32 {
    let d = in_dim(0u, 1u);
    var s = 0.0;
    for (var j = 0u; j < d; j = j + 1u) {
        let v = X0[i * d + j];
        s = s + v * v;
    }
    return s;
}",
            )
            .shape(|s| match s[0] {
                [n, _] => Ok(vec![*n]),
                other => Err(format!("takes a matrix, got shape {other:?}")),
            })
            .cpu(|c: &CpuCall| {
                Ok(c.inputs[0].data.chunks(c.inputs[0].shape[1]).map(|r| r.iter().map(|v| v * v).sum()).collect())
            })
            .backward(|b: &BackwardCall| Ok(vec![Some(b.grad.unsqueeze(1)?.mul(&b.inputs[0])?.mul_scalar(2.0)?)]))
            .register()
            .unwrap()
    })
}

#[test]
fn silu_gradchecks_to_second_order_on_the_cpu() {
    let x = uniform(&[3, 5], -3.0, 3.0, 1);
    let want: Vec<f64> = common::vals(&x).iter().map(|&v| v * sigmoid(v)).collect();
    common::assert_close(&common::vals(&silu().call(&[&x]).unwrap()), &want, 1e-15);
    assert!(gradcheck("test_silu", &|xs| silu().call(&[&xs[0]]), std::slice::from_ref(&x), &[], true) > 0);
    assert!(gradcheck("test_silu_by_kernels", &|xs| silu_by_kernels().call(&[&xs[0]]), &[x], &[], true) > 0);
}

#[test]
fn broadcasting_scalars_and_a_shape_rule() {
    let a = uniform(&[2, 3, 4], -1.0, 1.0, 2);
    let b = uniform(&[3, 1], -1.0, 1.0, 3);
    let y = axpb().call_with(&[&a, &b], &[0.5, -2.0]).unwrap();
    let want = a.add(&b.mul_scalar(0.5).unwrap()).unwrap().add_scalar(-2.0).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
    common::assert_close(&common::vals(&y), &common::vals(&want), 1e-15);
    gradcheck("test_axpb", &|xs| axpb().call_with(&[&xs[0], &xs[1]], &[0.5, -2.0]), &[a, b], &[], false);

    let m = uniform(&[4, 6], -1.0, 1.0, 4);
    let y = row_sumsq().call(&[&m]).unwrap();
    assert_eq!(y.shape(), &[4]);
    common::assert_close(&common::vals(&y), &common::vals(&m.mul(&m).unwrap().sum(&[1], false).unwrap()), 1e-14);
    gradcheck("test_row_sumsq", &|xs| row_sumsq().call(&[&xs[0]]), &[m], &[], true);
}

#[test]
fn strided_and_f16_inputs_reach_the_kernel_as_their_values() {
    // A transposed view and an f16 tensor: the cpu sees row-major values,
    // f16 computes in f32 and rounds once.
    let m = uniform(&[3, 4], -1.0, 1.0, 5).to_dtype(DType::F32).unwrap();
    let t = m.transpose(0, 1).unwrap();
    let y = row_sumsq().call(&[&t]).unwrap();
    let want = t.contiguous().unwrap().mul(&t).unwrap().sum(&[1], false).unwrap();
    common::assert_close(
        &y.to_f32_vec().unwrap().iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &want.to_f32_vec().unwrap().iter().map(|&v| v as f64).collect::<Vec<_>>(),
        1e-6,
    );
    let h = m.to_dtype(DType::F16).unwrap();
    let y = silu().call(&[&h]).unwrap();
    assert_eq!(y.dtype(), DType::F16);
}

/// The op on the GPU against the same op on the cpu, forward and backward,
/// over a transposed input and with broadcasting and scalars.
#[test]
fn the_gpu_kernels_match_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let host = |t: &Tensor| t.to_f32_vec().unwrap();
    let close = |got: &[f32], want: &[f32], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}: element {i}: gpu {g}, cpu {w}");
        }
    };
    let x = uniform(&[64, 33], -4.0, 4.0, 6).to_dtype(DType::F32).unwrap();
    for op in [silu(), silu_by_kernels()] {
        let xc = x.detach().requires_grad_(true).unwrap();
        let xg = x.to(&gpu).unwrap().requires_grad_(true).unwrap();
        let (yc, yg) = (op.call(&[&xc]).unwrap(), op.call(&[&xg]).unwrap());
        assert!(yg.device().is_gpu());
        close(&host(&yg), &host(&yc), op.name());
        yc.sum_all().unwrap().backward().unwrap();
        yg.sum_all().unwrap().backward().unwrap();
        close(&host(&xg.grad().unwrap()), &host(&xc.grad().unwrap()), "grad");
    }
    let a = uniform(&[2, 3, 4], -1.0, 1.0, 7).to_dtype(DType::F32).unwrap();
    let b = uniform(&[3, 1], -1.0, 1.0, 8).to_dtype(DType::F32).unwrap();
    let (ag, bg) = (a.to(&gpu).unwrap(), b.to(&gpu).unwrap());
    let s = [0.25, 3.0];
    close(&host(&axpb().call_with(&[&ag, &bg], &s).unwrap()), &host(&axpb().call_with(&[&a, &b], &s).unwrap()), "axpb");
    let t = a.reshape(&[6, 4]).unwrap().transpose(0, 1).unwrap();
    let tg = ag.reshape(&[6, 4]).unwrap().transpose(0, 1).unwrap();
    close(&host(&row_sumsq().call(&[&tg]).unwrap()), &host(&row_sumsq().call(&[&t]).unwrap()), "row_sumsq");

    // Captured on the GPU, the program replays the kernel (one more
    // pipeline, the same bits as eager).
    let f =
        |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![axpb().call_with(&[&silu().call(&[&xs[0]])?, &bg], &s)?]) };
    let x0 = uniform(&[2, 3, 1], -2.0, 2.0, 9).to_dtype(DType::F32).unwrap().to(&gpu).unwrap();
    let (_, traced) = skiff::jit::trace(std::slice::from_ref(&x0), f).unwrap();
    let x1 = x0.mul_scalar(-0.5).unwrap();
    let replayed = host(&traced.run(std::slice::from_ref(&x1)).unwrap()[0]);
    assert_eq!(replayed, host(&f(std::slice::from_ref(&x1)).unwrap()[0]));
}

#[test]
fn a_custom_op_is_captured_replayed_and_saved() {
    let w = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3]).unwrap();
    let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![axpb().call_with(&[&silu().call(&[&xs[0]])?, &w], &[2.0, 0.5])?])
    };
    let x0 = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0, 0.0, -0.25], &[2, 3]).unwrap();
    let (eager, traced) = skiff::jit::trace(std::slice::from_ref(&x0), f).unwrap();
    let text = traced.program().to_string();
    assert!(text.contains("custom:test_silu") && text.contains("custom:test_axpb"), "{text}");
    let x1 = x0.mul_scalar(-1.5).unwrap();
    let bits = |t: &Tensor| t.to_f32_vec().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x0)).unwrap()[0]), bits(&eager[0]));
    assert_eq!(
        bits(&traced.run(std::slice::from_ref(&x1)).unwrap()[0]),
        bits(&f(std::slice::from_ref(&x1)).unwrap()[0])
    );

    let bytes = traced.to_bytes().unwrap();
    let loaded = skiff::jit::load(&bytes, &Device::Cpu).unwrap();
    assert_eq!(
        bits(&loaded.run(std::slice::from_ref(&x1)).unwrap()[0]),
        bits(&f(std::slice::from_ref(&x1)).unwrap()[0])
    );
    // The same file naming an op nobody registered (same length, so the
    // header still fits).
    let mut renamed = bytes.clone();
    let at: Vec<usize> = (0..renamed.len() - 9).filter(|&i| &renamed[i..i + 9] == b"test_axpb").collect();
    assert!(!at.is_empty(), "the op's name is in the file");
    for i in at {
        renamed[i..i + 9].copy_from_slice(b"test_axpq");
    }
    let e = skiff::jit::load(&renamed, &Device::Cpu).err().expect("an unknown op");
    assert!(e.to_string().contains("\"test_axpq\", which is not registered"), "{e}");

    // Under compile, the scalars are the program's: a training step with a
    // custom op replays as eager runs it.
    let p = Tensor::from_vec(vec![0.1f32, -0.2, 0.3], &[3]).unwrap().requires_grad_(true).unwrap();
    let step = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let loss = silu().call(&[&xs[0].mul(&p)?])?.sum_all()?;
        let g = skiff::grad(std::slice::from_ref(&loss), std::slice::from_ref(&p), None, Default::default())?;
        Ok(vec![loss, g[0].clone().unwrap()])
    };
    let mut compiled = skiff::jit::compile(step);
    for k in 0..3 {
        let x = x0.add_scalar(k as f64).unwrap();
        let got = compiled.call(std::slice::from_ref(&x)).unwrap();
        let want = step(std::slice::from_ref(&x)).unwrap();
        assert_eq!(bits(&got[1]), bits(&want[1]), "call {k}");
    }
    assert_eq!(compiled.replays(), 2);
}

#[test]
fn wgsl_that_does_not_compile_names_the_users_line() {
    let op = |name: &str, wgsl: &str| {
        CustomOp::builder(name, 1).wgsl(wgsl).cpu(|c: &CpuCall| Ok(c.inputs[0].data.clone())).register()
    };
    // A parse error on line 3 of the user's source.
    let e = expect_err(
        op("bad_parse", "fn compute(i: u32) -> f32 {\n    let x = X0[i];\n    return x +* 2.0;\n}"),
        Kind::Value,
        "bad_parse",
        &["custom op 'bad_parse'", "does not compile", "at line 3", "return x +* 2.0;"],
    );
    assert!(!e.to_string().contains("line 4"), "{e}");
    // A type error (validation) on line 2.
    expect_err(
        op("bad_type", "fn compute(i: u32) -> f32 {\n    let x: i32 = X0[i];\n    return f32(x);\n}"),
        Kind::Value,
        "bad_type",
        &["does not compile", "at line 2"],
    );
    // No compute, a compute of the wrong type, bindings of its own.
    expect_err(
        op("no_compute", "fn f(i: u32) -> f32 { return 1.0; }"),
        Kind::Value,
        "no_compute",
        &["fn compute(i: u32) -> f32"],
    );
    expect_err(
        op("wrong_compute", "fn compute(i: u32) -> u32 { return i; }"),
        Kind::Value,
        "wrong_compute",
        &["fn compute(i: u32) -> f32"],
    );
    expect_err(
        op(
            "own_binding",
            "@group(0) @binding(9) var<storage, read> Y: array<f32>;\nfn compute(i: u32) -> f32 { return Y[i]; }",
        ),
        Kind::Value,
        "own_binding",
        &["declares bindings", "X0"],
    );
    // Missing parts, bad names and counts; a name taken.
    let e = CustomOp::builder("no_cpu", 1).wgsl(SILU_WGSL).register();
    expect_err(e, Kind::Value, "no_cpu", &["needs a cpu function"]);
    expect_err(op("bad name", SILU_WGSL), Kind::Value, "bad name", &["letters, digits"]);
    let e = CustomOp::builder("many", 7).wgsl(SILU_WGSL).cpu(|_: &CpuCall| Ok(vec![])).register();
    expect_err(e, Kind::Value, "many", &["1 to 6 inputs, got 7"]);
    let e = CustomOp::builder("many_scalars", 4).scalars(20).wgsl(SILU_WGSL).cpu(|_: &CpuCall| Ok(vec![])).register();
    expect_err(e, Kind::Value, "many_scalars", &["at most 18 scalars, got 20"]);
    silu();
    expect_err(op("test_silu", SILU_WGSL), Kind::Value, "test_silu", &["already registered"]);
    // A refused op leaves its name free.
    op("bad_parse", SILU_WGSL).unwrap();
    let Some(gpu) = common::gpu() else { return };
    // The device's own compiler (what the browser runs at registration)
    // points at the user's line too.
    assert_eq!(pollster::block_on(silu().compile(&gpu)), Ok(()));
    assert_eq!(pollster::block_on(silu().compile(&Device::Cpu)), Ok(()));
    let raw = skiff::kernel::CustomKernel {
        name: "test_unchecked",
        inputs: 1,
        scalars: 0,
        wgsl: "fn compute(i: u32) -> f32 {\n    return X0[i] * nope;\n}".into(),
        cpu: Box::new(|c: &CpuCall| Ok(c.inputs[0].data.clone())),
        shape: None,
    };
    skiff::kernel::custom::register(raw).unwrap();
    let unchecked = CustomOp::find("test_unchecked").unwrap();
    let e = pollster::block_on(unchecked.compile(&gpu));
    expect_err(e, Kind::Value, "test_unchecked", &["does not compile", "at line 2", "X0[i] * nope"]);
    // Run anyway, it fails as a kernel that does not compile, and the device
    // goes on working.
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().to(&gpu).unwrap();
    expect_err(unchecked.call(&[&x]), Kind::Gpu, "test_unchecked", &["custom:test_unchecked", "failed to compile"]);
    assert_eq!(silu().call(&[&x]).unwrap().exp().unwrap().to_f32_vec().unwrap().len(), 2);
    assert_eq!(unchecked.call(&[&x.to(&Device::Cpu).unwrap()]).unwrap().to_f32_vec().unwrap(), vec![1.0, 2.0]);
}

#[test]
fn calls_that_do_not_fit_are_errors_naming_the_op() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    expect_err(silu().call(&[&x, &x]), Kind::Value, "test_silu", &["takes 1 inputs, got 2"]);
    expect_err(axpb().call(&[&x, &x]), Kind::Value, "test_axpb", &["takes 2 scalars, got 0"]);
    let i = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    expect_err(silu().call(&[&i]), Kind::DType, "test_silu", &["float tensors", "i32 at input 0"]);
    let d = x.to_dtype(DType::F64).unwrap();
    expect_err(axpb().call_with(&[&x, &d], &[1.0, 0.0]), Kind::DType, "test_axpb", &["f64 at input 1"]);
    let y = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    expect_err(axpb().call_with(&[&x, &y], &[1.0, 0.0]), Kind::Shape, "test_axpb", &["[3]", "[2]"]);
    expect_err(row_sumsq().call(&[&x]), Kind::Shape, "test_row_sumsq", &["takes a matrix, got shape [3]", "[[3]]"]);
    let big = Tensor::zeros(&[1; 9], DType::F32).unwrap();
    expect_err(silu().call(&[&big]), Kind::Shape, "test_silu", &["at most 8 dims"]);
    if let Some(gpu) = common::gpu() {
        let g = x.to(&gpu).unwrap();
        expect_err(axpb().call_with(&[&x, &g], &[1.0, 0.0]), Kind::Device, "test_axpb", &["cpu"]);
    }

    // The cpu function's failures and wrong lengths, and a missing backward.
    let short = CustomOp::builder("test_short", 1)
        .wgsl(SILU_WGSL)
        .cpu(|c: &CpuCall| if c.scalars.is_empty() { Ok(vec![0.0]) } else { Err("no scalars here".into()) })
        .register()
        .unwrap();
    expect_err(short.call(&[&x]), Kind::Value, "test_short", &["returned 1 values", "shape [3] (3 elements)"]);
    let leaf = x.detach().requires_grad_(true).unwrap();
    let no_backward = CustomOp::builder("test_no_backward", 1)
        .wgsl(SILU_WGSL)
        .cpu(|c: &CpuCall| Ok(c.inputs[0].data.clone()))
        .register()
        .unwrap();
    let y = no_backward.call(&[&leaf]).unwrap();
    expect_err(y.sum_all().unwrap().backward(), Kind::Autograd, "test_no_backward", &["has no backward"]);
    let wrong = CustomOp::builder("test_wrong_grads", 1)
        .wgsl(SILU_WGSL)
        .cpu(|c: &CpuCall| Ok(c.inputs[0].data.clone()))
        .backward(|b: &BackwardCall| Ok(vec![Some(b.grad.sum_all()?)]))
        .register()
        .unwrap();
    let y = wrong.call(&[&leaf]).unwrap();
    expect_err(
        y.sum_all().unwrap().backward(),
        Kind::Autograd,
        "test_wrong_grads",
        &["shape [] for input 0 of shape [3]"],
    );
}
