//! What a captured program keeps on its device between runs (its arena and
//! its prebuilt work; see `gpu::replay`), behind an interface that names no
//! backend: `program::replay` opens a `ReplaySession` per run and tells it
//! about each instruction. On the cpu there is nothing to keep: a run is
//! the straight kernel list, its slots released after their last use so the
//! pool's steady state is the arena.

use super::Storage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use std::sync::Mutex;

/// One slot of a program, as its memory plan places it.
pub struct SlotInfo<'a> {
    /// Its arena buffer (computed slots the plan shares; not outputs).
    pub arena: Option<usize>,
    pub dtype: DType,
    pub device: &'a Device,
    /// Elements.
    pub len: usize,
    /// The storage, for a slot the program captured (held across runs).
    pub captured: Option<&'a Storage>,
}

/// A program's state on its device, kept across runs (empty until the first
/// run on a GPU).
#[derive(Default)]
pub struct ReplayState {
    #[cfg(feature = "gpu")]
    gpu: Mutex<Option<super::gpu::replay::GpuReplay>>,
    #[cfg(not(feature = "gpu"))]
    _none: Mutex<()>,
}

impl std::fmt::Debug for ReplayState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplayState")
    }
}

/// One run's use of a `ReplayState` (see `gpu::replay`); dropping it ends
/// the run (its work is submitted).
pub struct ReplaySession<'a> {
    #[cfg(feature = "gpu")]
    gpu: std::sync::MutexGuard<'a, Option<super::gpu::replay::GpuReplay>>,
    #[cfg(not(feature = "gpu"))]
    _none: std::marker::PhantomData<&'a ()>,
}

impl ReplayState {
    /// Starts a run of a program with `buffers` arena buffers, these
    /// `slots` and `instrs` instructions: None when the program keeps
    /// nothing on a device (it runs on the cpu), or another thread is
    /// running it now (this run then goes the plain way).
    pub fn start(&self, buffers: usize, slots: &[SlotInfo], instrs: usize) -> Result<Option<ReplaySession<'_>>> {
        #[cfg(feature = "gpu")]
        {
            use super::gpu::replay::{GpuReplay, SlotPlan};
            let Some(gpu) = slots.iter().find_map(|s| match (s.arena, s.device) {
                (Some(_), Device::Gpu(g)) => Some(g.clone()),
                _ => None,
            }) else {
                return Ok(None);
            };
            let Ok(mut state) = self.gpu.try_lock() else { return Ok(None) };
            let captured: Vec<wgpu::Buffer> = slots
                .iter()
                .filter_map(|s| s.captured)
                .filter_map(|c| c.read().as_gpu().filter(|b| b.device() == gpu).map(|b| b.raw().clone()))
                .collect();
            let stale =
                state.as_ref().is_some_and(|s| !Arc::ptr_eq(s.ctx(), gpu.context()) || !s.fits(&captured, instrs));
            if state.is_none() || stale {
                *state = None; // the old arena goes back to its pool first
                let plans: Vec<SlotPlan> = slots
                    .iter()
                    .map(|s| SlotPlan {
                        arena: s.arena.filter(|_| *s.device == Device::Gpu(gpu.clone())),
                        dtype: s.dtype,
                        len: s.len,
                    })
                    .collect();
                *state = Some(GpuReplay::new(gpu.context(), buffers, &plans, captured, instrs)?);
            }
            state.as_mut().expect("made above").start();
            Ok(Some(ReplaySession { gpu: state }))
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (buffers, slots, instrs);
            Ok(None)
        }
    }
}

#[cfg(feature = "gpu")]
use std::sync::Arc;

impl ReplaySession<'_> {
    /// Before instruction `i`, whose result is slot `out` (if it makes one):
    /// true when its work was recorded from what the state kept, so the
    /// caller does not run it (its result, if any, is `arena_storage(out)`);
    /// otherwise the caller runs it and then calls `end`.
    pub fn begin(&mut self, i: usize, out: Option<usize>) -> bool {
        #[cfg(feature = "gpu")]
        return self.gpu.as_mut().expect("a session has its state").begin(i, out);
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (i, out);
            false
        }
    }

    /// After the caller ran instruction `i`. `may_prebuild`: it binds no
    /// scalar computed per run, is no range check, and reads and writes only
    /// captured and arena slots (so later runs may record it as this one did).
    pub fn end(&mut self, i: usize, may_prebuild: bool) {
        #[cfg(feature = "gpu")]
        self.gpu.as_mut().expect("a session has its state").end(i, may_prebuild);
        #[cfg(not(feature = "gpu"))]
        let _ = (i, may_prebuild);
    }

    /// A new storage over slot `v`'s arena buffer (None when `v` has none).
    pub fn arena_storage(&self, v: usize) -> Option<Storage> {
        #[cfg(feature = "gpu")]
        return self.gpu.as_ref().and_then(|s| s.arena_buffer(v)).map(|b| super::new_storage(super::Buffer::Gpu(b)));
        #[cfg(not(feature = "gpu"))]
        {
            let _ = v;
            None
        }
    }
}

impl Drop for ReplaySession<'_> {
    fn drop(&mut self) {
        #[cfg(feature = "gpu")]
        if let Some(s) = self.gpu.as_mut() {
            s.finish();
        }
    }
}
