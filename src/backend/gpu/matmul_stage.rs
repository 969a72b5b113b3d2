//! How the tiled matmul (`shaders/matmul.wgsl`) stages its slices of B
//! into workgroup memory: one element per load through the strides (the
//! shader's own loop), or, where B's layout allows it (`Loads::Across`: B
//! row-major, its offset and row stride multiples of 4), one vec4 of four
//! columns per load, stored as one vec4 of the staged slice. A real GPU
//! then issues a quarter of B's loads and their address arithmetic.
//!
//! A vec4 load is only issued when its first column lies inside B; its other
//! lanes may reach past B's last column, never past the buffer (buffer sizes
//! are multiples of 256 bytes), and feed only columns of C that are never
//! stored. B then binds as `array<vec4<ELEM>>`.
//!
//! A staged as vec4s too (four steps of K per load, stored lane by lane)
//! measured slower on an H200 without runtime checks: 4096^3 at 27.4
//! TFLOP/s with both operands, 28.5 with A alone, 29.1 with neither and 30.2
//! with B alone (benches/README.md).

use super::matmul::Loads;

/// The shader's staging loop (both operands one element per load): its
/// head, the first line of its part for B, and its end.
const SCALAR_LOOP: &str = "        for (var p = 0u; p < STAGED; p = p + 1u) {\n";
const B_PART: &str = "            var bk = e % TK;";
const LOOP_END: &str = "        }\n        workgroupBarrier();\n";

/// B's slice, four columns of one step per load (B row-major: csb == 1).
const B_VEC4: &str = "        for (var p = 0u; p < STAGED / 4u; p = p + 1u) {
            let e = li + WG * WG * p;
            let bk = e / (TN / 4u);
            let bq = e % (TN / 4u);
            var w = vec4<f32>(0.0);
            if (k0 + bk < K && col0 + 4u * bq < N) {
                w = vec4<f32>(B[(ob + (k0 + bk) * rsb + col0 + 4u * bq) >> 2u]);
            }
            Bs[bk * LD4 + bq] = w;
        }
";

/// Whether the tiled kernel stages B (loaded as `b`) as vec4s.
pub fn vec4(b: Loads) -> bool {
    b == Loads::Across
}

/// The pipeline-key suffix of B's staging ("" for the shader's own loop).
pub fn key(b: Loads) -> &'static str {
    if vec4(b) {
        ":b4"
    } else {
        ""
    }
}

/// `body` (shaders/matmul.wgsl with its braces filled in) staging B as
/// vec4s where `vec4(b)`: its binding of B becomes an array of vec4s, and
/// its staging loop keeps A's part, B's part becoming the loop `B_VEC4`.
pub fn apply(body: &str, elem: &str, b: Loads) -> String {
    if !vec4(b) {
        return body.to_string();
    }
    let start = body.find(SCALAR_LOOP).expect("shaders/matmul.wgsl's staging loop changed");
    let b_part = start + body[start..].find(B_PART).expect("the staging loop's part for B changed");
    let end = b_part + body[b_part..].find(LOOP_END).expect("a barrier follows the staging loop");
    let scalar = format!("var<storage, read> B: array<{elem}>;");
    assert!(body.contains(&scalar), "shaders/matmul.wgsl's binding of B changed");
    format!("{}        }}\n{B_VEC4}{}", &body[..b_part], &body[end + "        }\n".len()..])
        .replace(&scalar, &format!("var<storage, read> B: array<vec4<{elem}>>;"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_row_major_aligned_b_stages_vec4s() {
        assert_eq!(key(Loads::Across), ":b4");
        for other in [Loads::Scalar, Loads::AlongK, Loads::Window, Loads::Inside] {
            assert_eq!(key(other), "", "{other:?}");
        }
        let body = apply(&super::super::matmul::MATMUL.replace("{ELEM}", "f32"), "f32", Loads::Across);
        assert!(body.contains("var<storage, read> B: array<vec4<f32>>;"));
        assert!(body.contains("var<storage, read> A: array<f32>;"));
        // A's part of the shader's loop stays; B's scalar part is gone.
        assert!(body.contains("As[ak * LD4 + ar / 4u][ar % 4u] = v;"));
        assert!(!body.contains("Bs[bk * LD4 + bc / 4u][bc % 4u] = w;"));
        assert!(body.contains("Bs[bk * LD4 + bq] = w;"));
        assert_eq!(body.matches("workgroupBarrier();").count(), 2);
    }
}
