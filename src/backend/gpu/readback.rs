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
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct MapState {
    done: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

/// Resolves to the bytes of one readback.
pub struct Readback {
    ctx: Arc<GpuContext>,
    staging: Option<wgpu::Buffer>,
    bytes: usize,
    /// Where the data ends in the staging buffer (the check flags follow).
    data_bytes: usize,
    checks: Option<TakenChecks>,
    state: Arc<Mutex<MapState>>,
}

fn lock(m: &Mutex<MapState>) -> std::sync::MutexGuard<'_, MapState> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Readback {
    /// Starts reading the first `bytes` of `src`: submits pending work plus the copy.
    pub(crate) fn start(ctx: &Arc<GpuContext>, src: &wgpu::Buffer, bytes: u64) -> Result<Readback> {
        ctx.check("to_vec")?;
        let state = Arc::new(Mutex::new(MapState::default()));
        let data_bytes = bytes.div_ceil(4) * 4;
        ctx.refuse_bad(src)?;
        let Some((staging, checks)) = ctx.copy_for_readback(src, data_bytes)? else {
            lock(&state).done = Some(Ok(()));
            return Ok(Readback { ctx: ctx.clone(), staging: None, bytes: 0, data_bytes: 0, checks: None, state });
        };
        let s2 = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let mut st = lock(&s2);
            st.done = Some(r);
            if let Some(w) = st.waker.take() {
                w.wake();
            }
        });
        Ok(Readback {
            ctx: ctx.clone(),
            staging: Some(staging),
            bytes: bytes as usize,
            data_bytes: data_bytes as usize,
            checks,
            state,
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
        // Natively, waiting for the device runs the map callback (ours, or
        // another thread's poll runs it a moment later: hence the few retries).
        // In the browser wait_idle does nothing and the callback wakes us.
        for _ in 0..10_000 {
            let done = lock(&self.state).done.take();
            if let Some(r) = done {
                return Poll::Ready(self.finish(r));
            }
            if let Err(e) = context::wait_idle(&self.ctx.device) {
                return Poll::Ready(Err(e));
            }
            if !context::CAN_BLOCK {
                break;
            }
            std::thread::yield_now();
        }
        let mut st = lock(&self.state);
        if let Some(r) = st.done.take() {
            drop(st);
            return Poll::Ready(self.finish(r));
        }
        if !context::CAN_BLOCK {
            st.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Err(Error::value("to_vec", "the GPU never finished the readback")))
    }
}
