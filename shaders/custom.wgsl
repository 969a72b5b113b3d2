// What a user's custom kernel can call besides its inputs X0, X1, ... (each
// a contiguous array<f32>) and WGSL's builtins. The kernel defines
// `fn compute(i: u32) -> f32`, the value of output element i (row-major);
// skiff writes `main`, which calls it once per output element.
// Params (see src/kernel/custom.rs): m[0] output elements, m[1] output rank,
// m[2..10] output dims; input k at 10 + 9k: [rank, 8 dims]; the op's f32
// scalars after the inputs (INPUTS is the number of inputs).

fn numel() -> u32 { return pm(0u); }
fn out_rank() -> u32 { return pm(1u); }
fn out_dim(d: u32) -> u32 { return pm(2u + d); }
fn in_rank(k: u32) -> u32 { return pm(10u + 9u * k); }
fn in_dim(k: u32, d: u32) -> u32 { return pm(11u + 9u * k + d); }
fn in_numel(k: u32) -> u32 {
    var n = 1u;
    for (var d = 0u; d < in_rank(k); d = d + 1u) { n = n * in_dim(k, d); }
    return n;
}
fn scalar(j: u32) -> f32 { return pf(10u + 9u * INPUTS + j); }

// The element of input k that output element i reads when input k
// broadcasts to the output's shape (NumPy rules: trailing dims aligned, dims
// of size 1 repeat).
fn bcast(k: u32, i: u32) -> u32 {
    let r = out_rank();
    let rk = in_rank(k);
    var rem = i;
    var at = 0u;
    var stride = 1u;
    for (var d = r; d > 0u; d = d - 1u) {
        let size = out_dim(d - 1u);
        let c = rem % size;
        rem = rem / size;
        if (d - 1u + rk >= r) {
            let s = in_dim(k, d - 1u + rk - r);
            if (s != 1u) { at = at + c * stride; }
            stride = stride * s;
        }
    }
    return at;
}
