//! Models, optimizers and data: every layer's values, gradients (f64
//! gradcheck) and GPU parity, the Layer machinery and its printed tree,
//! optimizers against PyTorch's formulas, schedules and clipping, short
//! training runs, safetensors and the DataLoader, and mixed precision.
//!
//! One test binary per area (each links the whole crate); the files are its
//! modules. Tests run in parallel: one that needs process-wide state to
//! itself (the generator's sequence after `manual_seed`, the profiler) runs
//! in a process of its own (`common::own_process`), and one that counts a GPU
//! context's work or changes its settings opens a private device.

#[path = "../common/mod.rs"]
mod common;

mod amp;
mod amp_mnist;
mod attention;
mod config;
mod gpu;
mod gradcheck;
mod io;
mod layers;
mod module;
mod optim;
mod recurrent_cost;
mod repr;
mod schedule;
mod torch_fixtures;
mod torch_sequence;
mod train;
