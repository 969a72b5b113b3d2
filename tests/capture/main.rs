//! Capture and replay (`skiff::jit`): tracing, compiled training steps, the
//! program passes (CSE, DCE, fusion, epilogues, memory planning) each on its
//! own and over the whole registry, export and load, and the GPU replay.
//!
//! One test binary per area (each links the whole crate); the files are its
//! modules. Tests run in parallel: one that needs process-wide state to
//! itself (the generator's sequence after `manual_seed`, the profiler) runs
//! in a process of its own (`common::own_process`), and one that counts a GPU
//! context's work or changes its settings opens a private device.

#[path = "../common/mod.rs"]
mod common;

mod compile;
mod epilogue;
mod export;
mod fusion;
mod gpu_replay;
mod layers48;
mod memory;
mod passes;
mod registry;
mod trace;
