//! A captured program's work on one GPU, kept between its runs.
//!
//! The first run of a program (`GpuReplay::new`, then a run in `Log` mode)
//! takes the program's arena buffers from the pool and keeps them (each
//! computed slot the memory plan places in the arena is written into its
//! arena buffer instead of a fresh pooled one), and logs every dispatch each
//! instruction makes: its pipeline, its parameters, its buffers and grid.
//! An instruction whose dispatches touch only arena buffers and captured
//! storages, with no scalars recomputed per run, no upload and no range
//! check, is *prebuilt*: from the second run on it is not run through its
//! kernel's host code at all; its dispatches are recorded again as they
//! were (pipeline and bind group held here, parameters copied into the
//! uniform ring). Other instructions (those reading the run's inputs or
//! writing its outputs, which are new buffers every call, or with bound
//! scalars) run through the backend as eager ops do, with their dispatches
//! redirected to the program's ring; their bind groups are cached by buffer
//! identity as eager ones are.
//!
//! The program has its own uniform ring (a slot per dispatch of a run), so
//! a run of any length is recorded into the pending encoder and submitted
//! once, at its end (`GpuContext::finish_replay`), not every 256 dispatches.

use super::runtime::{GpuContext, PARAM_BYTES};
use super::GpuBuffer;
use crate::dtype::DType;
use crate::error::Result;
use std::cell::RefCell;
use std::sync::Arc;

/// One dispatch as a run recorded it.
#[derive(Clone)]
pub(crate) struct Logged {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) params: Vec<u32>,
    pub(crate) buffers: Vec<wgpu::Buffer>,
    pub(crate) grid: [u32; 3],
}

/// A prebuilt dispatch: a logged one with its bind group over the program's ring.
struct Prebuilt {
    logged: Logged,
    /// Made with the ring, after the first run.
    bind_group: Option<wgpu::BindGroup>,
}

enum InstrWork {
    /// Not seen yet (the first run logs it).
    Unknown,
    /// Recorded again as logged (see the module docs).
    Prebuilt(Vec<Prebuilt>),
    /// Run through the backend every time.
    Dynamic,
}

/// What the current thread's dispatches do while a replay runs.
struct Intercept {
    ctx: u64,
    /// The program's ring and its slots (None during the first run: dispatches
    /// then go to the context's ring as eager ones do, and are only logged).
    ring: Option<(wgpu::Buffer, u32)>,
    /// The next free slot of the ring in this run.
    next: u32,
    /// The current instruction's dispatches.
    log: Vec<Logged>,
    /// Whether the current instruction did work besides dispatches (an upload).
    opaque: bool,
    /// The arena buffer the current instruction's result goes into.
    output: Option<(wgpu::Buffer, u64)>,
}

thread_local! {
    static ACTIVE: RefCell<Option<Intercept>> = const { RefCell::new(None) };
}

/// Called by `GpuContext::dispatch_grid`: logs the dispatch while a replay
/// runs on this thread and, once the program has its ring, records it there
/// (returns true: the caller records nothing).
pub(crate) fn intercept(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    params: &[u32],
    buffers: &[&wgpu::Buffer],
    grid: [u32; 3],
) -> bool {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(i) = a.as_mut().filter(|i| i.ctx == ctx.id) else { return false };
        let logged = Logged {
            pipeline: pipeline.clone(),
            params: params.to_vec(),
            buffers: buffers.iter().map(|b| (*b).clone()).collect(),
            grid,
        };
        let handled = match &i.ring {
            Some((ring, slots)) if i.next < *slots => {
                let bind_group = ctx.bind_group_on(ring, pipeline, buffers);
                ctx.record_on_ring(ring, i.next, &logged, &bind_group);
                i.next += 1;
                true
            }
            _ => false,
        };
        i.log.push(logged);
        handled
    })
}

/// Called by uploads: the current instruction is not prebuilt.
pub(crate) fn note_opaque(ctx: u64) {
    ACTIVE.with(|a| {
        if let Some(i) = a.borrow_mut().as_mut().filter(|i| i.ctx == ctx) {
            i.opaque = true;
        }
    })
}

/// Runs `f` (the f16 conversions around a kernel, `backend::half`) with the
/// arena buffer offered for the current result set aside, so only the
/// rounded result allocated after `f` takes it. Such an instruction is never
/// prebuilt: its widened temporaries are new buffers every run.
pub(crate) fn without_output<R>(f: impl FnOnce() -> R) -> R {
    let held = ACTIVE.with(|a| {
        a.borrow_mut().as_mut().map(|i| {
            i.opaque = true;
            i.output.take()
        })
    });
    let r = f();
    if let Some(held) = held {
        ACTIVE.with(|a| {
            if let Some(i) = a.borrow_mut().as_mut() {
                i.output = held;
                i.opaque = true;
            }
        });
    }
    r
}

/// Called by `GpuBuffer::new`: the arena buffer offered for this result, if any
/// (the first allocation of a kernel is its result).
pub(crate) fn take_output(ctx: u64, bytes: u64) -> Option<wgpu::Buffer> {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let i = a.as_mut().filter(|i| i.ctx == ctx)?;
        match i.output.take() {
            Some((b, size)) if size >= bytes => Some(b),
            _ => None,
        }
    })
}

/// An arena buffer: out of the pool while the program lives.
struct ArenaBuffer {
    ctx: Arc<GpuContext>,
    buf: wgpu::Buffer,
    class: u64,
}

impl Drop for ArenaBuffer {
    fn drop(&mut self) {
        self.ctx.release(self.buf.clone(), self.class);
    }
}

/// One program's GPU state (see the module docs).
pub struct GpuReplay {
    ctx: Arc<GpuContext>,
    /// Per arena buffer of the plan: the buffer when its slots are on this GPU.
    arena: Vec<Option<ArenaBuffer>>,
    /// Per slot: its arena buffer, dtype and length (computed slots on this GPU).
    slots: Vec<Option<(usize, DType, usize)>>,
    /// The captured storages' buffers the prebuilt work binds (checked each run).
    captured: Vec<wgpu::Buffer>,
    instrs: Vec<InstrWork>,
    /// The program's uniform ring, made after the first run.
    ring: Option<(wgpu::Buffer, u32)>,
    /// Dispatches the first run made.
    first_run_dispatches: u32,
}

/// A slot as the program's plan describes it.
pub struct SlotPlan {
    pub arena: Option<usize>,
    pub dtype: DType,
    pub len: usize,
}

impl GpuReplay {
    /// Takes the arena buffers from the pool: `buffers` is the plan's count,
    /// `slots` each slot's place; `captured` the captured storages' buffers.
    pub(crate) fn new(
        ctx: &Arc<GpuContext>,
        buffers: usize,
        slots: &[SlotPlan],
        captured: Vec<wgpu::Buffer>,
        instrs: usize,
    ) -> Result<GpuReplay> {
        let mut bytes = vec![0u64; buffers];
        for s in slots {
            if let Some(b) = s.arena {
                bytes[b] = bytes[b].max(s.len as u64 * 4);
            }
        }
        let mut arena = Vec::with_capacity(buffers);
        for &n in &bytes {
            arena.push(if n == 0 {
                None
            } else {
                let (buf, class) = ctx.alloc("program", n)?;
                Some(ArenaBuffer { ctx: ctx.clone(), buf, class })
            });
        }
        let slots =
            slots.iter().map(|s| s.arena.filter(|b| arena[*b].is_some()).map(|b| (b, s.dtype, s.len))).collect();
        Ok(GpuReplay {
            ctx: ctx.clone(),
            arena,
            slots,
            captured,
            instrs: (0..instrs).map(|_| InstrWork::Unknown).collect(),
            ring: None,
            first_run_dispatches: 0,
        })
    }

    pub(crate) fn ctx(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Whether this state still fits the program's captured storages.
    pub(crate) fn fits(&self, captured: &[wgpu::Buffer], instrs: usize) -> bool {
        self.captured == captured && self.instrs.len() == instrs
    }

    /// Starts a run on this thread.
    pub(crate) fn start(&mut self) {
        if self.ring.is_none() && self.instrs.iter().all(|w| !matches!(w, InstrWork::Unknown)) {
            self.prebuild();
        }
        super::context::open_batch_scopes(self.ctx.id, &self.ctx.device);
        ACTIVE.with(|a| {
            *a.borrow_mut() = Some(Intercept {
                ctx: self.ctx.id,
                ring: self.ring.clone(),
                next: 0,
                log: Vec::new(),
                opaque: false,
                output: None,
            })
        });
    }

    /// Makes the ring (a slot per dispatch the first run made, and some
    /// room) and the prebuilt instructions' bind groups over it.
    fn prebuild(&mut self) {
        let logged = self.first_run_dispatches;
        let slots = logged + logged / 4 + 16;
        let ring = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skiff program params ring"),
            size: PARAM_BYTES * slots as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        for w in &mut self.instrs {
            if let InstrWork::Prebuilt(d) = w {
                for p in d.iter_mut() {
                    let bufs: Vec<&wgpu::Buffer> = p.logged.buffers.iter().collect();
                    p.bind_group = Some(self.ctx.bind_group_on(&ring, &p.logged.pipeline, &bufs));
                }
            }
        }
        self.ring = Some((ring, slots));
    }

    /// Before instruction `i` (`may_prebuild`: the program says it binds no
    /// scalar, reads no input and writes no output, and is no range check):
    /// true when its prebuilt work was recorded and the caller skips it;
    /// otherwise the caller runs it, with its result (slot `out`) going into
    /// its arena buffer, and calls `end`.
    pub(crate) fn begin(&mut self, i: usize, out: Option<usize>) -> bool {
        if let InstrWork::Prebuilt(work) = &self.instrs[i] {
            if let Some((ring, _)) = &self.ring {
                let mut next = ACTIVE.with(|a| a.borrow().as_ref().map_or(0, |a| a.next));
                let (_, slots) = self.ring.as_ref().expect("checked above");
                if next + work.len() as u32 <= *slots {
                    for p in work {
                        let bg = p.bind_group.as_ref().expect("prebuilt with the ring");
                        self.ctx.record_on_ring(ring, next, &p.logged, bg);
                        next += 1;
                    }
                    ACTIVE.with(|a| {
                        if let Some(a) = a.borrow_mut().as_mut() {
                            a.next = next;
                        }
                    });
                    return true;
                }
            }
        }
        let output = out.and_then(|v| self.slots.get(v).copied().flatten()).map(|(b, _, len)| {
            let buf = self.arena[b].as_ref().expect("slots name only buffers made").buf.clone();
            (buf, len as u64 * 4)
        });
        ACTIVE.with(|a| {
            if let Some(a) = a.borrow_mut().as_mut() {
                a.log.clear();
                a.opaque = false;
                a.output = output;
            }
        });
        false
    }

    /// After instruction `i` ran through the backend: on the first run,
    /// whether it can be prebuilt (`may_prebuild`, and its dispatches bind
    /// only arena and captured buffers).
    pub(crate) fn end(&mut self, i: usize, may_prebuild: bool) {
        let (log, opaque) = ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            let a = a.as_mut().expect("a run is active");
            a.output = None;
            (std::mem::take(&mut a.log), a.opaque)
        });
        if !matches!(self.instrs[i], InstrWork::Unknown) {
            return;
        }
        self.first_run_dispatches += log.len() as u32;
        let stable = |b: &wgpu::Buffer| self.captured.contains(b) || self.arena.iter().flatten().any(|a| &a.buf == b);
        self.instrs[i] = if may_prebuild && !opaque && log.iter().all(|d| d.buffers.iter().all(stable)) {
            InstrWork::Prebuilt(log.into_iter().map(|logged| Prebuilt { logged, bind_group: None }).collect())
        } else {
            InstrWork::Dynamic
        };
    }

    /// A new storage buffer viewing slot `v`'s arena buffer (None when the
    /// slot is not in this GPU's arena).
    pub(crate) fn arena_buffer(&self, v: usize) -> Option<GpuBuffer> {
        let (b, dtype, len) = self.slots.get(v).copied().flatten()?;
        let buf = self.arena[b].as_ref()?.buf.clone();
        Some(GpuBuffer::arena_view(&self.ctx, buf, dtype, len))
    }

    /// Ends the run on this thread: writes its parameters and submits its
    /// work (one submit, with anything eager code had queued before it).
    pub(crate) fn finish(&mut self) {
        ACTIVE.with(|a| *a.borrow_mut() = None);
        self.ctx.flush();
    }
}

impl GpuContext {
    /// Records a program's dispatch (see `replay`) with its parameters in
    /// slot `slot` of the program's own uniform `ring` (whose host copy is
    /// written when the batch is submitted): it takes no slot of the
    /// context's ring, so it never forces a submit.
    pub(super) fn record_on_ring(&self, ring: &wgpu::Buffer, slot: u32, d: &Logged, bind_group: &wgpu::BindGroup) {
        assert!(d.params.len() * 4 <= PARAM_BYTES as usize, "kernel parameters exceed {PARAM_BYTES} bytes");
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((out, inputs)) = d.buffers.split_last() {
            if self.any_bad.load(std::sync::atomic::Ordering::Acquire) {
                let inputs: Vec<&wgpu::Buffer> = inputs.iter().collect();
                self.note_written(out, &inputs);
            }
            if super::context::DEFERRED_ERRORS {
                batch.written.push(out.clone());
            }
        }
        let offset = slot as usize * PARAM_BYTES as usize;
        let k = match batch.rings.iter().position(|(r, _)| r == ring) {
            Some(k) => k,
            None => {
                batch.rings.push((ring.clone(), Vec::new()));
                batch.rings.len() - 1
            }
        };
        let host = &mut batch.rings[k].1;
        if host.len() < offset + PARAM_BYTES as usize {
            host.resize(offset + PARAM_BYTES as usize, 0);
        }
        host[offset..offset + d.params.len() * 4].copy_from_slice(bytemuck::cast_slice(&d.params));
        self.record_pass(&mut batch, &d.pipeline, bind_group, offset as u32, d.grid);
    }
}
