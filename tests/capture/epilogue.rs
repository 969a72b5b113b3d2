//! Epilogues and the rewrites that feed them (`Program::fuse_epilogues`,
//! `transpose_products`, `negate_after_sums`, run by `optimize`): which
//! programs they change and which they must not, and that the result is
//! eager's bit for bit, on the cpu and on the GPU (the head kernels store
//! through the tail's steps, rounded as eager's kernels round).

use crate::common;

use crate::common::mlp::values;
use skiff::kernel::{Epilogue, KernelSpec};
use skiff::program::{PassStats, Program};
use skiff::{jit, DType, Device, Tensor};

fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        _ => t.to_f32_vec().unwrap().into_iter().map(|v| u64::from(v.to_bits())).collect(),
    }
}

fn tensor(seed: u64, shape: &[usize], dtype: DType, device: &Device) -> Tensor {
    Tensor::from_vec(values(seed, shape.iter().product()), shape).unwrap().to_dtype(dtype).unwrap().to(device).unwrap()
}

fn epilogues(p: &Program) -> Vec<&Epilogue> {
    p.instrs
        .iter()
        .filter_map(|i| match i.spec() {
            Some(KernelSpec::Epilogue(e)) => Some(&**e),
            _ => None,
        })
        .collect()
}

/// Traces `f` over `x`, optimises, and checks a replay on `x2` against eager
/// bit for bit; returns the optimised trace and what the passes did.
fn checked(x: &Tensor, x2: &Tensor, f: impl Fn(&Tensor) -> skiff::Result<Tensor>) -> (jit::Traced, PassStats) {
    let (_, mut traced) = jit::trace(std::slice::from_ref(x), |xs| Ok(vec![f(&xs[0])?])).unwrap();
    let stats = traced.optimize();
    let got = traced.run(std::slice::from_ref(x2)).unwrap();
    assert_eq!(bits(&got[0]), bits(&f(x2).unwrap()), "replay vs eager on {}:\n{}", x.device(), traced.program());
    (traced, stats)
}

/// The cpu in f32 and f64, and the GPU when there is one.
fn devices() -> Vec<(Device, DType)> {
    let mut all = vec![(Device::Cpu, DType::F32), (Device::Cpu, DType::F64)];
    all.extend(common::gpu().map(|g| (g, DType::F32)));
    all
}

#[test]
fn a_bias_add_and_relu_run_in_their_products_epilogue() {
    for (dev, dt) in devices() {
        // 64 x 64 outputs: `MIN_PRODUCT_OUTPUTS`.
        let (w, b) = (tensor(1, &[7, 64], dt, &dev), tensor(2, &[64], dt, &dev));
        let f = |x: &Tensor| x.matmul(&w)?.add(&b)?.relu();
        let (traced, stats) = checked(&tensor(3, &[64, 7], dt, &dev), &tensor(4, &[64, 7], dt, &dev), f);
        assert_eq!((traced.program().kernels(), stats.epilogues, stats.fused), (1, 1, 1), "{}", traced.program());
        let [e] = epilogues(traced.program())[..] else { panic!("{}", traced.program()) };
        assert_eq!(e.name(), "fused:matmul+add+relu");
        assert!(traced.program().to_string().contains("{ x0 = matmul(a0, a1); t0 = add(x0, x1); t1 = relu(t0"));
    }
}

#[test]
fn a_reduction_and_its_scaling_are_one_kernel() {
    for (dev, dt) in devices() {
        // Rows of a matrix, then (long enough to split on a GPU) all of a vector.
        let rows = |x: &Tensor| x.sum(&[1], true)?.mul_scalar(0.25)?.exp();
        let (traced, stats) = checked(&tensor(5, &[6, 9], dt, &dev), &tensor(6, &[6, 9], dt, &dev), rows);
        assert_eq!((traced.program().kernels(), stats.epilogues), (1, 1), "{}", traced.program());
        let all = |x: &Tensor| x.max(&[0], false)?.mul_scalar(3.0);
        let n = [300_000];
        let (traced, _) = checked(&tensor(7, &n, dt, &dev), &tensor(8, &n, dt, &dev), all);
        assert_eq!(traced.program().kernels(), 1, "{}", traced.program());
    }
}

#[test]
fn a_negated_sum_is_the_sum_negated_with_zero_kept_positive() {
    for (dev, dt) in devices() {
        let f = |x: &Tensor| x.neg()?.sum(&[1], false);
        let (traced, stats) = checked(&tensor(9, &[4, 5], dt, &dev), &tensor(10, &[4, 5], dt, &dev), f);
        assert_eq!((stats.negated, traced.program().kernels()), (1, 1), "{}", traced.program());
        // Zeros of both signs: eager's sum of -x starts from +0 and stays +0; -sum(x) alone would be -0.
        let signs: Vec<f32> = (0..20).map(|i| if i % 3 == 0 { -0.0 } else { 0.0 }).collect();
        let zeros = Tensor::from_vec(signs, &[4, 5]).unwrap();
        let zeros = zeros.to_dtype(dt).unwrap().to(&dev).unwrap();
        let got = traced.run(std::slice::from_ref(&zeros)).unwrap();
        assert_eq!(bits(&got[0]), bits(&f(&zeros).unwrap()));
        assert_eq!(bits(&got[0]), vec![0; 4], "+0 in every row");
    }
}

#[test]
fn a_product_copied_out_transposed_is_computed_transposed() {
    for (dev, dt) in devices() {
        let w = tensor(11, &[6, 4], dt, &dev);
        // A Linear's weight gradient: [in, out] computed, copied into [out, in].
        let f = |x: &Tensor| x.transpose(0, 1)?.matmul(&w)?.transpose(0, 1)?.contiguous();
        let (traced, stats) = checked(&tensor(12, &[6, 3], dt, &dev), &tensor(13, &[6, 3], dt, &dev), f);
        assert_eq!((stats.transposed, traced.program().kernels()), (1, 1), "{}", traced.program());
        assert!(traced.program().to_string().contains("= matmul("), "{}", traced.program());
    }
}

#[test]
fn what_must_not_fuse_does_not() {
    let w = tensor(14, &[64, 64], DType::F32, &Device::Cpu);
    let x = tensor(15, &[64, 64], DType::F32, &Device::Cpu);
    // The same product fuses its ReLU when nothing else reads it...
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |i| Ok(vec![i[0].matmul(&w)?.relu()?])).unwrap();
    assert_eq!(traced.optimize().epilogues, 1, "{}", traced.program());
    // ...but not with fewer outputs than `MIN_PRODUCT_OUTPUTS`.
    let small = |i: &[Tensor]| Ok(vec![i[0].narrow(0, 0, 8)?.matmul(&w)?.relu()?]);
    const _: () = assert!(8 * 64 < skiff::program::MIN_PRODUCT_OUTPUTS);
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), small).unwrap();
    assert_eq!(traced.optimize().epilogues, 0, "{}", traced.program());
    // The product is also returned: it must reach memory.
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |i| {
        let p = i[0].matmul(&w)?;
        Ok(vec![p.relu()?, p])
    })
    .unwrap();
    assert_eq!(traced.optimize().epilogues, 0, "{}", traced.program());
    // Read transposed: not element by element.
    let (_, mut traced) =
        jit::trace(std::slice::from_ref(&x), |i| Ok(vec![i[0].matmul(&w)?.transpose(0, 1)?.relu()?])).unwrap();
    assert_eq!(traced.optimize().epilogues, 0, "{}", traced.program());
    // Read by two kernels.
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |i| {
        let p = i[0].matmul(&w)?;
        Ok(vec![p.relu()?.add(&p.sum(&[1], true)?)?])
    })
    .unwrap();
    let stats = traced.optimize();
    assert_eq!(stats.epilogues, 0, "{}", traced.program());
    // A negation also read elsewhere stays where it is.
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |i| {
        let n = i[0].neg()?;
        Ok(vec![n.sum(&[0, 1], false)?, n])
    })
    .unwrap();
    assert_eq!(traced.optimize().negated, 0, "{}", traced.program());
}

/// A tail whose scalars do not fit after the head's parameters runs as two
/// dispatches on the GPU (the product, then a fused kernel), with the same
/// bits.
#[test]
fn a_tail_too_big_for_the_heads_parameters_still_runs() {
    let long = |x: &Tensor, w: &Tensor| -> skiff::Result<Tensor> {
        let mut y = x.matmul(w)?;
        for k in 0..6 {
            y = y.mul_scalar(1.0 + k as f64 / 64.0)?.add_scalar(-0.01 * k as f64)?;
        }
        Ok(y)
    };
    for (dev, dt) in devices() {
        let w = tensor(16, &[5, 64], dt, &dev);
        let (traced, stats) =
            checked(&tensor(17, &[64, 5], dt, &dev), &tensor(18, &[64, 5], dt, &dev), |x| long(x, &w));
        assert_eq!((stats.epilogues, traced.program().kernels()), (1, 1), "{}", traced.program());
    }
}

/// Every epilogue kernel of the programs above and of the MLP Adam step
/// validates with naga: every product kernel (the tiled one is what real
/// GPUs run, which this machine has none of) and the reductions.
#[cfg(feature = "gpu")]
#[test]
fn epilogue_kernels_validate_with_naga() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let (traced, _) = mlp_adam_step(&Device::Cpu);
    let mut checked = 0;
    for e in epilogues(traced.program()) {
        for src in skiff::backend::epilogue_shader_sources(e) {
            let module =
                naga::front::wgsl::parse_str(&src).unwrap_or_else(|err| panic!("{}", err.emit_to_string(&src)));
            Validator::new(ValidationFlags::all(), Capabilities::default())
                .validate(&module)
                .unwrap_or_else(|err| panic!("{}:\n{}", e.name(), err.emit_to_string(&src)));
            checked += 1;
        }
    }
    // 4 products with a tail (four kernels each: the tiled one with 64x64
    // and with 128x128 tiles, the latter also staging vec4s, and the blocked
    // one) and 3 reductions (two each: 256-thread and 64-thread workgroups).
    assert_eq!(checked, 4 * 4 + 3 * 2, "validated {checked} kernels");
}

/// The 784-256-128-10 MLP's Adam step (batch 64), traced and optimised.
fn mlp_adam_step(dev: &Device) -> (jit::Traced, PassStats) {
    use skiff::nn::{Layer, Linear, ReLU, Sequential};
    use skiff::optim::{Adam, AdamConfig, Optimizer};
    let model = Sequential::new()
        .push(Linear::new(784, 256).unwrap())
        .push(ReLU::new())
        .push(Linear::new(256, 128).unwrap())
        .push(ReLU::new())
        .push(Linear::new(128, 10).unwrap());
    model.to(dev).unwrap();
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    let x = tensor(19, &[64, 784], DType::F32, dev);
    let y = Tensor::from_vec((0..64i32).map(|i| i * 7 % 10).collect::<Vec<i32>>(), &[64]).unwrap().to(dev).unwrap();
    let mut step = |x: &Tensor, y: &Tensor| -> skiff::Result<Tensor> {
        opt.zero_grad();
        let loss = model.forward(x)?.cross_entropy(y, skiff::Reduction::Mean, 0.0)?;
        loss.backward()?;
        opt.step()?;
        Ok(loss.detach())
    };
    step(&x, &y).unwrap();
    let (_, mut traced) = jit::trace(&[x.clone(), y.clone()], |i| Ok(vec![step(&i[0], &i[1])?])).unwrap();
    let stats = traced.optimize();
    (traced, stats)
}

/// Issue 15's count: at most 30 kernels per MLP Adam step (eager code
/// dispatches 65 here). The last layer's [64, 10] product keeps its bias add
/// apart (`MIN_PRODUCT_OUTPUTS`).
#[test]
fn the_mlp_adam_step_compiles_to_at_most_thirty_kernels() {
    let (traced, stats) = mlp_adam_step(&Device::Cpu);
    let k = traced.program().kernels();
    assert!(k <= 30, "{k} kernels ({stats:?}):\n{}", traced.program());
    assert_eq!((stats.transposed, stats.epilogues, stats.negated), (3, 7, 2), "{}", traced.program());
}
