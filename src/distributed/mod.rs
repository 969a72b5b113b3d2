//! Data-parallel training across processes and machines, over MPI (feature
//! `distributed`, native targets).
//!
//! skiff does not implement its own collectives: it drives an MPI library
//! (Open MPI on Debian: `openmpi-bin`, `libopenmpi-dev`) through the `mpi`
//! crate, so the same binary runs as one process, as `mpirun -np 4` on one
//! machine, across machines with a hostfile, or under a scheduler that starts
//! MPI jobs. Started without `mpirun`, a program is a world of one rank.
//!
//! - [`init`] reads the rank and world size MPI was started with.
//! - [`ProcessGroup`]: `all_reduce` (sum, mean, max, min), `broadcast`,
//!   `all_gather` and `barrier` on tensors; GPU tensors are staged through the
//!   host. Every wait has a timeout ([`ProcessGroup::set_timeout`]).
//! - [`DistributedDataParallel`]: parameters broadcast from rank 0, gradients
//!   averaged in buckets whose all_reduce starts from gradient hooks while
//!   backward still runs, with optional f16 or top-k compression.
//! - [`crate::io::DistributedSampler`]: each rank's disjoint shard of every epoch.
//! - [`save_checkpoint`]: written by rank 0, loadable by one process.
//!
//! ```
//! use skiff::distributed::{self, ReduceOp};
//! use skiff::Tensor;
//!
//! # fn main() -> skiff::Result<()> {
//! let group = distributed::init()?; // under `mpirun -np N`, or a world of one
//! let mine = Tensor::from_vec(vec![group.rank() as f32; 3], &[3])?;
//! let total = group.all_reduce(&mine, ReduceOp::Sum)?;
//! let n = group.world_size() as f32;
//! assert_eq!(total.to_vec::<f32>()?, vec![n * (n - 1.0) / 2.0; 3]);
//! # Ok(())
//! # }
//! ```
//!
//! Failure: when a rank dies, `mpirun` ends the others. When a rank stalls
//! (or dies in a way `mpirun` does not see), the others' collectives time
//! out with [`Error::Distributed`]; a group that timed out cannot be used
//! again, and dropping it calls `MPI_Abort`, which ends every rank.

mod comm;
mod compress;
mod ddp;

pub use ddp::{Compression, DdpConfig, DistributedDataParallel};

use crate::error::{Error, Result};
use crate::io::DistributedSampler;
use crate::{DType, Device, Tensor};
use comm::{CommThread, Job, Payload, Reduce, WaitError};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How [`ProcessGroup::all_reduce`] combines the ranks' tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// The elementwise sum.
    Sum,
    /// The sum divided by the world size (floating-point tensors only).
    Mean,
    /// The elementwise maximum.
    Max,
    /// The elementwise minimum.
    Min,
}

/// The default collective timeout, overridden by `SKIFF_DIST_TIMEOUT_SECS`
/// and [`ProcessGroup::set_timeout`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The ranks of an MPI job (MPI_COMM_WORLD). Clones share it; the last one
/// dropped finalises MPI, which waits for every rank to finalise too, up to
/// the timeout (then, as after a failed collective, it aborts the job).
#[derive(Clone)]
pub struct ProcessGroup(Arc<Group>);

struct Group {
    comm: Mutex<Option<CommThread>>,
    rank: usize,
    size: usize,
    timeout_ms: AtomicU64,
    /// Set by the first collective that timed out; every later one fails.
    failed: Mutex<Option<String>>,
}

/// Starts MPI and returns the world: the rank and size `mpirun` (or another
/// MPI launcher) gave this process, or rank 0 of 1 when started alone. MPI
/// starts once per process: a second call is an error; clone the group.
pub fn init() -> Result<ProcessGroup> {
    let (comm, started) = CommThread::start()?;
    let timeout = std::env::var("SKIFF_DIST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_TIMEOUT);
    Ok(ProcessGroup(Arc::new(Group {
        comm: Mutex::new(Some(comm)),
        rank: started.rank,
        size: started.size,
        timeout_ms: AtomicU64::new(timeout.as_millis() as u64),
        failed: Mutex::new(None),
    })))
}

/// A collective started on the communication thread; [`Wait::wait`] ends it.
pub(crate) struct Wait {
    group: ProcessGroup,
    op: &'static str,
    pending: Option<comm::Pending>,
}

impl Wait {
    /// The collective's result, or a timeout error (which fails the group).
    pub(crate) fn wait(self) -> Result<Payload> {
        let g = &self.group;
        let Some(pending) = self.pending else {
            return Err(g.failure(self.op));
        };
        let timeout = g.timeout();
        pending.wait(timeout).map_err(|e| {
            let why = match e {
                WaitError::TimedOut => format!(
                    "timed out after {} s waiting for the other ranks (this is rank {} of {}): a rank may have \
                     failed, stopped, or called a different collective",
                    timeout.as_secs_f64(),
                    g.0.rank,
                    g.0.size
                ),
                WaitError::Gone => "the MPI thread ended".to_string(),
            };
            g.fail(&why);
            Error::distributed(
                self.op,
                format!("{why}. The process group cannot be used again; dropping it aborts the job (MPI_Abort)"),
            )
        })
    }
}

impl ProcessGroup {
    /// This process's rank, `0..world_size()`.
    pub fn rank(&self) -> usize {
        self.0.rank
    }
    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.0.size
    }
    /// How long a collective waits for the other ranks before failing.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.0.timeout_ms.load(Ordering::Relaxed))
    }
    /// Sets the collective timeout (default 300 s, or `SKIFF_DIST_TIMEOUT_SECS`).
    pub fn set_timeout(&self, timeout: Duration) {
        self.0.timeout_ms.store(timeout.as_millis().max(1) as u64, Ordering::Relaxed);
    }
    /// A sampler giving this rank its shard of every epoch.
    pub fn sampler(&self) -> DistributedSampler {
        DistributedSampler::new(self.rank(), self.world_size()).expect("rank < world size")
    }
    /// Ends every rank of the job now (MPI_Abort): for a rank that hit an
    /// error the others cannot know about.
    pub fn abort(&self, code: i32) -> ! {
        comm::abort(code)
    }

    fn fail(&self, why: &str) {
        let mut f = self.0.failed.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(why.to_string());
        }
    }
    fn failure(&self, op: &'static str) -> Error {
        let why = self.0.failed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Error::distributed(
            op,
            format!(
                "the process group failed earlier ({}); it cannot be used again",
                why.as_deref().unwrap_or("the MPI thread ended")
            ),
        )
    }

    /// Queues `job` on the communication thread without waiting for it.
    pub(crate) fn start(&self, op: &'static str, job: Job) -> Wait {
        let failed = self.0.failed.lock().unwrap_or_else(|e| e.into_inner()).is_some();
        let pending = if failed {
            None
        } else {
            self.0.comm.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|c| c.submit(job))
        };
        Wait { group: self.clone(), op, pending }
    }
    pub(crate) fn run(&self, op: &'static str, job: Job) -> Result<Payload> {
        self.start(op, job).wait()
    }

    /// Checks that every rank passed a tensor of the same shape and dtype,
    /// naming the first rank that did not (else MPI would fail or hang on
    /// buffers of different sizes).
    fn agree(&self, op: &'static str, t: &Tensor) -> Result<()> {
        let sig = signature(t);
        let all = match self.run(op, Job::AllGather(Payload::U32(sig.clone())))? {
            Payload::U32(v) => v,
            _ => unreachable!("all_gather returns the payload type it was given"),
        };
        if all.chunks(sig.len()).all(|theirs| theirs == sig.as_slice()) {
            return Ok(());
        }
        // The same message on every rank: what each one passed.
        let each: Vec<String> =
            all.chunks(sig.len()).enumerate().take(8).map(|(r, s)| format!("rank {r}: {}", describe(s))).collect();
        let more = if self.world_size() > 8 { ", ..." } else { "" };
        Err(Error::shape(
            op,
            format!(
                "the ranks passed different tensors ({}{more}); every rank must pass the same shape and dtype",
                each.join(", ")
            ),
        ))
    }

    /// The elementwise reduction of every rank's `t` (same shape and dtype on
    /// every rank), on `t`'s device. Not recorded for autograd.
    pub fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        const OP: &str = "all_reduce";
        self.agree(OP, t)?;
        if t.dtype() == DType::Bool || (op == ReduceOp::Mean && !t.dtype().is_float()) {
            return Err(Error::dtype(
                OP,
                format!("{op:?} is not defined for a {} tensor of shape {:?}", t.dtype(), t.shape()),
            ));
        }
        let reduce = match op {
            ReduceOp::Sum | ReduceOp::Mean => Reduce::Sum,
            ReduceOp::Max => Reduce::Max,
            ReduceOp::Min => Reduce::Min,
        };
        let mut out = self.run(OP, Job::AllReduce(to_host(OP, t)?, reduce))?;
        if op == ReduceOp::Mean {
            let n = self.world_size();
            match &mut out {
                Payload::F32(v) => v.iter_mut().for_each(|x| *x /= n as f32),
                Payload::F64(v) => v.iter_mut().for_each(|x| *x /= n as f64),
                _ => unreachable!("mean was checked to be on a float tensor"),
            }
        }
        from_host(OP, out, t.shape(), t.dtype(), &t.device())
    }
    /// [`ProcessGroup::all_reduce`] written into `t` in place.
    pub fn all_reduce_(&self, t: &Tensor, op: ReduceOp) -> Result<()> {
        let r = self.all_reduce(t, op)?;
        crate::no_grad(|| t.copy_(&r)).map(|_| ()).map_err(|e| e.renamed("all_reduce_"))
    }
    /// Rank `root`'s `t` on every rank (same shape and dtype on every rank),
    /// on each rank's own device.
    pub fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor> {
        const OP: &str = "broadcast";
        self.check_root(OP, root)?;
        self.agree(OP, t)?;
        let out = self.run(OP, Job::Broadcast(to_host(OP, t)?, root))?;
        from_host(OP, out, t.shape(), t.dtype(), &t.device())
    }
    /// [`ProcessGroup::broadcast`] written into `t` in place.
    pub fn broadcast_(&self, t: &Tensor, root: usize) -> Result<()> {
        let r = self.broadcast(t, root)?;
        crate::no_grad(|| t.copy_(&r)).map(|_| ()).map_err(|e| e.renamed("broadcast_"))
    }
    /// Every rank's `t` stacked along a new first axis, in rank order:
    /// shape `[world_size, ...t.shape()]`.
    pub fn all_gather(&self, t: &Tensor) -> Result<Tensor> {
        const OP: &str = "all_gather";
        self.agree(OP, t)?;
        let out = self.run(OP, Job::AllGather(to_host(OP, t)?))?;
        let shape: Vec<usize> = std::iter::once(self.world_size()).chain(t.shape().iter().copied()).collect();
        from_host(OP, out, &shape, t.dtype(), &t.device())
    }
    /// Returns once every rank has called it.
    pub fn barrier(&self) -> Result<()> {
        self.run("barrier", Job::Barrier).map(|_| ())
    }

    fn check_root(&self, op: &'static str, root: usize) -> Result<()> {
        if root >= self.world_size() {
            return Err(Error::value(
                op,
                format!("root rank {root} is out of range for a world of {}", self.world_size()),
            ));
        }
        Ok(())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let failed = self.failed.get_mut().unwrap_or_else(|e| e.into_inner()).is_some();
        // A rank that panicked or lost its peers cannot finalise (MPI_Finalize
        // waits for everyone): end the job, so the other ranks do not hang.
        if failed || std::thread::panicking() {
            comm::abort(1);
        }
        let timeout = Duration::from_millis(*self.timeout_ms.get_mut());
        if let Some(c) = self.comm.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            if !c.shutdown(timeout) {
                eprintln!(
                    "skiff::distributed: rank {} of {} waited {} s in MPI_Finalize for the other ranks (one may \
                     still be waiting in a collective this rank never joined); aborting the job",
                    self.rank,
                    self.size,
                    timeout.as_secs_f64()
                );
                comm::abort(1);
            }
        }
    }
}

/// Rank 0 writes a checkpoint ([`crate::io::safetensors::save_checkpoint`]: model and
/// optimizer state under their plain names, so one process loads it with
/// [`crate::io::safetensors::load_checkpoint`]); every rank returns once it is written,
/// with rank 0's error if the write failed.
pub fn save_checkpoint(
    group: &ProcessGroup,
    path: impl AsRef<Path>,
    model: &[(String, Tensor)],
    optimizer: &[(String, Tensor)],
    step: u64,
) -> Result<()> {
    const OP: &str = "distributed::save_checkpoint";
    let written =
        if group.rank() == 0 { crate::io::safetensors::save_checkpoint(path, model, optimizer, step) } else { Ok(()) };
    let msg = written.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    // Rank 0's outcome, as its message's bytes (empty: written).
    let len = match group.run(OP, Job::Broadcast(Payload::U32(vec![msg.len() as u32]), 0))? {
        Payload::U32(v) => v[0] as usize,
        _ => unreachable!("broadcast returns the payload type it was given"),
    };
    if len == 0 {
        return Ok(());
    }
    let mut bytes = msg.into_bytes();
    bytes.resize(len, 0);
    let bytes = match group.run(OP, Job::Broadcast(Payload::U8(bytes), 0))? {
        Payload::U8(v) => v,
        _ => unreachable!("broadcast returns the payload type it was given"),
    };
    // The same error on every rank (rank 0's own included).
    Err(Error::value(OP, format!("rank 0 could not write the checkpoint: {}", String::from_utf8_lossy(&bytes))))
}

/// Shape and dtype as 16 words, for [`ProcessGroup::agree`].
fn signature(t: &Tensor) -> Vec<u32> {
    let mut sig = vec![0u32; 16];
    sig[0] = match t.dtype() {
        DType::F32 => 1,
        DType::F64 => 2,
        DType::F16 => 3,
        DType::I32 => 4,
        DType::Bool => 5,
    };
    sig[1] = t.ndim() as u32;
    let numel = t.numel() as u64;
    sig[2] = numel as u32;
    sig[3] = (numel >> 32) as u32;
    for (i, d) in t.shape().iter().take(12).enumerate() {
        sig[4 + i] = *d as u32;
    }
    sig
}

fn describe(sig: &[u32]) -> String {
    let dtype = match sig[0] {
        1 => "f32",
        2 => "f64",
        3 => "f16",
        4 => "i32",
        _ => "bool",
    };
    let dims: Vec<u32> = sig[4..4 + (sig[1] as usize).min(12)].to_vec();
    format!("a {dtype} tensor of shape {dims:?}")
}

/// `t`'s elements on the host, in MPI's types (f16 widened to f32, bool as bytes).
pub(crate) fn to_host(op: &'static str, t: &Tensor) -> Result<Payload> {
    let t = t.detach();
    let p = (|| -> Result<Payload> {
        Ok(match t.dtype() {
            DType::F32 => Payload::F32(t.to_vec::<f32>()?),
            DType::F64 => Payload::F64(t.to_vec::<f64>()?),
            DType::F16 => Payload::F32(t.to_vec::<half::f16>()?.into_iter().map(f32::from).collect()),
            DType::I32 => Payload::I32(t.to_vec::<i32>()?),
            DType::Bool => Payload::U8(t.to_vec::<u8>()?),
        })
    })();
    p.map_err(|e| e.renamed(op))
}

/// A tensor of `shape` and `dtype` on `device` from host elements.
pub(crate) fn from_host(
    op: &'static str,
    p: Payload,
    shape: &[usize],
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let t = match (p, dtype) {
        (Payload::F32(v), DType::F32) => Tensor::from_vec(v, shape)?,
        (Payload::F64(v), DType::F64) => Tensor::from_vec(v, shape)?,
        (Payload::F32(v), DType::F16) => Tensor::from_vec(v.into_iter().map(half::f16::from_f32).collect(), shape)?,
        (Payload::I32(v), DType::I32) => Tensor::from_vec(v, shape)?,
        (Payload::U8(v), DType::Bool) => Tensor::from_vec(v.into_iter().map(|b| u8::from(b != 0)).collect(), shape)?,
        (p, d) => return Err(Error::dtype(op, format!("{} host elements cannot make a {d} tensor", p.len()))),
    };
    t.to(device)
}
