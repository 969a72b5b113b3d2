//! Memory planning (`Program::plan_memory`): which computed slots share an
//! arena buffer, what a run holds at its peak, and that a replay holds no
//! more than planned (measured through the cpu pool's live bytes). One test
//! per file measures: the live-bytes counter is process-wide.

use crate::common;
use skiff::backend::cpu::pool;
use skiff::{jit, DType, Tensor};

const N: usize = 1 << 16; // 256 KiB of f32: a pooled size class, no rounding

#[test]
fn a_replay_holds_what_its_plan_says() {
    // The cpu pool's high-water mark counts every thread's buffers.
    if !common::own_process() {
        return;
    }
    let x = Tensor::from_vec((0..N).map(|i| i as f32 / N as f32).collect(), &[N]).unwrap();
    // Eight kernels in a chain (no passes: each is its own instruction).
    // Each step replaces the last, so eager code holds two results at a time
    // (a method chain would keep its temporaries to the end of the statement).
    let chain = |t: &Tensor| -> skiff::Result<Tensor> {
        let mut y = t.exp()?;
        for f in [Tensor::neg, Tensor::tanh, Tensor::sin, Tensor::cos, Tensor::sigmoid, Tensor::abs, Tensor::sqrt] {
            y = f(&y)?;
        }
        Ok(y)
    };
    let before = pool::stats().live_bytes;
    pool::take_high_water();
    let (out, traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![chain(&xs[0])?])).unwrap();
    let capture_held = pool::take_high_water() - before;
    drop(out);
    let plan = traced.memory_plan();
    let slot = N * 4;
    // Seven intermediates ping-pong between two buffers; the eighth is the output.
    assert_eq!(plan.buffers, vec![slot, slot], "{plan:?}");
    assert_eq!((plan.arena_bytes, plan.output_bytes, plan.peak_bytes), (2 * slot, slot, 3 * slot));
    assert_eq!(plan.unplanned_bytes, 8 * slot);

    let measure = |f: &dyn Fn() -> Tensor| {
        let before = pool::stats().live_bytes;
        pool::take_high_water();
        let out = f();
        let held = pool::take_high_water() - before;
        (out, held)
    };
    let (planned, held) = measure(&|| traced.run(std::slice::from_ref(&x)).unwrap().remove(0));
    assert!(held <= plan.peak_bytes, "the replay held {held} bytes at once, planned {}", plan.peak_bytes);
    // Eager code holds at least as much, and the result is the same.
    let (eager, eager_held) = measure(&|| chain(&x).unwrap());
    assert!(eager_held >= held, "eager {eager_held}, replay {held}");
    // Recording frees intermediates as eager code does (it keeps addresses, not buffers).
    assert!(capture_held <= eager_held, "the capture held {capture_held} bytes at once, eager code {eager_held}");
    assert_eq!(planned.to_f32_vec().unwrap(), eager.to_f32_vec().unwrap());
    // The output is never an arena buffer: a second run leaves the first's alone.
    let again = traced.run(&[Tensor::zeros(&[N], DType::F32).unwrap()]).unwrap().remove(0);
    assert_eq!(planned.to_f32_vec().unwrap(), eager.to_f32_vec().unwrap());
    assert_ne!(again.to_f32_vec().unwrap(), eager.to_f32_vec().unwrap());
}
