//! Kernel sources and the generic launcher: every kernel gets the prelude
//! (parameter access, strided indexing), and elementwise kernels are
//! instantiations of one template (`shaders/elementwise.wgsl`).

use super::runtime::{GpuContext, WORKGROUP};
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{coalesce, contiguous_strides, Layout};
use std::sync::Arc;

pub const PRELUDE: &str = include_str!("../../../shaders/prelude.wgsl");
pub const MATH: &str = include_str!("../../../shaders/math.wgsl");
pub const ELEMENTWISE: &str = include_str!("../../../shaders/elementwise.wgsl");

/// Dims the strided indexing supports per operand (after merging contiguous dims).
pub const MAX_RANK: usize = 8;

/// One input of an elementwise kernel: its buffer and its (strided, broadcast) view.
pub struct Operand<'a> {
    pub buf: &'a GpuBuffer,
    pub layout: &'a Layout,
}

/// Parameters of an elementwise dispatch over `shape`, for operands whose
/// layouts broadcast to it, followed by `scalars`. Contiguous dims are merged
/// first so most tensors index with one or two dims.
pub fn elementwise_params(op: &'static str, shape: &[usize], layouts: &[&Layout], scalars: &[u32]) -> Result<Vec<u32>> {
    let out_strides = contiguous_strides(shape);
    let bstrides: Vec<_> = layouts.iter().map(|l| l.broadcast_strides(shape)).collect();
    let mut all: Vec<&[usize]> = vec![&out_strides];
    all.extend(bstrides.iter().map(|s| s.as_slice()));
    let (cshape, cstrides) = coalesce(shape, &all);
    if cshape.len() > MAX_RANK {
        return Err(Error::shape(
            op,
            format!("GPU kernels index at most {MAX_RANK} non-mergeable dims, got shape {shape:?}"),
        ));
    }
    let n: usize = shape.iter().product();
    let mut m = vec![0u32; 10 + 10 * layouts.len()];
    m[0] = n as u32;
    m[1] = cshape.len() as u32;
    for (d, &s) in cshape.iter().enumerate() {
        m[2 + d] = s as u32;
    }
    for (k, l) in layouts.iter().enumerate() {
        let base = 10 + 10 * k;
        m[base] = l.offset as u32;
        let contiguous = l.is_contiguous() && l.shape.as_slice() == shape;
        m[base + 1] = contiguous as u32;
        for (d, &s) in cstrides[k + 1].iter().enumerate() {
            m[base + 2 + d] = s as u32;
        }
    }
    m.extend_from_slice(scalars);
    Ok(m)
}

/// Workgroups for `n` invocations of a 256-wide kernel.
pub fn workgroups(n: usize) -> u32 {
    (n as u32).div_ceil(WORKGROUP)
}

/// Fills the elementwise template.
pub struct Template<'a> {
    /// (name, WGSL type) of each input, bound at 1, 2, ...
    pub inputs: &'a [(&'a str, DType)],
    pub out: DType,
    /// Statements defining the expression's variables (e.g. `let x = A[operand_index(i, 0u)];`).
    pub loads: String,
    pub expr: &'a str,
    /// Index of the output element written (`i`, or a strided destination).
    pub out_index: &'a str,
}

impl Template<'_> {
    pub fn source(&self) -> String {
        let bindings: String = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, (name, dt))| {
                format!("@group(0) @binding({}) var<storage, read> {name}: array<{}>;\n", k + 1, wgsl_type(*dt))
            })
            .collect();
        let body = ELEMENTWISE
            .replace("{BINDINGS}", &bindings)
            .replace("{OUT_BINDING}", &(self.inputs.len() + 1).to_string())
            .replace("{TOUT}", wgsl_type(self.out))
            .replace("{HELPERS}", MATH)
            .replace("{SCALARS}", &(10 + 10 * self.operands()).to_string())
            .replace("{LOADS}", &self.loads)
            .replace("{OUT_INDEX}", self.out_index)
            .replace("{EXPR}", self.expr);
        format!("{PRELUDE}\n{body}")
    }
    /// Operands with layouts in the parameter block.
    fn operands(&self) -> usize {
        // A strided destination (write_into) is one more layout after the inputs.
        self.inputs.len() + usize::from(self.out_index != "i")
    }
}

/// Records one elementwise dispatch writing `out`.
pub fn launch(
    ctx: &Arc<GpuContext>,
    key: &str,
    source: impl FnOnce() -> String,
    params: &[u32],
    inputs: &[&GpuBuffer],
    out: &GpuBuffer,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let pipeline = ctx.pipeline(key, source)?;
    let mut bufs: Vec<&wgpu::Buffer> = inputs.iter().map(|b| b.raw()).collect();
    bufs.push(out.raw());
    ctx.dispatch(&pipeline, params, &bufs, workgroups(n));
    Ok(())
}
