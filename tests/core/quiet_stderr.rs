//! A library must not make its users' programs print alarming lines. Opening
//! the GPU (or failing to) without `XDG_RUNTIME_DIR` (a service, a container,
//! `ssh` without a session) used to print "error: XDG_RUNTIME_DIR is invalid
//! or not set in the environment." twice: Mesa's device-select Vulkan layer
//! asking Wayland for the default GPU. The test re-runs this binary's `child`
//! test in a process without that variable and reads its stderr.

use crate::common;
use std::process::Command;

const CHILD: &str = "SKIFF_QUIET_STDERR_CHILD";

/// What the parent runs in a clean environment: open the GPU if there is one
/// and compute on it, else just try (the Vulkan instance is made either way).
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    if let Ok(gpu) = skiff::Device::gpu() {
        let x = skiff::Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().to(&gpu).unwrap();
        assert_eq!(x.add_scalar(1.0).unwrap().to_f64_vec().unwrap(), vec![2.0, 3.0]);
        println!("child: computed on {}", gpu);
    } else {
        println!("child: no GPU adapter");
    }
}

#[test]
fn opening_the_gpu_without_xdg_runtime_dir_prints_nothing() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([&common::test_name(module_path!(), "child"), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .env_remove("MESA_VK_DEVICE_SELECT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("child: "), "the child test ran:\n{stdout}");
    assert!(!stderr.contains("XDG_RUNTIME_DIR") && !stderr.contains("error"), "unexpected stderr:\n{stderr}");
}
