//! The communication thread: the one thread that calls MPI.
//!
//! Every collective is a message to this thread, answered on a channel of its
//! own. That gives three things MPI alone does not:
//! - collectives start while the caller goes on (DDP's buckets launch from
//!   gradient hooks while backward still runs) without MPI's nonblocking
//!   requests, whose buffers would have to outlive the hook that filled them;
//! - a timeout on every wait: a rank whose peer died or stalled gets an error
//!   instead of blocking inside MPI forever;
//! - one caller of MPI, in the order collectives were asked for, which is the
//!   order MPI requires to be the same on every rank.

use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// The host buffers a collective moves: one MPI datatype each.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Payload {
    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::F32(v) => v.len(),
            Payload::F64(v) => v.len(),
            Payload::I32(v) => v.len(),
            Payload::U8(v) => v.len(),
            Payload::U16(v) => v.len(),
            Payload::U32(v) => v.len(),
        }
    }
    pub(crate) fn bytes(&self) -> usize {
        let width = match self {
            Payload::F32(_) | Payload::I32(_) | Payload::U32(_) => 4,
            Payload::F64(_) => 8,
            Payload::U8(_) => 1,
            Payload::U16(_) => 2,
        };
        self.len() * width
    }
}

/// The reductions MPI applies elementwise across ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduce {
    Sum,
    Max,
    Min,
}

pub(crate) enum Job {
    AllReduce(Payload, Reduce),
    /// Every rank's buffer (all the same length), concatenated in rank order.
    AllGather(Payload),
    /// The root's buffer on every rank (the others send one of the same length).
    Broadcast(Payload, usize),
    Barrier,
}

struct Request {
    job: Job,
    reply: Sender<Payload>,
}

/// What the thread reports once MPI is up.
pub(crate) struct Started {
    pub rank: usize,
    pub size: usize,
}

/// The handle to the communication thread.
pub(crate) struct CommThread {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    /// Signalled once MPI_Finalize returned.
    finalized: Receiver<()>,
}

/// An answer on its way: [`Pending::wait`] blocks for it, up to a timeout.
pub(crate) struct Pending {
    rx: Receiver<Payload>,
}

/// Why a wait ended without an answer.
pub(crate) enum WaitError {
    /// No answer within the timeout: a peer may have died or stalled.
    TimedOut,
    /// The thread is gone (MPI aborted the job, or the group was shut down).
    Gone,
}

impl Pending {
    pub(crate) fn wait(self, timeout: Duration) -> std::result::Result<Payload, WaitError> {
        self.rx.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => WaitError::TimedOut,
            RecvTimeoutError::Disconnected => WaitError::Gone,
        })
    }
}

impl CommThread {
    /// Starts MPI on a thread of its own (MPI_THREAD_MULTIPLE where the
    /// library has it, so that `abort` may come from another thread).
    pub(crate) fn start() -> Result<(CommThread, Started)> {
        let (started_tx, started_rx) = channel::<Result<Started>>();
        let (requests, rx) = channel::<Request>();
        let (finalized_tx, finalized) = channel::<()>();
        let thread = std::thread::Builder::new()
            .name("skiff-mpi".into())
            .spawn(move || serve(started_tx, rx, finalized_tx))
            .map_err(|e| Error::distributed("distributed::init", format!("cannot start the MPI thread: {e}")))?;
        let started = started_rx
            .recv()
            .map_err(|_| Error::distributed("distributed::init", "the MPI thread ended while starting MPI"))??;
        Ok((CommThread { requests: Some(requests), thread: Some(thread), finalized }, started))
    }

    /// Queues `job`; collectives run one at a time in the order submitted.
    pub(crate) fn submit(&self, job: Job) -> Option<Pending> {
        let (reply, rx) = channel();
        self.requests.as_ref()?.send(Request { job, reply }).ok()?;
        Some(Pending { rx })
    }

    /// Ends the thread after the queued collectives, finalising MPI. False
    /// when MPI_Finalize did not return within `timeout`: it waits for every
    /// rank, and a rank that finalises while another still waits in a
    /// collective (it returned early, an error in its loop) would wait forever.
    pub(crate) fn shutdown(mut self, timeout: Duration) -> bool {
        self.requests.take();
        if self.finalized.recv_timeout(timeout).is_err() {
            return false;
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        true
    }
}

/// Tears the whole job down (MPI_Abort on the world): every rank exits.
pub(crate) fn abort(code: i32) -> ! {
    // SAFETY: MPI_Abort takes the predefined world communicator and an error
    // code; MPI was initialised by the communication thread, and under
    // MPI_THREAD_MULTIPLE any thread may call it. It does not return.
    unsafe {
        mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, code);
    }
    std::process::exit(code)
}

fn serve(started: Sender<Result<Started>>, requests: Receiver<Request>, finalized: Sender<()>) {
    let Some((universe, _threading)) = mpi::initialize_with_threading(Threading::Multiple) else {
        let _ = started.send(Err(Error::distributed(
            "distributed::init",
            "MPI is already initialised in this process (MPI can start once per process; \
             keep one ProcessGroup and clone it)",
        )));
        return;
    };
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if started.send(Ok(Started { rank, size })).is_err() {
        return;
    }
    // Ends when every sender is dropped (shutdown).
    for Request { job, reply } in requests {
        let out = run(&world, size, job);
        // The caller may have stopped waiting (a timeout): nothing to do.
        let _ = reply.send(out);
    }
    drop(world);
    drop(universe); // MPI_Finalize
    let _ = finalized.send(());
}

fn op(r: Reduce) -> SystemOperation {
    match r {
        Reduce::Sum => SystemOperation::sum(),
        Reduce::Max => SystemOperation::max(),
        Reduce::Min => SystemOperation::min(),
    }
}

/// One collective, on the MPI thread. Buffer lengths were checked by the
/// callers; MPI's default error handler aborts the job on anything else.
fn run(world: &SimpleCommunicator, size: usize, job: Job) -> Payload {
    macro_rules! each {
        ($p:expr, $v:ident => $body:expr) => {
            match $p {
                Payload::F32($v) => Payload::F32($body),
                Payload::F64($v) => Payload::F64($body),
                Payload::I32($v) => Payload::I32($body),
                Payload::U8($v) => Payload::U8($body),
                Payload::U16($v) => Payload::U16($body),
                Payload::U32($v) => Payload::U32($body),
            }
        };
    }
    match job {
        Job::AllReduce(p, r) => each!(p, v => {
            let mut out = v.clone();
            world.all_reduce_into(&v[..], &mut out[..], op(r));
            out
        }),
        Job::AllGather(p) => each!(p, v => {
            let mut out = v.repeat(size);
            world.all_gather_into(&v[..], &mut out[..]);
            out
        }),
        Job::Broadcast(p, root) => {
            let root = world.process_at_rank(root as i32);
            each!(p, v => {
                let mut v = v;
                root.broadcast_into(&mut v[..]);
                v
            })
        }
        Job::Barrier => {
            world.barrier();
            Payload::U8(Vec::new())
        }
    }
}
