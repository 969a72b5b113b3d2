//! The ndarray cpu backend: strided drivers and kernels for every op family.

pub mod buffer;

pub use buffer::{contiguous, gather_strided, scatter_strided, view, view_mut, Contiguous, CpuBuffer, Elem, Scratch};
pub use run::Cpu;
pub mod conv;
pub mod create;
mod custom;
pub mod elementwise;
mod fixed_gemm;
pub mod fused;
pub mod index;
pub mod matmul;
pub mod optim;
mod parallel;
pub mod pool;
pub mod reduce;
pub mod room;
mod run;
mod run_index;
pub mod scan;
#[cfg(any(target_arch = "wasm32", test))]
mod sgemm;
