//! The transcendental functions of the cpu kernels, in two routes: `fast`
//! (the target's own: the platform's libm natively, compiler-builtins' in
//! wasm) and `portable` (the `libm` crate's, the same code and so the same
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

macro_rules! transcendental {
    ($t:ty, $exp:ident, $ln:ident, $ln_1p:ident, $exp_m1:ident, $sin:ident, $cos:ident, $tanh:ident, $pow:ident) => {
        impl Transcendental for $t {
            fn fast_exp(self) -> $t {
                self.exp()
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
            fn fast_tanh(self) -> $t {
                self.tanh()
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
transcendental!(f32, expf, logf, log1pf, expm1f, sinf, cosf, tanhf, powf);
transcendental!(f64, exp, log, log1p, expm1, sin, cos, tanh, pow);

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
