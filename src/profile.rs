//! Where a step's time goes: `skiff::profile(|| ..)` (JS: `await
//! skiff.profile(async () => ..)`) records every kernel call made inside,
//! per op: calls, host time, and, on devices with timestamp queries, the
//! time the GPU spent in its kernels; with the dispatches, submits, uploads
//! and readbacks (and their bytes) the work took. The result prints as a
//! table and exports as Chrome trace JSON (chrome://tracing, Perfetto).
//!
//! Host time is the time inside the kernel call: on the cpu the kernel's
//! work, on a GPU the time to record its dispatch (the GPU runs it later,
//! which is what the GPU column measures). A kernel called inside another
//! (an f16 op's widened f32 kernel) counts once, under the outer op.
//!
//! ```
//! # fn main() -> skiff::Result<()> {
//! let x = skiff::Tensor::ones(&[64, 64], skiff::DType::F32)?;
//! let (y, profile) = skiff::profile(|| x.matmul(&x)?.relu())?;
//! let y = y?;
//! assert_eq!(y.shape(), &[64, 64]);
//! assert_eq!(profile.op("matmul").map(|s| s.calls), Some(1));
//! println!("{profile}");
//! # Ok(())
//! # }
//! ```

use crate::backend::events::{self, Counts, GpuTime, Span};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fmt;

/// One op's share of a profile.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpStats {
    pub op: String,
    /// Kernel calls made under this op.
    pub calls: u64,
    /// Time inside those calls on the host, in milliseconds.
    pub host_ms: f64,
    /// Time its dispatches ran on the GPU (None: none were timed).
    pub gpu_ms: Option<f64>,
    /// Its timed GPU dispatches.
    pub gpu_kernels: u64,
}

/// What `profile` recorded.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// From the start of the session to its end, in milliseconds.
    pub wall_ms: f64,
    /// Per op, the most expensive first (host plus GPU time).
    pub ops: Vec<OpStats>,
    pub dispatches: u64,
    pub submits: u64,
    pub uploads: u64,
    pub upload_bytes: u64,
    pub readbacks: u64,
    pub readback_bytes: u64,
    /// The devices whose kernels were timed (timestamp queries).
    pub timed_devices: Vec<String>,
    /// Dispatches that could not be timed (the session's query buffer was full).
    pub untimed_dispatches: u64,
    #[serde(skip)]
    spans: Vec<Span>,
    #[serde(skip)]
    gpu: Vec<GpuTime>,
}

/// Ends a session if the profiled code panicked.
#[cfg(not(target_arch = "wasm32"))]
struct Recording;

#[cfg(not(target_arch = "wasm32"))]
impl Drop for Recording {
    fn drop(&mut self) {
        if events::enabled() {
            events::finish();
        }
    }
}

/// Starts recording (`finish` ends it): an error while another profile records.
pub fn start() -> Result<()> {
    if !events::start() {
        return Err(Error::value("profile", "a profile is already recording: profiles do not nest"));
    }
    Ok(())
}

/// Ends the session `start` began and builds its profile, reading the GPU
/// timestamps back (one readback per device that timed kernels).
pub async fn finish() -> Result<Profile> {
    if !events::enabled() {
        return Err(Error::value("profile", "no profile is recording: call start first"));
    }
    let session = events::session();
    let end = events::now_us();
    let log = events::finish();
    let (gpu, untimed) = crate::backend::kernel_times(session).await?;
    Ok(Profile::build(log.spans, log.counts, gpu, untimed, (end - log.origin_us) / 1e3))
}

/// Runs `f` while recording; returns its result and the profile. Natively
/// this waits for the GPU to finish the kernels it times.
#[cfg(not(target_arch = "wasm32"))]
pub fn profile<R>(f: impl FnOnce() -> R) -> Result<(R, Profile)> {
    start()?;
    let guard = Recording;
    let out = f();
    let p = pollster::block_on(finish());
    drop(guard);
    Ok((out, p?))
}

/// `op`'s row, made empty on first use.
fn stats<'a>(m: &'a mut HashMap<&'static str, OpStats>, op: &'static str) -> &'a mut OpStats {
    m.entry(op).or_insert_with(|| OpStats { op: op.to_string(), calls: 0, host_ms: 0.0, gpu_ms: None, gpu_kernels: 0 })
}

impl Profile {
    fn build(spans: Vec<Span>, counts: Counts, gpu: Vec<GpuTime>, untimed: u64, wall_ms: f64) -> Profile {
        let mut by_op: HashMap<&'static str, OpStats> = HashMap::new();
        for s in &spans {
            let e = stats(&mut by_op, s.op);
            e.calls += 1;
            e.host_ms += s.dur_us / 1e3;
        }
        for g in &gpu {
            let e = stats(&mut by_op, g.op);
            e.gpu_kernels += 1;
            e.gpu_ms = Some(e.gpu_ms.unwrap_or(0.0) + g.dur_ns / 1e6);
        }
        let mut ops: Vec<OpStats> = by_op.into_values().collect();
        let cost = |s: &OpStats| s.host_ms + s.gpu_ms.unwrap_or(0.0);
        ops.sort_by(|a, b| cost(b).total_cmp(&cost(a)).then_with(|| a.op.cmp(&b.op)));
        let mut timed_devices: Vec<String> = gpu.iter().map(|g| g.device.clone()).collect();
        timed_devices.sort();
        timed_devices.dedup();
        Profile {
            wall_ms,
            ops,
            dispatches: counts.dispatches,
            submits: counts.submits,
            uploads: counts.uploads,
            upload_bytes: counts.upload_bytes,
            readbacks: counts.readbacks,
            readback_bytes: counts.readback_bytes,
            timed_devices,
            untimed_dispatches: untimed,
            spans,
            gpu,
        }
    }

    /// The stats of `op`, if it ran.
    pub fn op(&self, op: &str) -> Option<&OpStats> {
        self.ops.iter().find(|s| s.op == op)
    }

    /// Every kernel call on the host, in order (microseconds since the start).
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Every timed GPU dispatch.
    pub fn gpu_times(&self) -> &[GpuTime] {
        &self.gpu
    }

    /// The profile as a table, one row per op, then the totals.
    pub fn table(&self) -> String {
        let mut s = format!("{:<28} {:>7} {:>10} {:>10} {:>8}\n", "op", "calls", "host ms", "gpu ms", "kernels");
        for o in &self.ops {
            let gpu = o.gpu_ms.map_or("-".to_string(), |g| format!("{g:.3}"));
            s += &format!("{:<28} {:>7} {:>10.3} {:>10} {:>8}\n", o.op, o.calls, o.host_ms, gpu, o.gpu_kernels);
        }
        let host: f64 = self.ops.iter().map(|o| o.host_ms).sum();
        let timed: Vec<f64> = self.ops.iter().filter_map(|o| o.gpu_ms).collect();
        let gpu = if timed.is_empty() { "-".to_string() } else { format!("{:.3}", timed.iter().sum::<f64>()) };
        let calls: u64 = self.ops.iter().map(|o| o.calls).sum();
        let kernels: u64 = self.ops.iter().map(|o| o.gpu_kernels).sum();
        s += &format!("{:<28} {:>7} {:>10.3} {:>10} {:>8}\n", "total", calls, host, gpu, kernels);
        s += &format!(
            "wall {:.3} ms; {} dispatches, {} submits, {} uploads ({} bytes), {} readbacks ({} bytes)\n",
            self.wall_ms,
            self.dispatches,
            self.submits,
            self.uploads,
            self.upload_bytes,
            self.readbacks,
            self.readback_bytes
        );
        s += &match self.timed_devices.is_empty() {
            true => {
                "GPU kernel times: none (no timed device: the cpu, or an adapter without timestamp queries)\n".into()
            }
            false => format!("GPU kernel times from timestamp queries on {}\n", self.timed_devices.join(", ")),
        };
        if self.untimed_dispatches > 0 {
            s +=
                &format!("{} dispatches were not timed (a profile times 32,768 per device)\n", self.untimed_dispatches);
        }
        s
    }

    /// Chrome's trace event format (JSON): the host's kernel calls on one
    /// track and the GPU's kernels on one per device. The GPU's clock is
    /// not the host's: its track starts with the host call of its first kernel.
    pub fn chrome_trace(&self) -> String {
        let mut events: Vec<serde_json::Value> = vec![
            serde_json::json!({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "skiff"}}),
            serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "host"}}),
        ];
        for s in &self.spans {
            events.push(serde_json::json!({
                "name": s.op, "cat": "host", "ph": "X", "pid": 1, "tid": 1, "ts": s.start_us, "dur": s.dur_us,
            }));
        }
        let mut devices: Vec<&str> = self.gpu.iter().map(|g| g.device.as_str()).collect();
        devices.sort();
        devices.dedup();
        for (k, device) in devices.iter().enumerate() {
            let tid = 2 + k;
            events.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": format!("gpu: {device}")}}));
            let mine: Vec<&GpuTime> = self.gpu.iter().filter(|g| g.device == *device).collect();
            let first = mine.iter().map(|g| g.start_ns).fold(f64::INFINITY, f64::min);
            let anchor = mine
                .iter()
                .find(|g| g.start_ns == first)
                .and_then(|g| self.spans.iter().find(|s| s.op == g.op))
                .map_or(0.0, |s| s.start_us);
            for g in mine {
                events.push(serde_json::json!({
                    "name": g.op, "cat": "gpu", "ph": "X", "pid": 1, "tid": tid,
                    "ts": anchor + (g.start_ns - first) / 1e3, "dur": g.dur_ns / 1e3,
                }));
            }
        }
        serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table())
    }
}
