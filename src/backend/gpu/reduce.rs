//! Reductions on the GPU: sum/max/min over any set of axes and argmax/argmin
//! along one axis, with the semantics of `backend::cpu::reduce` (NaN
//! propagates, empty reductions give the identity, the first extreme wins).
//!
//! The host views the input as [kept..., reduced...] without copying, merges
//! contiguous dims on each side (so most reductions index with one dim per
//! side) and picks how many outputs each workgroup (256 threads; 64 where
//! each thread reduces alone) serves; the
//! kernel is `shaders/reduce.wgsl`, templated by the kind of reduction and
//! the element types it reads and writes.
//!
//! f16 inputs (devices with `shader-f16`) are read as f32, reduced in f32
//! and rounded once at the store: the bits of widening the input, reducing
//! in f32 and rounding the result (`backend::half`), in one dispatch (two
//! for a split reduction, whose partials stay f32) instead of three.

use super::epilogue::{plain_store, Tail};
use super::kernels::{ENABLE_F16, MAX_RANK, PRELUDE};
use super::runtime::WORKGROUP;
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::kernel::ReduceKind;
use crate::shape::{coalesce, Dims, Layout};

pub const REDUCE: &str = wgsl_file!(include_str!("../../../shaders/reduce.wgsl"));

/// The kernel's {KIND}: what the template specialises on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Sum = 0,
    Max = 1,
    Min = 2,
    ArgMax = 3,
    ArgMin = 4,
}

/// A dispatch: its parameter block and workgroup count.
#[derive(Debug)]
struct Plan {
    params: Vec<u32>,
    outputs: usize,
    workgroups: u32,
    /// Threads per workgroup: `WORKGROUP`, or `SERIAL_WORKGROUP`.
    threads: u32,
    /// Parts each output's reduction is split into (1: one pass).
    splits: usize,
}

/// Few workgroups leave most of a large GPU idle: below this many, long
/// reductions are split over several workgroups and finished by a second pass.
const TARGET_GROUPS: usize = 512;
/// Elements each part of a split reduction covers at least (so the second
/// pass and the partials stay small next to the first pass).
const MIN_CHUNK: usize = 4096;

/// Parts to split each output's `k` elements into when `groups` workgroups
/// would serve them in one pass: 1 when the grid is large enough already.
fn splits_for(groups: usize, k: usize) -> usize {
    if groups >= TARGET_GROUPS {
        return 1;
    }
    (k / MIN_CHUNK).min(TARGET_GROUPS.div_ceil(groups.max(1))).min(WORKGROUP as usize).max(1)
}

/// Merges contiguous dims of one side (kept or reduced), checking the kernel's rank limit.
fn side(op: &'static str, what: &str, layout: &Layout, dims: &[usize]) -> Result<(Dims, Dims)> {
    let shape: Dims = dims.iter().map(|&d| layout.shape[d]).collect();
    let strides: Dims = dims.iter().map(|&d| layout.strides[d]).collect();
    let (s, mut st) = coalesce(&shape, &[&strides]);
    if s.len() > MAX_RANK {
        return Err(Error::shape(
            op,
            format!(
                "GPU reductions index at most {MAX_RANK} non-mergeable {what} dims, got shape {:?} with strides {:?}",
                layout.shape, layout.strides
            ),
        ));
    }
    Ok((s, st.swap_remove(0)))
}

/// log2 of the outputs per workgroup (G). Lanes per output: a quarter of the
/// reduced size rounded up to a power of two (at most 256), so each lane
/// folds a few elements before the tree (whose barriers are the cost on
/// software rasterisers like lavapipe) and short rows leave no thread idle.
/// When neighbouring outputs are neighbours in memory and reduced elements
/// are not (column reductions: bias gradients, sums over a batch axis), at
/// most 8 lanes per output, so that 32+ threads in a row read one contiguous
/// run. G never exceeds the output count rounded up, so a few outputs over
/// long rows still get every thread.
fn outputs_per_group(outputs: usize, k: usize, column: bool) -> u32 {
    let mut lanes = k.div_ceil(4).next_power_of_two().clamp(1, WORKGROUP as usize);
    if column {
        lanes = lanes.min(8);
    }
    let g = (WORKGROUP as usize / lanes).min(outputs.next_power_of_two().max(1));
    g.trailing_zeros()
}

/// Software adapters reduce one output (or one part of a split output) per
/// thread, with no tree through workgroup memory: SwiftShader runs a
/// workgroup's threads as coroutines over SIMD lanes and switches all of them
/// at every barrier, so a tree made a convolution's bias gradient ([64, 8, 26,
/// 26] over N, H, W) ten times slower (benches/HISTORY.md). Long reductions over few outputs split into
/// parts of at least `SERIAL_CHUNK` elements, up to `SERIAL_PARTS` parts in all.
const SERIAL_CHUNK: usize = 256;
const SERIAL_PARTS: usize = 256;
/// Elements one thread reduces alone at most; longer parts use the tree.
/// It keeps each thread well inside lavapipe's budget of 65,535 loop
/// iterations per invocation (`GpuContext::loop_budget`), which cut a serial
/// argmax over 150,000 elements short, and bounds one thread's work anywhere.
const SERIAL_MAX: usize = 16_384;
/// Threads per workgroup where each reduces alone. Software adapters run a
/// workgroup on one core, so 256 parts in one 256-thread workgroup left
/// every core but one idle (a sum took twice as long as a ReLU over the
/// same elements); smaller workgroups spread the parts over the cores.
const SERIAL_WORKGROUP: u32 = 64;

/// `splits_for` when each thread reduces a part alone (`SERIAL_CHUNK`).
fn serial_splits(outputs: usize, k: usize) -> usize {
    (k / SERIAL_CHUNK).min(SERIAL_PARTS.div_ceil(outputs.max(1))).max(1)
}

/// The dispatch reducing `axes` of `layout`; with `split`, long reductions
/// over few outputs may write `splits` partials per output instead (sum,
/// max and min only: their partials combine with the same reduction). With
/// `serial` (software adapters, `GpuContext::row_kernels`), one thread per
/// output or part.
fn plan(op: &'static str, layout: &Layout, axes: &[usize], split: bool, serial: bool) -> Result<Plan> {
    if serial {
        let p = plan_with(op, layout, axes, split, true)?;
        if p.params[1].div_ceil(p.params[6].max(1)) as usize <= SERIAL_MAX {
            return Ok(p);
        }
    }
    plan_with(op, layout, axes, split, false)
}

fn plan_with(op: &'static str, layout: &Layout, axes: &[usize], split: bool, serial: bool) -> Result<Plan> {
    let nd = layout.shape.len();
    if let Some(&a) = axes.iter().find(|&&a| a >= nd) {
        return Err(Error::shape(op, format!("axis {a} is out of range for shape {:?}", layout.shape)));
    }
    let kept: Dims = (0..nd).filter(|d| !axes.contains(d)).collect();
    let outputs: usize = kept.iter().map(|&d| layout.shape[d]).product();
    let k: usize = axes.iter().map(|&d| layout.shape[d]).product();
    // The kernel counts in u32 and returns indices as i32; views of expanded
    // tensors can be far larger than any buffer.
    if outputs > i32::MAX as usize || k > i32::MAX as usize {
        return Err(Error::shape(
            op,
            format!("GPU reductions handle at most {} elements per side, got shape {:?}", i32::MAX, layout.shape),
        ));
    }
    let (ks, kst) = side(op, "kept", layout, &kept)?;
    let (rs, rst) = side(op, "reduced", layout, axes)?;
    // coalesce leaves one dim of size 1 when a side is empty.
    let column = outputs > 1 && kst.last() == Some(&1) && rst.last() != Some(&1);
    let threads = if serial { SERIAL_WORKGROUP } else { WORKGROUP };
    let one_lane = threads.trailing_zeros();
    let mut lg = if serial { one_lane } else { outputs_per_group(outputs, k, column) };
    let mut splits = match (split, serial) {
        (false, _) => 1,
        (true, true) => serial_splits(outputs, k),
        (true, false) => splits_for(outputs.div_ceil(1 << lg), k),
    };
    let chunk = k.div_ceil(splits).max(1);
    if splits > 1 {
        // Every part is a long row of its own; no part is empty.
        splits = k.div_ceil(chunk);
        lg = if serial { one_lane } else { outputs_per_group(outputs * splits, chunk, false) };
    }
    let mut m = vec![0u32; 40];
    m[0] = (outputs * splits) as u32;
    m[1] = k as u32;
    m[2] = layout.offset as u32;
    m[3] = lg;
    m[4] = ks.len() as u32;
    m[5] = rs.len() as u32;
    m[6] = splits as u32;
    m[7] = chunk as u32;
    for d in 0..ks.len() {
        m[8 + d] = ks[d] as u32;
        m[16 + d] = kst[d] as u32;
    }
    for d in 0..rs.len() {
        m[24 + d] = rs[d] as u32;
        m[32 + d] = rst[d] as u32;
    }
    Ok(Plan { params: m, outputs, workgroups: ((outputs * splits) as u32).div_ceil(1 << lg), threads, splits })
}

const MODES: [Mode; 5] = [Mode::Sum, Mode::Max, Mode::Min, Mode::ArgMax, Mode::ArgMin];

/// What one reduction kernel reads and writes: its input's element type
/// (f32 or f16) and its result's (the input's for sum, max and min, i32 for
/// indices; a split f16 reduction writes f32 partials, then reduces them
/// to f16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Types {
    x: DType,
    out: DType,
}

impl Types {
    /// Every kernel `mode` runs as (for validation).
    fn all(mode: Mode) -> Vec<Types> {
        let t = |x, out| Types { x, out };
        if matches!(mode, Mode::ArgMax | Mode::ArgMin) {
            vec![t(DType::F32, DType::I32), t(DType::F16, DType::I32)]
        } else {
            let f16s = [t(DType::F16, DType::F16), t(DType::F16, DType::F32), t(DType::F32, DType::F16)];
            [t(DType::F32, DType::F32)].into_iter().chain(f16s).collect()
        }
    }
}

/// The pipeline key of the kernel of `mode` over `t` with workgroups of `threads`.
fn key(mode: Mode, t: Types, threads: u32) -> String {
    let size = if threads == WORKGROUP { String::new() } else { format!(":wg{threads}") };
    match (t.x, t.out) {
        (DType::F32, DType::F32 | DType::I32) => format!("reduce:{mode:?}{size}"),
        (x, out) => format!("reduce:{mode:?}:{}:{}{size}", x.name(), out.name()),
    }
}

/// How the kernel writes a float result (a fused epilogue's `store` ends
/// with it): f32 as its bits into the u32 output, f16 rounded once.
fn write(out: DType) -> &'static str {
    if out == DType::F16 {
        "OUT[i] = f16({v})"
    } else {
        "OUT[i] = bitcast<u32>({v})"
    }
}
/// The binding of the first input of a fused epilogue (after X and OUT).
const TAIL_BINDING: usize = 3;

fn source(mode: Mode, t: Types, threads: u32) -> String {
    source_with(mode, t, threads, &plain_store(write(t.out)))
}

/// The kernel of `mode` over `t` with `store` (a plain write, or an
/// epilogue's code) as its store.
fn source_with(mode: Mode, t: Types, threads: u32, store: &str) -> String {
    let half = t.x == DType::F16 || t.out == DType::F16;
    let body = REDUCE
        .replace("{KIND}", &(mode as u32).to_string())
        .replace("{WGS}", &threads.to_string())
        .replace("{XT}", wgsl_type(t.x))
        .replace("{OUTT}", if t.out == DType::F16 { "f16" } else { "u32" });
    // Only index outputs (u32) take indices; the others never call it.
    let index = if t.out == DType::I32 { "OUT[i] = v;" } else { "" };
    format!(
        "{}{PRELUDE}\n{body}{store}\nfn store_index(i: u32, v: u32) {{ {index} }}\n",
        if half { ENABLE_F16 } else { "" }
    )
}

/// The reduction of `kind` with `e`'s tail in its store, with each
/// workgroup size (for validation; epilogues head f32 reductions only: `jit`
/// leaves f16 values unfused).
pub fn epilogue_sources(kind: ReduceKind, e: &crate::kernel::Epilogue) -> Vec<String> {
    let f32s = Types { x: DType::F32, out: DType::F32 };
    let code = super::epilogue::code(e, TAIL_BINDING, write(DType::F32));
    [WORKGROUP, SERIAL_WORKGROUP].map(|threads| source_with(mode_of(kind), f32s, threads, &code)).to_vec()
}

fn mode_of(kind: ReduceKind) -> Mode {
    match kind {
        ReduceKind::Sum => Mode::Sum,
        ReduceKind::Max => Mode::Max,
        ReduceKind::Min => Mode::Min,
    }
}

/// Every source this module can build, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    let kernels = MODES.iter().flat_map(|&m| Types::all(m).into_iter().map(move |t| (m, t)));
    kernels
        .flat_map(|(m, t)| [WORKGROUP, SERIAL_WORKGROUP].map(|threads| (key(m, t, threads), source(m, t, threads))))
        .collect()
}

fn run(
    op: &'static str,
    x: &GpuBuffer,
    layout: &Layout,
    axes: &[usize],
    mode: Mode,
    tail: Option<&Tail>,
) -> Result<GpuBuffer> {
    if !matches!(x.dtype, DType::F32 | DType::F16) {
        return Err(Error::dtype(op, format!("GPU reductions take f32 or f16 tensors, got {}", x.dtype)));
    }
    if tail.is_some() && x.dtype != DType::F32 {
        return Err(Error::dtype(op, format!("internal: a fused epilogue on a {} reduction", x.dtype)));
    }
    let arg = matches!(mode, Mode::ArgMax | Mode::ArgMin);
    // Argmax partials would need their indices too: arg reductions run in one pass.
    let ctx = x.ctx().clone();
    let serial = ctx.tuning.row_kernels();
    let p = plan(op, layout, axes, !arg, serial)?;
    let out_dtype = if arg { DType::I32 } else { x.dtype };
    let out = GpuBuffer::new(&ctx, op, out_dtype, p.outputs)?;
    if p.outputs == 0 {
        return Ok(out);
    }
    let pipeline = |t: Types, threads: u32| ctx.pipeline(&key(mode, t, threads), || source(mode, t, threads));
    // The pass that writes the result, through the tail when there is one.
    let last = |plan: &Plan, input: &GpuBuffer| -> Result<()> {
        let types = Types { x: input.dtype, out: out_dtype };
        let Some(t) = tail else {
            let kernel = pipeline(types, plan.threads)?;
            ctx.dispatch(&kernel, &plan.params, &[input.raw(), out.raw()], plan.workgroups);
            return Ok(());
        };
        let with = ctx.pipeline(&format!("{}:{}", key(mode, types, plan.threads), t.key), || {
            source_with(mode, types, plan.threads, &t.code(TAIL_BINDING, write(out_dtype)))
        })?;
        let mut all = plan.params.to_vec();
        all.extend_from_slice(&t.params);
        let mut buffers = vec![input.raw(), out.raw()];
        buffers.extend(t.buffers.iter().map(|b| b.raw()));
        ctx.dispatch(&with, &all, &buffers, plan.workgroups);
        Ok(())
    };
    if p.splits == 1 {
        last(&p, x)?;
        return Ok(out);
    }
    // Pass 1 writes [outputs, splits] partials; pass 2 reduces their rows. The
    // partials return to the pool on drop, after both passes are recorded
    // (one queue, in order, so no later user can overwrite them early).
    // The partials stay f32 (an f16 result is rounded once, from their reduction).
    let partial = GpuBuffer::new(&ctx, op, DType::F32, p.outputs * p.splits)?;
    let first = pipeline(Types { x: x.dtype, out: DType::F32 }, p.threads)?;
    ctx.dispatch(&first, &p.params, &[x.raw(), partial.raw()], p.workgroups);
    let p2 = plan(op, &Layout::contiguous(&[p.outputs, p.splits]), &[1], false, serial)?;
    last(&p2, &partial)?;
    Ok(out)
}

/// Reduces `axes` (sorted, distinct) of the view `layout` of `x`: a contiguous
/// buffer of x's dtype holding the kept dims in order.
pub fn reduce(op: &'static str, x: &GpuBuffer, layout: &Layout, axes: &[usize], kind: ReduceKind) -> Result<GpuBuffer> {
    reduce_with(op, x, layout, axes, kind, None)
}

/// `reduce`, each result going through `tail` (a fused epilogue,
/// `backend/gpu/epilogue.rs`) before it is stored.
pub fn reduce_with(
    op: &'static str,
    x: &GpuBuffer,
    layout: &Layout,
    axes: &[usize],
    kind: ReduceKind,
    tail: Option<&Tail>,
) -> Result<GpuBuffer> {
    run(op, x, layout, axes, mode_of(kind), tail)
}

/// Index (i32) of the first max (or min) along `axis`; NaN counts as the extreme.
pub fn arg_reduce(op: &'static str, x: &GpuBuffer, layout: &Layout, axis: usize, max: bool) -> Result<GpuBuffer> {
    run(op, x, layout, &[axis], if max { Mode::ArgMax } else { Mode::ArgMin }, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_use_whole_groups_and_columns_use_neighbouring_threads() {
        // A long row: one workgroup per output.
        assert_eq!(outputs_per_group(4, 100_000, false), 0);
        // Short rows: a quarter as many lanes as elements; up to 4 get one thread each.
        assert_eq!(outputs_per_group(10_000, 20, false), 5);
        assert_eq!(outputs_per_group(10_000, 3, false), 8);
        // Many columns: 32 outputs side by side, 8 lanes each.
        assert_eq!(outputs_per_group(4096, 1000, true), 5);
        // Few columns: every thread still works.
        assert_eq!(outputs_per_group(2, 100_000, true), 1);
        // One output over one element: a single thread's worth.
        assert_eq!(outputs_per_group(1, 1, false), 0);
    }

    #[test]
    fn plans_merge_dims_and_permute_reduced_axes_last() {
        // [4, 5, 6] contiguous, reducing axis 1: kept [4, 6] strides [30, 1], reduced [5] stride 6.
        let p = plan("sum", &Layout::contiguous(&[4, 5, 6]), &[1], true, false).unwrap();
        assert_eq!(&p.params[..6], &[24, 5, 0, p.params[3], 2, 1]);
        assert_eq!(&p.params[8..10], &[4, 6]);
        assert_eq!(&p.params[16..18], &[30, 1]);
        assert_eq!((p.params[24], p.params[32]), (5, 6));
        // All axes of a contiguous block merge into one reduced dim; no kept dims remain.
        let p = plan("sum", &Layout::contiguous(&[4, 5, 6]), &[0, 1, 2], true, false).unwrap();
        assert_eq!((p.params[0], p.params[1], p.params[5], p.params[24], p.params[32]), (1, 120, 1, 120, 1));
        assert_eq!(p.workgroups, 1);
        assert!(plan("sum", &Layout::contiguous(&[4, 5]), &[2], true, false).is_err());
        assert_eq!(p.splits, 1);
    }

    #[test]
    fn long_reductions_over_few_outputs_split() {
        let p = plan("sum", &Layout::contiguous(&[1_000_000]), &[0], true, false).unwrap();
        let (splits, chunk) = (p.params[6] as usize, p.params[7] as usize);
        assert!(splits > 100 && splits == p.splits && splits <= 256, "{splits}");
        assert!(splits * chunk >= 1_000_000 && (splits - 1) * chunk < 1_000_000);
        assert_eq!((p.params[0] as usize, p.outputs), (splits, 1));
        // Not for arg reductions, nor when there are enough outputs to fill the GPU.
        assert_eq!(plan("argmax", &Layout::contiguous(&[1_000_000]), &[0], false, false).unwrap().splits, 1);
        assert_eq!(plan("sum", &Layout::contiguous(&[1024, 8192]), &[1], true, false).unwrap().splits, 1);
    }

    #[test]
    fn software_adapters_reduce_one_part_per_thread() {
        // A convolution's bias gradient: 8 outputs of 43,264 elements, 32 parts each.
        let x = Layout::contiguous(&[64, 8, 26 * 26]);
        let p = plan("sum", &x, &[0, 2], true, true).unwrap();
        assert_eq!((p.params[3], p.splits, p.params[0]), (6, 32, 256));
        assert!(p.params[7] as usize >= SERIAL_CHUNK);
        // One thread per part, in four workgroups (not one: one core each on a software adapter).
        assert_eq!((p.threads, p.workgroups), (64, 4));
        // Short rows are not split; arg reductions never are.
        assert_eq!(plan("sum", &Layout::contiguous(&[1000, 300]), &[1], true, true).unwrap().splits, 1);
        let p = plan("argmax", &Layout::contiguous(&[10_000]), &[0], false, true).unwrap();
        assert_eq!((p.params[3], p.splits, p.threads), (6, 1, 64));
        // Past SERIAL_MAX elements per thread, the tree (one workgroup here).
        let p = plan("argmax", &Layout::contiguous(&[1_000_000]), &[0], false, true).unwrap();
        assert_eq!((p.params[3], p.splits, p.threads), (0, 1, 256));
    }
}
