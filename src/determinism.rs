//! Deterministic mode: the cpu backend computes the same bits on every target.
//!
//! By default each target takes its fastest route: natively the platform's
//! libm (f32 `exp` and `tanh` in skiff's own vectorisable code, see
//! `kernel::math`) and matrixmultiply's or gemm's fused multiply-add kernels, in wasm
//! the `libm` crate (wasm has no math of its own) and skiff's SIMD128 (or
//! relaxed-SIMD) GEMM. Each is accurate, but they round differently, so a
//! seeded run trained natively and the same run in a browser part ways after
//! the first product.
//!
//! In deterministic mode every cpu kernel takes one portable route instead:
//! - products through one GEMM (`backend::cpu::fixed_gemm`) that sums each
//!   output in index order with separate multiplies and adds, whatever the
//!   SIMD width or blocking;
//! - transcendental functions from the `libm` crate (`kernel::math`);
//! - reductions, which already run in a fixed order on one thread.
//!
//! The GPU backend is not covered: its kernels run on the adapter's own math
//! and summation order (docs/determinism.md gives the measured bound).
//!
//! The mode is process-wide (all threads), read by each kernel call, so it can
//! be switched between steps; `SKIFF_DETERMINISTIC=1` turns it on at start.
//!
//! ```
//! use skiff::nn::{Layer, Linear, ReLU, Sequential};
//! use skiff::optim::{Adam, AdamConfig, Optimizer};
//! use skiff::{manual_seed, set_deterministic, DType, Reduction, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! set_deterministic(true); // or SKIFF_DETERMINISTIC=1 in the environment
//! manual_seed(21);
//! let net = Sequential::new().push(Linear::new(784, 128)?).push(ReLU::new()).push(Linear::new(128, 10)?);
//! let mut opt = Adam::new(net.parameters(), AdamConfig::default())?;
//! let x = Tensor::rand(&[32, 784], DType::F32)?;
//! let y = Tensor::randint(0, 10, &[32])?;
//! for _ in 0..3 {
//!     opt.zero_grad();
//!     let loss = net.forward(&x)?.cross_entropy(&y, Reduction::Mean, 0.0)?;
//!     loss.backward()?;
//!     opt.step()?;
//!     // The same bits natively, in Node and in a browser tab (skiff.setDeterministic(true)).
//!     println!("{:08x}", loss.to_vec::<f32>()?[0].to_bits());
//! }
//! set_deterministic(false);
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNREAD);

/// The environment variable that turns deterministic mode on at start.
pub const ENV_VAR: &str = "SKIFF_DETERMINISTIC";

/// Turns deterministic mode on or off for the whole process (see the module
/// docs). Overrides `SKIFF_DETERMINISTIC`.
pub fn set_deterministic(on: bool) {
    MODE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether the cpu kernels run in deterministic mode.
#[inline]
pub fn is_deterministic() -> bool {
    match MODE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => read_env(),
    }
}

/// The mode `SKIFF_DETERMINISTIC` asks for (unset or empty: off). A value
/// that is neither on nor off leaves the mode off and says so on stderr once:
/// kernels cannot fail over a setting, and a silent guess would hide a typo.
#[cold]
fn read_env() -> bool {
    let on = match std::env::var(ENV_VAR) {
        Err(_) => false,
        Ok(v) => match parse(&v) {
            Some(on) => on,
            None => {
                eprintln!(
                    "skiff: {ENV_VAR}={v:?} is not one of 1, 0, true, false, on, off, yes, no: deterministic mode stays off"
                );
                false
            }
        },
    };
    // A concurrent set_deterministic wins over the environment.
    let _ = MODE.compare_exchange(UNREAD, if on { ON } else { OFF }, Ordering::Relaxed, Ordering::Relaxed);
    MODE.load(Ordering::Relaxed) == ON
}

fn parse(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "off" | "no" => Some(false),
        "1" | "true" | "on" | "yes" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_variable_reads_the_usual_spellings() {
        for on in ["1", "true", "ON", " yes "] {
            assert_eq!(parse(on), Some(true), "{on:?}");
        }
        for off in ["", "0", "False", "off", "no"] {
            assert_eq!(parse(off), Some(false), "{off:?}");
        }
        assert_eq!(parse("maybe"), None);
        assert_eq!(parse("2"), None);
    }
}
