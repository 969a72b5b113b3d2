//! The leak report: which live tensors exist, grouped by where they were
//! made (the op whose kernel made them and the first caller outside skiff),
//! with their bytes per device. Opt-in, because finding a caller costs a
//! backtrace per tensor: turn `track_origins(true)` on, run the code
//! suspected of leaking, and read `live_by_origin()`. JS:
//! `skiff.trackOrigins(true)` and `memory({ detailed: true }).origins`.
//!
//! ```
//! # fn main() -> skiff::Result<()> {
//! use skiff::{memory, DType, Tensor};
//! memory::track_origins(true);
//! let x = Tensor::ones(&[256], DType::F32)?;
//! let mut history = Vec::new();
//! for _ in 0..10 {
//!     history.push(x.exp()?); // the leak
//! }
//! let sites = memory::live_by_origin();
//! print!("{}", memory::origins_table(&sites));
//! let top = sites.iter().find(|s| s.op == "exp").unwrap();
//! assert_eq!((top.tensors, top.bytes), (10, 10 * 256 * 4));
//! memory::track_origins(false);
//! # Ok(())
//! # }
//! ```

use crate::backend::census;
use std::collections::HashMap;

/// Live storages made at one site, on one device.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Site {
    /// The op whose kernel made them ("from data": made from host values).
    pub op: String,
    /// The first caller outside skiff ("file:line:column").
    pub site: String,
    /// That caller and the ones above it, innermost first (at most 4).
    pub stack: Vec<String>,
    pub device: String,
    /// How many (a storage counts once, however many views share it).
    pub tensors: usize,
    pub bytes: usize,
}

/// Starts (or stops) recording where each new tensor is made.
pub fn track_origins(on: bool) {
    census::set_tracking(on);
}

/// Whether origins are being recorded.
pub fn tracking_origins() -> bool {
    census::tracking()
}

/// Every live tensor made while origins were tracked, grouped by origin
/// (op and callers) and device, the most bytes first.
pub fn live_by_origin() -> Vec<Site> {
    let mut groups: HashMap<(census::Origin, String), (usize, usize)> = HashMap::new();
    for s in census::live() {
        let Some(origin) = s.origin() else { continue };
        let bytes = s.read().bytes();
        let e = groups.entry((origin.clone(), s.device().to_string())).or_default();
        e.0 += 1;
        e.1 += bytes;
    }
    let mut sites: Vec<Site> = groups
        .into_iter()
        .map(|((o, device), (tensors, bytes))| Site {
            op: o.op.to_string(),
            site: o.stack[0].clone(),
            stack: o.stack,
            device,
            tensors,
            bytes,
        })
        .collect();
    sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)).then_with(|| a.op.cmp(&b.op)));
    sites
}

/// `sites` as a table: bytes, tensors, device, op and site per row.
pub fn origins_table(sites: &[Site]) -> String {
    let mut s = format!("{:>12} {:>8} {:<6} {:<20} site\n", "bytes", "tensors", "device", "op");
    for x in sites {
        s += &format!("{:>12} {:>8} {:<6} {:<20} {}\n", x.bytes, x.tensors, x.device, x.op, x.site);
    }
    s
}
