//! Random fills as data: a `Distribution` and a 64-bit seed. Element `i` of a
//! fill is a pure function of (seed, i) (a counter-based generator), so two
//! equal specs give the same bits on every backend and every target, in any
//! order, and a recorded spec replays by changing only its seed.
//!
//! Note (bit-identical everywhere): the samples use only IEEE-754 basic
//! operations (+, -, *, /, sqrt, conversions), which every target rounds the
//! same way, and integer arithmetic. The logarithm and cosine of Box-Muller
//! are computed here from those (`ln_unit`, `cos_turns`) rather than with
//! `f64::ln`/`f64::cos`, which call the platform's libm: glibc natively and a
//! musl port in wasm differ in the last bit now and then.

use super::Scalar;
use crate::dtype::DType;

/// What a random fill draws, per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// Uniform in `[lo, hi)` (all `lo` when `lo == hi`); float dtypes.
    Uniform { lo: Scalar, hi: Scalar },
    /// Standard normal (Box-Muller); float dtypes.
    Normal,
    /// Integers uniform in `[lo, hi)`, `lo < hi`; i32.
    RandInt { lo: i32, hi: i32 },
    /// `true` with probability `p` in `[0, 1]`; bool (dropout's keep mask).
    Bernoulli { p: Scalar },
}

impl Distribution {
    /// The distribution's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Distribution::Uniform { .. } => "uniform",
            Distribution::Normal => "normal",
            Distribution::RandInt { .. } => "randint",
            Distribution::Bernoulli { .. } => "bernoulli",
        }
    }

    /// Whether the distribution can fill a buffer of `dtype`.
    pub fn produces(&self, dtype: DType) -> bool {
        match self {
            Distribution::Uniform { .. } | Distribution::Normal => dtype.is_float(),
            Distribution::RandInt { .. } => dtype == DType::I32,
            Distribution::Bernoulli { .. } => dtype == DType::Bool,
        }
    }

    /// Element `i` of the fill keyed by `stream`, in f64 (exact for
    /// `RandInt`; 0 or 1 for `Bernoulli`). Float dtypes narrower than f64 go
    /// through `sample_f32`, which keeps a uniform sample below `hi`.
    pub fn sample_f64(&self, stream: &Stream, i: u64) -> f64 {
        match *self {
            Distribution::Uniform { lo, hi } => {
                below(uniform_between(lo.0, hi.0, unit(stream.bits(i, 0))), lo.0, hi.0, |v| v, next_down_f64)
            }
            Distribution::Normal => {
                // Box-Muller: u1 in (0, 1] keeps the logarithm finite.
                let u1 = ((1u64 << 53) - (stream.bits(i, 0) >> 11)) as f64 * EPS53;
                (-2.0 * ln_unit(u1)).sqrt() * cos_turns(stream.bits(i, 1) >> 11)
            }
            Distribution::RandInt { lo, hi } => {
                let span = (hi as i64 - lo as i64) as u64;
                (lo as i64 + (stream.bits(i, 0) % span) as i64) as f64
            }
            Distribution::Bernoulli { p } => (unit(stream.bits(i, 0)) < p.0) as u8 as f64,
        }
    }

    /// Element `i` as an f32: the f64 sample rounded, except that a uniform
    /// sample rounded up to `hi` becomes the largest f32 below it.
    pub fn sample_f32(&self, stream: &Stream, i: u64) -> f32 {
        let v = self.sample_f64(stream, i);
        match *self {
            Distribution::Uniform { lo, hi } => below(v as f32, lo.0, hi.0, |x| x as f64, next_down_f32),
            _ => v as f32,
        }
    }
}

/// `v`, or the value just below it when rounding took it to `hi` or above
/// (only possible for `lo < hi`; `lo == hi` gives `lo` itself).
fn below<T: Copy>(v: T, lo: f64, hi: f64, wide: impl Fn(T) -> f64, down: impl Fn(T) -> T) -> T {
    if lo < hi && wide(v) >= hi {
        down(v)
    } else {
        v
    }
}

/// The largest f64 below the finite `x` (`f64::next_down`, newer than the MSRV).
fn next_down_f64(x: f64) -> f64 {
    match x {
        0.0 => -f64::from_bits(1),
        _ if x > 0.0 => f64::from_bits(x.to_bits() - 1),
        _ => f64::from_bits(x.to_bits() + 1),
    }
}

/// The largest f32 below the finite `x`.
fn next_down_f32(x: f32) -> f32 {
    match x {
        0.0 => -f32::from_bits(1),
        _ if x > 0.0 => f32::from_bits(x.to_bits() - 1),
        _ => f32::from_bits(x.to_bits() + 1),
    }
}

/// `lo + (hi - lo) * u`, without overflowing when `hi - lo` exceeds f64's range.
fn uniform_between(lo: f64, hi: f64, u: f64) -> f64 {
    let span = hi - lo;
    if span.is_finite() {
        lo + span * u
    } else {
        lo * (1.0 - u) + hi * u
    }
}

/// 2^-53: the spacing of the 53-bit uniform grid.
const EPS53: f64 = 1.0 / (1u64 << 53) as f64;

/// Uniform in `[0, 1)` from the top 53 of 64 random bits.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * EPS53
}

/// The splitmix64 output function: a bijection of u64 that mixes every bit
/// into every other.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The random bits of one fill, addressed by (element, draw): two rounds of
/// splitmix64's mixer keyed by the seed. For a fixed seed the map from
/// counter to bits is a bijection (no two draws of a fill collide), and the
/// key enters between the rounds, so fills of different seeds are not
/// shifted copies of one stream (plain splitmix64 streams would be).
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    key: u64,
    seed: u64,
}

impl Stream {
    pub fn new(seed: u64) -> Stream {
        Stream { key: mix(seed ^ 0x243F_6A88_85A3_08D3), seed }
    }

    /// Draw `k` (0 or 1) of element `i`.
    pub fn bits(&self, i: u64, k: u64) -> u64 {
        let counter = i.wrapping_mul(2).wrapping_add(k);
        mix(mix(counter.wrapping_mul(GAMMA) ^ self.key).wrapping_add(self.seed))
    }
}

/// ln(x) for x in (0, 1], a multiple of 2^-53 (so normal: no subnormals).
/// x = m * 2^e with m in (sqrt(2)/2, sqrt(2)]; ln m = 2 atanh(s) with
/// s = (m - 1) / (m + 1), |s| < 0.172, whose odd series to s^25 is below
/// 2^-60 relative.
fn ln_unit(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut sum = 0.0;
    for k in (0..13).rev() {
        sum = sum * s2 + 1.0 / (2 * k + 1) as f64;
    }
    2.0 * s * sum + e as f64 * std::f64::consts::LN_2
}

/// (-1)^k / (2k)!, the cosine series' coefficients.
const COS: [f64; 10] = {
    let mut c = [0.0; 10];
    c[0] = 1.0;
    let mut k = 1;
    while k < 10 {
        c[k] = -c[k - 1] / ((2 * k - 1) * (2 * k)) as f64;
        k += 1;
    }
    c
};

/// (-1)^k / (2k+1)!, the sine series' coefficients.
const SIN: [f64; 10] = {
    let mut c = [0.0; 10];
    c[0] = 1.0;
    let mut k = 1;
    while k < 10 {
        c[k] = -c[k - 1] / ((2 * k) * (2 * k + 1)) as f64;
        k += 1;
    }
    c
};

fn series(t2: f64, coef: &[f64; 10]) -> f64 {
    coef.iter().rev().fold(0.0, |acc, &c| acc * t2 + c)
}

/// cos(2 pi j / 2^53) for j < 2^53: the nearest quarter turn q is taken
/// exactly on the integer, leaving an angle t in [-pi/4, pi/4] for the
/// Taylor series (terms to t^19: below 2^-60).
fn cos_turns(j: u64) -> f64 {
    let q = (j + (1 << 50)) >> 51;
    let d = j as i64 - (q << 51) as i64;
    let t = d as f64 * EPS53 * (2.0 * std::f64::consts::PI);
    let t2 = t * t;
    match q % 4 {
        0 => series(t2, &COS),
        1 => -t * series(t2, &SIN),
        2 => -series(t2, &COS),
        _ => t * series(t2, &SIN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logarithm_and_cosine_agree_with_libm_to_a_few_ulps() {
        let s = Stream::new(11);
        for i in 0..20_000 {
            let j = s.bits(i, 0) >> 11;
            let x = ((1u64 << 53) - j) as f64 * EPS53;
            let (got, want) = (ln_unit(x), x.ln());
            assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1e-300), "ln {x}: {got} vs {want}");
            let (got, want) = (cos_turns(j), (j as f64 * EPS53 * 2.0 * std::f64::consts::PI).cos());
            assert!((got - want).abs() <= 4.0 * f64::EPSILON, "cos at {j}: {got} vs {want}");
        }
        // The ends: ln(1) = 0 exactly, the smallest u1 and the quarter turns.
        assert_eq!(ln_unit(1.0), 0.0);
        assert!((ln_unit(EPS53) - EPS53.ln()).abs() < 1e-13);
        assert_eq!(cos_turns(0), 1.0);
        assert_eq!(cos_turns(1 << 52), -1.0);
        assert!(cos_turns(1 << 51).abs() < 1e-16 && cos_turns(3 << 51).abs() < 1e-16);
    }

    #[test]
    fn a_stream_is_a_function_of_seed_and_position() {
        let (a, b) = (Stream::new(5), Stream::new(5));
        assert_eq!(a.bits(123, 1), b.bits(123, 1));
        assert_ne!(a.bits(123, 0), a.bits(123, 1));
        assert_ne!(a.bits(0, 0), Stream::new(6).bits(0, 0));
        // Plain splitmix64 from seed s + GAMMA is the stream of seed s moved
        // on by one draw; keyed streams of such seeds share no draws.
        let s5: Vec<u64> = (0..256).map(|i| a.bits(i / 2, i % 2)).collect();
        let next = Stream::new(5u64.wrapping_add(GAMMA));
        assert!((0..256).all(|i| !s5.contains(&next.bits(i / 2, i % 2))));
    }

    #[test]
    fn uniform_samples_stay_below_hi_after_rounding() {
        // u = 1 - 2^-53 rounds to 1.0 in f32; the sample must stay below 1.
        let d = Distribution::Uniform { lo: Scalar(0.0), hi: Scalar(1.0) };
        assert_eq!(below(0.999_999_999_f64 as f32, 0.0, 1.0, |x| x as f64, next_down_f32), 1.0f32.next_down());
        let s = Stream::new(3);
        assert!((0..10_000).all(|i| (0.0..1.0).contains(&d.sample_f32(&s, i))));
        let same = Distribution::Uniform { lo: Scalar(2.5), hi: Scalar(2.5) };
        assert_eq!(same.sample_f32(&s, 0), 2.5);
        let wide = Distribution::Uniform { lo: Scalar(-f64::MAX), hi: Scalar(f64::MAX) };
        assert!((0..1000).all(|i| wide.sample_f64(&s, i).is_finite()));
    }
}
