//! GPU failure modes surface as `Error`s, never panics: buffers beyond the
//! adapter's limits, and a lost device (reported on the next op).

mod common;

use skiff::device::GpuDevice;
use skiff::{DType, Device, Tensor};

use common::{expect_err, gpu, Kind};

#[test]
fn a_buffer_beyond_the_adapter_limit_is_an_error_naming_size_and_limit() {
    let Some(dev) = gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!() };
    let limit = g.limits().max_storage_buffer_binding_size.min(g.limits().max_buffer_size);
    let n = (limit / 4 + 1) as usize; // one f32 more than fits
    let facts = format!("a GPU buffer of {} bytes exceeds the adapter's limit of {limit} bytes", n * 4);
    expect_err(Tensor::full_on(&[n], 1.0, DType::F32, &dev), Kind::Value, "full", &[&facts]);
    // The device is still usable afterwards.
    let ok = Tensor::ones(&[4], DType::F32).unwrap().to(&dev).unwrap().mul_scalar(3.0).unwrap();
    assert_eq!(ok.to_vec::<f32>().unwrap(), vec![3.0; 4]);
}

#[test]
fn f64_stays_on_the_cpu_with_a_clear_error() {
    let Some(dev) = gpu() else { return };
    let r = Tensor::ones(&[2], DType::F64).unwrap().to(&dev);
    expect_err(r, Kind::DType, "to", &["f64 tensors live on the cpu only", "to_dtype(F32)"]);
}

#[test]
fn a_lost_device_is_reported_on_the_next_op() {
    if gpu().is_none() {
        return;
    }
    // A private context, so destroying it cannot disturb other tests.
    let g = GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    let t = Tensor::ones(&[8], DType::F32).unwrap().to(&dev).unwrap();
    assert_eq!(t.add(&t).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 8]);
    g.destroy();
    // destroy() marks the context lost at once, so the very next op (the
    // add, before it allocates its output) reports it, naming the cause.
    let r = t.add(&t).and_then(|s| s.to_vec::<f32>());
    expect_err(r, Kind::Value, "add", &["the GPU device was lost", "GpuDevice::destroy was called"]);
}
