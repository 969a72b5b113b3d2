//! Readback: `to_vec_async().await` (the browser's only way) agrees with the
//! blocking `to_vec`, works on views, and concurrent readbacks from several
//! threads all complete.

use skiff::{DType, Tensor};

use crate::common::{expect_err, gpu, Kind};

#[test]
fn async_readback_matches_blocking_readback_on_both_devices() {
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32).unwrap().reshape(&[3, 4]).unwrap();
    let cpu_vals = pollster::block_on(x.to_vec_async::<f32>()).unwrap();
    assert_eq!(cpu_vals, x.to_vec::<f32>().unwrap());
    let Some(dev) = gpu() else { return };
    let g = x.to(&dev).unwrap();
    let view = g.transpose(0, 1).unwrap().mul_scalar(2.0).unwrap().transpose(0, 1).unwrap(); // strided
    let want: Vec<f32> = cpu_vals.iter().map(|v| v * 2.0).collect();
    assert_eq!(pollster::block_on(view.to_vec_async::<f32>()).unwrap(), want);
    assert_eq!(view.to_vec::<f32>().unwrap(), want);
    let mask = g.gt_scalar(5.0).unwrap();
    let m = pollster::block_on(mask.to_vec_async::<u8>()).unwrap();
    assert_eq!(m, cpu_vals.iter().map(|&v| (v > 5.0) as u8).collect::<Vec<_>>());
    let r = pollster::block_on(g.to_vec_async::<i32>());
    expect_err(r, Kind::DType, "to_vec_async", &["requested i32 elements from a f32 tensor of shape [3, 4]"]);
}

#[test]
fn concurrent_readbacks_from_several_threads_all_complete() {
    let Some(dev) = gpu() else { return };
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let dev = dev.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let v = (t * 100 + i) as f64;
                    let x = Tensor::full(&[64], v, DType::F32).unwrap().to(&dev).unwrap().add_scalar(1.0).unwrap();
                    assert_eq!(x.to_vec::<f32>().unwrap(), vec![(v + 1.0) as f32; 64]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a readback thread failed");
    }
}
