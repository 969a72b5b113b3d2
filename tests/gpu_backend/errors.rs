//! GPU failure modes surface as `Error`s, never panics: buffers beyond the
//! adapter's limits, and a lost device (reported on the next op). Also what
//! the device enables at creation (shader-f16).

#![cfg(feature = "gpu")]

use crate::common;

use skiff::device::GpuDevice;
use skiff::{DType, Device, Tensor};

use crate::common::{expect_err, gpu, Kind};

#[test]
fn a_buffer_beyond_the_adapter_limit_is_an_error_naming_size_and_limit() {
    let Some(dev) = gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!() };
    let limit = g.limits().max_storage_buffer_binding_size.min(g.limits().max_buffer_size);
    let n = (limit / 4 + 1) as usize; // one f32 more than fits
    let facts = format!("a GPU buffer of {} bytes exceeds the adapter's limit of {limit} bytes", n * 4);
    expect_err(Tensor::full_on(&[n], 1.0, DType::F32, &dev), Kind::Memory, "full", &[&facts]);
    // The device is still usable afterwards.
    let ok = Tensor::ones(&[4], DType::F32).unwrap().to(&dev).unwrap().mul_scalar(3.0).unwrap();
    assert_eq!(ok.to_vec::<f32>().unwrap(), vec![3.0; 4]);
}

#[test]
fn the_device_enables_shader_f16_where_the_adapter_has_it() {
    let Some(dev) = gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!() };
    // lavapipe (CI's adapter) exposes SHADER_F16; the device must have asked for it.
    if g.name().contains("llvmpipe") {
        assert!(g.shader_f16(), "lavapipe's device was opened without shader-f16");
    }
    // A private device reports the same: the request does not depend on the shared one.
    assert_eq!(GpuDevice::open().unwrap().shader_f16(), g.shader_f16());
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
    expect_err(r, Kind::DeviceLost, "add", &["the GPU device was lost", "GpuDevice::destroy was called"]);
}

/// A real out-of-memory on the device: this test re-runs `oom_child` (below)
/// in a child process whose address space is capped just above what it uses,
/// so the driver (a software adapter such as lavapipe backs GPU memory with
/// host memory) fails an allocation that skiff's own size check let through.
#[cfg(target_os = "linux")]
#[test]
fn a_driver_out_of_memory_is_an_error_for_the_op_and_the_device_keeps_working() {
    let Some(dev) = gpu() else { return };
    if !dev.is_software() {
        // A hardware adapter's memory is not bounded by the process's address space.
        eprintln!(
            "\n!!!!!!!! {}: needs a software adapter (lavapipe), got {}; its checks did NOT run !!!!!!!!\n",
            common::current_test(),
            dev.describe()
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            &common::test_name(module_path!(), "oom_child"),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SKIFF_OOM_CHILD", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("oom child: done"), "the child did not run its checks:\n{text}");
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "run by a_driver_out_of_memory_is_an_error_for_the_op_and_the_device_keeps_working, with a memory cap"]
fn oom_child() {
    assert_eq!(std::env::var("SKIFF_OOM_CHILD").as_deref(), Ok("1"), "run through its parent test");
    let g = GpuDevice::open().unwrap();
    let dev = Device::Gpu(g.clone());
    let l = g.limits();
    let n = (l.max_storage_buffer_binding_size.min(l.max_buffer_size) / 4) as usize; // the largest tensor allowed
                                                                                     // Compile what the test runs before the cap (LLVM needs address space too).
    let small = Tensor::full_on(&[8], 1.0, DType::F32, &dev).unwrap();
    assert_eq!(small.mul_scalar(2.0).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 8]);
    cap_address_space(768 << 20);

    let mut held = Vec::new();
    let err = loop {
        assert!(held.len() < 64, "no allocation failed under the cap");
        match Tensor::full_on(&[n], 1.0, DType::F32, &dev) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
    };
    let facts = [&format!("the GPU could not allocate {} bytes", n * 4)[..], "device keeps working"];
    common::check_err(&err, Kind::Memory, "full", &facts);
    eprintln!("out of memory after {} buffers of {} bytes: {err}", held.len(), n * 4);
    // The device keeps working: ops on what was allocated, and readbacks.
    let first = held[0].narrow(0, 0, 4).unwrap().mul_scalar(3.0).unwrap();
    assert_eq!(first.to_vec::<f32>().unwrap(), vec![3.0; 4]);
    assert_eq!(small.add(&small).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 8]);
    // Freed tensors go to the pool; an allocation of another size class
    // cannot reuse them, fails in the driver, and succeeds after the pool is
    // emptied (the retry PyTorch's caching allocator also makes).
    drop(held);
    assert!(g.counters().bytes_pooled > 0);
    let half = Tensor::full_on(&[n / 2], 5.0, DType::F32, &dev).unwrap();
    assert_eq!(g.counters().bytes_pooled, 0, "the retry emptied the pool");
    assert_eq!(half.narrow(0, 0, 2).unwrap().to_vec::<f32>().unwrap(), vec![5.0; 2]);
    eprintln!("oom child: done");
}

/// Caps this process's address space at its current size plus `extra` bytes.
#[cfg(target_os = "linux")]
fn cap_address_space(extra: u64) {
    #[repr(C)]
    struct RLimit {
        cur: u64,
        max: u64,
    }
    extern "C" {
        fn setrlimit(resource: i32, rlim: *const RLimit) -> i32;
    }
    const RLIMIT_AS: i32 = 9;
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status");
    let cap = kb * 1024 + extra;
    // SAFETY: setrlimit reads one struct we own; it only lowers this process's own limit.
    let rc = unsafe { setrlimit(RLIMIT_AS, &RLimit { cur: cap, max: cap }) };
    assert_eq!(rc, 0, "setrlimit(RLIMIT_AS) failed");
}
