//! The tiled kernel (`Kernel::Tiled`, for real GPUs): `shaders/matmul.wgsl`
//! with its tile filled in and its loop over a staged slice written out
//! step by step, and its variants, which swap pieces of
//! `shaders/matmul_tiled_variants.wgsl` into it:
//!
//! - B staged as vec4s: where B's layout allows it (`Loads::Across`: B
//!   row-major, its offset and row stride multiples of 4), one vec4 of four
//!   columns per load, stored as one vec4 of the staged slice, instead of the
//!   shader's own loop (one element per load through the strides). A real
//!   GPU then issues a quarter of B's loads and their address arithmetic. A
//!   vec4 load is only issued when its first column lies inside B; its other
//!   lanes may reach past B's last column, never past the buffer (buffer
//!   sizes are multiples of 256 bytes), and feed only columns of C that are
//!   never stored. B then binds as `array<vec4<ELEM>>`. (A staged as vec4s
//!   too, four steps of K per load stored lane by lane, measured slower on
//!   a real GPU, with B or alone.)
//! - B read through a convolution window (`window.rs`): the staging load of
//!   B becomes a call of `window_b`.
//!
//! Each variant finds the text it replaces in `shaders/matmul.wgsl` (the
//! constants below) and panics if the shader no longer has it, so the
//! shader stays one readable kernel.

use super::block::{Loads, Tiles};
use super::wgsl::{fill, section, Widen, TILED, TILED_VARIANTS};
use super::window;
use crate::backend::gpu::wgsl_type;
use crate::dtype::DType;

/// The shader's staging loop (both operands one element per load): its
/// head, the first line of its part for B, and its end.
const SCALAR_LOOP: &str = "        for (var p = 0u; p < STAGED; p = p + 1u) {\n";
const B_PART: &str = "            var bk = e % TK;";
const LOOP_END: &str = "        }\n        workgroupBarrier();\n";
/// The shader's loop over the steps of a staged slice: its head and end.
const SLICE_LOOP: &str = "        for (var kk = 0u; kk < TK; kk = kk + 1u) {\n";
const SLICE_END: &str = "\n        }\n";
/// The shader's staging load of one element of B.
const B_LOAD: &str = "w = f32(B[ob + (k0 + bk) * rsb + (col0 + bc) * csb]);";

/// `shaders/matmul.wgsl` over `dt` elements with `tiles`, staging B as
/// `stage_b` says for B's loads `b`, its loop over a staged slice unrolled
/// (`unroll_slice`).
pub(super) fn body(dt: DType, tiles: Tiles, b: Loads) -> String {
    let (wg, tk) = (tiles.edge / 8, tiles.k);
    let staged = tk * (2 * wg + 1);
    let elem = wgsl_type(dt);
    let body = fill(
        TILED,
        &[("ELEM", elem), ("WG", &wg.to_string()), ("TK", &tk.to_string()), ("STAGE", &staged.to_string())],
    );
    unroll_slice(&stage_b(&body, elem, b), tk)
}

/// The shader's loop over the `tk` steps of a staged slice written out step
/// by step, each step a block that binds `kk` to its constant: the
/// workgroup-memory addresses become constant offsets and no loop counter
/// or exit test runs between the FMAs (measurably faster on a real GPU,
/// with either tile).
fn unroll_slice(body: &str, tk: usize) -> String {
    let start = body.find(SLICE_LOOP).expect("shaders/matmul.wgsl's loop over a slice changed");
    let len = body[start + SLICE_LOOP.len()..].find(SLICE_END).expect("the loop over a slice ends") + 1;
    let step = &body[start + SLICE_LOOP.len()..start + SLICE_LOOP.len() + len];
    let steps: String =
        (0..tk).map(|k| format!("        {{\n            let kk = {k}u;\n{step}        }}\n")).collect();
    format!("{}{steps}{}", &body[..start], &body[start + SLICE_LOOP.len() + len + SLICE_END.len() - 1..])
}

/// The tiled kernel reading B through a window (`Loads::Window`, or
/// `WindowT` when `transposed`): its one staging load of B becomes a call of
/// `window_b` (`window::tiled_fn`).
pub(super) fn window_kernel(dt: DType, transposed: bool) -> String {
    assert!(TILED.contains(B_LOAD), "shaders/matmul.wgsl's staging load of B changed");
    let body = body(dt, Tiles::SMALL, Loads::Scalar).replace(B_LOAD, "w = window_b(ob, k0 + bk, col0 + bc);");
    format!("{body}\n{}", window::tiled_fn(transposed, |load| Widen(dt).scalar(load)))
}

/// Whether the tiled kernel stages B (loaded as `b`) as vec4s.
pub fn stages_vec4(b: Loads) -> bool {
    b == Loads::Across
}

/// The pipeline-key suffix of B's staging ("" for the shader's own loop).
pub fn stage_key(b: Loads) -> &'static str {
    if stages_vec4(b) {
        ":b4"
    } else {
        ""
    }
}

/// `body` (shaders/matmul.wgsl with its placeholders filled) staging B as
/// vec4s where `stages_vec4(b)`: its binding of B becomes an array of vec4s,
/// and its staging loop keeps A's part, B's part becoming the loop
/// `stage_b_vec4`.
pub(super) fn stage_b(body: &str, elem: &str, b: Loads) -> String {
    if !stages_vec4(b) {
        return body.to_string();
    }
    let start = body.find(SCALAR_LOOP).expect("shaders/matmul.wgsl's staging loop changed");
    let b_part = start + body[start..].find(B_PART).expect("the staging loop's part for B changed");
    let end = b_part + body[b_part..].find(LOOP_END).expect("a barrier follows the staging loop");
    let scalar = format!("var<storage, read> B: array<{elem}>;");
    assert!(body.contains(&scalar), "shaders/matmul.wgsl's binding of B changed");
    let vec4 = section(TILED_VARIANTS, "stage_b_vec4");
    format!("{}        }}\n{vec4}{}", &body[..b_part], &body[end + "        }\n".len()..])
        .replace(&scalar, &format!("var<storage, read> B: array<vec4<{elem}>>;"))
}
