// What the tiled matmul (shaders/matmul.wgsl) swaps in for its variants
// (src/backend/gpu/matmul/tiled.rs):
//   - stage_b_vec4: B's part of the staging loop where B is row-major and
//     aligned (csb == 1): four columns of one step of K per load, stored as
//     one vec4 of the staged slice;
//   - window_b: B's element (k, j) read through a convolution window (the
//     implicit GEMM), called by the staging loop instead of B's strided load.
//
// Not a shader by itself: each section below runs from its `// == name` line
// to the next one, and is read by src/backend/gpu/matmul/wgsl.rs (`section`);
// a name in braces is a placeholder (`fill`). This note belongs to no kernel.

// == stage_b_vec4
        for (var p = 0u; p < STAGED / 4u; p = p + 1u) {
            let e = li + WG * WG * p;
            let bk = e / (TN / 4u);
            let bq = e % (TN / 4u);
            var w = vec4<f32>(0.0);
            if (k0 + bk < K && col0 + 4u * bq < N) {
                w = vec4<f32>(B[(ob + (k0 + bk) * rsb + col0 + 4u * bq) >> 2u]);
            }
            Bs[bk * LD4 + bq] = w;
        }

// == window_b
// B's element (k, j): the image's pixel under tap {TAP} of window {WINDOW} (0 in the padding).
fn window_b(ob: u32, k: u32, j: u32) -> f32 {
    let kr = {TAP} % {W_TAPS};
    let y = i32(({WINDOW} / {W_OUT}) * {W_SH} + (kr / {W_KW}) * {W_DH}) - i32({W_PH});
    let x = i32(({WINDOW} % {W_OUT}) * {W_SW} + (kr % {W_KW}) * {W_DW}) - i32({W_PW});
    if (y < 0 || x < 0 || u32(y) >= {W_H} || u32(x) >= {W_W}) {
        return 0.0;
    }
    return {LOAD};
}
