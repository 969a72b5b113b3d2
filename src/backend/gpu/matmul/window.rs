//! WGSL for the matmul kernels' B operand read through a convolution window
//! (the implicit GEMM, `conv_gemm.rs`): B is an image's im2col columns
//! `[c * kh * kw, out_h * out_w]` per image (`Loads::Window`: a step of K is
//! a tap, a column of C a window), or their transpose (`Loads::WindowT`: a
//! step of K is a window, a column a tap: the weight gradient's product).
//! A pixel outside the image reads as 0. The geometry is in the parameter
//! words from `WINDOW` on (`conv_gemm::window_params`). The blocked kernel
//! decodes a column's half of the coordinates once and a step's half once
//! per step (generated here: how many columns depends on the block); the
//! tiled kernel calls `window_b` from `shaders/matmul_tiled_variants.wgsl`.

use super::block::Loads;
use super::wgsl::{fill, section, TILED_VARIANTS};
use std::fmt::Write;

/// The first parameter word of the window (after the product's 40).
pub const WINDOW: usize = 40;

/// The window words in order, as the blocked kernel names them (`w_out`, ...):
/// out_w, stride h and w, padding h and w, kh * kw, kw, dilation h and w, the
/// image's channel, row and column strides, its height and width.
const NAMES: [&str; 14] = ["out", "sh", "sw", "ph", "pw", "taps", "kw", "dh", "dw", "sc", "sy", "sx", "h", "w"];

/// How many window words follow the product's.
pub const WORDS: usize = NAMES.len();
// They must fit the 64-word parameter block after the product's 40.
const _: () = assert!(WINDOW + WORDS <= 64);

/// The blocked kernel's `let w_<name> = pm(..);` lines (generated from
/// `NAMES`, the one list of the words' order besides `window_params`).
pub(super) fn lets() -> String {
    NAMES.iter().enumerate().map(|(i, name)| format!("    let w_{name} = pm({}u);\n", WINDOW + i)).collect()
}

/// What the blocked kernel computes once per invocation for its column `c`
/// (clamped into C): a window's top-left corner in the image (negative in
/// the padding), or, transposed, a tap's channel offset and its (ki * dh,
/// kj * dw) offsets.
pub(super) fn column(c: usize, transposed: bool) -> String {
    let mut s = format!("    let j{c} = min(col0 + {c}u, N - 1u);\n");
    if transposed {
        let _ = writeln!(s, "    let tr{c} = j{c} % w_taps;");
        let _ = writeln!(s, "    let tc{c} = (j{c} / w_taps) * w_sc;");
        let _ = writeln!(s, "    let ty{c} = i32((tr{c} / w_kw) * w_dh);");
        let _ = writeln!(s, "    let tx{c} = i32((tr{c} % w_kw) * w_dw);");
    } else {
        let _ = writeln!(s, "    let wy{c} = i32((j{c} / w_out) * w_sh) - i32(w_ph);");
        let _ = writeln!(s, "    let wx{c} = i32((j{c} % w_out) * w_sw) - i32(w_pw);");
    }
    s
}

/// The loads of B's row `k` (a WGSL expression) into the vec4s `b{j}{s}`,
/// `q` of them, for B read through a window as `loads` says: the step's
/// half of the pixel coordinates is decoded once (a tap, or transposed a
/// window), each column adds its own half, and, where the loads test for
/// the padding, a pixel outside the image gives 0 (its load, clamped by
/// WGSL's bounds checks, is discarded). `widen` makes a loaded element an
/// f32 expression.
pub(super) fn step(q: usize, s: &str, k: &str, loads: Loads, widen: impl Fn(&str) -> String) -> String {
    assert!(loads.is_window(), "{loads:?} loads do not read through a window");
    let transposed = loads.is_transposed_window();
    let mut w = String::new();
    if transposed {
        let _ = writeln!(w, "        let oy{s} = i32(({k} / w_out) * w_sh) - i32(w_ph);");
        let _ = writeln!(w, "        let ox{s} = i32(({k} % w_out) * w_sw) - i32(w_pw);");
    } else {
        let _ = writeln!(w, "        let kr{s} = {k} % w_taps;");
        let _ = writeln!(w, "        let dy{s} = i32((kr{s} / w_kw) * w_dh);");
        let _ = writeln!(w, "        let dx{s} = i32((kr{s} % w_kw) * w_dw);");
        let _ = writeln!(w, "        let kb{s} = ob + ({k} / w_taps) * w_sc;");
    }
    for j in 0..q {
        let mut lanes = Vec::new();
        for c in 4 * j..4 * j + 4 {
            let (y, x, base) = if transposed {
                (format!("oy{s} + ty{c}"), format!("ox{s} + tx{c}"), format!("ob + tc{c}"))
            } else {
                (format!("wy{c} + dy{s}"), format!("wx{c} + dx{s}"), format!("kb{s}"))
            };
            let _ = writeln!(w, "        let y{c}{s} = {y};");
            let _ = writeln!(w, "        let x{c}{s} = {x};");
            let load = widen(&format!("B[{base} + u32(y{c}{s}) * w_sy + u32(x{c}{s}) * w_sx]"));
            if !loads.tests_padding() {
                lanes.push(load);
                continue;
            }
            lanes.push(format!(
                "select(0.0, {load}, y{c}{s} >= 0 && x{c}{s} >= 0 && u32(y{c}{s}) < w_h && u32(x{c}{s}) < w_w)"
            ));
        }
        let _ = writeln!(w, "        let b{j}{s} = vec4<f32>({});", lanes.join(", "));
    }
    w
}

/// The tiled kernel's `window_b(ob, k, j)`: B's element (k, j) of the image
/// at `ob`, decoded in full (the tiled kernel stages each element once).
/// `widen` makes the loaded element an f32 expression.
pub(super) fn tiled_fn(transposed: bool, widen: impl Fn(&str) -> String) -> String {
    let word = |name: &str| format!("pm({}u)", WINDOW + NAMES.iter().position(|n| *n == name).expect("a window word"));
    let (tap, win) = if transposed { ("j", "k") } else { ("k", "j") };
    let load = widen(&format!(
        "B[ob + ({tap} / {}) * {} + u32(y) * {} + u32(x) * {}]",
        word("taps"),
        word("sc"),
        word("sy"),
        word("sx")
    ));
    // `{W_TAPS}` for `taps`, and so on.
    let words: Vec<(String, String)> = NAMES.iter().map(|n| (format!("W_{}", n.to_uppercase()), word(n))).collect();
    let mut values: Vec<(&str, &str)> = words.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    values.extend([("TAP", tap), ("WINDOW", win), ("LOAD", &load)]);
    fill(section(TILED_VARIANTS, "window_b"), &values)
}
