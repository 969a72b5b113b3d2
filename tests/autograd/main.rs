//! Autodiff: the engine's semantics (recording, pruning, backward and grad,
//! retain_graph, hooks, in-place safety), higher-order gradients and custom
//! functions, the registry-wide gradcheck, and user-written custom ops.
//!
//! One test binary per area (each links the whole crate); the files are its
//! modules. Tests run in parallel: one that needs process-wide state to
//! itself (the generator's sequence after `manual_seed`, the profiler) runs
//! in a process of its own (`common::own_process`), and one that counts a GPU
//! context's work or changes its settings opens a private device.

#[path = "../common/mod.rs"]
mod common;

mod custom_op;
mod engine;
mod gradcheck;
mod higher;
mod inplace;
