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
    if (a >= 0.0) { return pow(a, b); }
    // Negative base: defined for integer exponents only (as powf).
    // NaN from a variable: Chromium's WGSL compiler rejects a constant bitcast
    // to a non-finite f32 ("value nan cannot be represented").
    if (fract(b) != 0.0) { var nan_bits = 0x7fc00000u; return bitcast<f32>(nan_bits); }
    let m = pow(-a, b);
    if (fract(b * 0.5) != 0.0) { return -m; }
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
