//! Whether the host can hold a new buffer, asked before a kernel allocates.
//!
//! Note (why a probe): Rust aborts the process when an allocation fails (in
//! WebAssembly that is a trap that leaves the instance unusable), and the
//! kernels allocate their outputs deep inside infallible code. So every op
//! asks here first, under its own name: a large request is tried with
//! `try_reserve_exact` and released at once, and the kernel's allocation
//! right after gets the same memory back from the allocator. A request that
//! does not fit empties the cpu pool and is tried once more. Small requests
//! skip the probe: if those fail, nothing could be reported anyway.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Requests below this many bytes are not probed (in wasm every large
/// request is, as its memory is small and allocation failures are real).
const PROBE_BYTES: usize = if cfg!(target_arch = "wasm32") { 1 << 20 } else { 64 << 20 };

/// `bytes` in the largest whole unit, for messages ("4.0 GiB").
pub fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The bytes of `n` elements of `dtype`, or an error naming `op` when that
/// exceeds what one allocation may be (`isize::MAX`).
pub fn bytes_of(op: &'static str, n: usize, dtype: DType) -> Result<usize> {
    n.checked_mul(dtype.size_in_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::memory(op, format!("{n} {dtype} elements are more bytes than one allocation may hold")))
}

/// An error naming `op` unless a buffer of `n` elements of `dtype` can be
/// allocated now.
pub fn ensure(op: &'static str, n: usize, dtype: DType) -> Result<()> {
    let bytes = bytes_of(op, n, dtype)?;
    if bytes < PROBE_BYTES {
        return Ok(());
    }
    // Freed buffers the pool keeps count against the allocator too: when the
    // request does not fit, release them and ask once more.
    if fits(bytes)
        || (super::pool::stats().pooled_bytes > 0 && {
            super::pool::clear();
            fits(bytes)
        })
    {
        return Ok(());
    }
    Err(Error::memory(
        op,
        format!("out of memory: {} for {n} {dtype} elements could not be allocated on the cpu", human_bytes(bytes)),
    ))
}

/// Whether the allocator can give `bytes` now (the probe is released at once).
fn fits(bytes: usize) -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_are_errors_and_possible_ones_pass() {
        assert!(ensure("zeros", 1 << 20, DType::F32).is_ok());
        let e = ensure("zeros", 1 << 58, DType::F32).unwrap_err();
        assert!(matches!(e, Error::Memory { op: "zeros", .. }), "{e}");
        assert!(e.to_string().contains("1024.0 PiB"), "{e}");
        let e = ensure("zeros", usize::MAX / 2, DType::F64).unwrap_err();
        assert!(e.to_string().contains("more bytes than one allocation"), "{e}");
    }

    #[test]
    fn byte_sizes_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
