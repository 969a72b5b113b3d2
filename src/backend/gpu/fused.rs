//! `KernelSpec::Fused` on the GPU: one generated WGSL kernel per distinct
//! program of steps. Each step becomes a function holding its row's WGSL
//! expression (the same text the elementwise template instantiates), `main`
//! loads each input through its strided, broadcast view and calls the steps
//! in order, keeping every intermediate in registers. Unary scalars come
//! through the params block, so programs that differ only in their numbers
//! (a learning rate) share one pipeline.
//!
//! Each arithmetic step's value is rounded to f32 as the eager kernel's
//! stored result is: it passes through an xor with a zero the compiler
//! cannot see (bit 31 of `m[2]`, never set), so no driver contracts a
//! multiply in one step with an add in the next into an fma, which would
//! round once where eager code rounds twice.
//!
//! Params (`m`, 64 u32): `m[0]` elements, `m[1]` rank r (after merging dims
//! contiguous for every operand), `m[2]` a bit per input laid out like the
//! output (read at `offset + i`; at most 31 inputs), `m[3..3 + r]` the merged shape, then per
//! input `[offset, r strides]`, then two f32 scalars per unary step. A
//! program whose block does not fit (many inputs of high rank) or that
//! binds more storage buffers than the device allows runs step by step
//! through the ordinary elementwise kernels instead.

use super::elementwise::{self as g, convert};
use super::kernels::{launch, vec4_key, vec4_lanes, Lanes, MATH, MAX_RANK, PRELUDE};
use super::runtime::PARAM_BYTES;
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{FusedElementwise, FusedOp, Operand};
use crate::shape::{coalesce, contiguous_strides, Layout};
use std::fmt::Write;

/// A step as the WGSL generator sees it: the row's expression, not the row
/// (the catalog validates every row's expression this way).
pub(crate) enum Expr<'a> {
    Unary(&'a str),
    Binary(&'a str),
    Compare(&'a str),
    Where,
    Cast,
    Copy,
}

/// One step for the generator: its expression, operands and result dtype.
pub(crate) type StepSource<'a> = (Expr<'a>, Vec<Operand>, DType);

pub(crate) fn steps_of(spec: &FusedElementwise) -> Vec<StepSource<'static>> {
    spec.steps
        .iter()
        .map(|s| {
            let e = match &s.op {
                FusedOp::Unary { row, .. } => Expr::Unary(row.wgsl),
                FusedOp::Binary { row } => Expr::Binary(row.wgsl),
                FusedOp::Compare { row } => Expr::Compare(row.wgsl),
                FusedOp::Where => Expr::Where,
                FusedOp::Cast { .. } => Expr::Cast,
                FusedOp::Copy => Expr::Copy,
            };
            (e, s.args.clone(), s.dtype)
        })
        .collect()
}

/// The WGSL kernel of a fused program, one output per invocation or
/// (`lanes`: how each input is read, see `kernels::vec4_lanes`) four.
pub fn source(spec: &FusedElementwise, lanes: Option<&[Lanes]>) -> String {
    source_of(&spec.inputs, &steps_of(spec), lanes)
}

/// The WGSL kernel of `steps` over inputs of dtypes `inputs`. With `lanes`,
/// the 4-wide variant (as `shaders/elementwise4.wgsl` for one row): each
/// invocation loads four consecutive elements of each input once, as a
/// vec4 or one repeated element, runs the steps on each of the four in
/// turn, and stores them as one vec4.
pub(crate) fn source_of(inputs: &[DType], steps: &[StepSource], lanes: Option<&[Lanes]>) -> String {
    let n_in = inputs.len();
    let vector = |k: usize| lanes.is_some_and(|l| l[k] == Lanes::Vector);
    let wide = |t: &str| if lanes.is_some() { format!("vec4<{t}>") } else { t.to_string() };
    let mut s = String::new();
    for (k, dt) in inputs.iter().enumerate() {
        let t = if vector(k) { wide(wgsl_type(*dt)) } else { wgsl_type(*dt).to_string() };
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> X{k}: array<{t}>;", k + 1);
    }
    let out = steps.last().map_or(DType::F32, |st| st.2);
    let _ =
        writeln!(s, "@group(0) @binding({}) var<storage, read_write> OUT: array<{}>;", n_in + 1, wide(wgsl_type(out)));
    s.push_str(MATH);
    s.push_str(
        "
// Storage index of output element i in input k (see backend/gpu/fused.rs).
fn fused_index(i: u32, k: u32) -> u32 {
    let r = pm(1u);
    let base = 3u + r + k * (r + 1u);
    let off = pm(base);
    if (((pm(2u) >> k) & 1u) == 1u) { return off + i; }
    var rem = i;
    var o = off;
    for (var d = r; d > 0u; d = d - 1u) {
        let size = pm(2u + d);
        o = o + (rem % size) * pm(base + d);
        rem = rem / size;
    }
    return o;
}
",
    );
    let (fns, body) = steps_code(inputs, steps, "f", "sc");
    s.push_str(&fns);
    let last = steps.len().saturating_sub(1);
    let head = "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {";
    let scalars = format!(
        "    let r = pm(1u);\n    let sc = 3u + r + {n_in}u * (r + 1u);\n    let opaque_zero = pm(2u) & 0x80000000u;\n"
    );
    let _ = match lanes {
        None => {
            let loads: String = (0..n_in).map(|k| format!("    let x{k} = X{k}[fused_index(i, {k}u)];\n")).collect();
            write!(
                s,
                "\n{head}\n    let i = gid(wid, lid, nwg);\n    if (i >= pm(0u)) {{ return; }}\n{scalars}{loads}{body}    OUT[i] = t{last};\n}}\n"
            )
        }
        Some(_) => {
            let loads: String = (0..n_in)
                .map(|k| match vector(k) {
                    true => format!("    let x{k}_4 = X{k}[fused_index(i, {k}u) >> 2u];\n"),
                    false => format!("    let x{k}_4 = vec4<{}>(X{k}[fused_index(i, {k}u)]);\n", wgsl_type(inputs[k])),
                })
                .collect();
            let per_lane: String = (0..4)
                .map(|j| {
                    let picks: String = (0..n_in).map(|k| format!("    let x{k} = x{k}_4[{j}u];\n")).collect();
                    format!("    {{\n{picks}{body}    o[{j}u] = t{last};\n    }}\n")
                })
                .collect();
            write!(
                s,
                "\n{head}\n    let q = gid(wid, lid, nwg);\n    if (q >= pm(0u) / 4u) {{ return; }}\n    let i = 4u * q;\n{scalars}{loads}    var o: vec4<{}>;\n{per_lane}    OUT[q] = o;\n}}\n",
                wgsl_type(out)
            )
        }
    };
    format!("{PRELUDE}\n{s}")
}

/// The WGSL of `steps` over inputs `x0, x1, ...` of dtypes `inputs`: a
/// function per step (named `{prefix}{j}`) and the body's `let t{j} = ...;`
/// lines, reading unary scalars from `pf({sc} + ...)` and needing
/// `opaque_zero` in scope (see the module docs).
pub(crate) fn steps_code(inputs: &[DType], steps: &[StepSource], prefix: &str, sc: &str) -> (String, String) {
    let dtype_of = |a: &Operand| match *a {
        Operand::Input(k) => inputs[k],
        Operand::Step(j) => steps[j].2,
    };
    let name = |a: &Operand| match *a {
        Operand::Input(k) => format!("x{k}"),
        Operand::Step(j) => format!("t{j}"),
    };
    let (mut s, mut body) = (String::new(), String::new());
    let mut scalars = 0u32;
    for (j, (expr, args, dtype)) in steps.iter().enumerate() {
        let a: Vec<String> = args.iter().map(name).collect();
        let t = wgsl_type(*dtype);
        let f = format!("{prefix}{j}");
        let call = match expr {
            Expr::Unary(e) => {
                let _ = writeln!(s, "fn {f}(x: f32, p0: f32, p1: f32) -> f32 {{ return {e}; }}");
                scalars += 2;
                format!("{f}({}, pf({sc} + {}u), pf({sc} + {}u))", a[0], scalars - 2, scalars - 1)
            }
            Expr::Binary(e) => {
                let _ = writeln!(s, "fn {f}(a: f32, b: f32) -> f32 {{ return {e}; }}");
                format!("{f}({}, {})", a[0], a[1])
            }
            Expr::Compare(e) => {
                let ta = wgsl_type(dtype_of(&args[0]));
                let _ = writeln!(s, "fn {f}(a: {ta}, b: {ta}) -> bool {{ return {e}; }}");
                format!("select(0u, 1u, {f}({}, {}))", a[0], a[1])
            }
            Expr::Where => format!("select({}, {}, {} != 0u)", a[2], a[1], a[0]),
            Expr::Cast => {
                let from = dtype_of(&args[0]);
                let _ = writeln!(s, "fn {f}(x: {}) -> {t} {{ return {}; }}", wgsl_type(from), convert(from, *dtype));
                format!("{f}({})", a[0])
            }
            Expr::Copy => a[0].clone(),
        };
        let call = match expr {
            Expr::Unary(_) | Expr::Binary(_) => format!("bitcast<f32>(bitcast<u32>({call}) ^ opaque_zero)"),
            _ => call,
        };
        let _ = writeln!(body, "    let t{j}: {t} = {call};");
    }
    (s, body)
}

/// The pipeline key: everything the source depends on (rows by name, not
/// their scalars).
pub(crate) fn key(spec: &FusedElementwise) -> String {
    let mut k = String::from("fused:");
    for dt in &spec.inputs {
        let _ = write!(k, "{},", dt.name());
    }
    for st in &spec.steps {
        let args: Vec<String> = st.args.iter().map(|a| a.to_string()).collect();
        let _ = write!(k, "|{}({})->{}", st.op.name(), args.join(","), st.dtype.name());
    }
    k
}

/// The unary steps' scalars as the params block holds them (f32 bits, two per step).
pub(crate) fn scalar_words(spec: &FusedElementwise) -> Vec<u32> {
    spec.steps
        .iter()
        .filter_map(|s| match &s.op {
            FusedOp::Unary { params, .. } => Some(params.map(|p| (p.0 as f32).to_bits())),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The params block, or None when it does not fit.
pub(crate) fn params(out_shape: &[usize], layouts: &[&Layout], scalars: &[u32]) -> Option<Vec<u32>> {
    let out_strides = contiguous_strides(out_shape);
    let bstrides: Vec<_> = layouts.iter().map(|l| l.broadcast_strides(out_shape)).collect();
    let mut all: Vec<&[usize]> = vec![&out_strides];
    all.extend(bstrides.iter().map(|s| s.as_slice()));
    let (shape, strides) = coalesce(out_shape, &all);
    let r = shape.len();
    let words = 3 + r + layouts.len() * (r + 1) + scalars.len();
    // Bit 31 of the input mask is the kernels' opaque zero.
    if r > MAX_RANK || words * 4 > PARAM_BYTES as usize || layouts.len() > 31 {
        return None;
    }
    let mut m = Vec::with_capacity(words);
    m.extend([out_shape.iter().product::<usize>() as u32, r as u32, 0]);
    m.extend(shape.iter().map(|&d| d as u32));
    for (k, l) in layouts.iter().enumerate() {
        if l.is_contiguous() && l.shape.as_slice() == out_shape {
            m[2] |= 1 << k;
        }
        m.push(l.offset as u32);
        m.extend(strides[k + 1].iter().map(|&s| s as u32));
    }
    m.extend_from_slice(scalars);
    Some(m)
}

pub fn run(
    op: &'static str,
    spec: &FusedElementwise,
    inputs: &[(&GpuBuffer, &Layout)],
    out_shape: &[usize],
) -> Result<GpuBuffer> {
    let dtypes: Vec<DType> = inputs.iter().map(|(b, _)| b.dtype).collect();
    spec.check(&dtypes).map_err(|e| Error::dtype(op, format!("internal: {} {e}", spec.name())))?;
    let Some(&(first, _)) = inputs.first() else {
        return Err(Error::value(op, format!("internal: {} has no inputs", spec.name())));
    };
    let ctx = first.ctx().clone();
    let scalars = scalar_words(spec);
    let layouts: Vec<&Layout> = inputs.iter().map(|(_, l)| *l).collect();
    let bindable = inputs.len() < ctx.limits.max_storage_buffers_per_shader_stage as usize;
    let Some(m) = params(out_shape, &layouts, &scalars).filter(|_| bindable) else {
        return step_by_step(spec, inputs, out_shape);
    };
    let n: usize = out_shape.iter().product();
    let out = GpuBuffer::new(&ctx, op, spec.dtype().unwrap_or(DType::F32), n)?;
    let bufs: Vec<&GpuBuffer> = inputs.iter().map(|(b, _)| *b).collect();
    match vec4_lanes(out_shape, &layouts) {
        Some(l) => launch(&ctx, &vec4_key(&key(spec), &l), || source(spec, Some(&l)), &m, &bufs, &out, n / 4)?,
        None => launch(&ctx, &key(spec), || source(spec, None), &m, &bufs, &out, n)?,
    }
    Ok(out)
}

/// The steps one kernel each (the eager elementwise kernels), for programs
/// one generated kernel cannot take.
fn step_by_step(spec: &FusedElementwise, inputs: &[(&GpuBuffer, &Layout)], out_shape: &[usize]) -> Result<GpuBuffer> {
    let whole = Layout::contiguous(out_shape);
    // Every input as a view of the output's shape (broadcast dims: stride 0).
    let views: Vec<Layout> = inputs
        .iter()
        .map(|(_, l)| Layout { shape: out_shape.into(), strides: l.broadcast_strides(out_shape), offset: l.offset })
        .collect();
    let mut done: Vec<GpuBuffer> = Vec::with_capacity(spec.steps.len());
    for step in &spec.steps {
        let arg = |a: &Operand| match *a {
            Operand::Input(k) => (inputs[k].0, &views[k]),
            Operand::Step(i) => (&done[i], &whole),
        };
        let a: Vec<(&GpuBuffer, &Layout)> = step.args.iter().map(arg).collect();
        // Each kernel under its row's name: the pipeline caches key on it.
        let buf = match &step.op {
            FusedOp::Unary { row, params } => g::unary(row.name, a[0].0, a[0].1, row.wgsl, params.map(|p| p.0))?,
            FusedOp::Binary { row } => {
                g::binary(row.name, a[0].0, a[0].1, a[1].0, a[1].1, out_shape, row.wgsl, DType::F32)?
            }
            FusedOp::Compare { row } => {
                g::binary(row.name, a[0].0, a[0].1, a[1].0, a[1].1, out_shape, row.wgsl, DType::Bool)?
            }
            FusedOp::Where => g::where_(a[0], a[1], a[2], out_shape)?,
            FusedOp::Cast { to } => g::cast("to_dtype", a[0].0, a[0].1, *to)?,
            FusedOp::Copy => g::cast("contiguous", a[0].0, a[0].1, a[0].0.dtype)?,
        };
        done.push(buf);
    }
    done.pop().ok_or_else(|| Error::value("fused", "internal: a fused kernel without steps"))
}

#[cfg(test)]
mod tests {
    use super::params;
    use crate::shape::Layout;

    #[test]
    fn the_params_block_holds_the_merged_views_and_refuses_what_does_not_fit() {
        let l = |shape: &[usize], strides: &[usize], offset| Layout {
            shape: shape.iter().copied().collect(),
            strides: strides.iter().copied().collect(),
            offset,
        };
        // A transposed [3, 4] operand from element 5 and a bias row from element 2.
        let (t, b) = (l(&[3, 4], &[1, 3], 5), l(&[4], &[1], 2));
        let m = params(&[3, 4], &[&t, &b], &[7, 8]).unwrap();
        assert_eq!(m, vec![12, 2, 0, 3, 4, 5, 1, 3, 2, 0, 1, 7, 8]);
        // Laid out like the output: one merged dim and its bit set.
        let c = Layout::contiguous(&[9, 7]);
        assert_eq!(params(&[9, 7], &[&c], &[]).unwrap(), vec![63, 1, 1, 63, 0, 1]);
        // 3 + 1 + 2 words of indexing: 58 scalars fit in 64 words, 60 do not
        // (30 unary steps run step by step, tests/capture/fusion.rs).
        assert_eq!(params(&[9, 7], &[&c], &[0; 58]).unwrap().len(), 64);
        assert!(params(&[9, 7], &[&c], &[0; 60]).is_none());
    }
}
