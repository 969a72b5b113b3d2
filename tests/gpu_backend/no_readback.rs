//! A browser cannot block on a GPU readback, so a training step must not
//! need one. Indices computed by argmax and max-pool's window argmax carry a bound, so
//! the index ops trust them without a host-side range check. On a GPU that
//! means no readback at all (the browser cannot block for one): max-pool's
//! forward gather and backward scatter must run with zero readbacks, and
//! scatters at device-computed indices (the scan kernel) must match the cpu
//! bit for bit. An in-place write revokes the trust. Gradient clipping by
//! norm has a tensor form that stays on the device too.

use crate::common;

use crate::common::{expect_err, Kind};
use skiff::{Device, Tensor};

fn ramp(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    // Distinct values in a scrambled order: no ties for argmax.
    let v: Vec<f32> = (0..n).map(|i| ((i as u64 * 7919 + seed * 31) % n as u64) as f32 / n as f32 - 0.5).collect();
    Tensor::from_vec(v, shape).unwrap()
}

#[test]
fn an_inplace_write_revokes_the_argmax_bound() {
    let x = ramp(&[4, 6], 1);
    let idx = x.argmax(Some(1), true).unwrap();
    assert_eq!(x.gather(1, &idx).unwrap().shape(), &[4, 1]);
    idx.copy_(&Tensor::from_vec(vec![9i32; 4], &[4, 1]).unwrap()).unwrap(); // out of range now
    let facts = ["index 9 is out of range for axis 1 of size 6 (input shape [4, 6], index shape [4, 1])"];
    expect_err(x.gather(1, &idx), Kind::Value, "gather", &facts);
}

#[cfg(feature = "gpu")]
mod gpu {
    use super::*;

    /// The tests count readbacks: each on a private context, where only its own work counts.
    fn gpu() -> Option<Device> {
        common::private_gpu().map(|(d, _)| d)
    }

    fn readbacks(d: &Device) -> u64 {
        match d {
            Device::Gpu(g) => g.counters().readbacks,
            Device::Cpu => 0,
        }
    }

    #[test]
    fn max_pool_runs_forward_and_backward_without_readbacks() {
        let Some(dev) = gpu() else { return };
        let x = ramp(&[2, 3, 7, 7], 3);
        let g = ramp(&[2, 3, 4, 4], 5);
        let run = |d: &Device| {
            let xd = x.to(d).unwrap().requires_grad_(true).unwrap();
            let y = xd.max_pool2d([3, 3], [2, 2], [1, 1]).unwrap();
            y.mul(&g.to(d).unwrap()).unwrap().sum_all().unwrap().backward().unwrap();
            (y, xd.grad().unwrap())
        };
        let before = readbacks(&dev);
        let (y_gpu, gx_gpu) = run(&dev);
        assert_eq!(readbacks(&dev), before, "max_pool2d read indices back from the GPU");
        let (y_cpu, gx_cpu) = run(&Device::Cpu);
        assert_eq!(y_gpu.to_vec::<f32>().unwrap(), y_cpu.to_vec::<f32>().unwrap());
        assert_eq!(gx_gpu.to_vec::<f32>().unwrap(), gx_cpu.to_vec::<f32>().unwrap());
    }

    /// Labels moved to the GPU keep a host copy for their range checks; views
    /// of them (strided, expanded) and contiguous copies of those views keep
    /// it too, so a loss never reads labels back (a browser cannot). Before
    /// copies carried it, a copy of a strided label view (made by `unsqueeze`
    /// inside the loss) had to be read back, which failed in the browser.
    #[test]
    fn label_views_and_their_copies_need_no_readback() {
        use skiff::Reduction::Mean;
        let Some(dev) = gpu() else { return };
        let all = Tensor::from_vec(vec![7i32, 0, 1, 2, 3, 4, 0, 1, 2], &[9]).unwrap();
        let logits = ramp(&[4, 5], 3);
        let views = |t: &Tensor| -> Vec<Tensor> {
            vec![
                t.slice(0, 2, 9, 2).unwrap(),                            // 1, 3, 0, 2
                t.narrow(0, 3, 1).unwrap().expand(&[4]).unwrap(),        // 2, 2, 2, 2
                t.slice(0, 2, 9, 2).unwrap().contiguous_copy().unwrap(), // a copy of a view
                t.narrow(0, 1, 8)
                    .unwrap()
                    .reshape(&[2, 4])
                    .unwrap()
                    .transpose(0, 1)
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .narrow(1, 0, 1)
                    .unwrap()
                    .reshape(&[4])
                    .unwrap(),
            ]
        };
        let on_gpu = views(&all.to(&dev).unwrap());
        for (labels, want) in on_gpu.iter().zip(views(&all)) {
            let before = readbacks(&dev);
            let loss = logits.to(&dev).unwrap().cross_entropy(labels, Mean, 0.0).unwrap();
            let picked = logits.to(&dev).unwrap().gather(1, &labels.unsqueeze(1).unwrap()).unwrap();
            assert_eq!(readbacks(&dev), before, "labels {want:?} were read back from the GPU");
            let cpu_loss = logits.cross_entropy(&want, Mean, 0.0).unwrap().item().unwrap();
            assert!((loss.item().unwrap() - cpu_loss).abs() < 1e-6, "labels {want:?}");
            assert_eq!(
                picked.to_vec::<f32>().unwrap(),
                logits.gather(1, &want.unsqueeze(1).unwrap()).unwrap().to_vec::<f32>().unwrap()
            );
        }
        // The host copy is the real values: a view that includes the 7 is out of range for 5 classes.
        let bad = all.to(&dev).unwrap().slice(0, 0, 8, 2).unwrap().contiguous().unwrap(); // 7, 1, 3, 0
        let err = logits.to(&dev).unwrap().cross_entropy(&bad, Mean, 0.0).unwrap_err().to_string();
        assert!(err.starts_with("cross_entropy") && err.contains("label 7 at position 0"), "{err}");
    }

    #[test]
    fn scatters_at_device_computed_indices_match_the_cpu() {
        let Some(dev) = gpu() else { return };
        // Repeated targets: 5 rows of 8 scores, argmax over 4 of every 8.
        let scores = ramp(&[5, 8, 4], 7);
        let src = ramp(&[5, 8, 1], 11);
        let base = ramp(&[5, 8, 4], 13);
        let on = |d: &Device| {
            let idx = scores.to(d).unwrap().argmax(Some(2), true).unwrap(); // [5, 8, 1] in 0..4
            let scattered = base.to(d).unwrap().scatter_add(2, &idx, &src.to(d).unwrap()).unwrap();
            // index_add along axis 0 of a [4, 3] base at the 1-D argmax of a [6, 4] tensor.
            let rows = ramp(&[6, 4], 17).to(d).unwrap().argmax(Some(1), false).unwrap();
            let added =
                ramp(&[4, 3], 19).to(d).unwrap().index_add(0, &rows, &ramp(&[6, 3], 23).to(d).unwrap()).unwrap();
            (scattered.to_vec::<f32>().unwrap(), added.to_vec::<f32>().unwrap())
        };
        let before = readbacks(&dev);
        let (s_gpu, a_gpu) = on(&dev);
        assert_eq!(readbacks(&dev) - before, 2, "only the two results are read back");
        assert_eq!(on(&Device::Cpu), (s_gpu, a_gpu));
    }

    #[test]
    fn clip_grad_norm_tensor_stays_on_the_device_and_matches_the_cpu() {
        let Some(dev) = gpu() else { return };
        let grads = [ramp(&[3, 4], 29), ramp(&[5], 31)];
        let clipped = |d: &Device, norm_type: f64| {
            let params: Vec<Tensor> = grads
                .iter()
                .map(|g| {
                    let p = Tensor::zeros(g.shape(), skiff::DType::F32)
                        .unwrap()
                        .to(d)
                        .unwrap()
                        .requires_grad_(true)
                        .unwrap();
                    p.mul(&g.to(d).unwrap()).unwrap().sum_all().unwrap().backward().unwrap();
                    p
                })
                .collect();
            let before = readbacks(d);
            let total = skiff::optim::clip_grad_norm_tensor_(&params, 0.5, norm_type).unwrap().unwrap();
            assert_eq!(readbacks(d), before, "clipping read back from the device");
            let g: Vec<Vec<f32>> = params.iter().map(|p| p.grad().unwrap().to_vec::<f32>().unwrap()).collect();
            (total.item().unwrap(), g)
        };
        for norm_type in [2.0, 1.0, f64::INFINITY] {
            let (t_gpu, g_gpu) = clipped(&dev, norm_type);
            let (t_cpu, g_cpu) = clipped(&Device::Cpu, norm_type);
            assert!((t_gpu - t_cpu).abs() <= 1e-5 * t_cpu, "norm {norm_type}: {t_gpu} vs {t_cpu}");
            let joint: f64 = g_cpu.iter().flatten().map(|v| (*v as f64).abs().powf(2.0)).sum::<f64>().sqrt();
            if norm_type == 2.0 {
                assert!((joint - 0.5).abs() < 1e-4, "clipped 2-norm {joint}");
            }
            for (a, b) in g_gpu.iter().flatten().zip(g_cpu.iter().flatten()) {
                assert!((a - b).abs() <= 1e-6, "norm {norm_type}: {a} vs {b}");
            }
        }
    }

    /// `to_async` moves off a GPU by awaiting the readback (the browser's way),
    /// and is recorded like `to`: the gradient flows back to the GPU.
    #[test]
    fn to_async_moves_off_the_gpu_and_keeps_the_gradient_path() {
        let Some(dev) = gpu() else { return };
        let x = ramp(&[2, 3], 37).to(&dev).unwrap().requires_grad_(true).unwrap();
        let y = pollster::block_on(x.mul_scalar(2.0).unwrap().to_async(&Device::Cpu)).unwrap();
        assert_eq!(y.device(), Device::Cpu);
        let want: Vec<f32> = ramp(&[2, 3], 37).to_vec::<f32>().unwrap().iter().map(|v| v * 2.0).collect();
        assert_eq!(y.to_vec::<f32>().unwrap(), want);
        y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
        let g = x.grad().unwrap();
        assert_eq!(g.device(), dev);
        let want: Vec<f32> = want.iter().map(|v| 2.0 * v * 2.0).collect();
        assert_eq!(g.to_vec::<f32>().unwrap(), want);
    }
}
