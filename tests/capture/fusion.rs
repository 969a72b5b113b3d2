//! Elementwise fusion (`Program::fuse_elementwise`, run by `optimize`):
//! which instructions become one kernel and which must not, and that a
//! fused program computes what eager code does: bit for bit on the cpu (the
//! fused loop calls the rows' own slice kernels), within f32 rounding on
//! the GPU (one generated WGSL kernel per fused program). The fused kernel
//! on its own: tests/gpu_backend/fused_kernel.rs.

use crate::common;

use crate::common::mlp::{batch, params, step, values};

use skiff::kernel::{FusedElementwise, KernelSpec, Operand};
use skiff::optim::{Sgd, SgdConfig};
use skiff::program::{Instr, PassStats, Program};
use skiff::{jit, DType, Device, Tensor};

/// The bits of every element (f32 widened), to compare exactly.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        _ => t.to_f32_vec().unwrap().into_iter().map(|v| u64::from(v.to_bits())).collect(),
    }
}

fn close(got: &Tensor, want: &Tensor, what: &str) {
    let (g, w) = (got.to_f32_vec().unwrap(), want.to_f32_vec().unwrap());
    assert_eq!(g.len(), w.len(), "{what}: lengths");
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}: element {i}: {a} vs {b}");
    }
}

fn tensor(seed: u64, shape: &[usize]) -> Tensor {
    Tensor::from_vec(values(seed, shape.iter().product()), shape).unwrap()
}

/// The fused instructions of a program.
fn fused(p: &Program) -> Vec<&FusedElementwise> {
    p.instrs
        .iter()
        .filter_map(|i| match i.spec() {
            Some(KernelSpec::Fused(f)) => Some(&**f),
            _ => None,
        })
        .collect()
}

fn trace1(x: &Tensor, f: impl Fn(&Tensor) -> skiff::Result<Tensor>) -> jit::Traced {
    jit::trace(std::slice::from_ref(x), |xs| Ok(vec![f(&xs[0])?])).unwrap().1
}

fn stats(merged: usize, dead: usize, fused: usize) -> PassStats {
    PassStats { merged, dead, fused, ..PassStats::default() }
}

#[test]
fn a_chain_becomes_one_kernel() {
    let x = tensor(1, &[4, 3]);
    let f = |x: &Tensor| x.mul_scalar(2.0)?.add_scalar(1.0)?.relu();
    let mut traced = trace1(&x, f);
    assert_eq!(traced.program().kernels(), 3);
    assert_eq!(traced.optimize(), stats(0, 0, 2));
    let text = traced.program().to_string();
    assert_eq!(traced.program().kernels(), 1, "{text}");
    assert!(text.contains("= fused:mul_scalar+add_scalar+relu(%0)  # fused"), "{text}");
    assert!(text.contains("{ t0 = mul_scalar(x0; 2, 0); t1 = add_scalar(t0; 1, 0); t2 = relu(t1; 0, 0) }"), "{text}");
    let x2 = tensor(2, &[4, 3]).mul_scalar(3.0).unwrap();
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

#[test]
fn a_broadcast_bias_add_fuses() {
    let (x, b) = (tensor(3, &[5, 4]), tensor(4, &[4]));
    let f = |x: &Tensor| x.add(&b)?.relu();
    let mut traced = trace1(&x, f);
    assert_eq!(traced.optimize(), stats(0, 0, 1));
    let p = traced.program();
    let [Instr::Run { spec: KernelSpec::Fused(body), inputs, shape, .. }] = p.instrs.as_slice() else {
        panic!("one fused kernel:\n{p}")
    };
    assert_eq!(body.name(), "fused:add+relu");
    assert_eq!(shape.as_slice(), &[5, 4]);
    // The bias is read as it is, [4], broadcast by the kernel.
    assert_eq!(inputs.iter().map(|a| a.layout.shape.to_vec()).collect::<Vec<_>>(), vec![vec![5, 4], vec![4]]);
    let x2 = tensor(5, &[5, 4]);
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

#[test]
fn a_value_that_is_also_returned_is_not_fused_away() {
    let x = tensor(6, &[3, 5]);
    let f = |x: &Tensor| -> skiff::Result<Vec<Tensor>> {
        let e = x.exp()?;
        let r = e.add_scalar(1.0)?.log()?;
        Ok(vec![e, r])
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| f(&xs[0])).unwrap();
    assert_eq!(traced.optimize(), stats(0, 0, 1));
    let text = traced.program().to_string();
    assert!(text.contains("= unary:exp(%0)"), "exp stays: it is an output\n{text}");
    assert!(text.contains("= fused:add_scalar+log("), "{text}");
    let x2 = tensor(7, &[3, 5]);
    let (got, want) = (traced.run(std::slice::from_ref(&x2)).unwrap(), f(&x2).unwrap());
    assert_eq!(bits(&got[0]), bits(&want[0]));
    assert_eq!(bits(&got[1]), bits(&want[1]));
}

/// A member reading a value through another view (a transpose) needs the
/// value's buffer: it is made by its own kernel.
#[test]
fn a_value_read_through_another_view_keeps_its_buffer() {
    let x = tensor(11, &[3, 3]);
    let f = |x: &Tensor| x.exp()?.transpose(0, 1)?.add(x)?.relu();
    let mut traced = trace1(&x, f);
    assert_eq!(traced.optimize(), stats(0, 0, 1));
    let text = traced.program().to_string();
    assert!(
        text.contains("= unary:exp(%0)") && text.contains("= fused:add+relu(%1[3, 3; strides 1, 3; +0], %0)"),
        "{text}"
    );
    let x2 = tensor(12, &[3, 3]);
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

/// `before` is read from `b` before an in-place write into `b`: fused into
/// the add after the write, it would read the new values.
#[test]
fn an_in_place_write_between_members_blocks_the_fusion() {
    let x = tensor(8, &[2, 3]);
    let b = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let f = |x: &Tensor, write: bool| -> skiff::Result<Tensor> {
        let before = b.mul_scalar(2.0)?;
        if write {
            b.add_scalar_(1.0)?;
        }
        x.add(&before)
    };
    // Without the write, the two fuse.
    let mut plain = trace1(&x, |x| f(x, false));
    assert_eq!(plain.optimize().fused, 1, "{}", plain.program());
    let mut written = trace1(&x, |x| f(x, true));
    let kernels = written.program().kernels();
    assert_eq!(written.optimize(), stats(0, 0, 0), "{}", written.program());
    assert_eq!(written.program().kernels(), kernels);
    // b is [2, ..., 7] after the trace; the run reads it before adding 1 again.
    let replayed = written.run(std::slice::from_ref(&x)).unwrap();
    let want = x.add(&Tensor::from_vec(vec![4.0f32, 6.0, 8.0, 10.0, 12.0, 14.0], &[2, 3]).unwrap()).unwrap();
    assert_eq!(bits(&replayed[0]), bits(&want));
    assert_eq!(b.to_f32_vec().unwrap(), vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
}

/// A run may bind a captured storage as an input: a read of an input must
/// stay before a write into any captured storage.
#[test]
fn a_read_of_an_input_stays_before_a_write_it_may_alias() {
    let b = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let f = |x: &Tensor| -> skiff::Result<Tensor> {
        let doubled = x.mul_scalar(2.0)?;
        b.add_scalar_(10.0)?;
        doubled.add_scalar(1.0)
    };
    let x = Tensor::from_vec(vec![0.5f32, 0.25, 0.125], &[3]).unwrap();
    let mut traced = trace1(&x, f);
    assert_eq!(traced.optimize().fused, 0, "{}", traced.program());
    // b is [11, 12, 13]; run on b itself: eager reads it before the write.
    let got = traced.run(std::slice::from_ref(&b)).unwrap();
    assert_eq!(got[0].to_f32_vec().unwrap(), vec![23.0, 25.0, 27.0]);
    assert_eq!(b.to_f32_vec().unwrap(), vec![21.0, 22.0, 23.0]);
}

#[test]
fn a_dag_with_a_shared_intermediate_fuses() {
    let x = tensor(9, &[4, 6]);
    // t is read by two members; x is read by three.
    let f = |x: &Tensor| -> skiff::Result<Tensor> {
        let t = x.mul_scalar(3.0)?.tanh()?;
        t.mul(&t.sigmoid()?)?.add(x)?.sub(&x.relu()?)
    };
    let mut traced = trace1(&x, f);
    assert_eq!(traced.program().kernels(), 7);
    assert_eq!(traced.optimize(), stats(0, 0, 6));
    let p = traced.program();
    let [body] = fused(p)[..] else { panic!("one fused kernel:\n{p}") };
    assert_eq!(body.inputs, vec![DType::F32], "x is one input, read by three steps");
    assert_eq!(body.steps[2].args, vec![Operand::Step(1)], "sigmoid reads tanh");
    assert_eq!(body.steps[3].args, vec![Operand::Step(1), Operand::Step(2)], "mul reads tanh again");
    let x2 = tensor(10, &[4, 6]);
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

/// Broadcasts (a bias row, a column, a 0-d scalar), a transposed operand,
/// comparisons, where and casts, over more elements than one cpu chunk.
fn mixed(x: &Tensor, bias: &Tensor, col: &Tensor, wt: &Tensor) -> skiff::Result<Tensor> {
    let w = wt.transpose(0, 1)?;
    let h = x.mul_scalar(1.5)?.add(bias)?.tanh()?;
    let mask = h.gt(&w)?;
    let picked = Tensor::where_(&mask, &h, &w.neg()?)?;
    let m = mask.to_dtype(x.dtype())?;
    let half = Tensor::full_on(&[], 0.5, x.dtype(), &x.device())?;
    picked.mul(&m)?.add(&h.sigmoid()?.mul(col)?)?.sub(&half)?.clamp(Some(-0.4), Some(0.9))
}

fn mixed_inputs(seed: u64, dtype: DType, device: &Device) -> [Tensor; 4] {
    let t = |s: u64, shape: &[usize]| tensor(s, shape).to_dtype(dtype).unwrap().to(device).unwrap();
    [t(seed, &[37, 129]), t(seed + 1, &[129]), t(seed + 2, &[37, 1]), t(seed + 3, &[129, 37])]
}

fn traced_mixed(dtype: DType, device: &Device) -> jit::Traced {
    let [x, bias, col, wt] = mixed_inputs(20, dtype, device);
    let (_, mut traced) =
        jit::trace(&[x], |xs| Ok(vec![mixed(&xs[0], &bias, &col, &wt)?])).expect("the mixed function traces");
    let before = traced.program().kernels();
    let s = traced.optimize();
    assert!(s.fused >= 8, "most of the chain fuses: {s:?}\n{}", traced.program());
    assert_eq!(traced.program().kernels(), before - s.removed());
    traced
}

fn fused_replay_is_eager_bit_for_bit(dtype: DType) {
    let traced = traced_mixed(dtype, &Device::Cpu);
    // The captured operands are the trace's (seeds 21..23); the input is new.
    let [_, bias, col, wt] = mixed_inputs(20, dtype, &Device::Cpu);
    let [x, ..] = mixed_inputs(40, dtype, &Device::Cpu);
    let got = traced.run(std::slice::from_ref(&x)).unwrap();
    let want = mixed(&x, &bias, &col, &wt).unwrap();
    assert_eq!(got[0].dtype(), dtype);
    assert_eq!(bits(&got[0]), bits(&want), "fused {dtype} differs from eager");
}

#[test]
fn fused_replays_are_eager_bit_for_bit_in_f32() {
    fused_replay_is_eager_bit_for_bit(DType::F32);
}

#[test]
fn fused_replays_are_eager_bit_for_bit_in_f64() {
    fused_replay_is_eager_bit_for_bit(DType::F64);
}

#[test]
fn fused_replays_on_the_gpu_are_eager_within_rounding() {
    let Some(gpu) = common::gpu() else { return };
    let traced = traced_mixed(DType::F32, &gpu);
    let [_, bias, col, wt] = mixed_inputs(20, DType::F32, &gpu);
    let [x, ..] = mixed_inputs(40, DType::F32, &gpu);
    let got = traced.run(std::slice::from_ref(&x)).unwrap();
    close(&got[0], &mixed(&x, &bias, &col, &wt).unwrap(), "fused on the GPU vs eager on the GPU");
    let cpu = |t: &Tensor| t.to(&Device::Cpu).unwrap();
    close(&got[0], &mixed(&cpu(&x), &cpu(&bias), &cpu(&col), &cpu(&wt)).unwrap(), "fused on the GPU vs the cpu");
}

/// A fused program over a [12, 16] input, a bias row and a column: every
/// input reads as a vec4 or one repeated element, so the GPU runs the
/// 4-wide variant of the generated kernel (its pipeline is compiled), and
/// agrees with eager code on the cpu within rounding. A traced program
/// takes inputs laid out as when it was traced: the same values at an
/// offset are refused with a message naming the offsets (which once read
/// as if nothing differed).
#[test]
fn fused_replays_on_the_gpu_run_four_outputs_per_invocation_where_aligned() {
    let Some(_) = common::gpu() else { return };
    // A private context: its pipeline cache shows which kernels ran.
    let g = skiff::backend::gpu::GpuDevice::open().unwrap();
    let gpu = Device::Gpu(g.clone());
    let f = |x: &Tensor, bias: &Tensor, col: &Tensor| -> skiff::Result<Tensor> {
        let h = x.mul_scalar(1.5)?.add(bias)?.tanh()?;
        let picked = Tensor::where_(&h.gt(col)?, &h, &col.neg()?)?;
        picked.mul(col)?.add_scalar(0.25)?.sigmoid()
    };
    let on = |t: Tensor| t.to(&gpu).unwrap();
    let (x, bias, col) = (on(tensor(70, &[12, 16])), on(tensor(71, &[16])), on(tensor(72, &[12, 1])));
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![f(&xs[0], &bias, &col)?])).unwrap();
    assert!(traced.optimize().fused >= 5, "{}", traced.program());
    let x2 = on(tensor(73, &[12, 16]));
    let got = traced.run(std::slice::from_ref(&x2)).unwrap();
    let cpu = |t: &Tensor| t.to(&Device::Cpu).unwrap();
    let want = f(&cpu(&x2), &cpu(&bias), &cpu(&col)).unwrap();
    close(&got[0], &want, "4-wide fused kernel vs the cpu");
    let kernels = g.compiled_kernels();
    assert!(kernels.iter().any(|k| k.starts_with("fused:") && k.contains(":x4:")), "{kernels:?}");
    // The same values from a view at offset 1: the one-element kernel.
    let padded = on(Tensor::concat(&[tensor(74, &[1]), cpu(&x2).reshape(&[192]).unwrap()], 0).unwrap());
    let shifted = padded.narrow(0, 1, 192).unwrap().reshape(&[12, 16]).unwrap();
    let e = traced.run(std::slice::from_ref(&shifted)).unwrap_err().to_string();
    assert!(e.contains("offset 1 in a storage of 193 elements") && e.contains("offset 0 in a storage of 192"), "{e}");
    // Traced at that offset, the program runs one output per invocation: the same bits.
    let (_, mut one) = jit::trace(std::slice::from_ref(&shifted), |xs| Ok(vec![f(&xs[0], &bias, &col)?])).unwrap();
    one.optimize();
    let again = one.run(std::slice::from_ref(&shifted)).unwrap();
    assert_eq!(bits(&again[0]), bits(&got[0]), "one-element and 4-wide fused kernels agree bit for bit");
}

/// Nine operands summed: a fused kernel binds at most `MAX_INPUTS` (7)
/// inputs, so the chain splits into kernels that each fit.
#[test]
fn a_fused_kernel_reads_at_most_seven_inputs() {
    let xs: Vec<Tensor> = (0..9).map(|k| tensor(90 + k, &[3, 4])).collect();
    let sum = |xs: &[Tensor]| -> skiff::Result<Tensor> {
        let mut y = xs[0].clone();
        for x in &xs[1..] {
            y = y.add(x)?;
        }
        Ok(y)
    };
    let (_, mut traced) = jit::trace(&xs, |xs| Ok(vec![sum(xs)?])).unwrap();
    assert_eq!(traced.program().kernels(), 8);
    assert_eq!(traced.optimize().fused, 6);
    let widths: Vec<usize> = fused(traced.program()).iter().map(|f| f.inputs.len()).collect();
    assert_eq!(widths, vec![3, skiff::kernel::fused::MAX_INPUTS], "{}", traced.program());
    let ys: Vec<Tensor> = (0..9).map(|k| tensor(100 + k, &[3, 4])).collect();
    assert_eq!(bits(&traced.run(&ys).unwrap()[0]), bits(&sum(&ys).unwrap()));
}

/// 30 scalar steps need 60 parameter words, more than the params block
/// holds with the indexing words: the GPU runs such a program step by step.
#[test]
fn a_fused_kernel_too_big_for_one_dispatch_still_runs_on_the_gpu() {
    let long = |x: &Tensor| -> skiff::Result<Tensor> {
        let mut y = x.clone();
        for k in 0..15 {
            y = y.mul_scalar(1.0 + k as f64 / 64.0)?.add_scalar(-0.01 * k as f64)?;
        }
        Ok(y)
    };
    let x = tensor(80, &[9, 7]);
    let mut traced = trace1(&x, long);
    assert_eq!(traced.optimize().fused, 29);
    let x2 = tensor(81, &[9, 7]);
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&long(&x2).unwrap()));
    let Some(gpu) = common::gpu() else { return };
    let xg = x.to(&gpu).unwrap();
    let mut traced = trace1(&xg, long);
    assert_eq!(traced.optimize().fused, 29);
    let x2 = x2.to(&gpu).unwrap();
    close(&traced.run(std::slice::from_ref(&x2)).unwrap()[0], &long(&x2).unwrap(), "a long chain on the GPU");
}

/// Every fused kernel of the traced programs above validates with naga.
#[cfg(feature = "gpu")]
#[test]
fn generated_kernels_validate_with_naga() {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    use skiff::backend;
    let mut programs = vec![traced_mixed(DType::F32, &Device::Cpu)];
    let (x, y) = batch(3, 5, &Device::Cpu);
    let p = params(2, &Device::Cpu);
    let mut opt = sgd(&p);
    step(&p, &mut opt, &x, &y).unwrap();
    let (_, mut traced) = jit::trace(&[x, y], |i| Ok(vec![step(&p, &mut opt, &i[0], &i[1])?])).unwrap();
    traced.optimize();
    programs.push(traced);
    let mut checked = 0;
    for t in &programs {
        for spec in fused(t.program()) {
            for src in backend::fused_shader_sources(spec) {
                let module =
                    naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
                Validator::new(ValidationFlags::all(), Capabilities::default())
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{}:\n{}", spec.name(), e.emit_to_string(&src)));
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "validated {checked} fused kernels (each in both widths)");
}

// ---- a traced MLP training step (as in tests/capture/trace.rs)

fn sgd(p: &[Tensor]) -> Sgd {
    Sgd::new(p.to_vec(), SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() }).unwrap()
}

/// Traces a steady training step on `device` next to an eager twin, fuses
/// it, and replays 5 steps; `same` compares each loss and the parameters.
fn fused_training(device: &Device, same: impl Fn(&Tensor, &Tensor, &str)) {
    let (pa, pb) = (params(5, device), params(5, device));
    let (mut oa, mut ob) = (sgd(&pa), sgd(&pb));
    let (x, y) = batch(10, 5, device);
    step(&pa, &mut oa, &x, &y).unwrap();
    step(&pb, &mut ob, &x, &y).unwrap();
    let (x, y) = batch(11, 5, device);
    let (_, mut traced) = jit::trace(&[x.clone(), y.clone()], |i| Ok(vec![step(&pa, &mut oa, &i[0], &i[1])?])).unwrap();
    step(&pb, &mut ob, &x, &y).unwrap();
    let before = traced.program().kernels();
    let s = traced.optimize();
    let after = traced.program().kernels();
    assert_eq!(after, before - s.removed());
    // add+relu, the stable softmax's chains, the relu mask's gt+cast+mul, and
    // per parameter the momentum update (copy, scale, add) and the step (scale, sub).
    assert!(s.fused >= 15 && fused(traced.program()).len() >= 9, "{s:?}\n{}", traced.program());
    eprintln!("training step on {device}: {before} kernels, {after} after the passes ({s:?})");
    for seed in 12..17 {
        let (x, y) = batch(seed, 5, device);
        let replayed = traced.run(&[x.clone(), y.clone()]).unwrap();
        let eager = step(&pb, &mut ob, &x, &y).unwrap();
        same(&replayed[0], &eager, &format!("loss at step {seed}"));
    }
    for (k, (a, b)) in pa.iter().zip(&pb).enumerate() {
        same(a, b, &format!("parameter {k} after 5 fused steps"));
    }
}

#[test]
fn a_fused_training_step_replays_eager_bit_for_bit() {
    fused_training(&Device::Cpu, |a, b, what| assert_eq!(bits(a), bits(b), "{what}"));
}

#[test]
fn a_fused_training_step_on_the_gpu_stays_with_eager() {
    if let Some(gpu) = common::gpu() {
        fused_training(&gpu, close);
    }
}
