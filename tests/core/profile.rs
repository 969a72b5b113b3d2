//! The profiler (`skiff::profile`): per-op calls and host time on the cpu;
//! on a GPU (lavapipe has timestamp queries) every dispatch timed under its
//! op, with dispatch, submit, upload and readback counts equal to the
//! device's own counters; the Chrome trace is valid JSON holding every
//! call; and sessions neither nest nor outlive a panic.
//!
//! A session records every kernel any thread runs, so each test has a
//! process of its own (`common::own_process`).

use crate::common;

use skiff::{DType, Device, Tensor};

#[test]
fn cpu_kernels_are_counted_per_op() {
    if !common::own_process() {
        return;
    }
    let x = Tensor::randn(&[32, 64], DType::F32).unwrap();
    let w = Tensor::randn(&[64, 64], DType::F32).unwrap();
    let (out, p) = skiff::profile(|| -> skiff::Result<f64> {
        let mut h = x.clone();
        for _ in 0..3 {
            h = h.matmul(&w)?.relu()?;
        }
        h.sum_all()?.item()
    })
    .unwrap();
    assert!(out.unwrap().is_finite());
    let calls = |op: &str| p.op(op).map_or(0, |s| s.calls);
    assert_eq!((calls("matmul"), calls("relu")), (3, 3), "{p}");
    assert!(p.op("matmul").unwrap().host_ms > 0.0);
    assert!(p.ops.iter().all(|o| o.gpu_ms.is_none() && o.gpu_kernels == 0));
    assert_eq!((p.dispatches, p.submits, p.uploads, p.readbacks), (0, 0, 0, 0));
    assert!(p.timed_devices.is_empty());
    // The spans are the calls, in order, inside the session.
    let spans = p.spans();
    assert_eq!(spans.len() as u64, p.ops.iter().map(|o| o.calls).sum::<u64>());
    assert!(spans.windows(2).all(|w| w[0].start_us <= w[1].start_us));
    assert!(spans.last().map(|s| s.start_us + s.dur_us).unwrap() <= p.wall_ms * 1e3 + 1.0);
    let table = p.table();
    assert!(
        table.starts_with("op ") && table.contains("matmul") && table.contains("GPU kernel times: none"),
        "{table}"
    );

    // An f16 op runs its widened f32 kernel inside: one call.
    let h = x.to_dtype(DType::F16).unwrap();
    let (_, p) = skiff::profile(|| h.exp()).unwrap();
    assert_eq!(p.op("exp").map(|s| s.calls), Some(1), "{p}");
}

#[test]
fn gpu_dispatches_are_timed_and_counted_as_the_device_counts_them() {
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let Device::Gpu(d) = &gpu else { unreachable!() };
    assert!(d.context().has_timestamps(), "lavapipe has timestamp queries");
    let host = Tensor::randn(&[64, 128], DType::F32).unwrap();
    let w = Tensor::randn(&[128, 32], DType::F32).unwrap().to(&gpu).unwrap();
    // Warm: pipelines compiled outside the session.
    let x = host.to(&gpu).unwrap();
    x.matmul(&w).unwrap().relu().unwrap().add(&x.matmul(&w).unwrap()).unwrap().to_vec::<f32>().unwrap();
    let before = d.counters();
    let (out, p) = skiff::profile(|| -> skiff::Result<Vec<f32>> {
        let x = host.to(&gpu)?;
        let y = x.matmul(&w)?.relu()?.add(&x.matmul(&w)?)?;
        y.to_vec::<f32>()
    })
    .unwrap();
    let after = d.counters();
    assert_eq!(out.unwrap().len(), 64 * 32);
    assert_eq!(p.dispatches, after.dispatches - before.dispatches, "{p}");
    // The device counted one more submit and readback: the profiler's own,
    // reading the timestamps back after the session.
    assert_eq!(p.submits + 1, after.submits - before.submits, "{p}");
    assert_eq!(p.readbacks + 1, after.readbacks - before.readbacks, "{p}");
    assert_eq!((p.uploads, p.upload_bytes), (after.uploads - before.uploads, 64 * 128 * 4), "{p}");
    assert_eq!((p.readbacks, p.readback_bytes), (1, 64 * 32 * 4), "{p}");
    assert_eq!(p.timed_devices, vec![d.name().to_string()]);
    assert_eq!(p.untimed_dispatches, 0);
    // Every dispatch timed, each under the op that made it.
    let kernels: u64 = p.ops.iter().map(|o| o.gpu_kernels).sum();
    assert_eq!(kernels, p.dispatches, "{p}");
    let matmul = p.op("matmul").unwrap();
    assert_eq!(matmul.calls, 2);
    assert!(matmul.gpu_kernels >= 2 && matmul.gpu_ms.unwrap() > 0.0, "{p}");
    assert!(p.op("relu").unwrap().gpu_kernels >= 1, "{p}");
    assert!(p.gpu_times().iter().all(|g| g.dur_ns > 0.0 && g.device == d.name()));
    // Off again, nothing is timed: one pass per batch as before.
    let quiet = d.counters();
    host.to(&gpu).unwrap().matmul(&w).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(d.counters().submits - quiet.submits, 1);
}

#[test]
fn the_chrome_trace_holds_every_call() {
    if !common::own_process() {
        return;
    }
    let x = Tensor::randn(&[8, 8], DType::F32).unwrap();
    let mut devices = vec![Device::Cpu];
    devices.extend(common::gpu());
    for device in devices {
        let x = x.to(&device).unwrap();
        let (_, p) = skiff::profile(|| x.matmul(&x)?.tanh()?.to_vec::<f32>()).unwrap();
        let trace: serde_json::Value = serde_json::from_str(&p.chrome_trace()).expect("valid JSON");
        let events = trace["traceEvents"].as_array().unwrap();
        let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        let host = complete.iter().filter(|e| e["tid"] == 1).count();
        let gpu = complete.iter().filter(|e| e["cat"] == "gpu").count();
        assert_eq!(host, p.spans().len(), "{device:?}");
        assert_eq!(gpu, p.gpu_times().len(), "{device:?}");
        assert!(complete.iter().all(|e| e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0));
        let names: Vec<&str> = complete.iter().filter_map(|e| e["name"].as_str()).collect();
        assert!(names.contains(&"matmul") && names.contains(&"tanh"), "{names:?}");
        let threads = events.iter().filter(|e| e["ph"] == "M" && e["name"] == "thread_name").count();
        assert_eq!(threads, 1 + p.timed_devices.len());
    }
}

#[test]
fn sessions_do_not_nest_or_outlive_a_panic() {
    if !common::own_process() {
        return;
    }
    let nested = skiff::profile(|| skiff::profile(|| ()).map(|_| ()).unwrap_err()).unwrap().0;
    common::check_err(&nested, common::Kind::Value, "profile", &["already recording"]);
    let e = pollster::block_on(skiff::profile::finish()).unwrap_err();
    common::check_err(&e, common::Kind::Value, "profile", &["no profile is recording"]);
    let panicked = std::panic::catch_unwind(|| skiff::profile(|| panic!("inside")));
    assert!(panicked.is_err());
    let (_, p) = skiff::profile(|| Tensor::ones(&[2], DType::F32).unwrap().exp()).unwrap();
    assert_eq!(p.op("exp").map(|s| s.calls), Some(1));
}
