//! The cpu buffer pool (`skiff::backend::cpu::pool`): a steady training loop
//! allocates nothing after its first steps, a loop with a fresh input each
//! step keeps the pool within its cap (which follows the live bytes), idle
//! buffers are trimmed, `empty_cache` empties it, and a steady CNN loop (whose
//! buffers are needed at different moments) is served from the pool too, and
//! so are a kernel's temporaries (a ConvTranspose2d step's gathered copies).
//!
//! The pool is process-wide, so this file is one test running its phases in
//! order (other test binaries are other processes).

use crate::common;
use skiff::backend::cpu::pool;
use skiff::nn::{ConvTranspose2d, ConvTranspose2dConfig, Layer, Linear, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{manual_seed, DType, Reduction, Tensor};

const MIB: usize = 1 << 20;
const BATCH: usize = 64;
/// Steps with a fresh input: 24 MB of inputs, past the 4 MiB floor and far past what is live.
const STEPS: usize = 120;

fn mlp() -> Sequential {
    let mut m = Sequential::new();
    m.add(Box::new(Linear::new(784, 128).unwrap()));
    m.add(Box::new(ReLU::new()));
    m.add(Box::new(Linear::new(128, 10).unwrap()));
    m
}

fn step(model: &Sequential, opt: &mut Adam, x: &Tensor, y: &Tensor) -> f64 {
    opt.zero_grad();
    let loss = model.forward(x).unwrap().cross_entropy(y, Reduction::Mean, 0.0).unwrap();
    loss.backward().unwrap();
    opt.step().unwrap();
    loss.item().unwrap()
}

/// A fresh [BATCH, 784] input made by the caller (not by a kernel), as a data
/// loader or a JS array hands it over: its buffer never came from the pool.
fn fresh_input(k: usize) -> Tensor {
    let v: Vec<f32> = (0..BATCH * 784).map(|i| ((i * 31 + k * 17) % 101) as f32 / 101.0).collect();
    Tensor::from_vec(v, &[BATCH, 784]).unwrap()
}

fn labels(k: usize) -> Tensor {
    Tensor::from_vec((0..BATCH as i32).map(|i| (i + k as i32) % 10).collect(), &[BATCH]).unwrap()
}

#[test]
fn the_cpu_pool_serves_steady_loops_and_stays_bounded_by_live_bytes() {
    // The pool and its counts are the process's: no other test may allocate.
    if !common::own_process() {
        return;
    }
    manual_seed(3);
    let model = mlp();
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();

    // ---- a steady loop (same input): after the first steps every
    // pool-sized buffer comes from the pool.
    let (x, y) = (Tensor::randn(&[BATCH, 784], DType::F32).unwrap(), labels(0));
    for _ in 0..2 {
        step(&model, &mut opt, &x, &y);
    }
    let warm = pool::stats();
    for _ in 0..20 {
        step(&model, &mut opt, &x, &y);
    }
    let steady = pool::stats();
    assert_eq!(steady.allocated, warm.allocated, "a steady step allocates nothing: {warm:?} -> {steady:?}");
    assert!(steady.reused >= warm.reused + 20 * 5, "the steps are served by the pool: {warm:?} -> {steady:?}");

    // ---- a fresh input each step: its freed buffers are never asked for
    // again. The pool keeps at most its cap (twice the recent peak of the
    // live bytes, a 4 MiB floor), releasing the stale buffers first, so it stops
    // growing, and the buffers the steps reuse stay.
    let before = pool::stats();
    let mut most_pooled = 0;
    for k in 0..STEPS {
        step(&model, &mut opt, &fresh_input(k), &labels(k));
        let s = pool::stats();
        assert!(s.pooled_bytes <= s.cap_bytes, "step {k}: {s:?}");
        most_pooled = most_pooled.max(s.pooled_bytes);
    }
    let after = pool::stats();
    eprintln!("after {STEPS} fresh-input steps: {after:?}, most pooled {most_pooled}");
    // Live: parameters, Adam's two moments, gradients: ~1.6 MB; the cap
    // follows that peak, far below the old fixed 256 MiB.
    assert!(after.cap_bytes <= 8 * MIB, "the cap follows the live bytes: {after:?}");
    assert!(most_pooled <= 8 * MIB, "the pool stayed small: at most {most_pooled} bytes");
    assert!(after.released > before.released, "stale buffers were released: {before:?} -> {after:?}");
    // The steady part of each step still comes from the pool: per step one
    // allocation at most (the stale input's class) and none of the others.
    let allocated = after.allocated - before.allocated;
    assert!(allocated <= STEPS as u64 + 10, "{allocated} allocations in {STEPS} steps: {before:?} -> {after:?}");

    // ---- size classes: a request a little larger than a freed buffer is
    // served by it (both round to the class of 5 * 2^13 f32s).
    pool::clear();
    drop(Tensor::randn(&[40_000], DType::F32).unwrap().mul_scalar(2.0).unwrap());
    let s0 = pool::stats();
    assert!(s0.pooled_bytes >= 40_000 * 4, "{s0:?}");
    drop(Tensor::randn(&[40_900], DType::F32).unwrap().mul_scalar(2.0).unwrap());
    let s1 = pool::stats();
    assert!(s1.reused > s0.reused, "a near size reuses the freed buffer: {s0:?} -> {s1:?}");

    // ---- idle trim: buffers nobody asks for go back to the allocator after
    // two trim periods of other allocations, even under the cap.
    let big = Tensor::randn(&[300_000], DType::F32).unwrap();
    drop(big.mul_scalar(2.0).unwrap()); // 1.2 MB into the pool
    assert!(pool::stats().pooled_bytes >= 1_200_000);
    let small = Tensor::randn(&[5_000], DType::F32).unwrap();
    for _ in 0..2100 {
        drop(small.mul_scalar(2.0).unwrap()); // 20 KB: pooled, reused each time
    }
    let trimmed = pool::stats();
    assert!(trimmed.pooled_bytes < 300_000 * 4, "the idle 1.2 MB buffer was trimmed: {trimmed:?}");

    // ---- empty_cache clears the pool and leaves live tensors alone.
    drop(big.mul_scalar(3.0).unwrap());
    assert!(pool::stats().pooled_bytes > 0);
    let live = pool::stats().live_bytes;
    skiff::empty_cache();
    let cleared = pool::stats();
    assert_eq!((cleared.pooled_bytes, cleared.live_bytes), (0, live), "{cleared:?}");
    assert_eq!(big.shape(), &[300_000]);
    assert!(big.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));

    // ---- a steady CNN loop: its buffers are needed at different moments
    // (columns, products, pools, their gradients), more bytes in all than are
    // ever live at once. With the cap at the live peak the pool released and
    // reallocated 14 buffers every step (each zero-faulted anew: a tenth of the
    // step); it may hold twice the peak, so nearly all are reused.
    let cnn = skiff::models::mnist_cnn().unwrap();
    let mut opt = Adam::new(cnn.parameters(), AdamConfig::default()).unwrap();
    let (x, y) = (Tensor::randn(&[BATCH, 1, 28, 28], DType::F32).unwrap(), labels(0));
    for _ in 0..5 {
        step(&cnn, &mut opt, &x, &y);
    }
    let warm = pool::stats();
    for _ in 0..20 {
        step(&cnn, &mut opt, &x, &y);
    }
    let steady = pool::stats();
    let per_step = (steady.allocated - warm.allocated) as f64 / 20.0;
    assert!(per_step <= 4.0, "{per_step} pooled allocations per steady CNN step: {warm:?} -> {steady:?}");

    // ---- a kernel's temporaries return to the pool too (`Scratch`): a
    // ConvTranspose2d step gathers its expanded output gradient into
    // contiguous copies (for the bias gradient's sum and for the columns of
    // the input gradient) that are never storages. Given back to the
    // allocator, they came back as fresh pages every step.
    let c = ConvTranspose2dConfig { stride: [2, 2], padding: [1, 1], ..Default::default() };
    let convt = ConvTranspose2d::with_config(8, 4, [4, 4], c).unwrap();
    let x = Tensor::randn(&[8, 8, 8, 8], DType::F32).unwrap().requires_grad_(true).unwrap();
    let convt_step = || {
        convt.zero_grad();
        x.zero_grad();
        convt.forward(&x).unwrap().sum_all().unwrap().backward().unwrap();
    };
    for _ in 0..3 {
        convt_step();
    }
    let warm = pool::stats();
    for _ in 0..10 {
        convt_step();
    }
    let steady = pool::stats();
    assert_eq!(
        steady.allocated, warm.allocated,
        "a steady ConvTranspose2d step allocates nothing: {warm:?} -> {steady:?}"
    );
}
