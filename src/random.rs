//! skiff's own seedable generator (xoshiro256++ seeded through splitmix64), so
//! runs are reproducible on every target without OS entropy (wasm included).
//!
//! Random tensors do not stream from it element by element: each random
//! creation call draws one 64-bit seed from it into its kernel spec
//! (`KernelSpec::Random`), and the backend computes element i from (seed, i)
//! (`kernel::random`). So `manual_seed(s)` followed by the same calls gives
//! the same tensors on every device and target.

use std::sync::Mutex;

/// A small, fast, seedable PRNG.
#[derive(Clone, Debug)]
pub struct Generator {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        let mut st = seed;
        Generator { s: [splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st)] }
    }
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Standard normal (Box-Muller; one draw per call keeps the stream simple).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]: log is finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

static GLOBAL: Mutex<Option<Generator>> = Mutex::new(None);
const DEFAULT_SEED: u64 = 0x5EED_5EED;

/// Re-seeds the global generator: the seeds of `rand`, `randn`, `randint`,
/// `dropout`'s masks and the initialisers.
pub fn manual_seed(seed: u64) {
    *GLOBAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(Generator::new(seed));
}

/// Runs `f` with the global generator.
pub fn with_generator<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(|| Generator::new(DEFAULT_SEED)))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn uniform_and_normal_have_the_right_moments() {
        let mut g = Generator::new(1);
        let n = 200_000;
        let u: Vec<f64> = (0..n).map(|_| g.uniform()).collect();
        let mean = u.iter().sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let z: Vec<f64> = (0..n).map(|_| g.normal()).collect();
        let m = z.iter().sum::<f64>() / n as f64;
        let v = z.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "{m} {v}");
    }
}
