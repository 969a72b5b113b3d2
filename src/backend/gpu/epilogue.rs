//! `KernelSpec::Epilogue` on the GPU: the matmul or reduction kernel with the
//! tail's steps inlined where it stores a result, so the product (or the
//! reduced value) goes through its bias add, activation or scaling in
//! registers: one dispatch, and the head's result never reaches memory.
//!
//! Both head kernels store through a function `store(i, v)` (output element
//! `i`, contiguous, and its value); plain kernels get the one that writes `v`
//! (`plain_store`), fused ones the `Tail`'s, which loads the tail's other
//! inputs for element `i`, runs the steps as `backend/gpu/fused.rs` does
//! (the same step code, rounded as eager's kernels round) and writes the
//! last step's value. The tail's indexing block (the fused kernels' block:
//! merged shape, per input offset and strides, then the unary scalars)
//! follows the head's 40 parameter words; its inputs bind after the head's.
//!
//! A tail whose block or bindings do not fit runs as two dispatches, the
//! head's and a fused kernel's (`run`).

use super::fused::{self, steps_of};
use super::kernels::MATH;
use super::runtime::PARAM_BYTES;
use super::{matmul, reduce, wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{Epilogue, KernelSpec};
use crate::shape::Layout;
use std::fmt::Write;

/// The first parameter word of the tail's block: the matmul and reduce
/// kernels' own blocks are 40 words.
pub const BASE: usize = 40;

/// The `store` of a plain (unfused) head kernel: `write` with `{v}` for the value.
pub fn plain_store(write: &str) -> String {
    format!("\nfn store(i: u32, v: f32) {{ {}; }}\n", write.replace("{v}", "v"))
}

/// A tail ready to inline into a head kernel.
pub struct Tail<'a> {
    /// What the pipeline key adds (the steps and dtypes, not the numbers).
    pub key: String,
    /// The tail's parameter block (placed at `BASE`).
    pub params: Vec<u32>,
    /// The tail's other inputs, bound after the head's.
    pub buffers: Vec<&'a GpuBuffer>,
    spec: &'a Epilogue,
}

impl<'a> Tail<'a> {
    /// The tail of `e` over its other inputs `extras` for an output of
    /// `out_shape`, or None when its block does not fit after the head's or
    /// its bindings exceed the device's (`head_bindings`: the head's inputs
    /// and output).
    pub fn new(
        e: &'a Epilogue,
        extras: &[(&'a GpuBuffer, &'a Layout)],
        out_shape: &[usize],
        head_bindings: usize,
    ) -> Option<Tail<'a>> {
        let ctx = extras.first().map(|(b, _)| b.ctx().clone());
        if let Some(ctx) = ctx {
            if head_bindings + extras.len() > ctx.limits.max_storage_buffers_per_shader_stage as usize {
                return None;
            }
        }
        let layouts: Vec<&Layout> = extras.iter().map(|(_, l)| *l).collect();
        let params = fused::params(out_shape, &layouts, &fused::scalar_words(&e.tail))?;
        if (BASE + params.len()) * 4 > PARAM_BYTES as usize {
            return None;
        }
        Some(Tail { key: fused::key(&e.tail), params, buffers: extras.iter().map(|(b, _)| *b).collect(), spec: e })
    }

    /// The WGSL appended to the head kernel (`code`).
    pub fn code(&self, first_binding: usize, write: &str) -> String {
        code(self.spec, first_binding, write)
    }
}

/// The WGSL appended to `e`'s head kernel: the tail inputs' bindings (from
/// `first_binding` on), the math helpers, the indexing function, the steps
/// and `store`, which ends with `write` (`{v}`: the last value).
pub fn code(e: &Epilogue, first_binding: usize, write: &str) -> String {
    let tail = &e.tail;
    let mut s = String::new();
    for (k, dt) in tail.inputs.iter().enumerate().skip(1) {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read> E{k}: array<{}>;",
            first_binding + k - 1,
            wgsl_type(*dt)
        );
    }
    s.push_str(MATH);
    let n_extra = tail.inputs.len() - 1;
    let _ = write!(
        s,
        "
const EB: u32 = {BASE}u;
// Storage index of output element i in the tail's input k + 1 (the block of
// backend/gpu/fused.rs, from word EB).
fn epilogue_index(i: u32, k: u32) -> u32 {{
    let r = pm(EB + 1u);
    let base = EB + 3u + r + k * (r + 1u);
    let off = pm(base);
    if (((pm(EB + 2u) >> k) & 1u) == 1u) {{ return off + i; }}
    var rem = i;
    var o = off;
    for (var d = r; d > 0u; d = d - 1u) {{
        let size = pm(EB + 2u + d);
        o = o + (rem % size) * pm(base + d);
        rem = rem / size;
    }}
    return o;
}}
"
    );
    let (fns, body) = fused::steps_code(&tail.inputs, &steps_of(tail), "ef", "sc");
    s.push_str(&fns);
    let loads: String =
        (1..tail.inputs.len()).map(|k| format!("    let x{k} = E{k}[epilogue_index(i, {}u)];\n", k - 1)).collect();
    let last = tail.steps.len().saturating_sub(1);
    let _ = write!(
        s,
        "
fn store(i: u32, x0: f32) {{
    let r = pm(EB + 1u);
    let sc = EB + 3u + r + {n_extra}u * (r + 1u);
    let opaque_zero = pm(EB + 2u) & 0x80000000u;
{loads}{body}    {};
}}
",
        write.replace("{v}", &format!("t{last}"))
    );
    s
}

/// Every kernel `e` may run as (the tiled and the blocked product, or the
/// reduction of its kind), for validation.
pub fn sources(e: &Epilogue) -> Vec<String> {
    match &e.head {
        KernelSpec::Matmul { .. } => matmul::epilogue_sources(e),
        KernelSpec::Reduce { kind, .. } => reduce::epilogue_sources(*kind, e),
        _ => Vec::new(),
    }
}

/// Runs `e` over `inputs` (the head's, then the tail's others) into a new
/// contiguous buffer of `out_shape`.
pub fn run(op: &'static str, e: &Epilogue, inputs: &[(&GpuBuffer, &Layout)], out_shape: &[usize]) -> Result<GpuBuffer> {
    let n = e.head.arity();
    if inputs.len() != e.arity() {
        return Err(Error::value(
            op,
            format!("internal: {} takes {} inputs, got {}", e.name(), e.arity(), inputs.len()),
        ));
    }
    let (head_in, extras) = inputs.split_at(n);
    let dtypes: Vec<DType> = extras.iter().map(|(b, _)| b.dtype).collect();
    e.check(head_in[0].0.dtype, &dtypes).map_err(|m| Error::dtype(op, format!("internal: {} {m}", e.name())))?;
    // Head inputs and output, then the tail's.
    let tail = Tail::new(e, extras, out_shape, n + 1);
    match (&e.head, tail) {
        (KernelSpec::Matmul { batch }, Some(t)) => {
            let [(a, la), (b, lb)] = [head_in[0], head_in[1]];
            matmul::matmul_with(a, la, b, lb, batch, Some(&t))
        }
        (KernelSpec::Reduce { kind, axes }, Some(t)) => {
            reduce::reduce_with(op, head_in[0].0, head_in[0].1, axes, *kind, Some(&t))
        }
        (head, _) => {
            // Two dispatches: the head's own kernel, then the tail as a fused kernel.
            let value = match head {
                KernelSpec::Matmul { batch } => {
                    matmul::matmul(head_in[0].0, head_in[0].1, head_in[1].0, head_in[1].1, batch)?
                }
                KernelSpec::Reduce { kind, axes } => reduce::reduce(op, head_in[0].0, head_in[0].1, axes, *kind)?,
                other => return Err(Error::value(op, format!("internal: an epilogue on {}", other.name()))),
            };
            let whole = Layout::contiguous(out_shape);
            let mut all = vec![(&value, &whole)];
            all.extend_from_slice(extras);
            fused::run(op, &e.tail, &all, out_shape)
        }
    }
}
