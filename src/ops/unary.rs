//! Unary elementwise ops: one table row each (name, scalar formula, what
//! backward saves, backward rule in tensor code, test cases). The formula is
//! expanded into an f32 and an f64 slice kernel by `unary_row!`.

#[cfg(feature = "testing")]
use super::reference::{self, Kind};
use super::{expect_float, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::elementwise as be;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::{UnaryFns, UnaryKernel};
use crate::tensor::Tensor;

/// What a unary row's backward reads back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saves {
    Nothing,
    Input,
    Output,
}

/// One row of the unary table.
pub struct UnaryDef {
    pub op: OpDef,
    pub kernel: UnaryKernel,
    pub saves: Saves,
}

/// Scalar math both float widths share (erf is not in std).
pub trait Real: Copy {
    fn erf_(self) -> Self;
    /// The standard normal CDF, 0.5 * (1 + erf(x / sqrt(2))).
    fn normal_cdf(self) -> Self;
    /// GELU's tanh approximation, with sqrt(2/pi) at the width's full
    /// precision, with the route's `tanh`.
    fn gelu_tanh(self, tanh: fn(Self) -> Self) -> Self;
    /// SELU with the width's constants, with the route's `exp_m1`.
    fn selu_(self, exp_m1: fn(Self) -> Self) -> Self;
}
impl Real for f32 {
    fn erf_(self) -> f32 {
        libm::erff(self)
    }
    fn normal_cdf(self) -> f32 {
        0.5 * (1.0 + libm::erff(self * std::f32::consts::FRAC_1_SQRT_2))
    }
    fn gelu_tanh(self, tanh: fn(f32) -> f32) -> f32 {
        0.5 * self * (1.0 + tanh(SQRT_2_OVER_PI as f32 * (self + GELU_K as f32 * self * self * self)))
    }
    fn selu_(self, exp_m1: fn(f32) -> f32) -> f32 {
        if self > 0.0 {
            SELU_SCALE as f32 * self
        } else {
            (SELU_SCALE * SELU_ALPHA) as f32 * exp_m1(self)
        }
    }
}
impl Real for f64 {
    fn erf_(self) -> f64 {
        libm::erf(self)
    }
    fn normal_cdf(self) -> f64 {
        0.5 * (1.0 + libm::erf(self * std::f64::consts::FRAC_1_SQRT_2))
    }
    fn gelu_tanh(self, tanh: fn(f64) -> f64) -> f64 {
        0.5 * self * (1.0 + tanh(SQRT_2_OVER_PI * (self + GELU_K * self * self * self)))
    }
    fn selu_(self, exp_m1: fn(f64) -> f64) -> f64 {
        if self > 0.0 {
            SELU_SCALE * self
        } else {
            SELU_SCALE * SELU_ALPHA * exp_m1(self)
        }
    }
}

/// A slice kernel from a formula, whose `exp(x)`, `tanh(x)` and the like
/// resolve to `$route` (`kernel::math::fast` or `portable`).
macro_rules! slice_kernel {
    ($route:ident, $t:ty, |$x:ident, $p:ident| $e:expr) => {{
        #[allow(unused_variables, unused_imports, clippy::redundant_closure_call)]
        fn k(xs: &[$t], out: &mut [$t], $p: [$t; 2]) {
            use $crate::kernel::math::$route::*;
            for (o, &$x) in out.iter_mut().zip(xs) {
                *o = $e;
            }
        }
        k
    }};
}

macro_rules! unary_row {
    ($NAME:ident, $name:literal, sig: $sig:literal, doc: $doc:literal, fwd: $fw:expr, |$x:ident, $p:ident| $e:expr, wgsl: $wgsl:literal, saves: $saves:ident,
     second_order: $so:expr, backward: $bw:expr, cases: $cases:expr) => {
        pub static $NAME: UnaryDef = UnaryDef {
            op: OpDef {
                name: $name,
                signature: $sig,
                doc: $doc,
                forward: Some(Forward::One($fw)),
                kind: OpKind::Primitive,
                backward: Some($bw),
                second_order: $so,
                #[cfg(feature = "testing")]
                cases: $cases,
            },
            kernel: UnaryKernel {
                name: $name,
                #[cfg(not(target_arch = "wasm32"))]
                fast: UnaryFns {
                    f32: slice_kernel!(fast, f32, |$x, $p| $e),
                    f64: slice_kernel!(fast, f64, |$x, $p| $e),
                },
                portable: UnaryFns {
                    f32: slice_kernel!(portable, f32, |$x, $p| $e),
                    f64: slice_kernel!(portable, f64, |$x, $p| $e),
                },
                wgsl: $wgsl,
            },
            saves: Saves::$saves,
        };
    };
}

fn one(g: Result<Tensor>) -> Result<Vec<Option<Tensor>>> {
    Ok(vec![Some(g?)])
}

fn p0(a: &Attrs) -> f64 {
    match a {
        Attrs::Scalars(p) => p[0],
        _ => 0.0,
    }
}
fn p1(a: &Attrs) -> f64 {
    match a {
        Attrs::Scalars(p) => p[1],
        _ => 0.0,
    }
}

#[cfg(feature = "testing")]
fn shape() -> Vec<usize> {
    vec![3, 4]
}

/// One case of a unary row on `shape()`, also run on an empty and a 0-d
/// input, checked against the scalar formula after `ref:` (the op's
/// definition written out again, independently of the row's kernel).
#[cfg(feature = "testing")]
macro_rules! cases {
    ($name:literal, $input:expr, |$xs:ident| $run:expr, ref: |$x:ident| $formula:expr) => {
        || {
            vec![unary_case(Case::new($name, vec![$input], |$xs| $run))
                .reference(|h| reference::map(&h[0], |$x| $formula))]
        }
    };
}

/// A unary case, also on an empty and a 0-d input.
#[cfg(feature = "testing")]
fn unary_case(case: Case) -> Case {
    case.also(Sample::Empty, &[&[0, 4]]).also(Sample::Scalar, &[&[]])
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
const GELU_K: f64 = 0.044715;
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

unary_row!(NEG, "neg", sig: "neg(self) -> Tensor", doc: "-x, elementwise.", fwd: |a| a.this()?.neg(), |x, p| -x, wgsl: "-x", saves: Nothing, second_order: true,
    backward: |_, g| one(g[0].neg()),
    cases: cases!("neg", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].neg(), ref: |x| -x));
unary_row!(EXP, "exp", sig: "exp(self) -> Tensor", doc: "e^x, elementwise.", fwd: |a| a.this()?.exp(), |x, p| exp(x), wgsl: "exp(x)", saves: Output, second_order: true,
    backward: |c, g| one(g[0].mul(c.saved(0))),
    cases: cases!("exp", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].exp(), ref: |x| x.exp()));
unary_row!(LOG, "log", sig: "log(self) -> Tensor", doc: "Natural logarithm, elementwise.", fwd: |a| a.this()?.log(), |x, p| ln(x), wgsl: "log(x)", saves: Input, second_order: true,
    backward: |c, g| one(g[0].div(c.saved(0))),
    cases: cases!("log", Input::Uniform(shape(), 0.5, 3.0), |xs| xs[0].log(), ref: |x| x.ln()));
unary_row!(SQRT, "sqrt", sig: "sqrt(self) -> Tensor", doc: "Square root, elementwise.", fwd: |a| a.this()?.sqrt(), |x, p| x.sqrt(), wgsl: "sqrt(x)", saves: Output, second_order: true,
    backward: |c, g| one(g[0].div(c.saved(0)).and_then(|t| t.mul_scalar(0.5))),
    cases: cases!("sqrt", Input::Uniform(shape(), 0.5, 3.0), |xs| xs[0].sqrt(), ref: |x| x.sqrt()));
unary_row!(RSQRT, "rsqrt", sig: "rsqrt(self) -> Tensor", doc: "1 / sqrt(x), elementwise.", fwd: |a| a.this()?.rsqrt(), |x, p| 1.0 / x.sqrt(), wgsl: "inverseSqrt(x)", saves: Output, second_order: true,
    backward: |c, g| { let y = c.saved(0); one(g[0].mul(&y.mul(y)?.mul(y)?)?.mul_scalar(-0.5)) },
    cases: cases!("rsqrt", Input::Uniform(shape(), 0.5, 3.0), |xs| xs[0].rsqrt(), ref: |x| x.powf(-0.5)));
unary_row!(ABS, "abs", sig: "abs(self) -> Tensor", doc: "|x|, elementwise.", fwd: |a| a.this()?.abs(), |x, p| x.abs(), wgsl: "abs(x)", saves: Input, second_order: true,
    backward: |c, g| one(g[0].mul(&c.saved(0).sign()?)),
    cases: cases!("abs", Input::AwayFromZero(shape(), 0.1, 2.0), |xs| xs[0].abs(), ref: |x| x.abs()));
unary_row!(SIGN, "sign", sig: "sign(self) -> Tensor", doc: "-1, 0 or 1 by the sign of each element.", fwd: |a| a.this()?.sign(), |x, p| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 }, wgsl: "sign(x)", saves: Nothing, second_order: true,
    backward: |_, g| one(g[0].mul_scalar(0.0)),
    cases: cases!("sign", Input::AwayFromZero(shape(), 0.1, 2.0), |xs| xs[0].sign(), ref: |x| if x == 0.0 { 0.0 } else { x.signum() }));
unary_row!(SIN, "sin", sig: "sin(self) -> Tensor", doc: "Sine, elementwise.", fwd: |a| a.this()?.sin(), |x, p| sin(x), wgsl: "sin(x)", saves: Input, second_order: true,
    backward: |c, g| one(g[0].mul(&c.saved(0).cos()?)),
    cases: cases!("sin", Input::Uniform(shape(), -3.0, 3.0), |xs| xs[0].sin(), ref: |x| x.sin()));
unary_row!(COS, "cos", sig: "cos(self) -> Tensor", doc: "Cosine, elementwise.", fwd: |a| a.this()?.cos(), |x, p| cos(x), wgsl: "cos(x)", saves: Input, second_order: true,
    backward: |c, g| one(g[0].mul(&c.saved(0).sin()?)?.neg()),
    cases: cases!("cos", Input::Uniform(shape(), -3.0, 3.0), |xs| xs[0].cos(), ref: |x| x.cos()));
unary_row!(TANH, "tanh", sig: "tanh(self) -> Tensor", doc: "Hyperbolic tangent, elementwise.", fwd: |a| a.this()?.tanh(), |x, p| tanh(x), wgsl: "tanh(x)", saves: Output, second_order: true,
    backward: |c, g| { let y = c.saved(0); one(g[0].mul(&y.mul(y)?.neg()?.add_scalar(1.0)?)) },
    cases: cases!("tanh", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].tanh(), ref: |x| { let e = (2.0 * x).exp(); (e - 1.0) / (e + 1.0) }));
unary_row!(SIGMOID, "sigmoid", sig: "sigmoid(self) -> Tensor", doc: "1 / (1 + e^-x), elementwise.", fwd: |a| a.this()?.sigmoid(), |x, p| { let e = exp(-x.abs()); if x >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) } }, wgsl: "sigmoid_(x)", saves: Output, second_order: true,
    backward: |c, g| { let y = c.saved(0); one(g[0].mul(&y.mul(&y.neg()?.add_scalar(1.0)?)?)) },
    cases: cases!("sigmoid", Input::Uniform(shape(), -4.0, 4.0), |xs| xs[0].sigmoid(), ref: |x| 1.0 / (1.0 + (-x).exp())));
unary_row!(RELU, "relu", sig: "relu(self) -> Tensor", doc: "max(x, 0), elementwise.", fwd: |a| a.this()?.relu(), |x, p| if x > 0.0 { x } else { 0.0 }, wgsl: "max(x, 0.0)", saves: Output, second_order: true,
    backward: |c, g| one(g[0].relu_backward(c.saved(0))),
    cases: cases!("relu", Input::AwayFromZero(shape(), 0.1, 2.0), |xs| xs[0].relu(), ref: |x| x.max(0.0)));
unary_row!(LEAKY_RELU, "leaky_relu", sig: "leaky_relu(self, negative_slope: float = 0.01) -> Tensor", doc: "x where positive, negative_slope * x elsewhere.", fwd: |a| a.this()?.leaky_relu(a.finite("negative_slope")?), |x, p| if x > 0.0 { x } else { p[0] * x }, wgsl: "select(p0 * x, x, x > 0.0)", saves: Input, second_order: true,
    backward: |c, g| {
        let a = p0(c.attrs());
        let m = c.saved(0).gt_scalar(0.0)?.to_dtype(g[0].dtype())?;
        one(g[0].mul(&m.mul_scalar(1.0 - a)?.add_scalar(a)?))
    },
    cases: cases!("leaky_relu", Input::AwayFromZero(shape(), 0.1, 2.0), |xs| xs[0].leaky_relu(0.1), ref: |x| if x > 0.0 { x } else { 0.1 * x }));
unary_row!(GELU, "gelu", sig: "gelu(self, *, approximate: 'tanh') -> Tensor", doc: "GELU with the tanh approximation (Rust: `gelu`).", fwd: |a| a.this()?.gelu(), |x, p| x.gelu_tanh(tanh), wgsl: "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))", saves: Input, second_order: true,
    backward: |c, g| one(g[0].mul(&gelu_tanh_derivative(c.saved(0))?)),
    cases: cases!("gelu", Input::Uniform(shape(), -3.0, 3.0), |xs| xs[0].gelu(), ref: |x| 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())));
unary_row!(GELU_ERF, "gelu_erf", sig: "gelu(self, *, approximate: 'none' = 'none') -> Tensor", doc: "GELU, exact (erf), PyTorch's default (Rust: `gelu_erf`).", fwd: |a| a.this()?.gelu_erf(), |x, p| x * x.normal_cdf(), wgsl: "0.5 * x * (1.0 + erf_approx(x * 0.70710678118))", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        let cdf = x.mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?.erf()?.add_scalar(1.0)?.mul_scalar(0.5)?;
        let pdf = x.mul(x)?.mul_scalar(-0.5)?.exp()?.mul_scalar(INV_SQRT_2PI)?;
        one(g[0].mul(&cdf.add(&x.mul(&pdf)?)?))
    },
    cases: cases!("gelu_erf", Input::Uniform(shape(), -3.0, 3.0), |xs| xs[0].gelu_erf(), ref: |x| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))));
unary_row!(ERF, "erf", sig: "erf(self) -> Tensor", doc: "The error function, elementwise.", fwd: |a| a.this()?.erf(), |x, p| x.erf_(), wgsl: "erf_approx(x)", saves: Input, second_order: true,
    backward: |c, g| { let x = c.saved(0); one(g[0].mul(&x.mul(x)?.neg()?.exp()?.mul_scalar(std::f64::consts::FRAC_2_SQRT_PI)?)) },
    cases: cases!("erf", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].erf(), ref: |x| libm::erf(x)));
unary_row!(SILU, "silu", sig: "silu(self) -> Tensor", doc: "x * sigmoid(x) (SiLU, swish), elementwise.", fwd: |a| a.this()?.silu(), |x, p| if x >= 0.0 { x / (1.0 + exp(-x)) } else { let e = exp(x); x * e / (1.0 + e) }, wgsl: "x * sigmoid_(x)", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        let s = x.sigmoid()?;
        one(g[0].mul(&s.mul(&x.mul(&s.neg()?.add_scalar(1.0)?)?.add_scalar(1.0)?)?))
    },
    cases: cases!("silu", Input::Uniform(shape(), -4.0, 4.0), |xs| xs[0].silu(), ref: |x| x / (1.0 + (-x).exp())));
unary_row!(SOFTPLUS, "softplus", sig: "softplus(self) -> Tensor", doc: "log(1 + e^x), computed stably, elementwise.", fwd: |a| a.this()?.softplus(), |x, p| x.max(0.0) + ln_1p(exp(-x.abs())), wgsl: "max(x, 0.0) + log(1.0 + exp(-abs(x)))", saves: Input, second_order: true,
    backward: |c, g| one(g[0].mul(&c.saved(0).sigmoid()?)),
    cases: cases!("softplus", Input::Uniform(shape(), -4.0, 4.0), |xs| xs[0].softplus(), ref: |x| (1.0 + x.exp()).ln()));
unary_row!(POW_SCALAR, "pow_scalar", sig: "pow(self, exponent: scalar) -> Tensor", doc: "x ** exponent for a number exponent (Rust: `pow_scalar`).", fwd: |a| a.this()?.pow_scalar(a.float("exponent")?), |x, p| powf(x, p[0]), wgsl: "spow(x, p0)", saves: Input, second_order: true,
backward: |c, g| { let e = p0(c.attrs()); one(g[0].mul(&c.saved(0).pow_scalar(e - 1.0)?.mul_scalar(e)?)) },
cases: || vec![
    unary_case(Case::new("pow_scalar 2.5", vec![Input::Uniform(shape(), 0.5, 2.0)], |xs| xs[0].pow_scalar(2.5)))
        .reference(|h| reference::map(&h[0], |x| (2.5 * x.ln()).exp())),
    Case::new("pow_scalar 3 (negative base)", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].pow_scalar(3.0))
        .reference(|h| reference::map(&h[0], |x| x * x * x)),
    Case::new("pow_scalar -1.5", vec![Input::Uniform(shape(), 0.5, 2.0)], |xs| xs[0].pow_scalar(-1.5))
        .reference(|h| reference::map(&h[0], |x| 1.0 / (x * x.sqrt()))),
]);
unary_row!(ADD_SCALAR, "add_scalar", sig: "add(self, other: scalar) -> Tensor", doc: "x + c for a number c (Rust: `add_scalar`; `sub_scalar` runs it with -c).", fwd: |a| a.this()?.add_scalar(a.float("other")?), |x, p| x + p[0], wgsl: "x + p0", saves: Nothing, second_order: true,
    backward: |_, g| one(Ok(g[0].clone())),
    cases: cases!("add_scalar", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].add_scalar(1.5), ref: |x| x + 1.5));
unary_row!(MUL_SCALAR, "mul_scalar", sig: "mul(self, other: scalar) -> Tensor", doc: "x * c for a number c (Rust: `mul_scalar`; `div_scalar` runs it with 1 / c).", fwd: |a| a.this()?.mul_scalar(a.float("other")?), |x, p| x * p[0], wgsl: "x * p0", saves: Nothing, second_order: true,
    backward: |c, g| one(g[0].mul_scalar(p0(c.attrs()))),
    cases: cases!("mul_scalar", Input::Uniform(shape(), -2.0, 2.0), |xs| xs[0].mul_scalar(-2.5), ref: |x| x * -2.5));
// PyTorch's clamp: a NaN bound makes every element NaN, NaN elements stay
// NaN, and min > max makes every element max (the `x < min` branch picks max
// then, and every other x is above max). The kernel spells this out instead
// of min(max(..)) because std's and WGSL's min/max ignore or do not define NaN.
unary_row!(CLAMP, "clamp", sig: "clamp(self, min: scalar | None = None, max: scalar | None = None) -> Tensor", doc: "Clamps into [min, max]; either bound may be omitted, not both.", fwd: |a| a.this()?.clamp(a.opt_float("min")?, a.opt_float("max")?),
    |x, p| if p[0].is_nan() || p[1].is_nan() { p[0] + p[1] } else if x < p[0] { if p[0] > p[1] { p[1] } else { p[0] } } else if x > p[1] { p[1] } else { x },
    wgsl: "clamp_(x, p0, p1)", saves: Input, second_order: true,
backward: |c, g| {
    // PyTorch's rule: the gradient passes where min <= x <= max (both bounds
    // included), else 0, chosen with `where` so an infinite incoming
    // gradient gives 0 rather than inf * 0. With min > max no x passes; a NaN
    // bound passes none either, decided here rather than by comparing with
    // NaN on a device whose float rules need not honour it.
    let (lo, hi) = (p0(c.attrs()), p1(c.attrs()));
    if lo.is_nan() || hi.is_nan() {
        return one(g[0].zeros_like());
    }
    let x = c.saved(0);
    let z = g[0].zeros_scalar()?;
    one(Tensor::where_(&x.ge_scalar(lo)?, &Tensor::where_(&x.le_scalar(hi)?, &g[0], &z)?, &z))
},
cases: || vec![
    unary_case(Case::new("clamp [-1, 1]", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(Some(-1.0), Some(1.0))))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, -1.0, 1.0))),
    Case::new("clamp min only", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(Some(0.3), None))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, 0.3, f64::INFINITY))),
    Case::new("clamp max only", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(None, Some(-0.3)))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, f64::NEG_INFINITY, -0.3))),
    // Every element becomes max, so the gradient is 0 everywhere, and
    // central differences of the constant output agree.
    unary_case(Case::new("clamp min > max", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(Some(1.0), Some(-1.0))))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, 1.0, -1.0))),
    // Values on a 0.5 grid hit both bounds exactly; the forward only, as
    // central differences straddle the kinks there (tests/core/semantics.rs
    // checks the gradient at the bounds: 1, as PyTorch's).
    Case::new("clamp at the bounds", vec![Input::Grid(shape(), -2.0, 2.0, 9)], |xs| xs[0].clamp(Some(-1.0), Some(1.0)))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, -1.0, 1.0)))
        .forward_only(),
    // NaN bounds: every element NaN (forward only: no finite differences
    // of NaN; tests/core/semantics.rs checks the zero gradient).
    unary_case(Case::new("clamp min NaN", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(Some(f64::NAN), Some(1.0))))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, f64::NAN, 1.0)))
        .nonfinite()
        .forward_only(),
    Case::new("clamp min only NaN", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(Some(f64::NAN), None))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, f64::NAN, f64::INFINITY)))
        .nonfinite()
        .forward_only(),
    Case::new("clamp max only NaN", vec![Input::Uniform(shape(), -2.0, 2.0)], |xs| xs[0].clamp(None, Some(f64::NAN)))
        .reference(|h| reference::map(&h[0], |x| clamp_reference(x, f64::NEG_INFINITY, f64::NAN)))
        .nonfinite()
        .forward_only(),
]);

// The activations below follow PyTorch's definitions and its gradients at
// the kinks (hardswish: (x/3 + 1/2) on [-3, 3], hardsigmoid: 1/6 on the open
// interval only); their cases keep x off the kinks.
unary_row!(ELU, "elu", sig: "elu(self, alpha: float = 1) -> Tensor", doc: "x where positive, alpha * (e^x - 1) elsewhere.", fwd: |a| a.this()?.elu(a.finite("alpha")?), |x, p| if x > 0.0 { x } else { p[0] * exp_m1(x) }, wgsl: "select(p0 * (exp(x) - 1.0), x, x > 0.0)", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        one(Tensor::where_(&x.gt_scalar(0.0)?, &g[0], &g[0].mul(&x.exp()?.mul_scalar(p0(c.attrs()))?)?))
    },
    cases: cases!("elu", Input::AwayFromZero(shape(), 0.05, 3.0), |xs| xs[0].elu(0.7), ref: |x| if x > 0.0 { x } else { 0.7 * x.exp_m1() }));
unary_row!(SELU, "selu", sig: "selu(self) -> Tensor", doc: "scale * elu(x, alpha) with SELU's fixed alpha and scale.", fwd: |a| a.this()?.selu(), |x, p| x.selu_(exp_m1), wgsl: "select(1.7580993408473766 * (exp(x) - 1.0), 1.0507009873554805 * x, x > 0.0)", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        one(Tensor::where_(&x.gt_scalar(0.0)?, &g[0].mul_scalar(SELU_SCALE)?, &g[0].mul(&x.exp()?.mul_scalar(SELU_SCALE * SELU_ALPHA)?)?))
    },
    cases: cases!("selu", Input::AwayFromZero(shape(), 0.05, 3.0), |xs| xs[0].selu(), ref: |x| SELU_SCALE * if x > 0.0 { x } else { SELU_ALPHA * (x.exp() - 1.0) }));
unary_row!(MISH, "mish", sig: "mish(self) -> Tensor", doc: "x * tanh(softplus(x)), elementwise.", fwd: |a| a.this()?.mish(), |x, p| x * tanh(x.max(0.0) + ln_1p(exp(-x.abs()))), wgsl: "x * tanh(max(x, 0.0) + log(1.0 + exp(-abs(x))))", saves: Input, second_order: true,
    backward: |c, g| {
        // d/dx = tanh(sp) + x * sech^2(sp) * sigmoid(x), sp = softplus(x).
        let x = c.saved(0);
        let t = x.softplus()?.tanh()?;
        let sech2 = t.mul(&t)?.neg()?.add_scalar(1.0)?;
        one(g[0].mul(&t.add(&x.mul(&sech2)?.mul(&x.sigmoid()?)?)?))
    },
    cases: cases!("mish", Input::Uniform(shape(), -5.0, 5.0), |xs| xs[0].mish(), ref: |x| x * (1.0 + x.exp()).ln().tanh()));
unary_row!(HARDSWISH, "hardswish", sig: "hardswish(self) -> Tensor", doc: "x * relu6(x + 3) / 6, elementwise.", fwd: |a| a.this()?.hardswish(), |x, p| if x <= -3.0 { 0.0 } else if x >= 3.0 { x } else { x * (x + 3.0) / 6.0 }, wgsl: "select(select(x * (x + 3.0) / 6.0, x, x >= 3.0), 0.0, x <= -3.0)", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        let z = g[0].zeros_scalar()?;
        let mid = g[0].mul(&x.mul_scalar(1.0 / 3.0)?.add_scalar(0.5)?)?;
        one(Tensor::where_(&x.lt_scalar(-3.0)?, &z, &Tensor::where_(&x.le_scalar(3.0)?, &mid, &g[0])?))
    },
    cases: cases!("hardswish", Input::Uniform(shape(), -5.0, 5.0), |xs| xs[0].hardswish(), ref: |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0));
unary_row!(HARDSIGMOID, "hardsigmoid", sig: "hardsigmoid(self) -> Tensor", doc: "relu6(x + 3) / 6, elementwise.", fwd: |a| a.this()?.hardsigmoid(), |x, p| if x <= -3.0 { 0.0 } else if x >= 3.0 { 1.0 } else { x / 6.0 + 0.5 }, wgsl: "clamp(x / 6.0 + 0.5, 0.0, 1.0)", saves: Input, second_order: true,
    backward: |c, g| {
        let x = c.saved(0);
        let z = g[0].zeros_scalar()?;
        let inside = Tensor::where_(&x.lt_scalar(3.0)?, &g[0].mul_scalar(1.0 / 6.0)?, &z)?;
        one(Tensor::where_(&x.gt_scalar(-3.0)?, &inside, &z))
    },
    cases: cases!("hardsigmoid", Input::Uniform(shape(), -5.0, 5.0), |xs| xs[0].hardsigmoid(), ref: |x| (x + 3.0).clamp(0.0, 6.0) / 6.0));

/// SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// clamp from its definition, case by case (not the kernel's branch order):
/// NaN anywhere gives NaN, min > max gives max, else x limited to [min, max].
#[cfg(feature = "testing")]
fn clamp_reference(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() || lo.is_nan() || hi.is_nan() {
        f64::NAN
    } else if lo > hi {
        hi
    } else if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

fn gelu_tanh_derivative(x: &Tensor) -> Result<Tensor> {
    let x2 = x.mul(x)?;
    let u = x.mul(&x2.mul_scalar(GELU_K)?.add_scalar(1.0)?)?.mul_scalar(SQRT_2_OVER_PI)?;
    let t = u.tanh()?;
    let left = t.add_scalar(1.0)?.mul_scalar(0.5)?;
    let sech2 = t.mul(&t)?.neg()?.add_scalar(1.0)?;
    let right = x.mul(&sech2)?.mul(&x2.mul_scalar(3.0 * GELU_K)?.add_scalar(1.0)?)?.mul_scalar(0.5 * SQRT_2_OVER_PI)?;
    left.add(&right)
}

/// Runs a unary row: float check, kernel, and (when needed) the record.
/// Unary rows autocast runs in f32 (`amp`): f16 would overflow or lose too much.
const AUTOCAST_F32: &[&str] = &["exp", "log", "rsqrt", "softplus", "pow_scalar"];

pub(crate) fn unary(def: &'static UnaryDef, x: &Tensor, p: [f64; 2]) -> Result<Tensor> {
    if AUTOCAST_F32.contains(&def.op.name) {
        if let Some(wide) = crate::amp::widened(x)? {
            return unary(def, &wide, p);
        }
    }
    expect_float(def.op.name, x)?;
    let out = be::unary(def.op.name, x, &def.kernel, p)?;
    if !needs_record(&[x]) {
        return Ok(out);
    }
    let saved: &[&Tensor] = if def.saves == Saves::Input { &[x] } else { &[] };
    record(&def.op, Attrs::Scalars(p), &[x], saved, def.saves == Saves::Output, out)
}

static TO_DTYPE: OpDef = OpDef {
    name: "to_dtype",
    signature: "to_dtype(self, dtype: DType) -> Tensor",
    doc: "A copy converted to `dtype` (floats to int32 truncate toward zero; nonzero is true).",
    forward: Some(Forward::One(|a| a.this()?.to_dtype(a.dtype("dtype")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let back = c.input_dtype(0);
        Ok(vec![Some(g[0].to_dtype(back)?)])
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        // Multiples of 1/16 in [-2, 2]: exact in f32, and so are x +- 2^-6,
        // the finite-difference step through the f32 leg (a 1e-6 step would
        // round away there, and the case would need a tolerance that hides
        // a wrong gradient).
        let exact = || vec![Input::Grid(vec![2, 3], -2.0, 2.0, 65)];
        vec![
            Case::new("f32 round trip through f64", exact(), |xs| {
                let other = if xs[0].dtype() == DType::F64 { DType::F32 } else { DType::F64 };
                xs[0].to_dtype(other)?.mul_scalar(2.0)?.to_dtype(xs[0].dtype())
            })
            .step(1.0 / 64.0)
            .reference(|h| reference::map(&h[0], |x| 2.0 * x)),
            Case::new("float to i32 truncates toward zero", vec![Input::Uniform(vec![3, 4], -3.0, 3.0)], |xs| {
                xs[0].to_dtype(DType::I32)
            })
            .also(Sample::Empty, &[&[0, 4]])
            .also(Sample::Scalar, &[&[]])
            .reference(|h| reference::cast(&h[0], Kind::I32)),
            Case::new("float to bool is != 0", exact(), |xs| xs[0].to_dtype(DType::Bool))
                .reference(|h| reference::cast(&h[0], Kind::Bool)),
            Case::new("i32 to f32", vec![Input::Int(vec![3, 4], -50, 50)], |xs| xs[0].to_dtype(DType::F32))
                .reference(|h| reference::cast(&h[0], Kind::F32)),
            Case::new("i32 to bool", vec![Input::Int(vec![3, 4], -2, 3)], |xs| xs[0].to_dtype(DType::Bool))
                .reference(|h| reference::cast(&h[0], Kind::Bool)),
            Case::new(
                "bool to f32 times x",
                vec![Input::Mask(vec![3, 4]), Input::Uniform(vec![3, 4], -1.0, 1.0)],
                |xs| xs[0].to_dtype(xs[1].dtype())?.mul(&xs[1]),
            )
            .reference(|h| reference::zip(&h[0], &h[1], Kind::Float, |m, x| m * x)),
        ]
    },
};

/// Every unary table row (the GPU kernel catalog instantiates one kernel per row).
pub fn rows() -> Vec<&'static UnaryDef> {
    vec![
        &NEG,
        &EXP,
        &LOG,
        &SQRT,
        &RSQRT,
        &ABS,
        &SIGN,
        &SIN,
        &COS,
        &TANH,
        &SIGMOID,
        &RELU,
        &LEAKY_RELU,
        &GELU,
        &GELU_ERF,
        &ERF,
        &SILU,
        &SOFTPLUS,
        &POW_SCALAR,
        &ADD_SCALAR,
        &MUL_SCALAR,
        &CLAMP,
        &ELU,
        &SELU,
        &MISH,
        &HARDSWISH,
        &HARDSIGMOID,
    ]
}

pub fn ops() -> Vec<&'static OpDef> {
    let mut v: Vec<&'static OpDef> = rows().into_iter().map(|r| &r.op).collect();
    v.push(&TO_DTYPE);
    v
}

impl Tensor {
    pub fn neg(&self) -> Result<Tensor> {
        unary(&NEG, self, [0.0; 2])
    }
    pub fn exp(&self) -> Result<Tensor> {
        unary(&EXP, self, [0.0; 2])
    }
    /// Natural logarithm.
    pub fn log(&self) -> Result<Tensor> {
        unary(&LOG, self, [0.0; 2])
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        unary(&SQRT, self, [0.0; 2])
    }
    /// 1 / sqrt(x).
    pub fn rsqrt(&self) -> Result<Tensor> {
        unary(&RSQRT, self, [0.0; 2])
    }
    pub fn abs(&self) -> Result<Tensor> {
        unary(&ABS, self, [0.0; 2])
    }
    /// -1, 0 or 1 (gradient zero).
    pub fn sign(&self) -> Result<Tensor> {
        unary(&SIGN, self, [0.0; 2])
    }
    pub fn sin(&self) -> Result<Tensor> {
        unary(&SIN, self, [0.0; 2])
    }
    pub fn cos(&self) -> Result<Tensor> {
        unary(&COS, self, [0.0; 2])
    }
    pub fn tanh(&self) -> Result<Tensor> {
        unary(&TANH, self, [0.0; 2])
    }
    pub fn sigmoid(&self) -> Result<Tensor> {
        unary(&SIGMOID, self, [0.0; 2])
    }
    pub fn relu(&self) -> Result<Tensor> {
        unary(&RELU, self, [0.0; 2])
    }
    /// `x` where positive, `slope * x` elsewhere.
    pub fn leaky_relu(&self, slope: f64) -> Result<Tensor> {
        unary(&LEAKY_RELU, self, [slope, 0.0])
    }
    /// GELU, tanh approximation (PyTorch's `approximate='tanh'`).
    pub fn gelu(&self) -> Result<Tensor> {
        unary(&GELU, self, [0.0; 2])
    }
    /// GELU, exact form with erf (PyTorch's default).
    pub fn gelu_erf(&self) -> Result<Tensor> {
        unary(&GELU_ERF, self, [0.0; 2])
    }
    pub fn erf(&self) -> Result<Tensor> {
        unary(&ERF, self, [0.0; 2])
    }
    /// x * sigmoid(x).
    pub fn silu(&self) -> Result<Tensor> {
        unary(&SILU, self, [0.0; 2])
    }
    /// log(1 + exp(x)), computed stably.
    pub fn softplus(&self) -> Result<Tensor> {
        unary(&SOFTPLUS, self, [0.0; 2])
    }
    /// x raised to a scalar power.
    pub fn pow_scalar(&self, exponent: f64) -> Result<Tensor> {
        unary(&POW_SCALAR, self, [exponent, 0.0])
    }
    pub fn add_scalar(&self, c: f64) -> Result<Tensor> {
        unary(&ADD_SCALAR, self, [c, 0.0])
    }
    pub fn sub_scalar(&self, c: f64) -> Result<Tensor> {
        unary(&ADD_SCALAR, self, [-c, 0.0])
    }
    pub fn mul_scalar(&self, c: f64) -> Result<Tensor> {
        unary(&MUL_SCALAR, self, [c, 0.0])
    }
    pub fn div_scalar(&self, c: f64) -> Result<Tensor> {
        unary(&MUL_SCALAR, self, [1.0 / c, 0.0])
    }
    /// Clamps into [min, max]; either bound may be absent. As PyTorch: a NaN
    /// bound makes every element NaN, NaN elements stay NaN, and with
    /// min > max every element becomes max. The gradient is 1 where
    /// min <= x <= max (bounds included) and 0 elsewhere.
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            // PyTorch: "At least one of 'min' or 'max' must not be None".
            return Err(crate::error::Error::value("clamp", "at least one of min and max must be given"));
        }
        unary(&CLAMP, self, [min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY)])
    }
    /// x where positive, alpha * (e^x - 1) elsewhere (PyTorch's default alpha is 1).
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        unary(&ELU, self, [alpha, 0.0])
    }
    /// SELU: scale * elu(x, alpha) with alpha = 1.6733, scale = 1.0507.
    pub fn selu(&self) -> Result<Tensor> {
        unary(&SELU, self, [0.0; 2])
    }
    /// x * tanh(softplus(x)).
    pub fn mish(&self) -> Result<Tensor> {
        unary(&MISH, self, [0.0; 2])
    }
    /// x * relu6(x + 3) / 6.
    pub fn hardswish(&self) -> Result<Tensor> {
        unary(&HARDSWISH, self, [0.0; 2])
    }
    /// relu6(x + 3) / 6.
    pub fn hardsigmoid(&self) -> Result<Tensor> {
        unary(&HARDSIGMOID, self, [0.0; 2])
    }
    /// Converts to `dtype` (a copy; gradients flow between float dtypes).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out = be::cast(self, dtype)?;
        if dtype.is_float() && needs_record(&[self]) {
            return record(&TO_DTYPE, Attrs::DType(dtype), &[self], &[], false, out);
        }
        Ok(out)
    }
}
