//! Every WGSL source the GPU backend can compile, for validation (DESIGN
//! principle 7: every WGSL source is validated with naga, see tests/wgsl.rs).
//!
//! Templates are instantiated for every registry row and every dtype the
//! backend uses them with, under the same names as their pipeline-cache keys;
//! the standalone kernel families (reduce, matmul, index, conv) list their own
//! sources next to the code that builds them.
//! The elementwise instantiations come from the same builders the launches
//! in `elementwise.rs` use, so what is validated is what runs.

use super::elementwise::{binary_source, cast_source, copy_into_source, fill_source, unary_source, where_source};
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
        all.push((format!("where:{}", dt.name()), where_source(dt)));
        all.push((format!("fill:{}", dt.name()), fill_source(dt)));
        all.push((format!("copy_into:{}", dt.name()), copy_into_source(dt)));
        for to in GPU_DTYPES {
            all.push((format!("cast:{}:{}", dt.name(), to.name()), cast_source(dt, to)));
        }
    }
    all.extend(reduce::sources());
    all.push(("matmul:f32".to_string(), matmul::source()));
    all.push(("matmul:f32:blocked".to_string(), matmul::blocked_source()));
    all.push(("optim:adam:f32".to_string(), super::optim::adam_source()));
    all.extend(index::sources());
    all.extend(conv::sources());
    all
}

fn unary_sources(rows: &Rows) -> Vec<(String, String)> {
    rows.unary.iter().map(|(name, wgsl)| (format!("unary:{name}"), unary_source(wgsl))).collect()
}

fn binary_sources(rows: &Rows) -> Vec<(String, String)> {
    rows.binary
        .iter()
        .map(|(name, wgsl)| {
            (format!("binary:{name}:{}", DType::F32.name()), binary_source(DType::F32, DType::F32, wgsl))
        })
        .collect()
}

fn compare_sources(rows: &Rows) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for (name, wgsl) in &rows.compare {
        for dt in GPU_DTYPES {
            all.push((format!("binary:{name}:{}", dt.name()), binary_source(dt, DType::Bool, wgsl)));
        }
    }
    all
}
