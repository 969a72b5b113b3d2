//! The ndarray cpu backend: strided drivers and kernels for every op family.

pub mod buffer;

pub use buffer::{contiguous, for_each_row, gather_strided, scatter_strided, CpuBuffer, Elem};
pub mod conv;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod optim;
pub mod pool;
pub mod reduce;
pub mod room;
pub mod run;
mod run_index;
