//! Kernel sources and the generic launcher: every kernel gets the prelude
//! (parameter access, strided indexing), and elementwise kernels are
//! instantiations of one template (`shaders/elementwise.wgsl`).

use super::runtime::{GpuContext, WORKGROUP};
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::shape::{coalesce, contiguous_strides, Layout};
use std::sync::Arc;

pub const PRELUDE: &str = wgsl_file!(include_str!("../../../shaders/prelude.wgsl"));
pub const MATH: &str = wgsl_file!(include_str!("../../../shaders/math.wgsl"));
pub const ELEMENTWISE: &str = wgsl_file!(include_str!("../../../shaders/elementwise.wgsl"));

/// The type an element of `dtype` is computed in: f16 widens to f32.
pub fn compute_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "f32",
        d => wgsl_type(d),
    }
}

/// The directive a shader with f16 values starts with (only built on
/// devices with `shader-f16`: `GpuBuffer::new` refuses f16 elsewhere).
pub const ENABLE_F16: &str = "enable f16;\n";

/// Dims the strided indexing supports per operand (after merging contiguous dims).
pub const MAX_RANK: usize = 8;

/// One input of an elementwise kernel: its buffer and its (strided, broadcast) view.
pub struct Operand<'a> {
    pub buf: &'a GpuBuffer,
    pub layout: &'a Layout,
}

/// `shape` and each operand's strides broadcast to it, with the dims that are
/// contiguous for every operand (and the contiguous output) merged, so most
/// tensors index with one or two dims: the output's strides first.
fn merged(shape: &[usize], layouts: &[&Layout]) -> (crate::shape::Dims, Vec<crate::shape::Dims>) {
    let out_strides = contiguous_strides(shape);
    let bstrides: Vec<_> = layouts.iter().map(|l| l.broadcast_strides(shape)).collect();
    let mut all: Vec<&[usize]> = vec![&out_strides];
    all.extend(bstrides.iter().map(|s| s.as_slice()));
    coalesce(shape, &all)
}

/// Parameters of an elementwise dispatch over `shape`, for operands whose
/// layouts broadcast to it, followed by `scalars`.
pub fn elementwise_params(op: &'static str, shape: &[usize], layouts: &[&Layout], scalars: &[u32]) -> Result<Vec<u32>> {
    let (cshape, cstrides) = merged(shape, layouts);
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

/// How the 4-wide elementwise kernel (`shaders/elementwise4.wgsl`) reads an
/// operand's four consecutive elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// As one aligned vec4 of its buffer.
    Vector,
    /// As one element, repeated (the operand is broadcast along the innermost dim).
    Splat,
}

/// How the 4-wide kernel can read each operand of an elementwise dispatch
/// over `shape`, or None when it cannot run: the element count and the
/// innermost merged dim must be multiples of 4 (so four consecutive outputs
/// share every coordinate but the innermost one), and each operand must
/// either step by 1 along that dim from a 4-aligned element with every other
/// stride a multiple of 4 (a vec4), or not step at all (one element).
pub fn vec4_lanes(shape: &[usize], layouts: &[&Layout]) -> Option<Vec<Lanes>> {
    let n: usize = shape.iter().product();
    let (cshape, cstrides) = merged(shape, layouts);
    if n == 0 || n % 4 != 0 || cshape.last().is_none_or(|&d| d % 4 != 0) || cshape.len() > MAX_RANK {
        return None;
    }
    layouts
        .iter()
        .zip(&cstrides[1..])
        .map(|(l, st)| match st.split_last() {
            Some((0, _)) => Some(Lanes::Splat),
            Some((1, outer)) if l.offset % 4 == 0 && outer.iter().all(|s| s % 4 == 0) => Some(Lanes::Vector),
            _ => None,
        })
        .collect()
}

/// Workgroups for `n` invocations of a 256-wide kernel.
pub fn workgroups(n: usize) -> u32 {
    (n as u32).div_ceil(WORKGROUP)
}

/// The 4-wide variant of the template (see `vec4_lanes`).
pub const ELEMENTWISE4: &str = wgsl_file!(include_str!("../../../shaders/elementwise4.wgsl"));

/// One input of a template kernel: its binding's name, the variable its
/// element is loaded into (the name the expression uses) and its dtype.
pub struct Input {
    pub name: &'static str,
    pub var: &'static str,
    pub dtype: DType,
}

/// Fills the elementwise templates: every elementwise kernel (unary, binary,
/// where, casts, fills, copies) is one of these.
pub struct Template {
    /// Bound at 1, 2, ..., in order; input k reads its element through operand k's view.
    pub inputs: Vec<Input>,
    pub out: DType,
    /// The expression over the inputs' variables and the scalars p0, p1.
    pub expr: String,
    /// The output is written through one more view (operand `inputs.len()`)
    /// rather than contiguously (`copy_into`).
    pub strided_out: bool,
}

impl Template {
    /// The one-element kernel, or the 4-wide one reading the inputs as `lanes` says.
    pub fn source(&self, lanes: Option<&[Lanes]>) -> String {
        let vector = |k: usize| lanes.is_some_and(|l| l[k] == Lanes::Vector);
        let bindings: String = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let t = wgsl_type(x.dtype);
                let t = if vector(k) { format!("vec4<{t}>") } else { t.to_string() };
                format!("@group(0) @binding({}) var<storage, read> {}: array<{t}>;\n", k + 1, x.name)
            })
            .collect();
        // f16 is storage only: its elements are loaded as f32, the expression
        // computes in f32, and an f16 output is rounded once at the store
        // (as `backend::half` does on the cpu).
        let loads: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let at = format!("{}[operand_index(i, {k}u)]", x.name);
                let half = x.dtype == DType::F16;
                match lanes {
                    None if half => format!("let {} = f32({at});", x.var),
                    None => format!("let {} = {at};", x.var),
                    Some(_) if vector(k) && half => {
                        format!("let {}4 = vec4<f32>({}[operand_index(i, {k}u) >> 2u]);", x.var, x.name)
                    }
                    Some(_) if vector(k) => format!("let {}4 = {}[operand_index(i, {k}u) >> 2u];", x.var, x.name),
                    Some(_) if half => format!("let {}4 = vec4<f32>(f32({at}));", x.var),
                    Some(_) => format!("let {}4 = vec4<{}>({at});", x.var, wgsl_type(x.dtype)),
                }
            })
            .collect();
        let expr = if self.out == DType::F16 { format!("f16({})", self.expr) } else { self.expr.clone() };
        let out_index = if self.strided_out { format!("operand_index(i, {}u)", self.inputs.len()) } else { "i".into() };
        let lanes_code: String = (0..4)
            .map(|j| {
                let vars: String = self.inputs.iter().map(|x| format!("let {0} = {0}4[{j}u]; ", x.var)).collect();
                format!("{{ {vars}o[{j}u] = {expr}; }}\n    ")
            })
            .collect();
        let template = if lanes.is_some() { ELEMENTWISE4 } else { ELEMENTWISE };
        let operands = self.inputs.len() + usize::from(self.strided_out);
        let body = template
            .replace("{BINDINGS}", &bindings)
            .replace("{OUT_BINDING}", &(self.inputs.len() + 1).to_string())
            .replace("{TOUT}", wgsl_type(self.out))
            .replace("{HELPERS}", MATH)
            .replace("{SCALARS}", &(10 + 10 * operands).to_string())
            .replace("{LOADS}", &loads.join("\n    "))
            .replace("{LANES}", lanes_code.trim_end())
            .replace("{OUT_INDEX}", &out_index)
            .replace("{EXPR}", &expr);
        let f16 = self.out == DType::F16 || self.inputs.iter().any(|x| x.dtype == DType::F16);
        format!("{}{PRELUDE}\n{body}", if f16 { ENABLE_F16 } else { "" })
    }
}

/// The pipeline-cache key of `key`'s 4-wide variant reading its inputs as `lanes`.
pub fn vec4_key(key: &str, lanes: &[Lanes]) -> String {
    let l: String = lanes.iter().map(|l| if *l == Lanes::Vector { 'v' } else { 's' }).collect();
    format!("{key}:x4:{l}")
}

/// Records one template kernel over `shape` writing `out`: the 4-wide
/// variant where `vec4_lanes` allows it (a strided output must be a vec4
/// too), else the one-element kernel. `layouts` are the inputs' views (and
/// the output's, for a strided output); `scalars` follow them in the params.
#[allow(clippy::too_many_arguments)]
pub fn launch_template(
    ctx: &Arc<GpuContext>,
    op: &'static str,
    key: &str,
    template: impl FnOnce() -> Template,
    shape: &[usize],
    layouts: &[&Layout],
    scalars: &[u32],
    inputs: &[&GpuBuffer],
    out: &GpuBuffer,
) -> Result<()> {
    let n: usize = shape.iter().product();
    let params = elementwise_params(op, shape, layouts, scalars)?;
    // A strided output (the layout after the inputs') is stored as a vec4, so it must read as one.
    let lanes = vec4_lanes(shape, layouts).filter(|l| l[inputs.len()..].iter().all(|&x| x == Lanes::Vector));
    match lanes {
        Some(l) => {
            let inputs_lanes = &l[..inputs.len()];
            launch(
                ctx,
                &vec4_key(key, inputs_lanes),
                || template().source(Some(inputs_lanes)),
                &params,
                inputs,
                out,
                n / 4,
            )
        }
        None => launch(ctx, key, || template().source(None), &params, inputs, out, n),
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
