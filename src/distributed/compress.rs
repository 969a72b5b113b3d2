//! Gradient compression for [`super::DistributedDataParallel`]'s buckets.
//!
//! MPI sums f32 and f64 natively but not f16, and a sparse sum is not an MPI
//! reduction at all, so both compressed forms travel as an all_gather of
//! every rank's compressed bucket and are summed here, on every rank in rank
//! order (so every rank gets the same bits).
//! - f16: each element rounded to f16 (half the bytes of f32).
//! - top-k with error feedback (Lin et al., "Deep Gradient Compression";
//!   Stich et al., "Sparsified SGD with Memory"): each rank sends its k
//!   largest-magnitude elements as (index, value) pairs and keeps what it did
//!   not send in a residual that is added to its next gradient, so nothing is
//!   lost, only delayed.

use half::f16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};

/// `v` rounded to f16, as bits (`half`'s slice conversion: F16C or NEON
/// where the processor has them).
pub(crate) fn f16_encode(v: &[f32]) -> Vec<u16> {
    let mut out = vec![f16::ZERO; v.len()];
    out.convert_from_f32_slice(v);
    out.reinterpret_cast().to_vec()
}

/// The sum over ranks of `world` f16 buffers of `n` elements each,
/// concatenated in rank order, summed in f32 in rank order.
pub(crate) fn f16_sum(all: &[u16], n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n];
    let mut wide = vec![0.0f32; n];
    for rank in all.chunks_exact(n.max(1)) {
        rank.reinterpret_cast::<f16>().convert_to_f32_slice(&mut wide);
        out.iter_mut().zip(&wide).for_each(|(o, w)| *o += w);
    }
    out
}

/// How many elements of `n` a top-k bucket sends: `ratio` of them, at least one.
pub(crate) fn topk_count(n: usize, ratio: f64) -> usize {
    ((n as f64 * ratio).ceil() as usize).clamp(1, n.max(1))
}

/// Picks the `k` largest-magnitude elements of `v` (ties to the lower index),
/// returns them as ascending (index, value) pairs and zeroes them in `v`,
/// which is left holding the residual.
pub(crate) fn topk_take(v: &mut [f32], k: usize) -> (Vec<u32>, Vec<f32>) {
    let mut order: Vec<u32> = (0..v.len() as u32).collect();
    let by_magnitude = |a: &u32, b: &u32| v[*b as usize].abs().total_cmp(&v[*a as usize].abs()).then(a.cmp(b));
    let k = k.min(v.len());
    if k < order.len() {
        order.select_nth_unstable_by(k, by_magnitude);
        order.truncate(k);
    }
    order.sort_unstable();
    let values = order.iter().map(|i| std::mem::take(&mut v[*i as usize])).collect();
    (order, values)
}

/// The dense sum of every rank's (index, value) pairs (`k` per rank,
/// concatenated in rank order) into `n` elements.
pub(crate) fn topk_sum(indices: &[u32], values: &[f32], n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n];
    for (i, v) in indices.iter().zip(values) {
        out[*i as usize] += v;
    }
    out
}
