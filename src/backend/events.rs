//! What the profiler (`skiff::profile`) records, at the storage-level entry
//! points (`backend::run`, `run_into`, `create`, `check`, the transfers) and
//! in the GPU runtime: a span per kernel call named by its op, and counts of
//! dispatches, submits, uploads and readbacks with their bytes. GPU kernel
//! times come from timestamp queries (`gpu/timing.rs`).
//!
//! Off (the default) every hook is one relaxed atomic load; nothing is
//! allocated or timed.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Whether anything watches kernel calls: bit 0 a profile, bit 1 origin
/// tracking (`census`). The entry points test this one flag first.
static WATCHED: AtomicU8 = AtomicU8::new(0);
pub(super) const PROFILING: u8 = 1;
pub(super) const TRACKING: u8 = 2;
/// Bumped by every `start`, so the GPU contexts know a new session began.
static SESSION: AtomicU64 = AtomicU64::new(0);
static LOG: Mutex<Log> = Mutex::new(Log::new());

thread_local! {
    /// The op whose kernel this thread is running (what a GPU dispatch is timed under).
    static CURRENT: Cell<&'static str> = const { Cell::new("") };
}

/// One kernel call on the host: its op and when it ran (microseconds since
/// the session started).
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub op: &'static str,
    pub start_us: f64,
    pub dur_us: f64,
}

/// One timed GPU dispatch: its op, and when it started and how long it ran
/// on the device (nanoseconds on the device's clock).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTime {
    pub op: &'static str,
    pub device: String,
    pub start_ns: f64,
    pub dur_ns: f64,
}

/// What crossed between host and devices, and how the GPU work was sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub dispatches: u64,
    pub submits: u64,
    pub uploads: u64,
    pub upload_bytes: u64,
    pub readbacks: u64,
    pub readback_bytes: u64,
}

/// Everything a session recorded on the host.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub spans: Vec<Span>,
    pub counts: Counts,
    /// When the session started (`now_us`'s clock).
    pub origin_us: f64,
}

impl Log {
    const fn new() -> Log {
        Log {
            spans: Vec::new(),
            counts: Counts { dispatches: 0, submits: 0, uploads: 0, upload_bytes: 0, readbacks: 0, readback_bytes: 0 },
            origin_us: 0.0,
        }
    }
}

fn log() -> MutexGuard<'static, Log> {
    LOG.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a profile records or origins are tracked: the one check a kernel
/// call makes when neither is on.
#[inline]
pub fn watched() -> bool {
    WATCHED.load(Ordering::Relaxed) != 0
}

/// Sets or clears one of the `WATCHED` bits.
pub(super) fn watch(bit: u8, on: bool) {
    if on {
        WATCHED.fetch_or(bit, Ordering::AcqRel);
    } else {
        WATCHED.fetch_and(!bit, Ordering::AcqRel);
    }
}

/// Whether a profiling session is recording.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The current session's number (0 before the first).
pub fn session() -> u64 {
    SESSION.load(Ordering::Acquire)
}

/// Starts a session; false when one is already recording.
pub fn start() -> bool {
    if ENABLED.swap(true, Ordering::AcqRel) {
        return false;
    }
    *log() = Log { origin_us: now_us(), ..Log::new() };
    SESSION.fetch_add(1, Ordering::AcqRel);
    watch(PROFILING, true);
    true
}

/// Ends the session and returns what it recorded.
pub fn finish() -> Log {
    ENABLED.store(false, Ordering::Release);
    watch(PROFILING, false);
    std::mem::take(&mut *log())
}

/// A monotonic clock in microseconds: `Instant` natively, the page's
/// `performance.now()` in wasm (which has no `Instant`).
pub fn now_us() -> f64 {
    #[cfg(not(target_arch = "wasm32"))]
    {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed().as_secs_f64() * 1e6
    }
    #[cfg(target_arch = "wasm32")]
    {
        let perf = js_sys::Reflect::get(&js_sys::global(), &"performance".into()).ok();
        let now = perf.as_ref().and_then(|p| js_sys::Reflect::get(p, &"now".into()).ok());
        match (perf, now.and_then(|f| f.dyn_into::<js_sys::Function>().ok())) {
            (Some(p), Some(f)) => f.call0(&p).ok().and_then(|v| v.as_f64()).unwrap_or(0.0) * 1e3,
            _ => js_sys::Date::now() * 1e3,
        }
    }
}

#[cfg(target_arch = "wasm32")]
use wasm_bindgen::JsCast;

/// Times one kernel call of `op` while it lives (see `op`).
pub struct OpSpan {
    op: &'static str,
    start_us: f64,
}

impl Drop for OpSpan {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(""));
        let end = now_us();
        let mut l = log();
        let start_us = self.start_us - l.origin_us;
        l.spans.push(Span { op: self.op, start_us, dur_us: end - self.start_us });
    }
}

/// A span for a kernel call of `op` when a session records and no outer
/// call on this thread is being timed already (a kernel that runs others,
/// as f16's widening does, counts once).
#[inline]
pub fn op(op: &'static str) -> Option<OpSpan> {
    if !enabled() {
        return None;
    }
    start_span(op)
}

#[cold]
fn start_span(op: &'static str) -> Option<OpSpan> {
    if !CURRENT.with(|c| c.get()).is_empty() {
        return None;
    }
    CURRENT.with(|c| c.set(op));
    Some(OpSpan { op, start_us: now_us() })
}

/// The op whose kernel this thread is running, or "" (a program's replay).
pub fn current_op() -> &'static str {
    CURRENT.with(|c| c.get())
}

/// What `count` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    Dispatch,
    Submit,
    Upload,
    Readback,
}

/// Counts one event (with its bytes, for transfers) when a session records.
#[inline]
pub fn count(what: Count, bytes: u64) {
    if enabled() {
        let mut l = log();
        let c = &mut l.counts;
        match what {
            Count::Dispatch => c.dispatches += 1,
            Count::Submit => c.submits += 1,
            Count::Upload => {
                c.uploads += 1;
                c.upload_bytes += bytes;
            }
            Count::Readback => {
                c.readbacks += 1;
                c.readback_bytes += bytes;
            }
        }
    }
}
