//! The GPU backend against the cpu on whatever adapter is here (lavapipe
//! without a GPU): the registry's parity in f32 and f16, each kernel family
//! (matmul, reductions, index and window kernels, the implicit GEMM, the
//! 4-wide elementwise kernels), graphs crossing devices, readback, failure
//! modes, the steady state's counters, and every WGSL source through naga.
//!
//! One test binary per area (each links the whole crate); the files are its
//! modules. Tests run in parallel: one that needs process-wide state to
//! itself (the generator's sequence after `manual_seed`, the profiler) runs
//! in a process of its own (`common::own_process`), and one that counts a GPU
//! context's work or changes its settings opens a private device.

#[path = "../common/mod.rs"]
mod common;

mod conv_gemm;
mod counters;
mod cross_device;
mod elementwise_vec4;
mod errors;
mod fused_kernel;
mod half;
mod half_registry;
mod index_check;
mod index_conv;
mod matmul;
mod matmul_tiled;
mod no_readback;
mod options;
mod parity;
mod readback;
mod reduce;
mod scan_sort;
mod wgsl;
