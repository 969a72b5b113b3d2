//! GPU kernel times for the profiler, from timestamp queries (on devices
//! with `TIMESTAMP_QUERY`: lavapipe, most real GPUs; Chrome where it exposes
//! `timestamp-query`).
//!
//! While a session records (`backend::events`), each dispatch gets a compute
//! pass of its own whose beginning and end write a timestamp into the
//! batch's query set, under the op the thread is running
//! (`events::current_op`). When the batch is submitted its queries are
//! resolved into the context's results buffer, at the next 256-byte
//! boundary, and `collect` reads that buffer back once at the end of the
//! session. Off, none of this runs: one pass holds the whole batch.

use super::readback::{read, Readback};
use super::runtime::GpuContext;
use crate::backend::events::{self, GpuTime};
use crate::error::Result;
use std::sync::{Arc, Mutex, Weak};

/// Queries per batch's query set (two per timed dispatch).
const BATCH_QUERIES: u32 = 1024;
/// Queries a session keeps per context (8 bytes each: 512 KiB).
const SESSION_QUERIES: u32 = 65536;
/// Resolves land on 256-byte boundaries (`QUERY_RESOLVE_BUFFER_ALIGNMENT`).
const ALIGN_QUERIES: u32 = 256 / 8;

/// A context's timing state for one session.
pub(crate) struct Timing {
    session: u64,
    queries: wgpu::QuerySet,
    /// Queries written in the open batch, and the op of each pair.
    used: u32,
    ops: Vec<&'static str>,
    results: wgpu::Buffer,
    /// Queries resolved into `results` so far.
    resolved: u32,
    /// Each timed dispatch: its op and the index of its first query in `results`.
    entries: Vec<(&'static str, u32)>,
    /// Dispatches the session could not time (its buffer was full).
    pub(crate) untimed: u64,
}

/// Contexts that timed dispatches in the current session.
static TIMED: Mutex<Vec<Weak<GpuContext>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Timing {
    pub(super) fn session(&self) -> u64 {
        self.session
    }
}

impl GpuContext {
    /// Whether this device can time dispatches.
    pub fn has_timestamps(&self) -> bool {
        self.device.features().contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The query set and the two query indices for the next dispatch, when
    /// a session records and this device has timestamps; None otherwise
    /// (also when the session's buffer is full: the dispatch is untimed).
    pub(super) fn timing_slot(&self, timing: &mut Option<Timing>) -> Option<(wgpu::QuerySet, u32)> {
        if !events::enabled() || !self.has_timestamps() {
            return None;
        }
        let session = events::session();
        if timing.as_ref().is_none_or(|t| t.session != session) {
            *timing = Some(self.new_timing(session));
            lock(&TIMED).push(self.me.clone());
        }
        let t = timing.as_mut().expect("made above");
        let room = t.resolved.div_ceil(ALIGN_QUERIES) * ALIGN_QUERIES + t.used + 2 <= SESSION_QUERIES;
        if t.used + 2 > BATCH_QUERIES || !room {
            t.untimed += 1;
            return None;
        }
        t.ops.push(events::current_op());
        t.used += 2;
        Some((t.queries.clone(), t.used - 2))
    }

    fn new_timing(&self, session: u64) -> Timing {
        let queries = self.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("skiff profiler"),
            ty: wgpu::QueryType::Timestamp,
            count: BATCH_QUERIES,
        });
        let results = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skiff profiler results"),
            size: SESSION_QUERIES as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Timing { session, queries, used: 0, ops: Vec::new(), results, resolved: 0, entries: Vec::new(), untimed: 0 }
    }
}

/// Resolves the open batch's queries into the session's results (called as
/// the batch is submitted, its pass ended).
pub(super) fn resolve(timing: &mut Option<Timing>, encoder: &mut wgpu::CommandEncoder) {
    let Some(t) = timing.as_mut().filter(|t| t.used > 0) else { return };
    let at = t.resolved.div_ceil(ALIGN_QUERIES) * ALIGN_QUERIES;
    encoder.resolve_query_set(&t.queries, 0..t.used, &t.results, at as u64 * 8);
    for (k, op) in t.ops.drain(..).enumerate() {
        t.entries.push((op, at + 2 * k as u32));
    }
    t.resolved = at + t.used;
    t.used = 0;
}

/// A name for the device: the adapter's, or in a browser (whose WebGPU
/// adapter info leaves the name empty) its backend and type.
fn device_label(info: &wgpu::AdapterInfo) -> String {
    match info.name.is_empty() {
        false => info.name.clone(),
        true => format!("{:?} adapter ({:?})", info.backend, info.device_type),
    }
}

/// The dispatch times every context recorded in session `session` (one
/// readback per context), and how many dispatches went untimed.
pub async fn collect(session: u64) -> Result<(Vec<GpuTime>, u64)> {
    let contexts: Vec<Arc<GpuContext>> = std::mem::take(&mut *lock(&TIMED)).iter().filter_map(Weak::upgrade).collect();
    let (mut times, mut untimed) = (Vec::new(), 0);
    let mut seen: Vec<u64> = Vec::new();
    for ctx in contexts {
        if seen.contains(&ctx.id) {
            continue;
        }
        seen.push(ctx.id);
        ctx.flush();
        let Some(t) = ctx.take_timing(session) else { continue };
        untimed += t.untimed;
        if t.resolved == 0 {
            continue;
        }
        let bytes = read(Readback::start(&ctx, &t.results, t.resolved as u64 * 8)?).await?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let period = ctx.queue.get_timestamp_period() as f64;
        let device = device_label(&ctx.info);
        for (op, at) in t.entries {
            let (begin, end) = (ticks[at as usize], ticks[at as usize + 1]);
            let op = if op.is_empty() { "(program replay)" } else { op };
            times.push(GpuTime {
                op,
                device: device.clone(),
                start_ns: begin as f64 * period,
                dur_ns: end.saturating_sub(begin) as f64 * period,
            });
        }
    }
    Ok((times, untimed))
}
