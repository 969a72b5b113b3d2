//! Splitting one kernel's output over the cores: the GEMMs' batches and
//! deterministic rows, im2col and col2im planes. Scoped threads, started per
//! call: a kernel is worth splitting only when it is large enough that a
//! thread's start (tens of microseconds) is noise, and a pool that waits
//! spinning between kernels takes the core from the thread that runs the
//! next small one (gemm's rayon threads made the LSTM slower that way).
//! On wasm32 there is one thread: everything runs on it.

use std::ops::Range;

/// The cores to split over (asked once: on Linux the answer reads cgroup
/// files, tens of microseconds).
#[cfg(not(target_arch = "wasm32"))]
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |t| t.get()))
}

/// Runs `f(units, part)` over disjoint blocks of `out`, which holds `units`
/// units of `unit_len` elements each: `units` is the block's range of unit
/// indices and `part` its elements. Blocks are whole multiples of `align`
/// units (the last may be shorter). More than one block, each on its own
/// thread (the caller's thread takes the first), only where every thread
/// gets at least `min_work` of the `work_per_unit` the caller counts per
/// unit; else one call over everything.
pub fn for_blocks<T: Send, F>(
    out: &mut [T],
    units: usize,
    unit_len: usize,
    align: usize,
    work_per_unit: usize,
    min_work: usize,
    f: F,
) where
    F: Fn(Range<usize>, &mut [T]) + Sync,
{
    debug_assert_eq!(out.len(), units * unit_len, "for_blocks: out holds units * unit_len elements");
    #[cfg(not(target_arch = "wasm32"))]
    {
        let by_work = (units.saturating_mul(work_per_unit) / min_work.max(1)).max(1);
        let threads = if by_work == 1 || unit_len == 0 { 1 } else { cores().min(units.div_ceil(align)).min(by_work) };
        if threads > 1 {
            let per = units.div_ceil(align).div_ceil(threads) * align;
            std::thread::scope(|s| {
                let f = &f;
                let mut blocks = out.chunks_mut(per * unit_len).enumerate();
                let first = blocks.next();
                for (t, block) in blocks {
                    let start = t * per;
                    s.spawn(move || f(start..(start + per).min(units), block));
                }
                if let Some((_, block)) = first {
                    f(0..per.min(units), block);
                }
            });
            return;
        }
    }
    let _ = (align, work_per_unit, min_work);
    f(0..units, out)
}
