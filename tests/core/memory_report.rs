//! The leak report (`skiff::memory`): with origins tracked, a loop that
//! keeps a tensor per step shows up as one site, at the line of the loop,
//! named by the op that made the tensors, with their count and bytes per
//! device; temporaries that were dropped and tensors made while tracking
//! was off do not.
//!
//! Tracking is process-wide, so the checks run in one test.

use crate::common;

use skiff::{memory, DType, Tensor};

/// A helper that makes a tensor: its callers tell its tensors apart.
fn helper(x: &Tensor) -> (Tensor, u32) {
    (x.exp().unwrap(), line!())
}

fn at(line: u32) -> String {
    format!("tests/core/memory_report.rs:{line}:")
}

#[test]
fn a_leak_in_a_loop_is_found_at_its_line() {
    // The census sees every thread's tensors: no other test may make any.
    if !common::own_process() {
        return;
    }
    let x = Tensor::ones(&[128], DType::F32).unwrap();
    let before_tracking = x.exp().unwrap();
    memory::track_origins(true);
    assert!(memory::tracking_origins());
    let mut kept = Vec::new();
    let mut leak_line = 0;
    for _ in 0..7 {
        let (t, line) = (x.exp().unwrap().mul_scalar(2.0).unwrap(), line!());
        kept.push(t);
        leak_line = line;
        let _dropped = x.sin().unwrap();
    }
    let (data, data_line) = (Tensor::from_vec(vec![1.0f32; 64], &[64]).unwrap(), line!());
    let ((first, helper_line), first_line) = (helper(&x), line!());
    let ((second, _), second_line) = (helper(&x), line!());
    let mut devices = Vec::new();
    if let Some(gpu) = common::gpu() {
        devices.push((x.to(&gpu).unwrap().tanh().unwrap(), line!()));
    }
    let sites = memory::live_by_origin();
    memory::track_origins(false);
    let mine: Vec<&memory::Site> =
        sites.iter().filter(|s| s.site.starts_with("tests/core/memory_report.rs:")).collect();
    let table = memory::origins_table(&sites);

    // The kept results: 7 tensors of 128 f32 from mul_scalar, at the loop's line.
    let leak = mine
        .iter()
        .find(|s| s.site.starts_with(&at(leak_line)) && s.op == "mul_scalar")
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!((leak.tensors, leak.bytes, leak.device.as_str()), (7, 7 * 128 * 4, "cpu"), "{table}");
    // The exp inside was dropped once mul_scalar had read it, as were the sines.
    assert!(!mine.iter().any(|s| (s.op == "exp" && s.site.starts_with(&at(leak_line))) || s.op == "sin"), "{table}");
    // Host data, and a GPU result on its device.
    let host = mine.iter().find(|s| s.site.starts_with(&at(data_line))).unwrap_or_else(|| panic!("{table}"));
    assert_eq!((host.op.as_str(), host.tensors, host.bytes), ("from data", 1, 64 * 4));
    for (t, line) in &devices {
        let s =
            mine.iter().find(|s| s.site.starts_with(&at(*line)) && s.op == "tanh").unwrap_or_else(|| panic!("{table}"));
        assert_eq!((s.tensors, s.bytes, s.device.clone()), (1, 128 * 4, t.device().to_string()), "{table}");
    }
    // One helper, two callers: two sites, each with its caller in the stack.
    for line in [first_line, second_line] {
        let s = mine
            .iter()
            .find(|s| s.stack.get(1).is_some_and(|c| c.starts_with(&at(line))))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(
            s.site.starts_with(&at(helper_line)) && s.site == s.stack[0] && s.op == "exp" && s.tensors == 1,
            "{s:?}"
        );
    }
    // Made before tracking: not listed; made after: not either.
    assert_eq!(mine.iter().map(|s| s.tensors).sum::<usize>(), 7 + 1 + 2 + devices.len(), "{table}");
    let after = x.cos().unwrap();
    assert!(!memory::live_by_origin().iter().any(|s| s.op == "cos"));
    // Freed, they leave the report.
    drop(kept);
    assert!(!memory::live_by_origin().iter().any(|s| s.site.starts_with(&at(leak_line))));
    drop((before_tracking, data, after, first, second));
}
