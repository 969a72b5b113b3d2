//! Prints the device `Device::best()` picks and the GPU adapter (limits and
//! counters) when there is one, then runs a small computation on the GPU.
//! `SKIFF_DEVICE=cpu|gpu` forces a device.

use skiff::{DType, Device, Tensor};

fn main() -> skiff::Result<()> {
    println!("Device::best(): {}", Device::best()?.describe());
    // Show the GPU path even when best() prefers the cpu over a software adapter.
    let device = Device::gpu().unwrap_or(Device::Cpu);
    println!("running on: {}{}", device.describe(), if device.is_software() { " (software adapter)" } else { "" });
    let a = Tensor::arange(0.0, 6.0, 1.0, DType::F32)?.reshape(&[2, 3])?.to(&device)?;
    let b = a.exp()?.add(&a.sin()?)?.mul_scalar(0.5)?;
    println!("0.5 * (exp(a) + sin(a)) = {b}");
    #[cfg(feature = "gpu")]
    if let Device::Gpu(g) = &device {
        let l = g.limits();
        println!(
            "limits: max storage buffer {} bytes, max workgroup storage {} bytes, max workgroups per dim {}",
            l.max_storage_buffer_binding_size,
            l.max_compute_workgroup_storage_size,
            l.max_compute_workgroups_per_dimension
        );
        println!("counters: {:?}", g.counters());
    }
    Ok(())
}
