//! The scan and sort kernels at sizes the registry's small cases do not
//! reach: long rows (split over workgroups, and the carry across 256-element
//! chunks), many short
//! rows (one invocation each, in the cpu's order) and a sort of
//! 2^20 + 3 values (every merge stage of the bitonic network, in one batch),
//! against the cpu; and sort, topk and cumprod through forward and backward
//! with no readback (their indices are made and trusted on the device).

use crate::common;
use skiff::{jit, Device, Result, Tensor};

/// Scrambled values in [-1, 1) with every value repeated `copies` times (ties).
fn scrambled(n: usize, copies: usize) -> Vec<f32> {
    (0..n).map(|i| (((i / copies) as u64 * 2_654_435_761) % 1_000_003) as f32 / 500_001.5 - 1.0).collect()
}

fn readbacks(d: &Device) -> u64 {
    match d {
        Device::Gpu(g) => g.counters().readbacks,
        Device::Cpu => 0,
    }
}

#[test]
fn a_million_values_sort_as_on_the_cpu() {
    let Some(dev) = common::gpu() else { return };
    let n = (1 << 20) + 3;
    let x = Tensor::from_vec(scrambled(n, 3), &[n]).unwrap();
    for descending in [false, true] {
        let cpu = x.argsort(0, descending).unwrap().to_vec::<i32>().unwrap();
        let gpu = x.to(&dev).unwrap().argsort(0, descending).unwrap().to_vec::<i32>().unwrap();
        // Ties in threes: the same stable order, position for position.
        assert!(cpu == gpu, "descending {descending}: the GPU's order differs from the cpu's");
    }
}

#[test]
fn long_rows_scan_as_on_the_cpu() {
    let Some(dev) = common::gpu() else { return };
    // 3 rows of 70,001 (274 chunks each), scanned along a strided axis too.
    let x = Tensor::from_vec(scrambled(3 * 70_001, 1), &[3, 70_001]).unwrap();
    for (t, dim) in [(x.clone(), 1), (x.transpose(0, 1).unwrap(), 0)] {
        let cpu = t.cumsum(dim).unwrap().to_vec::<f32>().unwrap();
        let gpu = t.to(&dev).unwrap().cumsum(dim).unwrap().to_vec::<f32>().unwrap();
        // Sums of up to 70,001 terms of |x| < 1 in two orders: f32 rounding grows with the row.
        let worst = cpu.iter().zip(&gpu).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 2e-2, "dim {dim}: largest difference {worst}");
    }
    // The gradient: the same scan backwards over the split rows.
    let w = Tensor::from_vec(scrambled(3 * 70_001, 4), &[3, 70_001]).unwrap();
    let grad = |d: &Device| {
        let xd = x.to(d).unwrap().detach().requires_grad_(true).unwrap();
        xd.cumsum(1).unwrap().mul(&w.to(d).unwrap()).unwrap().sum_all().unwrap().backward().unwrap();
        xd.grad().unwrap().to_vec::<f32>().unwrap()
    };
    let (cpu, gpu) = (grad(&Device::Cpu), grad(&dev));
    let worst = cpu.iter().zip(&gpu).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 2e-2, "reversed: largest difference {worst}");
    let near_one = x.mul_scalar(1e-5).unwrap().add_scalar(1.0).unwrap();
    let cpu = near_one.cumprod(1).unwrap().to_vec::<f32>().unwrap();
    let gpu = near_one.to(&dev).unwrap().cumprod(1).unwrap().to_vec::<f32>().unwrap();
    let worst = cpu.iter().zip(&gpu).map(|(a, b)| ((a - b) / a).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-3, "cumprod: largest relative difference {worst}");
}

#[test]
fn short_rows_scan_in_the_cpus_order() {
    let Some(dev) = common::gpu() else { return };
    // 20,000 rows of 7: one invocation per row, adding in index order as the cpu does.
    let x = Tensor::from_vec(scrambled(7 * 20_000, 1), &[7, 20_000]).unwrap().transpose(0, 1).unwrap();
    for prod in [false, true] {
        let scan = |t: &Tensor| if prod { t.cumprod(1) } else { t.cumsum(-1) };
        let cpu = scan(&x).unwrap().to_vec::<f32>().unwrap();
        let gpu = scan(&x.to(&dev).unwrap()).unwrap().to_vec::<f32>().unwrap();
        assert!(cpu == gpu, "prod {prod}: the GPU's short-row scan differs from the cpu's");
    }
}

#[test]
fn sort_topk_and_cumprod_train_without_readbacks() {
    let Some((dev, _)) = common::private_gpu() else { return };
    let x = Tensor::from_vec(scrambled(4 * 300, 2), &[4, 300]).unwrap();
    let run = |d: &Device| {
        let xd = x.to(d).unwrap().requires_grad_(true).unwrap();
        let (values, _) = xd.sort(1, true, true).unwrap();
        let (top, _) = xd.topk(5, -1, false, true).unwrap();
        let loss = values.cumprod(1).unwrap().sum_all().unwrap().add(&top.prod(&[], false).unwrap()).unwrap();
        loss.backward().unwrap();
        (values, xd.grad().unwrap())
    };
    let before = readbacks(&dev);
    let (v_gpu, g_gpu) = run(&dev);
    assert_eq!(readbacks(&dev), before, "sort, topk or cumprod read back from the GPU");
    let (v_cpu, g_cpu) = run(&Device::Cpu);
    assert_eq!(v_gpu.to_vec::<f32>().unwrap(), v_cpu.to_vec::<f32>().unwrap());
    let (a, b) = (g_gpu.to_vec::<f32>().unwrap(), g_cpu.to_vec::<f32>().unwrap());
    let worst = a.iter().zip(&b).map(|(a, b)| (a - b).abs() / (1.0 + b.abs())).fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "gradients differ by up to {worst}");
}

#[test]
fn compiled_sorts_and_scans_replay_as_eager_code_runs() {
    let Some(dev) = common::gpu() else { return };
    // Sorting, gathering at the sorted positions (trusted in the program:
    // its own kernel made them), scanning and their gradients, replayed.
    let f = |x: &Tensor| -> Result<Vec<Tensor>> {
        let x = x.requires_grad_(true)?;
        let (values, indices) = x.sort(1, true, true)?;
        let (top, _) = x.topk(3, 0, false, true)?;
        // One long row: the split scan (blocks, their totals, the carries).
        let long = x.reshape(&[1, 4200])?.cumsum(1)?.sum_all()?;
        let loss = values.cumsum(1)?.mul(&values.cumprod(0)?)?.sum_all()?.add(&top.prod(&[], false)?)?.add(&long)?;
        let g = skiff::autograd::grad(std::slice::from_ref(&loss), &[x], None, Default::default())?;
        Ok(vec![loss, indices, g[0].clone().expect("x takes part")])
    };
    let mut compiled = jit::compile(|i: &[Tensor]| f(&i[0]));
    for call in 0..4 {
        let x = Tensor::from_vec(scrambled(6 * 700, 2 + call), &[6, 700]).unwrap();
        let x = x.mul_scalar(0.5 + 0.1 * call as f64).unwrap().to(&dev).unwrap();
        let got = compiled.call(std::slice::from_ref(&x)).unwrap();
        let want = f(&x).unwrap();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            let bits = |t: &Tensor| t.to_dtype(skiff::DType::F32).unwrap().to_vec::<f32>().unwrap();
            assert!(bits(a) == bits(b), "call {call}, output {k}: the replay differs from eager");
        }
    }
}
