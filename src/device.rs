//! Where a tensor lives. Only the cpu backend exists today; the GPU backend adds
//! a variant here and an arm in `backend`, without touching op definitions.

use crate::error::{Error, Result};
use std::fmt;

/// A compute device.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// The ndarray cpu backend (native and WebAssembly).
    #[default]
    Cpu,
}

impl Device {
    /// The best device available: a GPU adapter when one exists, else the cpu.
    /// `SKIFF_DEVICE=cpu` forces the cpu; `SKIFF_DEVICE=gpu` is an error until
    /// the GPU backend lands.
    pub fn best() -> Result<Device> {
        match std::env::var("SKIFF_DEVICE").ok().as_deref() {
            None | Some("") | Some("cpu") | Some("auto") => Ok(Device::Cpu),
            Some(other) => Err(Error::value(
                "Device::best",
                format!("SKIFF_DEVICE={other:?} is not available in this build (available: cpu)"),
            )),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
        }
    }
}
