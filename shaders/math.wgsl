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
    // powf's special cases, which WGSL's pow (exp2(b * log2(a))) gets wrong:
    // a^0 = 1 and 1^b = 1 for every a and b (NaN too), any other NaN operand
    // gives NaN (tested on the bits: WGSL's float rules let comparisons
    // assume there is none), and 0^b = 0 for b > 0, inf for b < 0 (-0.0
    // keeps its sign for odd integer b).
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) {
        var nan_bits = 0x7fc00000u;
        return bitcast<f32>(nan_bits);
    }
    if (a == 0.0) {
        var r = 0.0;
        if (b < 0.0) { var inf_bits = 0x7f800000u; r = bitcast<f32>(inf_bits); }
        let odd = fract(b) == 0.0 && fract(b * 0.5) != 0.0;
        if (odd && (bitcast<u32>(a) & 0x80000000u) != 0u) { return -r; }
        return r;
    }
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
