//! Reading GPU buffers back to the host. The core is a future: natively its
//! poll waits for the device (so `read` can simply block on it), while in the
//! browser the map callback wakes it and nothing ever blocks.
//!
//! Every readback also collects the flags of the index range checks recorded
//! since the previous one (`checks`): they travel in the same staging buffer,
//! after the data, and a flagged check turns the readback into its error.

use super::checks::TakenChecks;
use super::context;
use super::runtime::GpuContext;
use crate::error::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct MapState {
    done: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

/// A readback's state and, natively, the condition its map callback signals.
#[derive(Default)]
struct Shared {
    state: Mutex<MapState>,
    mapped: Condvar,
}

/// Resolves to the bytes of one readback.
pub struct Readback {
    ctx: Arc<GpuContext>,
    staging: Option<wgpu::Buffer>,
    bytes: usize,
    /// Where the data ends in the staging buffer (the check flags follow).
    data_bytes: usize,
    checks: Option<TakenChecks>,
    shared: Arc<Shared>,
}

fn lock(m: &Mutex<MapState>) -> std::sync::MutexGuard<'_, MapState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Readback {
    /// Starts reading the first `bytes` of `src`: submits pending work plus the copy.
    pub(crate) fn start(ctx: &Arc<GpuContext>, src: &wgpu::Buffer, bytes: u64) -> Result<Readback> {
        ctx.check("to_vec")?;
        let shared = Arc::new(Shared::default());
        let data_bytes = bytes.div_ceil(4) * 4;
        ctx.refuse_bad(src)?;
        let Some((staging, checks)) = ctx.copy_for_readback(src, data_bytes)? else {
            lock(&shared.state).done = Some(Ok(()));
            return Ok(Readback { ctx: ctx.clone(), staging: None, bytes: 0, data_bytes: 0, checks: None, shared });
        };
        let s2 = shared.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let mut st = lock(&s2.state);
            st.done = Some(r);
            if let Some(w) = st.waker.take() {
                w.wake();
            }
            s2.mapped.notify_all();
        });
        Ok(Readback {
            ctx: ctx.clone(),
            staging: Some(staging),
            bytes: bytes as usize,
            data_bytes: data_bytes as usize,
            checks,
            shared,
        })
    }

    /// Reads back only the flags of the pending range checks (for
    /// `synchronize`): resolves to nothing, or to the first failed check.
    pub(crate) fn start_checks(ctx: &Arc<GpuContext>) -> Result<Readback> {
        Readback::start(ctx, ctx.check_flags(), 0)
    }

    fn finish(&mut self, r: std::result::Result<(), wgpu::BufferAsyncError>) -> Result<Fetched> {
        self.ctx.check("to_vec")?;
        r.map_err(|e| Error::value("to_vec", format!("mapping the GPU buffer failed: {e}")))?;
        let Some(staging) = self.staging.take() else { return Ok(Fetched { data: Vec::new(), checks: None }) };
        let view = staging.get_mapped_range(..).map_err(|e| Error::value("to_vec", format!("{e}")))?;
        let data = view[..self.bytes].to_vec();
        let checks = self.checks.take().map(|c| (c, view[self.data_bytes..].to_vec()));
        drop(view);
        staging.unmap();
        Ok(Fetched { data, checks })
    }
}

/// What a readback's staging buffer held: the data, and the flags of the
/// range checks it collected.
pub struct Fetched {
    data: Vec<u8>,
    checks: Option<(TakenChecks, Vec<u8>)>,
}

/// The bytes of `readback`, or the error it must report instead: a GPU error
/// caught by an error scope not yet read (the browser's allocation failures,
/// discarded batches, kernels that failed to compile), or a failed index
/// range check among those it collected. Checks whose work may have been
/// discarded are never taken as passed.
pub async fn read(readback: Readback) -> Result<Vec<u8>> {
    let ctx = readback.ctx.clone();
    let through = readback.checks.as_ref().map(|c| c.through);
    let fetched = readback.await;
    if let Some(through) = through {
        // Whatever the outcome, these checks are no longer pending: a later
        // op on the same values checks them again unless they passed.
        ctx.note_checks_resolved(through);
    }
    let fetched = fetched?;
    context::pending_errors().await?;
    if let Some((checks, flags)) = fetched.checks {
        checks.resolve(&flags)?;
    }
    Ok(fetched.data)
}

impl Future for Readback {
    type Output = Result<Fetched>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if context::CAN_BLOCK {
            return Poll::Ready(self.wait());
        }
        // In the browser the map callback wakes this future; nothing blocks.
        let mut st = lock(&self.shared.state);
        if let Some(r) = st.done.take() {
            drop(st);
            return Poll::Ready(self.finish(r));
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Readback {
    /// Natively: waits for the device, then for the map callback. The
    /// callback runs inside some thread's device poll: ours, or another
    /// thread's that took it along with its own, in which case our poll may
    /// return before that thread has run it. So this waits on the callback's
    /// condition (re-polling now and then, in case no other thread polls)
    /// rather than spinning, which failed when the thread running the
    /// callback lost its core for a while (tests reading back in parallel on
    /// two cores).
    fn wait(&mut self) -> Result<Fetched> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            use std::time::{Duration, Instant};
            // Generous: a slow software adapter under load, not a hang.
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                context::wait_idle(&self.ctx.device)?;
                let st = lock(&self.shared.state);
                let (mut st, _) = self
                    .shared
                    .mapped
                    .wait_timeout_while(st, Duration::from_millis(20), |st| st.done.is_none())
                    .unwrap_or_else(|e| e.into_inner());
                if let Some(r) = st.done.take() {
                    drop(st);
                    return self.finish(r);
                }
                if Instant::now() > deadline {
                    return Err(Error::value("to_vec", "the GPU never finished the readback"));
                }
            }
        }
        #[cfg(target_arch = "wasm32")]
        Err(Error::value("to_vec", "internal: a readback cannot block in the browser"))
    }
}
