//! Tensors and ops: creation and the seeded generator, forward values against
//! hand-computed results, PyTorch's semantics, every user mistake as an
//! `Error`, the registry's generated surface (each op's `forward`, the JS
//! declarations, the docs' op table and snippets), the layering rule, the
//! cpu buffer pool, the profiler and the leak report.
//!
//! One test binary per area (each links the whole crate); the files are its
//! modules. Tests run in parallel: one that needs process-wide state to
//! itself (the generator's sequence after `manual_seed`, the profiler) runs
//! in a process of its own (`common::own_process`), and one that counts a GPU
//! context's work or changes its settings opens a private device.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod cpu_pool;
mod creation_specs;
mod errors;
mod js_surface;
mod layering;
mod memory_report;
mod op_forward;
mod profile;
mod quiet_stderr;
mod readme;
mod semantics;
mod tensor;
mod values;
mod values_conv;
mod values_movement;
mod values_nn;
