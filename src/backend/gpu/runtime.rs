//! One context per GPU device: its buffer pool, pipeline cache, pending
//! command encoder (dispatches are recorded and submitted in batches), the
//! uniform ring that carries each dispatch's shapes and strides, readback,
//! upload and the counters tests and benchmarks read.

use super::context::{self, Opened};
use crate::backend::events;
use crate::error::{Error, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::checks::{IndexChecks, TakenChecks, CHECK_SLOTS, SLOT_BYTES};
use super::memory::BadBuffers;
use super::options::{GpuOptions, Tuning};
use super::pipelines::KernelLayout;

/// Bytes of parameters each dispatch gets (64 u32: shapes, strides, scalars).
pub const PARAM_BYTES: u64 = 256;
/// Dispatches per batch: the pending encoder is submitted when it holds this many.
pub const BATCH_DISPATCHES: u32 = 256;
/// Threads per workgroup in every elementwise-style kernel.
pub const WORKGROUP: u32 = 256;

/// Runtime counters (cumulative since the context was created, except `*_live`/`pooled`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuCounters {
    pub buffers_created: u64,
    pub buffers_reused: u64,
    pub pipelines_compiled: u64,
    pub bind_groups_created: u64,
    pub dispatches: u64,
    pub submits: u64,
    pub readbacks: u64,
    /// Host-to-device copies (each through a fresh staging buffer, not counted in `buffers_created`).
    pub uploads: u64,
    pub bytes_allocated: u64,
    pub bytes_live: u64,
    pub bytes_pooled: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) buffers_created: AtomicU64,
    pub(super) buffers_reused: AtomicU64,
    pub(super) pipelines_compiled: AtomicU64,
    pub(super) bind_groups_created: AtomicU64,
    dispatches: AtomicU64,
    submits: AtomicU64,
    readbacks: AtomicU64,
    uploads: AtomicU64,
    pub(super) bytes_allocated: AtomicU64,
    pub(super) bytes_live: AtomicU64,
}

/// Work recorded but not yet submitted.
///
/// Note (batching): all dispatches of a batch go into ONE compute pass of one
/// encoder (wgpu still orders dependent dispatches inside a pass), their
/// parameters into consecutive 256-byte slots of a host staging copy of the
/// uniform ring, which is written to the GPU once, right before the batch is
/// submitted. Bind groups use a dynamic offset into the ring, so the same
/// (pipeline, buffers) bind group is cached and reused across steps.
pub(crate) struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    /// Next free slot of the uniform ring; also the number of pending dispatches.
    slot: u32,
    params: Vec<u8>,
    /// Index range checks recorded since the last readback (see `checks`).
    pub(super) checks: IndexChecks,
    /// The buffers this batch writes (browser only: marked stale if the
    /// batch fails, see `memory`).
    pub(super) written: Vec<wgpu::Buffer>,
    /// Programs' own uniform rings (see `replay`) and the host copy of the
    /// slots this batch's dispatches use, written before it is submitted.
    pub(super) rings: Vec<(wgpu::Buffer, Vec<u8>)>,
    /// The profiler's timestamp queries (see `timing`), while a session records.
    pub(super) timing: Option<super::timing::Timing>,
}

impl Batch {
    /// Ends the open compute pass (needed before copies or finishing).
    fn end_pass(&mut self) {
        self.pass = None;
    }
}

/// Everything skiff keeps per GPU device.
pub struct GpuContext {
    pub(crate) id: u64,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(super) uniforms: wgpu::Buffer,
    /// One slot per pending index range check (see `checks`), cleared by the
    /// readback that copies them.
    pub(super) check_flags: wgpu::Buffer,
    /// The highest check sequence number a finished readback has resolved.
    pub(super) checks_resolved: AtomicU64,
    /// Free buffers per size class, ordered (wgpu buffers compare by id) so
    /// that `alloc` hands out the lowest one: a step that allocates in the
    /// same order from the same free set gets the same buffers every time,
    /// so the bind-group cache hits. (A LIFO stack would hand them out in the
    /// order the previous step freed them, a permutation that takes many
    /// steps to cycle, each creating new bind groups.)
    pub(super) pool: Mutex<HashMap<u64, BTreeSet<wgpu::Buffer>>>,
    pub(super) pooled_bytes: AtomicU64,
    /// Buffers whose allocation failed or whose contents were discarded
    /// (browser only: see `memory`), and whether there are any.
    pub(super) bad: Mutex<BadBuffers>,
    pub(super) any_bad: AtomicBool,
    /// This context, for error handlers that run later (see `context::close_scopes`).
    pub(super) me: std::sync::Weak<GpuContext>,
    pub(super) pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    pub(super) layouts: Mutex<HashMap<wgpu::ComputePipeline, KernelLayout>>,
    pub(super) batch: Mutex<Batch>,
    pub(super) counters: Counters,
    /// First uncaptured wgpu error or device loss, reported on the next op.
    failure: Arc<Mutex<Option<String>>>,
    lost: Arc<AtomicBool>,
    /// Whether that first failure was the driver running out of memory.
    out_of_memory: Arc<AtomicBool>,
    /// Whether kernels that use subgroups declare `enable subgroups;` (see
    /// `context::Opened::subgroups_by_directive`).
    pub(crate) subgroups_by_directive: bool,
    /// The options its kernels run with (`options.rs`).
    pub(crate) tuning: Tuning,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl GpuContext {
    pub(crate) fn new(o: Opened, options: &GpuOptions) -> Arc<GpuContext> {
        let failure: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let lost = Arc::new(AtomicBool::new(false));
        let out_of_memory = Arc::new(AtomicBool::new(false));
        {
            let (f, oom) = (failure.clone(), out_of_memory.clone());
            o.device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                lock(&f).get_or_insert_with(|| {
                    oom.store(matches!(e, wgpu::Error::OutOfMemory { .. }), Ordering::SeqCst);
                    e.to_string()
                });
            }));
            let (f, l) = (failure.clone(), lost.clone());
            o.device.set_device_lost_callback(move |reason, msg| {
                l.store(true, Ordering::SeqCst);
                lock(&f).get_or_insert_with(|| format!("device lost ({reason:?}): {msg}"));
            });
        }
        let uniforms = o.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skiff params ring"),
            size: PARAM_BYTES * BATCH_DISPATCHES as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let check_flags = o.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skiff index checks"),
            size: CHECK_SLOTS as u64 * SLOT_BYTES,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // The device's own limits (what it enforces), not the ones requested.
        let limits = o.device.limits();
        let subgroups = o.subgroups_by_directive || o.device.features().contains(wgpu::Features::SUBGROUP);
        // Subgroup operations: `Features::SUBGROUP`, or (`subgroups_by_directive`)
        // a browser device the page asked for them.
        let tuning = Tuning::new(&o.info, subgroups, options);
        Arc::new_cyclic(|me| GpuContext {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            info: o.info,
            limits,
            device: o.device,
            queue: o.queue,
            uniforms,
            check_flags,
            checks_resolved: AtomicU64::new(0),
            pool: Mutex::new(HashMap::new()),
            pooled_bytes: AtomicU64::new(0),
            bad: Mutex::new(BadBuffers::default()),
            any_bad: AtomicBool::new(false),
            me: me.clone(),
            pipelines: Mutex::new(HashMap::new()),
            layouts: Mutex::new(HashMap::new()),
            batch: Mutex::new(Batch {
                encoder: None,
                pass: None,
                slot: 0,
                params: Vec::new(),
                checks: IndexChecks::default(),
                written: Vec::new(),
                rings: Vec::new(),
                timing: None,
            }),
            counters: Counters::default(),
            failure,
            lost,
            out_of_memory,
            subgroups_by_directive: o.subgroups_by_directive,
            tuning,
        })
    }

    /// The options this context runs with now, each resolved (see `GpuOptions`).
    pub fn options(&self) -> GpuOptions {
        self.tuning.options()
    }

    /// This adapter's default options, whatever is set now.
    pub fn default_options(&self) -> GpuOptions {
        self.tuning.adapter_defaults()
    }

    /// Sets, from now on, every option `options` sets (the others stay).
    /// Each choice computes the same values; kernels already compiled stay
    /// cached under their own keys.
    pub fn set_options(&self, options: &GpuOptions) -> Result<()> {
        options.validate()?;
        self.tuning.set(options);
        Ok(())
    }

    /// The subgroup size across which this device can share the blocked
    /// matmul's loads of B (`GpuOptions::matmul_shared_loads`), or 0 where
    /// it cannot.
    #[doc(hidden)]
    pub fn shared_loads_size(&self) -> usize {
        self.tuning.shared_loads_size()
    }

    /// The most loop iterations one invocation may run on this adapter, all
    /// loops together, where it has such a limit: lavapipe (llvmpipe) ends
    /// loops after 65,535 iterations per invocation and carries on silently.
    pub(crate) fn loop_budget(&self) -> Option<usize> {
        self.info.name.contains("llvmpipe").then_some(65_535)
    }

    /// The widest product the blocked matmul gives 16-column blocks rather
    /// than 32-column ones (`matmul::Block::for_product`): 127 on lavapipe,
    /// 64 on other software adapters (SwiftShader), where 16 columns lost
    /// beyond that.
    pub(crate) fn matmul_cols16_to(&self) -> usize {
        if self.info.name.contains("llvmpipe") {
            127
        } else {
            64
        }
    }

    /// Marks the device lost now (the browser reports `GPUDevice.lost` only
    /// later, and ops on a lost WebGPU device are silent no-ops), so the very
    /// next op fails with `reason` instead of returning stale data.
    pub(crate) fn mark_lost(&self, reason: &str) {
        self.lost.store(true, Ordering::SeqCst);
        lock(&self.failure).get_or_insert_with(|| reason.to_string());
    }

    /// The error to report if the device was lost or a GPU command failed.
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        if let Some(msg) = lock(&self.failure).clone() {
            return Err(if self.lost.load(Ordering::SeqCst) {
                Error::DeviceLost { op, msg: format!("the GPU device was lost: {msg}") }
            } else if self.out_of_memory.load(Ordering::SeqCst) {
                Error::memory(op, format!("a GPU command failed: {msg}"))
            } else {
                Error::gpu(op, format!("a GPU command failed: {msg}"))
            });
        }
        Ok(())
    }

    pub fn counters(&self) -> GpuCounters {
        let c = &self.counters;
        GpuCounters {
            buffers_created: c.buffers_created.load(Ordering::Relaxed),
            buffers_reused: c.buffers_reused.load(Ordering::Relaxed),
            pipelines_compiled: c.pipelines_compiled.load(Ordering::Relaxed),
            bind_groups_created: c.bind_groups_created.load(Ordering::Relaxed),
            dispatches: c.dispatches.load(Ordering::Relaxed),
            submits: c.submits.load(Ordering::Relaxed),
            readbacks: c.readbacks.load(Ordering::Relaxed),
            uploads: c.uploads.load(Ordering::Relaxed),
            bytes_allocated: c.bytes_allocated.load(Ordering::Relaxed),
            bytes_live: c.bytes_live.load(Ordering::Relaxed),
            bytes_pooled: self.pooled_bytes.load(Ordering::Relaxed),
        }
    }

    /// Records one dispatch of `pipeline` over `workgroups` workgroups with
    /// `params` in binding 0 and `buffers` in bindings 1.. (the last one is
    /// the output). Submits the batch when the uniform ring is full.
    pub(crate) fn dispatch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        params: &[u32],
        buffers: &[&wgpu::Buffer],
        workgroups: u32,
    ) {
        let (x, y) = grid(workgroups, self.limits.max_compute_workgroups_per_dimension);
        self.dispatch_grid(pipeline, params, buffers, [x, y, 1]);
    }

    /// Like `dispatch`, over an explicit (x, y, z) grid of workgroups (each at
    /// most the adapter's per-dimension limit).
    pub(crate) fn dispatch_grid(
        &self,
        pipeline: &wgpu::ComputePipeline,
        params: &[u32],
        buffers: &[&wgpu::Buffer],
        [x, y, z]: [u32; 3],
    ) {
        context::open_batch_scopes(self.id, &self.device);
        if super::replay::intercept(self, pipeline, params, buffers, [x, y, z]) {
            return;
        }
        let bind_group = self.bind_group(pipeline, buffers);
        let mut batch = lock(&self.batch);
        if let Some((out, inputs)) = buffers.split_last() {
            self.note_written(out, inputs);
            if context::DEFERRED_ERRORS {
                batch.written.push((*out).clone());
            }
        }
        self.record_locked(&mut batch, pipeline, &bind_group, params, [x, y, z]);
    }

    pub(super) fn record_locked(
        &self,
        batch: &mut Batch,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        params: &[u32],
        [x, y, z]: [u32; 3],
    ) {
        assert!(params.len() * 4 <= PARAM_BYTES as usize, "kernel parameters exceed {PARAM_BYTES} bytes");
        if batch.slot == BATCH_DISPATCHES {
            self.submit_locked(batch);
            context::open_batch_scopes(self.id, &self.device);
        }
        let offset = batch.slot as usize * PARAM_BYTES as usize;
        batch.slot += 1;
        batch.params.resize(offset + PARAM_BYTES as usize, 0);
        batch.params[offset..offset + params.len() * 4].copy_from_slice(bytemuck::cast_slice(params));
        self.record_pass(batch, pipeline, bind_group, offset as u32, [x, y, z]);
    }

    /// Records one dispatch into the batch's compute pass (opened if needed).
    pub(super) fn record_pass(
        &self,
        batch: &mut Batch,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        offset: u32,
        [x, y, z]: [u32; 3],
    ) {
        self.counters.dispatches.fetch_add(1, Ordering::Relaxed);
        events::count(events::Count::Dispatch, 0);
        if let Some((queries, at)) = self.timing_slot(&mut batch.timing) {
            // Profiling: a pass of its own, timestamped at both ends.
            batch.end_pass();
            let encoder = batch.encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default()));
            let writes = wgpu::ComputePassTimestampWrites {
                query_set: &queries,
                beginning_of_pass_write_index: Some(at),
                end_of_pass_write_index: Some(at + 1),
            };
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: Some(writes) });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[offset]);
            pass.dispatch_workgroups(x, y, z);
            return;
        }
        if batch.pass.is_none() {
            let encoder = batch.encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default()));
            let pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            batch.pass = Some(pass.forget_lifetime());
        }
        let pass = batch.pass.as_mut().expect("pass opened above");
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[offset]);
        pass.dispatch_workgroups(x, y, z);
    }

    fn submit_locked(&self, batch: &mut Batch) {
        batch.end_pass();
        if !batch.params.is_empty() {
            self.queue.write_buffer(&self.uniforms, 0, &batch.params);
            batch.params.clear();
        }
        for (ring, host) in std::mem::take(&mut batch.rings) {
            self.queue.write_buffer(&ring, 0, &host);
        }
        if let Some(enc) = batch.encoder.as_mut() {
            super::timing::resolve(&mut batch.timing, enc);
        }
        if let Some(enc) = batch.encoder.take() {
            self.queue.submit(Some(enc.finish()));
            self.counters.submits.fetch_add(1, Ordering::Relaxed);
            events::count(events::Count::Submit, 0);
        }
        batch.slot = 0;
        let written = std::mem::take(&mut batch.written);
        let me = self.me.clone();
        context::close_batch_scopes(self.id, move |e| {
            let reason = format!(
                "the GPU discarded a batch of queued work ({e}), so the tensors it wrote hold stale values; \
                 recompute them"
            );
            if let Some(ctx) = me.upgrade() {
                ctx.mark_stale(written, &reason);
            }
            Error::gpu("gpu", reason)
        });
    }

    /// The profiler's timing state of session `session`, taken (with the
    /// batch's queries already resolved: call after `flush`).
    pub(super) fn take_timing(&self, session: u64) -> Option<super::timing::Timing> {
        let mut batch = lock(&self.batch);
        batch.timing.take_if(|t| t.session() == session)
    }

    /// Submits everything recorded so far (PyTorch's `synchronize` without the wait).
    pub fn flush(&self) {
        let mut batch = lock(&self.batch);
        self.submit_locked(&mut batch);
    }

    /// Submits pending work and waits for the GPU to finish it. Natively it
    /// also reads the flags of pending index range checks (in the same submit)
    /// and reports the first that failed; in the browser, which cannot wait,
    /// they stay for the next readback.
    pub fn synchronize(self: &Arc<Self>) -> Result<()> {
        if context::CAN_BLOCK && self.checks_pending() {
            let flags = super::readback::Readback::start_checks(self)?;
            context::block_on_readback(flags).map_err(|e| match e {
                Error::Value { op: "to_vec", msg } => Error::value("synchronize", msg),
                e => e,
            })?;
        } else {
            self.flush();
        }
        context::wait_idle(&self.device)?;
        self.check("synchronize")
    }

    /// Writes host bytes into a buffer, in order with the recorded work: the
    /// bytes go into a mapped staging buffer whose copy is recorded in the
    /// pending encoder. (A queue write would land before not-yet-submitted
    /// commands that may still read this pooled buffer's old contents, and
    /// flushing first would cost a submit per upload.)
    pub(crate) fn upload(&self, dst: &wgpu::Buffer, bytes: &[u8]) -> Result<()> {
        self.upload_for("to", dst, bytes)
    }

    /// `upload` for the op `op` (its failures name it).
    pub(crate) fn upload_for(&self, op: &'static str, dst: &wgpu::Buffer, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let size = (bytes.len() as u64).div_ceil(4) * 4;
        super::replay::note_opaque(self.id);
        context::open_batch_scopes(self.id, &self.device);
        let staging = self.create_checked(op, "an upload's staging buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("skiff upload"),
                size,
                usage: wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        })?;
        {
            let mut view = staging.get_mapped_range_mut(..).map_err(|e| Error::value(op, format!("{e}")))?;
            if bytes.len() as u64 == size {
                view.copy_from_slice(bytes);
            } else {
                let mut padded = bytes.to_vec();
                padded.resize(size as usize, 0);
                view.copy_from_slice(&padded);
            }
        }
        staging.unmap();
        self.counters.uploads.fetch_add(1, Ordering::Relaxed);
        events::count(events::Count::Upload, bytes.len() as u64);
        let mut batch = lock(&self.batch);
        self.note_written(dst, &[]);
        if context::DEFERRED_ERRORS {
            batch.written.push(dst.clone());
        }
        batch.end_pass();
        let encoder = batch.encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default()));
        encoder.copy_buffer_to_buffer(&staging, 0, dst, 0, size);
        Ok(())
    }

    /// Records a copy of the first `size` bytes (a multiple of 4) of `src`
    /// into a new mapped-read staging buffer, followed by the flag slots of
    /// the pending range checks (which are then cleared on the device), and
    /// submits everything recorded so far: one staging buffer and one submit
    /// whether or not checks are pending. `None` when there is nothing to copy.
    pub(crate) fn copy_for_readback(
        &self,
        src: &wgpu::Buffer,
        size: u64,
    ) -> Result<Option<(wgpu::Buffer, Option<TakenChecks>)>> {
        context::open_batch_scopes(self.id, &self.device);
        let mut batch = lock(&self.batch);
        if batch.checks.is_empty() && size == 0 {
            return Ok(None);
        }
        let flag_bytes = batch.checks.bytes();
        let staging = self.create_checked("to_vec", "a readback's staging buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("skiff readback"),
                size: size + flag_bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let checks = batch.checks.take();
        batch.end_pass();
        let encoder = batch.encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default()));
        if size > 0 {
            encoder.copy_buffer_to_buffer(src, 0, &staging, 0, size);
        }
        if flag_bytes > 0 {
            encoder.copy_buffer_to_buffer(&self.check_flags, 0, &staging, size, flag_bytes);
            encoder.clear_buffer(&self.check_flags, 0, Some(flag_bytes));
        }
        self.submit_locked(&mut batch);
        self.counters.readbacks.fetch_add(1, Ordering::Relaxed);
        events::count(events::Count::Readback, size);
        Ok(Some((staging, checks)))
    }
}

/// A 2-D grid of at most `max` workgroups per dimension covering `n` workgroups.
pub fn grid(n: u32, max: u32) -> (u32, u32) {
    let n = n.max(1);
    if n <= max {
        (n, 1)
    } else {
        (max, n.div_ceil(max))
    }
}

#[cfg(test)]
mod tests {
    use super::super::default_device;

    #[test]
    fn a_kernel_that_fails_to_compile_is_an_error_and_the_context_survives() {
        let Ok(dev) = default_device() else {
            eprintln!("SKIPPED: no GPU adapter");
            return;
        };
        let ctx = dev.context();
        let e = ctx.pipeline("test:broken", || "this is not WGSL".to_string()).unwrap_err();
        assert!(e.to_string().contains("test:broken"), "{e}");
        assert!(ctx.check("next op").is_ok(), "the failure must not poison the context");
        let src = format!("{}\n@compute @workgroup_size(1) fn main() {{ }}", super::super::kernels::PRELUDE);
        assert!(ctx.pipeline("test:fine", || src).is_ok());
    }

    #[test]
    fn grids_fold_past_the_per_dimension_limit() {
        assert_eq!(super::grid(10, 65_535), (10, 1));
        assert_eq!(super::grid(65_536, 65_535), (65_535, 2));
        assert_eq!(super::grid(0, 65_535), (1, 1));
    }
}
