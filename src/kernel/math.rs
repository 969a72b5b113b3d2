//! The transcendental functions of the cpu kernels, in two routes: `fast`
//! (the target's own: the platform's libm natively, compiler-builtins' in
//! wasm; natively f32 `exp` and `tanh` are skiff's own straight-line code,
//! which a kernel's loop vectorises) and `portable` (the `libm` crate's, the same code and so the same
//! bits on every target: deterministic mode, `crate::determinism`).
//!
//! The unary and binary tables write their formulas with these free
//! functions (`exp(x)`, `powf(x, y)`), and their macros expand each formula
//! twice, once under `use math::fast::*` and once under `use math::portable::*`.
//! The fast route stays the default because the target's own functions are
//! faster natively (several times so for powf) than the `libm` crate's.
//! Square roots, divisions and the rest of IEEE arithmetic round the same
//! everywhere and need no second route.
//!
//! wasm32 builds the portable kernels only (`kernel::UnaryKernel`): its own
//! functions are compiler-builtins' copy of that same libm code, so the
//! default and deterministic modes compute transcendentals alike there.

/// f32 and f64, with both routes of each function.
pub trait Transcendental: Copy {
    fn fast_exp(self) -> Self;
    fn fast_ln(self) -> Self;
    fn fast_ln_1p(self) -> Self;
    fn fast_exp_m1(self) -> Self;
    fn fast_sin(self) -> Self;
    fn fast_cos(self) -> Self;
    fn fast_tanh(self) -> Self;
    fn fast_powf(self, e: Self) -> Self;
    fn portable_exp(self) -> Self;
    fn portable_ln(self) -> Self;
    fn portable_ln_1p(self) -> Self;
    fn portable_exp_m1(self) -> Self;
    fn portable_sin(self) -> Self;
    fn portable_cos(self) -> Self;
    fn portable_tanh(self) -> Self;
    fn portable_powf(self, e: Self) -> Self;
}

/// f32 `exp` and `tanh` in straight-line arithmetic, so a kernel's loop
/// over them vectorises natively (the platform's `expf`/`tanhf` are calls,
/// one element at a time: tanh cost 16 ns an element, a sigmoid 7). Within
/// 3 ulp of the true values; NaN, infinities, signed zeros, overflow and
/// underflow as IEEE has them. Deterministic mode keeps the `libm` route.
#[cfg(not(target_arch = "wasm32"))]
mod straight_f32 {
    /// 1.5 * 2^23: adding it rounds a float of magnitude under 2^22 to an
    /// integer, which then sits in the low bits of the sum.
    const ROUND: f32 = 12_582_912.0;

    /// 1/k! for k = 0..=7: e^r's Taylor series.
    const EXP_SERIES: [f32; 8] = [1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
    /// 1/(k+1)! for k = 0..=10: (e^y - 1) / y's Taylor series.
    const EXPM1_SERIES: [f32; 11] = [
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
    ];

    /// c[0] + x (c[1] + x (c[2] + ...)); a loop the compiler unrolls.
    #[inline(always)]
    fn horner(x: f32, c: &[f32]) -> f32 {
        let (last, rest) = c.split_last().expect("a polynomial has a coefficient");
        rest.iter().rev().fold(*last, |acc, &k| acc * x + k)
    }

    /// 2^n for n in [-126, 127].
    #[inline(always)]
    fn pow2(n: i32) -> f32 {
        f32::from_bits(((n + 127) as u32) << 23)
    }

    /// e^x = 2^n e^r with n = round(x / ln 2), |r| <= ln 2 / 2, e^r by its
    /// Taylor series to r^7 (the next term is under 6e-9 relative).
    #[inline(always)]
    pub fn exp(x: f32) -> f32 {
        // Past these e^x is inf and 0 (`clamp` keeps a NaN).
        let x = x.clamp(-104.0, 89.0);
        let t = x * std::f32::consts::LOG2_E + ROUND;
        let n = t.to_bits() as i32 - ROUND.to_bits() as i32;
        let nf = t - ROUND;
        // ln 2 in two parts, the first exact times any n here.
        let r = (x - nf * 0.693_359_4) - nf * -2.121_944_4e-4;
        let p = horner(r, &EXP_SERIES);
        // n is in [-150, 128]: two halves keep each factor a normal float,
        // and the second product rounds into subnormals or overflows.
        let half = n >> 1;
        p * pow2(half) * pow2(n - half)
    }

    /// tanh |x| = m / (m + 2) with m = e^(2|x|) - 1, the sign put back.
    /// m by its Taylor series to 2|x|^11 below 1, where e^(2|x|) - 1 would
    /// cancel; tanh is 1 in f32 from |x| = 9.1 on.
    #[inline(always)]
    pub fn tanh(x: f32) -> f32 {
        let y = 2.0 * x.abs();
        let series = y * horner(y, &EXPM1_SERIES);
        let m = if y < 1.0 { series } else { exp(if y > 20.0 { 20.0 } else { y }) - 1.0 };
        (m / (m + 2.0)).copysign(x)
    }
}

macro_rules! transcendental {
    ($t:ty, $fast_exp:path, $fast_tanh:path, $exp:ident, $ln:ident, $ln_1p:ident, $exp_m1:ident, $sin:ident, $cos:ident, $tanh:ident, $pow:ident) => {
        impl Transcendental for $t {
            #[inline(always)]
            fn fast_exp(self) -> $t {
                $fast_exp(self)
            }
            fn fast_ln(self) -> $t {
                self.ln()
            }
            fn fast_ln_1p(self) -> $t {
                self.ln_1p()
            }
            fn fast_exp_m1(self) -> $t {
                self.exp_m1()
            }
            fn fast_sin(self) -> $t {
                self.sin()
            }
            fn fast_cos(self) -> $t {
                self.cos()
            }
            #[inline(always)]
            fn fast_tanh(self) -> $t {
                $fast_tanh(self)
            }
            fn fast_powf(self, e: $t) -> $t {
                self.powf(e)
            }
            fn portable_exp(self) -> $t {
                libm::$exp(self)
            }
            fn portable_ln(self) -> $t {
                libm::$ln(self)
            }
            fn portable_ln_1p(self) -> $t {
                libm::$ln_1p(self)
            }
            fn portable_exp_m1(self) -> $t {
                libm::$exp_m1(self)
            }
            fn portable_sin(self) -> $t {
                libm::$sin(self)
            }
            fn portable_cos(self) -> $t {
                libm::$cos(self)
            }
            fn portable_tanh(self) -> $t {
                libm::$tanh(self)
            }
            fn portable_powf(self, e: $t) -> $t {
                libm::$pow(self, e)
            }
        }
    };
}
#[cfg(not(target_arch = "wasm32"))]
transcendental!(f32, straight_f32::exp, straight_f32::tanh, expf, logf, log1pf, expm1f, sinf, cosf, tanhf, powf);
#[cfg(target_arch = "wasm32")]
transcendental!(f32, f32::exp, f32::tanh, expf, logf, log1pf, expm1f, sinf, cosf, tanhf, powf);
transcendental!(f64, f64::exp, f64::tanh, exp, log, log1p, expm1, sin, cos, tanh, pow);

macro_rules! route {
    ($route:ident, $doc:literal, $exp:ident, $ln:ident, $ln_1p:ident, $exp_m1:ident, $sin:ident, $cos:ident, $tanh:ident, $pow:ident) => {
        #[doc = $doc]
        pub mod $route {
            use super::Transcendental;
            #[inline(always)]
            pub fn exp<T: Transcendental>(x: T) -> T {
                x.$exp()
            }
            #[inline(always)]
            pub fn ln<T: Transcendental>(x: T) -> T {
                x.$ln()
            }
            #[inline(always)]
            pub fn ln_1p<T: Transcendental>(x: T) -> T {
                x.$ln_1p()
            }
            /// e^x - 1, exact near 0 (ELU's negative branch).
            #[inline(always)]
            pub fn exp_m1<T: Transcendental>(x: T) -> T {
                x.$exp_m1()
            }
            #[inline(always)]
            pub fn sin<T: Transcendental>(x: T) -> T {
                x.$sin()
            }
            #[inline(always)]
            pub fn cos<T: Transcendental>(x: T) -> T {
                x.$cos()
            }
            #[inline(always)]
            pub fn tanh<T: Transcendental>(x: T) -> T {
                x.$tanh()
            }
            #[inline(always)]
            pub fn powf<T: Transcendental>(x: T, e: T) -> T {
                x.$pow(e)
            }
        }
    };
}
route!(
    fast,
    "The target's own functions (the default).",
    fast_exp,
    fast_ln,
    fast_ln_1p,
    fast_exp_m1,
    fast_sin,
    fast_cos,
    fast_tanh,
    fast_powf
);
route!(
    portable,
    "The `libm` crate's functions: the same bits on every target.",
    portable_exp,
    portable_ln,
    portable_ln_1p,
    portable_exp_m1,
    portable_sin,
    portable_cos,
    portable_tanh,
    portable_powf
);

/// `x ** e` for the host-side scalars of kernels and optimizers (learning-rate
/// factors, Adam's bias corrections): always the portable route, so a step's
/// scalars are the same on every target in either mode (their cost is nil).
pub fn host_powf(x: f64, e: f64) -> f64 {
    libm::pow(x, e)
}

/// `cos(x)` for host-side scalars (cosine schedules), portable like `host_powf`.
pub fn host_cos(x: f64) -> f64 {
    libm::cos(x)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::straight_f32;

    /// Distance in units in the last place between two finite f32 of one sign.
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    /// Every 61st f32 from -110 to 110 (about 35 million values), checked
    /// against the f64 functions rounded to f32.
    #[test]
    fn straight_exp_and_tanh_are_within_3_ulp() {
        let (mut worst_exp, mut worst_tanh) = (0, 0);
        let mut check = |x: f32| {
            let e = straight_f32::exp(x);
            let want = (x as f64).exp() as f32;
            // Subnormal results hold fewer bits: compare them absolutely.
            if want >= f32::MIN_POSITIVE || want == f32::INFINITY {
                worst_exp = worst_exp.max(if e == want { 0 } else { ulps(e, want) });
            } else {
                assert!((e - want).abs() <= 2.0 * f32::from_bits(1), "exp({x}) = {e}, want {want}");
            }
            let t = straight_f32::tanh(x);
            let want = (x as f64).tanh() as f32;
            assert_eq!(t.is_sign_negative(), want.is_sign_negative(), "tanh({x})");
            worst_tanh = worst_tanh.max(ulps(t.abs(), want.abs()));
        };
        let mut bits = 0u32;
        while bits < 0x42dc_0000 {
            let x = f32::from_bits(bits);
            check(x);
            check(-x);
            bits += 61;
        }
        assert!(worst_exp <= 3 && worst_tanh <= 3, "worst: exp {worst_exp} ulp, tanh {worst_tanh} ulp");
    }

    #[test]
    fn straight_exp_and_tanh_special_values() {
        assert!(straight_f32::exp(f32::NAN).is_nan() && straight_f32::tanh(f32::NAN).is_nan());
        assert_eq!(straight_f32::exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(straight_f32::exp(89.0), f32::INFINITY);
        assert_eq!(straight_f32::exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(straight_f32::exp(0.0), 1.0);
        assert_eq!(straight_f32::exp(-0.0), 1.0);
        assert_eq!(straight_f32::tanh(f32::INFINITY), 1.0);
        assert_eq!(straight_f32::tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(straight_f32::tanh(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(straight_f32::tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(straight_f32::tanh(1e-30), 1e-30);
    }
}
