//! The index family on the GPU (`shaders/index.wgsl`): gather (which also
//! runs index_select, by viewing its 1-D index as broadcast along every other
//! dim) and a deterministic scatter-add (which also runs index_add). Indices
//! were range-checked on the host by `dispatch::index` (from the values it
//! holds), are trusted (argmax), or are checked on the device (`checks`); the
//! kernels themselves never read or write out of bounds (see index.wgsl).
//!
//! Note: scatter-add uses no atomics. The host, which holds the checked
//! indices anyway, sorts every index line's positions by target; each output
//! element then binary-searches its target and adds its sources in increasing
//! position, the cpu kernel's order, so GPU and cpu agree bit for bit and
//! repeated runs are identical (float atomics would be neither).

use super::kernels::{compute_type, elementwise_params, launch, ENABLE_F16, MAX_RANK, PRELUDE};
use super::{wgsl_type, GpuBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use crate::kernel::PoolWindows;
use crate::shape::{contiguous_strides, Layout};

pub const INDEX: &str = wgsl_file!(include_str!("../../../shaders/index.wgsl"));

/// Starts each kernel section of a multi-kernel shader file (at the start of a line).
const MARKER: &str = "\n// ==== kernel: ";

/// The prelude, `file`'s header (everything before its first kernel marker)
/// and its `// ==== kernel: NAME` section, with `{T}` set to `dtype`'s WGSL
/// type and `{ACC}` to the type its sums are computed in (f32 for f16).
/// Multi-kernel shader files (index.wgsl, conv.wgsl) share this.
pub(crate) fn kernel_source(file: &str, name: &str, dtype: DType) -> String {
    let header = file.split(MARKER).next().unwrap_or_default();
    let section = file
        .split(MARKER)
        .skip(1)
        .find(|s| s.lines().next().map(str::trim) == Some(name))
        .unwrap_or_else(|| panic!("shader section '{name}' is missing"));
    let enable = if dtype == DType::F16 { ENABLE_F16 } else { "" };
    format!("{enable}{PRELUDE}\n{header}\n// kernel: {section}")
        .replace("{T}", wgsl_type(dtype))
        .replace("{ACC}", compute_type(dtype))
}

/// Every source this module can build, keyed like its pipelines (for naga validation).
pub fn sources() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for dt in [DType::F32, DType::I32, DType::Bool, DType::F16] {
        all.push((format!("index:gather:{}", dt.name()), kernel_source(INDEX, "gather", dt)));
    }
    all.push(("index:check:i32".to_string(), kernel_source(INDEX, "check", DType::I32)));
    for dt in [DType::F32, DType::I32, DType::F16] {
        for kernel in ["scatter_add", "scatter_add_scan"] {
            all.push((format!("index:{kernel}:{}", dt.name()), kernel_source(INDEX, kernel, dt)));
        }
        for rows in [false, true] {
            all.push((window_key(dt, rows), window_source(dt, rows)));
        }
    }
    all
}

/// The windowed scatter (max-pool's backward), one invocation per output
/// element or per row of the plane (`GpuContext::row_kernels`).
fn window_source(dt: DType, rows: bool) -> String {
    kernel_source(INDEX, "scatter_add_window", dt).replace("{ROWS}", if rows { "true" } else { "false" })
}

fn window_key(dt: DType, rows: bool) -> String {
    format!("index:scatter_add_window:{}:{}", dt.name(), if rows { "rows" } else { "elements" })
}

/// `out[p] = x[p with p[axis] replaced by index[p]]` over every position `p`
/// of the output, whose shape is `il.shape`: `il` views the index in the
/// output's shape (any strides, including broadcast zeros). Positions whose
/// index lies outside `0..xl.shape[axis]` get 0.
pub fn gather(
    op: &'static str,
    x: &GpuBuffer,
    xl: &Layout,
    axis: usize,
    index: &GpuBuffer,
    il: &Layout,
) -> Result<GpuBuffer> {
    let out_shape = il.shape.as_slice();
    let ctx = x.ctx().clone();
    let n: usize = out_shape.iter().product();
    let out = GpuBuffer::new(&ctx, op, x.dtype, n)?;
    // X in the output's shape with its axis stride zeroed: the kernel adds
    // index * axis_stride itself, and the rest is an ordinary strided view.
    let mut strides = xl.strides.clone();
    let axis_stride = std::mem::replace(&mut strides[axis], 0);
    let xv = Layout { shape: out_shape.into(), strides, offset: xl.offset };
    let params = elementwise_params(op, out_shape, &[&xv, il], &[axis_stride as u32, xl.shape[axis] as u32])?;
    let dt = x.dtype;
    let key = format!("index:gather:{}", dt.name());
    launch(&ctx, &key, || kernel_source(INDEX, "gather", dt), &params, &[x, index], &out, n)?;
    Ok(out)
}

/// The checked indices of a scatter grouped by line and sorted by target
/// (see the Note above), with what the kernel needs to find a line.
pub struct ScatterPlan {
    /// Extent of the index along the axis (A: positions per line).
    extent: usize,
    /// Extent of the index in each dim (outputs beyond it outside the axis get nothing).
    bounds: Vec<usize>,
    /// Per dim, how far one step moves a line's offset into the sorted keys
    /// (for a device index: the index's own strides).
    line_strides: Vec<usize>,
    /// Targets of every line, then their axis positions (same order); empty
    /// for a device index.
    keys: Vec<u32>,
    /// Set when the index stays on the GPU (never read by the host): its
    /// offset. Each output then scans its whole line (see `scatter_add_scan`).
    device_offset: Option<usize>,
    /// For a device index written by max-pool's window argmax (see
    /// `dispatch::index::pool_windows`): each output visits only the windows
    /// covering it (`scatter_add_window`) instead of its whole line.
    pub(crate) windows: Option<PoolWindows>,
}

impl ScatterPlan {
    /// For `scatter_add`: `idx` is contiguous in `idx_shape`.
    pub fn scatter(idx: &[usize], idx_shape: &[usize], axis: usize) -> ScatterPlan {
        let extent = idx_shape[axis];
        let inner: usize = idx_shape[axis + 1..].iter().product();
        let outer = idx.len().checked_div(extent * inner).unwrap_or(0);
        // A line's offset is its number (outer-major, inner-minor) times A.
        let mut line_strides: Vec<usize> = contiguous_strides(idx_shape).to_vec();
        for s in &mut line_strides[axis + 1..] {
            *s *= extent;
        }
        line_strides[axis] = 0;
        let keys = sort_lines(idx, outer, extent, inner);
        ScatterPlan { extent, bounds: idx_shape.to_vec(), line_strides, keys, device_offset: None, windows: None }
    }

    /// For `index_add` on an output of `out_shape`: one line (the 1-D `idx`)
    /// shared by every output position.
    pub fn index_add(idx: &[usize], out_shape: &[usize]) -> ScatterPlan {
        let keys = sort_lines(idx, 1, idx.len(), 1);
        ScatterPlan {
            extent: idx.len(),
            bounds: out_shape.to_vec(),
            line_strides: vec![0; out_shape.len()],
            keys,
            device_offset: None,
            windows: None,
        }
    }

    /// For an index the host has not read (trusted to be in range, e.g. a
    /// max-pool argmax): `extent` positions along the axis, outputs within
    /// `bounds` receive, and `view` is the index seen from each output
    /// position (index_add: its stride on the axis, zero elsewhere).
    pub fn device_index(extent: usize, bounds: &[usize], view: Layout) -> ScatterPlan {
        ScatterPlan {
            extent,
            bounds: bounds.to_vec(),
            line_strides: view.strides.to_vec(),
            keys: Vec::new(),
            device_offset: Some(view.offset),
            windows: None,
        }
    }
}

/// Each line's (target, position) pairs, stably sorted by target: targets
/// first, positions after (`idx` is [outer, a, inner], lines are (outer, inner)).
fn sort_lines(idx: &[usize], outer: usize, a: usize, inner: usize) -> Vec<u32> {
    let m = outer * a * inner;
    let mut keys = vec![0u32; 2 * m];
    let mut line: Vec<(u32, u32)> = Vec::with_capacity(a);
    for o in 0..outer {
        for r in 0..inner {
            line.clear();
            line.extend((0..a).map(|k| (idx[(o * a + k) * inner + r] as u32, k as u32)));
            // Pairs are distinct, so sorting them whole is the stable sort by target.
            line.sort_unstable();
            let at = (o * inner + r) * a;
            for (j, &(t, k)) in line.iter().enumerate() {
                keys[at + j] = t;
                keys[m + at + j] = k;
            }
        }
    }
    keys
}

/// A contiguous copy of the view `bl` of `base` with `src[p]` added at `p`
/// with `p[axis]` replaced by its index, for every position `p` of the plan's
/// index (`sl` covers it in every dim). Runs both scatter_add and index_add.
pub fn scatter_add(
    op: &'static str,
    (base, bl): (&GpuBuffer, &Layout),
    (src, sl): (&GpuBuffer, &Layout),
    axis: usize,
    plan: &ScatterPlan,
    index: Option<&GpuBuffer>,
) -> Result<GpuBuffer> {
    let rank = bl.shape.len();
    if rank > MAX_RANK {
        return Err(Error::shape(op, format!("GPU kernels index at most {MAX_RANK} dims, got shape {:?}", bl.shape)));
    }
    let ctx = base.ctx().clone();
    let n = bl.numel();
    let out = GpuBuffer::new(&ctx, op, base.dtype, n)?;
    let mut m = vec![0u32; 48];
    m[..7].copy_from_slice(&[
        n as u32,
        rank as u32,
        axis as u32,
        plan.extent as u32,
        bl.offset as u32,
        sl.offset as u32,
        sl.strides[axis] as u32,
    ]);
    for d in 0..rank {
        m[8 + d] = bl.shape[d] as u32;
        m[16 + d] = plan.bounds[d] as u32;
        m[24 + d] = bl.strides[d] as u32;
        m[32 + d] = sl.strides[d] as u32;
        m[40 + d] = plan.line_strides[d] as u32;
    }
    let dt = base.dtype;
    let (kernel, keys) = match (plan.device_offset, index) {
        (Some(offset), Some(index)) => {
            m[7] = offset as u32;
            match plan.windows {
                Some(pw) => {
                    let [kh, kw] = pw.kernel;
                    let [sh, sw] = pw.stride;
                    let [ph, pw_] = pw.padding;
                    m.extend([pw.w, pw.out_h, pw.out_w, kh, kw, sh, sw, ph, pw_].map(|v| v as u32));
                    // The output's last axis is the H*W plane: n is whole rows of W.
                    let rows = ctx.tuning.row_kernels() && pw.w > 0;
                    let invocations = if rows { n / pw.w } else { n };
                    m[0] = invocations as u32;
                    let src_fn = || window_source(dt, rows);
                    launch(&ctx, &window_key(dt, rows), src_fn, &m, &[base, src, index], &out, invocations)?;
                    return Ok(out);
                }
                None => ("scatter_add_scan", None),
            }
        }
        (None, _) => {
            let keys = GpuBuffer::new(&ctx, op, DType::I32, plan.keys.len())?;
            ctx.upload(keys.raw(), bytemuck::cast_slice(&plan.keys))?;
            m[7] = (plan.keys.len() / 2) as u32;
            ("scatter_add", Some(keys))
        }
        (Some(_), None) => return Err(Error::value(op, "internal: a device-index scatter without its index")),
    };
    let third = match (&keys, index) {
        (Some(k), _) => k,
        (None, Some(i)) => i,
        (None, None) => unreachable!("checked above"),
    };
    let key = format!("index:{kernel}:{}", dt.name());
    launch(&ctx, &key, || kernel_source(INDEX, kernel, dt), &m, &[base, src, third], &out, n)?;
    Ok(out)
}
