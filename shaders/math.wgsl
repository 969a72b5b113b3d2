// Scalar helpers the elementwise rows use (WGSL has no erf, and pow is
// undefined for negative bases).
fn erf_approx(x: f32) -> f32 {
    // Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
    let s = sign(x);
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
    return s * y;
}
fn spow(a: f32, b: f32) -> f32 {
    // powf's special cases (C99 Annex F), which WGSL's pow (exp2(b * log2(a)),
    // for a > 0 only) does not give. NaN and infinities are tested on the
    // bits: WGSL's float rules let comparisons assume there are none.
    // Constant non-finite floats come from variables: Chromium's WGSL compiler
    // rejects a constant bitcast to one ("value nan cannot be represented").
    var nan_bits = 0x7fc00000u;
    var inf_bits = 0x7f800000u;
    let inf = bitcast<f32>(inf_bits);
    if (b == 0.0 || a == 1.0) { return 1.0; }
    let ua = bitcast<u32>(a) & 0x7fffffffu;
    let ub = bitcast<u32>(b) & 0x7fffffffu;
    if (ua > 0x7f800000u || ub > 0x7f800000u) { return bitcast<f32>(nan_bits); }
    let b_negative = (bitcast<u32>(b) & 0x80000000u) != 0u;
    if (ub == 0x7f800000u) {
        // b = +-inf: |a| = 1 gives 1, else 0 or inf as |a| > 1 and b > 0 agree.
        if (ua == 0x3f800000u) { return 1.0; }
        if ((ua > 0x3f800000u) != b_negative) { return inf; }
        return 0.0;
    }
    let integer = fract(b) == 0.0;
    let odd = integer && fract(b * 0.5) != 0.0;
    let negative = (bitcast<u32>(a) & 0x80000000u) != 0u;
    if (ua == 0u || ua == 0x7f800000u) {
        // a = +-0 or +-inf: 0 or inf, negative only for a negative a and odd b.
        var r = 0.0;
        if ((ua == 0u) == b_negative) { r = inf; }
        if (odd && negative) { return -r; }
        return r;
    }
    if (!negative) { return pow(a, b); }
    // Negative base: defined for integer exponents only.
    if (!integer) { return bitcast<f32>(nan_bits); }
    let m = pow(-a, b);
    if (odd) { return -m; }
    return m;
}
fn sigmoid_(x: f32) -> f32 {
    if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); }
    let e = exp(x);
    return e / (1.0 + e);
}
// By the bits: WGSL's float rules need not honour NaN in comparisons or min/max.
fn is_nan_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}
// PyTorch's clamp (as the cpu row): a NaN bound gives NaN, a NaN x stays NaN,
// min > max gives max.
fn clamp_(x: f32, lo: f32, hi: f32) -> f32 {
    if (is_nan_(lo)) { return lo; }
    if (is_nan_(hi) || is_nan_(x)) { return select(x, hi, is_nan_(hi)); }
    if (x < lo) { return select(lo, hi, lo > hi); }
    if (x > hi) { return hi; }
    return x;
}
// f32 -> i32 as Rust's `as` (the cpu backend): NaN gives 0 and values past
// either end saturate; WGSL leaves NaN undefined and clamps to 2147483520.
fn to_i32_(x: f32) -> i32 {
    if (is_nan_(x)) { return 0i; }
    if (x >= 2147483648.0) { return 2147483647i; }
    if (x < -2147483648.0) { return -2147483647i - 1i; }
    return i32(x);
}
