//! Every WGSL source the GPU backend can compile, for validation (DESIGN
//! principle 7: every WGSL source is validated with naga, see tests/gpu_backend/wgsl.rs).
//!
//! Templates are instantiated for every registry row and every dtype the
//! backend uses them with, under the same names as their pipeline-cache keys;
//! the standalone kernel families (reduce, matmul, index, conv) list their own
//! sources next to the code that builds them.
//! The elementwise instantiations come from the same builders the launches
//! in `elementwise.rs` use, so what is validated is what runs.

use super::elementwise::{
    binary_template, cast_template, copy_into_template, fill_template, unary_template, where_template,
};
use super::kernels::{vec4_key, Lanes, Template};
use super::{conv, index, matmul, reduce};
use crate::dtype::DType;

pub use crate::kernel::RowSources as Rows;

/// The dtypes tensors can have on the GPU (f64 stays on the cpu).
const GPU_DTYPES: [DType; 3] = [DType::F32, DType::I32, DType::Bool];

/// (name, full WGSL source) of every kernel the backend can build.
pub fn all_kernel_sources(rows: &Rows) -> Vec<(String, String)> {
    let mut all = Vec::new();
    all.extend(unary_sources(rows));
    all.extend(binary_sources(rows));
    all.extend(compare_sources(rows));
    for dt in GPU_DTYPES {
        all.extend(variants(format!("where:{}", dt.name()), where_template(dt)));
        all.extend(variants(format!("fill:{}", dt.name()), fill_template(dt)));
        all.extend(variants(format!("copy_into:{}", dt.name()), copy_into_template(dt)));
        for to in GPU_DTYPES {
            all.extend(variants(format!("cast:{}:{}", dt.name(), to.name()), cast_template(dt, to)));
        }
    }
    // f16 runs natively through casts, copies and the elementwise rows
    // (`backend::half`; the rows' f16 instantiations are with theirs); these
    // need `shader-f16`, so they start with `enable f16;`.
    for dt in GPU_DTYPES {
        all.extend(variants(format!("cast:f16:{}", dt.name()), cast_template(DType::F16, dt)));
        all.extend(variants(format!("cast:{}:f16", dt.name()), cast_template(dt, DType::F16)));
    }
    all.extend(variants("cast:f16:f16".to_string(), cast_template(DType::F16, DType::F16)));
    all.extend(variants("copy_into:f16".to_string(), copy_into_template(DType::F16)));
    all.extend(variants("fill:f16".to_string(), fill_template(DType::F16)));
    all.extend(variants("where:f16".to_string(), where_template(DType::F16)));
    all.extend(reduce::sources());
    for dt in matmul::DTYPES {
        all.push((format!("matmul:{}", dt.name()), matmul::source(dt)));
        all.push((matmul::tiled_key(matmul::Tiles::WIDE, dt), matmul::wide_source(dt)));
        // An aligned B staged as vec4s (`matmul::tiled`), either tile.
        for tiles in [matmul::Tiles::SMALL, matmul::Tiles::WIDE] {
            let b = matmul::Loads::Across;
            all.push((matmul::staged_key(tiles, dt, b), matmul::staged_source(tiles, dt, b)));
        }
        // The implicit GEMM's kernels: B read through a window either way
        // round, with or without the padding test, by every block of the
        // blocked kernel and (always testing) by the tiled one.
        use matmul::Loads::{Inside, InsideT, Window, WindowT};
        for loads in [Window, WindowT, Inside, InsideT] {
            let full = matmul::Block::FULL.loading(matmul::Block::FULL.a, loads);
            if loads.tests_padding() {
                let key = format!("matmul:{}:{}", dt.name(), matmul::window_key(loads));
                all.push((key, matmul::window_source(matmul::Kernel::Tiled, full, dt)));
            }
            let blocks = matmul::Block::all().into_iter().filter(|b| b.b == matmul::Loads::Scalar);
            all.extend(blocks.map(|b| {
                let b = b.loading(b.a, loads);
                (matmul::blocked_key(b, dt), matmul::window_source(matmul::Kernel::Blocked, b, dt))
            }));
        }
        all.extend(
            matmul::Block::all().into_iter().map(|b| (matmul::blocked_key(b, dt), matmul::blocked_source(b, dt))),
        );
        // Native software adapters' shared loads of B (subgroups: `matmul::uses_subgroups`).
        all.extend(
            matmul::Block::all_broadcasting()
                .into_iter()
                .map(|b| (matmul::blocked_key(b, dt), matmul::blocked_source(b, dt))),
        );
    }
    all.push(("optim:adam:f32".to_string(), super::optim::adam_source("f32")));
    all.push(("optim:adam4:f32".to_string(), super::optim::adam_source("vec4<f32>")));
    all.extend(index::sources());
    all.extend(conv::sources());
    all.extend(super::scan::sources());
    all.extend(super::sort::sources());
    all.extend(fused_sources(rows));
    all
}

/// Fused kernels that put every row's expression into a generated kernel
/// (as a step function), every compare, where, cast and copy step for each
/// dtype, and the most inputs a fused kernel reads.
fn fused_sources(rows: &Rows) -> Vec<(String, String)> {
    use super::fused::{source_of, Expr, StepSource};
    use crate::kernel::fused::MAX_INPUTS;
    use crate::kernel::Operand::{Input as X, Step as T};
    let prev = |j: usize| if j == 0 { X(0) } else { T(j - 1) };
    let mut all = Vec::new();
    let unary: Vec<StepSource> =
        rows.unary.iter().enumerate().map(|(j, (_, e))| (Expr::Unary(e), vec![prev(j)], DType::F32)).collect();
    let binary: Vec<StepSource> =
        rows.binary.iter().enumerate().map(|(j, (_, e))| (Expr::Binary(e), vec![prev(j), X(1)], DType::F32)).collect();
    if !unary.is_empty() {
        all.push(("fused:unary rows".to_string(), source_of(&[DType::F32], &unary, None)));
        all.push(("fused:unary rows:x4:v".to_string(), source_of(&[DType::F32], &unary, Some(&[Lanes::Vector]))));
    }
    if !binary.is_empty() {
        all.push(("fused:binary rows".to_string(), source_of(&[DType::F32; 2], &binary, None)));
        let lanes = [Lanes::Splat, Lanes::Vector];
        all.push(("fused:binary rows:x4:sv".to_string(), source_of(&[DType::F32; 2], &binary, Some(&lanes))));
    }
    if let Some((_, add)) = rows.binary.first() {
        let wide: Vec<StepSource> =
            (1..MAX_INPUTS).map(|k| (Expr::Binary(add), vec![prev(k - 1), X(k)], DType::F32)).collect();
        all.push(("fused:widest".to_string(), source_of(&[DType::F32; MAX_INPUTS], &wide, None)));
        let lanes = [Lanes::Vector; MAX_INPUTS];
        all.push(("fused:widest:x4".to_string(), source_of(&[DType::F32; MAX_INPUTS], &wide, Some(&lanes))));
    }
    for dt in GPU_DTYPES {
        let mut steps: Vec<StepSource> =
            rows.compare.iter().map(|(_, e)| (Expr::Compare(e), vec![X(0), X(1)], DType::Bool)).collect();
        let mask = if steps.is_empty() { X(2) } else { T(0) };
        steps.push((Expr::Where, vec![mask, X(0), X(1)], dt));
        let selected = T(steps.len() - 1);
        for to in GPU_DTYPES {
            steps.push((Expr::Cast, vec![selected], to));
        }
        steps.push((Expr::Copy, vec![selected], dt));
        let name = format!("fused:compare where cast:{}", dt.name());
        all.push((name.clone(), source_of(&[dt, dt, DType::Bool], &steps, None)));
        let lanes = [Lanes::Vector, Lanes::Splat, Lanes::Vector];
        all.push((format!("{name}:x4"), source_of(&[dt, dt, DType::Bool], &steps, Some(&lanes))));
    }
    all
}

/// A template's one-element kernel and its 4-wide variants: every input a
/// vec4, and (with inputs) the first one repeated instead, so both ways of
/// loading are validated.
fn variants(key: String, t: Template) -> Vec<(String, String)> {
    let n = t.inputs.len();
    let mut lanes = vec![vec![Lanes::Vector; n]];
    if n > 0 {
        lanes.push([Lanes::Splat].into_iter().chain(vec![Lanes::Vector; n - 1]).collect());
    }
    let mut all = vec![(key.clone(), t.source(None))];
    all.extend(lanes.iter().map(|l| (vec4_key(&key, l), t.source(Some(l)))));
    all
}

fn unary_sources(rows: &Rows) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = rows
        .unary
        .iter()
        .flat_map(|(name, wgsl)| variants(format!("unary:{name}"), unary_template(DType::F32, wgsl)))
        .collect();
    all.extend(
        rows.unary
            .iter()
            .flat_map(|(name, wgsl)| variants(format!("unary:{name}:f16"), unary_template(DType::F16, wgsl))),
    );
    all
}

fn binary_sources(rows: &Rows) -> Vec<(String, String)> {
    rows.binary
        .iter()
        .flat_map(|(name, wgsl)| {
            [DType::F32, DType::F16]
                .into_iter()
                .flat_map(move |dt| variants(format!("binary:{name}:{}", dt.name()), binary_template(dt, dt, wgsl)))
        })
        .collect()
}

fn compare_sources(rows: &Rows) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for (name, wgsl) in &rows.compare {
        for dt in GPU_DTYPES.into_iter().chain([DType::F16]) {
            all.extend(variants(format!("binary:{name}:{}", dt.name()), binary_template(dt, DType::Bool, wgsl)));
        }
    }
    all
}
