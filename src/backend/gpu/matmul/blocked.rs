//! The blocked kernel (`Kernel::Blocked`, for software adapters):
//! `shaders/matmul_blocked.wgsl` filled in with the lines that depend on the
//! block's shape. `lanes` invocations per workgroup side by side along N,
//! each accumulating a `rows` x `cols` block of C (`cols` a multiple of 4,
//! kept as vec4s) straight from the storage buffers, with no workgroup
//! memory and no barriers. Same parameters and bindings as
//! `shaders/matmul.wgsl`.
//!
//! Why, on lavapipe (llvmpipe, Mesa 22): a workgroup runs on one CPU thread,
//! 8 invocations per SIMD vector, but every storage or workgroup-memory
//! access is a scalar loop over the active lanes, while arithmetic is 8 wide
//! and register spills are plain vector moves. The cost of a product is thus
//! about the number of scalar loads, M N K (1/rows + 1/cols) over all
//! invocations: a 16x32 block loads 48 values per 512 FMAs, against 16 + 4
//! (staging) per 64 for the tiled kernel's 8x8 blocks, and skips the staging
//! stores and the barriers (which split the shader into resumable pieces);
//! it runs about three times as fast there as the tiled kernel. Larger
//! blocks load less still but take much longer to build for a little more
//! speed, and the stores go through a runtime loop over rows that shifts the
//! block up one row each pass because unrolled stores made the build several
//! times slower.
//!
//! Edges: loads clamp the row and column into range (the products they feed
//! are never stored); invocations wholly outside C return at once (no
//! barriers, so that is allowed), which also spares their loads.
//!
//! f16 operands bind as `array<f16>` (`vec4<f16>` for vec4 loads) and each
//! load converts to f32 (`Widen`): everything after is the f32 kernel.

use super::block::{Block, Loads};
use super::wgsl::{fill, section, Widen, BLOCKED};
use super::window;
use crate::backend::gpu::wgsl_type;
use crate::dtype::DType;
use std::fmt::Write;

/// The blocked kernel with block `block` over `dt` elements (without the
/// prelude and the `store` function).
pub(super) fn kernel(block: Block, dt: DType) -> String {
    let Block { rows, cols, lanes, unroll, a, b, broadcast } = block;
    assert!(
        broadcast == 0
            || (matches!(b, Loads::Across | Loads::Scalar) && lanes == broadcast && (cols / 4) % broadcast == 0),
        "a broadcasting block reads B through its strides, one subgroup per workgroup, whole vec4s per lane"
    );
    assert!(cols % 4 == 0 && rows >= 1 && lanes >= 1 && unroll >= 1);
    assert!(unroll % 4 == 0 || a != Loads::AlongK, "AlongK loads need K unrolled a multiple of 4x");
    assert!(b != Loads::AlongK, "B never reads AlongK");
    assert!(!a.is_window(), "only B reads through a window");
    assert!(a != Loads::Across || rows % 4 == 0, "Across loads of A need whole groups of 4 rows");
    let (elem, wide, n) = (wgsl_type(dt), Widen(dt), |v: usize| v.to_string());
    let ty = |l: Loads| match l {
        Loads::AlongK | Loads::Across => format!("vec4<{elem}>"),
        // One element per load: through the strides or through a window.
        _ => elem.to_string(),
    };
    let [tm, tn] = block.tile();
    let shared = broadcast > 0;
    // A broadcasting block's lanes stack along M from the workgroup's first
    // row; it returns only on what the whole workgroup shares (its id),
    // since a subgroup operation needs every lane. So a lane's rows may
    // start past C's edge (the workgroup's do not).
    let (origin, lane, rows_left) = if shared {
        (
            fill(section(BLOCKED, "origin_shared"), &[("ROWS", &n(rows))]),
            "    @builtin(subgroup_invocation_id) sl: u32,\n",
            format!("select(0u, min({rows}u, M - row0), row0 < M)"),
        )
    } else {
        (fill(section(BLOCKED, "origin"), &[("COLS", &n(cols))]), "", format!("min({rows}u, M - row0)"))
    };
    fill(
        section(BLOCKED, "kernel"),
        &[
            ("ROWS", &n(rows)),
            ("COLS", &n(cols)),
            ("LANES", &n(lanes)),
            ("ALONG", if shared { "M (one subgroup, sharing B's loads)" } else { "N" }),
            ("TM", &n(tm)),
            ("TN", &n(tn)),
            ("UNROLL", &n(unroll)),
            ("LOADS_A", &format!("{a:?}")),
            ("LOADS_B", &format!("{b:?}")),
            ("TYPE_A", &ty(a)),
            ("TYPE_B", &ty(b)),
            ("ELEM", elem),
            ("SUBGROUP_LANE", lane),
            ("ORIGIN", &origin),
            ("WINDOW_WORDS", &if b.is_window() { window::lets() } else { String::new() }),
            ("OFFSETS", &offsets(block)),
            ("ACCUMULATORS", &accumulators(block)),
            ("UNROLLED_LOOP", &unrolled_loop(block, wide)),
            ("STEP_B", &b_loads(block, wide, "", "k")),
            ("STEP_A", &a_step(block, wide)),
            ("ROWS_LEFT", &rows_left),
            ("STORES", &stores(block)),
            ("SHIFT", &shift(block)),
        ],
    )
}

/// Element offsets of the block's rows of A (`ra{i}`) and columns of B
/// (`cb{c}`; a broadcasting lane's share, `cs{p}`), clamped into range:
/// out-of-range lanes are computed but never stored. `Across` reads groups
/// of 4 rows (columns) from the group's first, clamped to the last group
/// start inside the operand (`m4`, `n4`).
fn offsets(block: Block) -> String {
    let Block { rows, cols, a, b, broadcast, .. } = block;
    let mut w = String::new();
    for i in 0..rows {
        if a == Loads::Across {
            if i % 4 == 0 {
                let _ = writeln!(w, "    let ra{i} = oa + min(row0 + {i}u, m4) * rsa;");
            }
        } else {
            let _ = writeln!(w, "    let ra{i} = oa + min(row0 + {i}u, M - 1u) * rsa;");
        }
    }
    for p in 0..(cols / 4).checked_div(broadcast).unwrap_or(0) {
        // This lane's share of B's row segment: vec4s sl, sl + S, ... (one
        // load each, or one per column through the strides).
        let first = format!("col0 + (sl + {}u) * 4u", p * broadcast);
        if b == Loads::Across {
            let _ = writeln!(w, "    let cs{p} = ob + min({first}, n4) * csb;");
        } else {
            for e in 0..4 {
                let _ = writeln!(w, "    let cs{p}_{e} = ob + min({first} + {e}u, N - 1u) * csb;");
            }
        }
    }
    for c in 0..if broadcast > 0 { 0 } else { cols } {
        match b {
            Loads::Across if c % 4 == 0 => {
                let _ = writeln!(w, "    let cb{c} = ob + min(col0 + {c}u, n4) * csb;");
            }
            Loads::Across => {}
            _ if b.is_window() => w.push_str(&window::column(c, b.is_transposed_window())),
            _ => {
                let _ = writeln!(w, "    let cb{c} = ob + min(col0 + {c}u, N - 1u) * csb;");
            }
        }
    }
    w
}

/// The block's accumulators, `acc{row}_{vec4 of columns}`.
fn accumulators(block: Block) -> String {
    let mut w = String::new();
    for i in 0..block.rows {
        for j in 0..block.cols / 4 {
            let _ = writeln!(w, "    var acc{i}_{j} = vec4<f32>(0.0);");
        }
    }
    w
}

/// The loop taking `unroll` steps of K per iteration (none where `unroll`
/// is 1), each accumulator updated once by nested fmas: the same sums in
/// the same order as one step at a time. The loop after it finishes K.
fn unrolled_loop(block: Block, wide: Widen) -> String {
    let Block { rows, cols, unroll, a, .. } = block;
    if unroll < 2 {
        return String::new();
    }
    let steps_b: String = (0..unroll).map(|u| b_loads(block, wide, &format!("_{u}"), &format!("(k + {u}u)"))).collect();
    let steps_ka: String = (0..unroll).map(|u| format!("        let ka_{u} = (k + {u}u) * csa;\n")).collect();
    let mut w = String::new();
    for i in 0..rows {
        match a {
            Loads::AlongK => {
                for g in 0..unroll / 4 {
                    let at = wide.vec4(&format!("A[(ra{i} + k + {}u) >> 2u]", 4 * g));
                    let _ = writeln!(w, "        let ak{i}_{g} = {at};");
                }
                for u in 0..unroll {
                    let _ = writeln!(w, "        let a{i}_{u} = vec4<f32>(ak{i}_{}[{}]);", u / 4, u % 4);
                }
            }
            Loads::Across => {
                for u in 0..unroll {
                    if i % 4 == 0 {
                        let load = wide.vec4(&format!("A[(ra{i} + ka_{u}) >> 2u]"));
                        let _ = writeln!(w, "        let ag{i}_{u} = {load};");
                    }
                    let (g, t) = (i - i % 4, i % 4);
                    let _ = writeln!(w, "        let a{i}_{u} = vec4<f32>(ag{g}_{u}[{t}]);");
                }
            }
            // Scalar (A never reads through a window: asserted in `kernel`).
            _ => {
                for u in 0..unroll {
                    let load = wide.scalar(&format!("A[ra{i} + ka_{u}]"));
                    let _ = writeln!(w, "        let a{i}_{u} = vec4<f32>({load});");
                }
            }
        }
        for j in 0..cols / 4 {
            let sum = (0..unroll).fold(format!("acc{i}_{j}"), |acc, u| format!("fma(a{i}_{u}, b{j}_{u}, {acc})"));
            let _ = writeln!(w, "        acc{i}_{j} = {sum};");
        }
    }
    let unroll = unroll.to_string();
    fill(
        section(BLOCKED, "unrolled_loop"),
        &[("UNROLL", &unroll), ("STEPS_B", &steps_b), ("STEPS_KA", &steps_ka), ("STEPS_A", &w)],
    )
}

/// One step of K for each row of the block, after B's loads: the row's
/// element of A (splatted; AlongK operands are read one element at a time
/// here) times B's row into its accumulators.
fn a_step(block: Block, wide: Widen) -> String {
    let mut w = String::new();
    for i in 0..block.rows {
        let a_i = match block.a {
            Loads::AlongK => wide.scalar(&format!("A[(ra{i} + ka) >> 2u][(ra{i} + ka) & 3u]")),
            Loads::Across => {
                if i % 4 == 0 {
                    let _ = writeln!(w, "        let ag{i} = {};", wide.vec4(&format!("A[(ra{i} + ka) >> 2u]")));
                }
                format!("ag{}[{}]", i - i % 4, i % 4)
            }
            // Scalar (A never reads through a window: asserted in `kernel`).
            _ => wide.scalar(&format!("A[ra{i} + ka]")),
        };
        let _ = writeln!(w, "        let a{i} = vec4<f32>({a_i});");
        for j in 0..block.cols / 4 {
            let _ = writeln!(w, "        acc{i}_{j} = fma(a{i}, b{j}, acc{i}_{j});");
        }
    }
    w
}

/// The loads of B for step `k` (a WGSL expression) of K: the `cols / 4`
/// vec4s `b{j}{suffix}` of B's row, one load each (`Across`) or one per
/// element (`Scalar`, or through a window); a broadcasting block loads its
/// lane's share and receives the rest from the other lanes.
fn b_loads(block: Block, wide: Widen, suffix: &str, k: &str) -> String {
    let (b, q, size) = (block.b, block.cols / 4, block.broadcast);
    if b.is_window() {
        return window::step(q, suffix, k, b, |load| wide.scalar(load));
    }
    let mut w = format!("        let kb{suffix} = {k} * rsb;\n");
    if let Some(shares) = q.checked_div(size) {
        for p in 0..shares {
            let load = if b == Loads::Across {
                wide.vec4(&format!("B[(cs{p} + kb{suffix}) >> 2u]"))
            } else {
                let at = |e: usize| wide.scalar(&format!("B[cs{p}_{e} + kb{suffix}]"));
                format!("vec4<f32>({}, {}, {}, {})", at(0), at(1), at(2), at(3))
            };
            let _ = writeln!(w, "        let l{p}{suffix} = {load};");
        }
        // A constant lane: the same value for every lane, one shuffle.
        for j in 0..q {
            let _ = writeln!(w, "        let b{j}{suffix} = subgroupBroadcast(l{}{suffix}, {}u);", j / size, j % size);
        }
        return w;
    }
    for j in 0..q {
        let c = 4 * j;
        let load = if b == Loads::Across {
            wide.vec4(&format!("B[(cb{c} + kb{suffix}) >> 2u]"))
        } else {
            let at = |c: usize| wide.scalar(&format!("B[cb{c} + kb{suffix}]"));
            format!("vec4<f32>({}, {}, {}, {})", at(c), at(c + 1), at(c + 2), at(c + 3))
        };
        let _ = writeln!(w, "        let b{j}{suffix} = {load};");
    }
    w
}

/// Row 0 of the block into C, column by column inside C.
fn stores(block: Block) -> String {
    let mut w = String::new();
    for j in 0..block.cols / 4 {
        for e in 0..4 {
            let c = 4 * j + e;
            let _ = writeln!(w, "        if (col0 + {c}u < N) {{ store(o + {c}u, acc0_{j}[{e}]); }}");
        }
    }
    w
}

/// The block shifted up one row (nothing for a 1-row block).
fn shift(block: Block) -> String {
    let mut w = String::new();
    for i in 0..block.rows.saturating_sub(1) {
        for j in 0..block.cols / 4 {
            let _ = writeln!(w, "        acc{i}_{j} = acc{}_{j};", i + 1);
        }
    }
    w
}
