//! Digests of tensors' bits, to compare runs across targets (deterministic
//! mode, `crate::determinism`): the native test and the wasm build compute
//! `forward_digests` with the same code, and both must equal the values
//! checked in from a native run (`tests/determinism/expected.js`).
//!
//! The digest is 32-bit FNV-1a over the elements' little-endian bytes, which
//! a JS test computes in a few lines too (over a `Float32Array`'s bytes). NaN
//! is hashed as one canonical bit pattern: its payload is not an IEEE result
//! and differs between instruction sets.

use crate::backend::CpuBuffer;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::{cases_of, registry};
use crate::tensor::Tensor;

/// 32-bit FNV-1a of `bytes`.
pub fn fnv1a32(bytes: impl IntoIterator<Item = u8>) -> u32 {
    bytes.into_iter().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

/// The digest of a buffer's elements, as 8 hex digits.
fn buffer_digest(host: &CpuBuffer) -> u32 {
    match host {
        CpuBuffer::F32(v) => {
            fnv1a32(v.iter().flat_map(|x| if x.is_nan() { f32::NAN } else { *x }.to_bits().to_le_bytes()))
        }
        CpuBuffer::F64(v) => {
            fnv1a32(v.iter().flat_map(|x| if x.is_nan() { f64::NAN } else { *x }.to_bits().to_le_bytes()))
        }
        CpuBuffer::F16(v) => {
            fnv1a32(v.iter().flat_map(|x| if x.is_nan() { half::f16::NAN } else { *x }.to_bits().to_le_bytes()))
        }
        CpuBuffer::I32(v) => fnv1a32(v.iter().flat_map(|x| x.to_le_bytes())),
        CpuBuffer::Bool(v) => fnv1a32(v.iter().copied()),
    }
}

/// `dtype[shape]:digest` of `t`'s values (read from any device).
pub fn tensor_digest(t: &Tensor) -> Result<String> {
    let host = crate::dispatch::host_copy(t)?;
    Ok(format!("{}{:?}:{:08x}", t.dtype(), t.shape(), buffer_digest(&host)))
}

/// Every registry case's forward output on the cpu, in f32, f64 and f16 (the
/// f16 kernels widen to f32 and round back: the conversions are checked
/// too), as (label, digest) pairs in registry order: `op #k f32` -> `dtype[shape]:digest`,
/// or `error: ...` where the case fails for that dtype. Each case runs after
/// `manual_seed(0)`, so random ops draw the same numbers in every run. Call
/// it in deterministic mode to compare targets.
pub fn forward_digests() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for def in registry() {
        for (k, case) in cases_of(def).iter().enumerate() {
            for dtype in [DType::F32, DType::F64, DType::F16] {
                crate::random::manual_seed(0);
                let digest = case
                    .make_inputs(def.name, k, dtype)
                    .and_then(|inputs| (case.run)(&inputs))
                    .and_then(|y| tensor_digest(&y))
                    .unwrap_or_else(|e| format!("error: {e}"));
                out.push((format!("{} #{k} {dtype}", def.name), digest));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fnv1a32;

    #[test]
    fn fnv1a32_matches_its_published_vectors() {
        assert_eq!(fnv1a32(*b""), 0x811c9dc5);
        assert_eq!(fnv1a32(*b"a"), 0xe40c292c);
        assert_eq!(fnv1a32(*b"foobar"), 0xbf9cf968);
    }
}
