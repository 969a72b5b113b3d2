//! [`DistributedDataParallel`]: gradients averaged across ranks in buckets
//! whose collectives start from gradient hooks while backward still runs.

use super::comm::{Job, Payload, Reduce};
use super::compress;
use super::{from_host, to_host, ProcessGroup, Wait};
use crate::autograd::hooks::HookHandle;
use crate::error::{Error, Result};
use crate::nn::{Layer, Param};
use crate::tensor::TensorImpl;
use crate::{DType, Tensor};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// How gradient buckets travel between ranks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compression {
    /// f32 (or f64) all_reduce: the exact mean.
    None,
    /// Each element rounded to f16: half the bytes, about 3 decimal digits.
    F16,
    /// Each rank sends the `ratio` (0 < ratio <= 1) largest-magnitude
    /// elements of each bucket and carries the rest over to its next step
    /// (error feedback).
    TopK { ratio: f64 },
}

/// Options of [`DistributedDataParallel::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DdpConfig {
    /// The size a bucket fills to before its all_reduce starts (at least one
    /// parameter per bucket). Smaller buckets start sooner during backward;
    /// larger ones pay the collective's latency fewer times.
    pub bucket_bytes: usize,
    /// Compression of f32 (and f16) gradients; f64 ones always travel exact.
    pub compression: Compression,
    /// Broadcast rank 0's buffers (batch norm's running statistics) at every
    /// synchronize, as PyTorch does before every forward, so every rank
    /// evaluates, and checkpoints, with the same statistics.
    pub broadcast_buffers: bool,
}

impl Default for DdpConfig {
    fn default() -> DdpConfig {
        DdpConfig { bucket_bytes: 1 << 20, compression: Compression::None, broadcast_buffers: true }
    }
}

const OP: &str = "DistributedDataParallel";

/// Wraps a model for data-parallel training (PyTorch's
/// `DistributedDataParallel`): every rank runs the same model on its own
/// shard of each batch, and after `backward` every rank's `.grad` holds the
/// mean of all ranks' gradients, so the optimizers take the same step.
///
/// - At construction, rank 0's parameters and buffers are broadcast to every
///   rank, after a check that every rank has the same parameter shapes.
/// - Parameters are grouped, last first (the order backward reaches them),
///   into buckets of about [`DdpConfig::bucket_bytes`]. A gradient hook on each
///   parameter collects its gradient; when a bucket is full it goes to the
///   host (one readback per bucket on a GPU) and its collective starts on the
///   communication thread while backward goes on.
/// - [`DistributedDataParallel::synchronize`] (or
///   [`DistributedDataParallel::backward`]) waits for the buckets and writes
///   the means into `.grad`. Call it after every backward, before the
///   optimizer step.
/// - With [`DdpConfig::broadcast_buffers`] (the default), `synchronize` also
///   copies rank 0's buffers (batch norm's running statistics) to every rank.
/// - [`DistributedDataParallel::no_sync`]: gradient accumulation without
///   communication; the next synchronized backward averages the accumulated
///   `.grad`.
///
/// Every rank must run the same number of synchronized backward passes (the
/// collectives pair up in order): a [`crate::io::DistributedSampler`] gives
/// every rank the same number of batches. A parameter that gets no gradient
/// in a step counts as a zero gradient. The GPU's gradients are staged
/// through the host. Not for use inside `jit::compile` (the hooks read back).
pub struct DistributedDataParallel {
    reducer: Arc<Reducer>,
    hooks: Vec<HookHandle>,
}

/// One parameter's place in the buckets.
struct Slot {
    param: Weak<TensorImpl>,
    name: String,
    shape: Vec<usize>,
    dtype: DType,
    bucket: usize,
    offset: usize,
}

struct Bucket {
    params: Vec<usize>,
    len: usize,
    /// f64 gradients (else f32, with f16 ones widened).
    wide: bool,
}

/// A bucket's collective in flight.
enum InFlight {
    Exact(Wait),
    F16(Wait),
    TopK { indices: Wait, values: Wait },
}

#[derive(Default)]
struct Round {
    /// Per bucket and position: the gradients in so far (None: none, a zero),
    /// and which of its params are in.
    filling: Vec<Vec<Option<Tensor>>>,
    filled: Vec<Vec<bool>>,
    launched: Vec<Option<InFlight>>,
    next_launch: usize,
    /// Top-k's error feedback, per bucket.
    residual: Vec<Vec<f32>>,
    /// The first error a hook hit (hooks cannot return errors).
    error: Option<Error>,
    /// Bytes this rank handed to its collectives in the round.
    bytes: usize,
}

struct Reducer {
    group: ProcessGroup,
    slots: Vec<Slot>,
    /// The model's buffer cells, when they are broadcast at every synchronize.
    buffers: Vec<(String, Param)>,
    buckets: Vec<Bucket>,
    compression: Compression,
    syncing: AtomicBool,
    round: Mutex<Round>,
    last_bytes: AtomicUsize,
}

impl DistributedDataParallel {
    /// Wraps `model` (its parameters that require grad) for `group`,
    /// broadcasting rank 0's parameters and buffers to every rank.
    pub fn new(model: &dyn Layer, group: &ProcessGroup, config: DdpConfig) -> Result<DistributedDataParallel> {
        if let Compression::TopK { ratio } = config.compression {
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(Error::value(OP, format!("top-k ratio must be in (0, 1], got {ratio}")));
            }
        }
        let params: Vec<(String, Tensor)> =
            model.named_parameters().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        for (name, t) in &params {
            if !t.dtype().is_float() {
                return Err(Error::dtype(OP, format!("parameter {name:?} is {}, not a float tensor", t.dtype())));
            }
        }
        // Same parameter count first (else the per-tensor collectives below
        // would not pair up), then shapes, then rank 0's values everywhere.
        group.agree(OP, &Tensor::zeros(&[params.len()], DType::F32)?)?;
        for (_, t) in model.state_dict() {
            group.broadcast_(&t, 0).map_err(|e| e.renamed(OP))?;
        }
        let (slots, buckets) = layout(&params, config.bucket_bytes.max(1));
        let round = Round { residual: buckets.iter().map(|_| Vec::new()).collect(), ..Round::default() };
        let buffers = if config.broadcast_buffers {
            model.state_cells().into_iter().filter(|(_, _, is_param)| !is_param).map(|(n, p, _)| (n, p)).collect()
        } else {
            Vec::new()
        };
        let reducer = Arc::new(Reducer {
            group: group.clone(),
            slots,
            buffers,
            buckets,
            compression: config.compression,
            syncing: AtomicBool::new(true),
            round: Mutex::new(round),
            last_bytes: AtomicUsize::new(0),
        });
        reducer.lock().reset(reducer.buckets.len());
        let mut hooks = Vec::with_capacity(params.len());
        for (i, slot) in reducer.slots.iter().enumerate() {
            let Some(param) = slot.param.upgrade().map(Tensor) else { continue };
            let r = Arc::downgrade(&reducer);
            hooks.push(param.register_hook(move |g| {
                if let Some(r) = r.upgrade() {
                    r.on_grad(i, g);
                }
                None
            })?);
        }
        Ok(DistributedDataParallel { reducer, hooks })
    }

    /// Waits for every bucket's collective and writes the mean gradients
    /// into the parameters' `.grad`.
    pub fn synchronize(&self) -> Result<()> {
        self.reducer.finish()
    }
    /// `loss.backward()`, then [`DistributedDataParallel::synchronize`].
    pub fn backward(&self, loss: &Tensor) -> Result<()> {
        let run = loss.backward();
        // Even when backward failed, the collectives this rank owes its
        // peers still run, so they fail with this rank's error, not a hang.
        let synced = self.synchronize();
        run.and(synced)
    }
    /// Runs `f` (a backward for gradient accumulation) without communication:
    /// gradients accumulate locally, and the next synchronized backward
    /// averages the accumulated `.grad`.
    pub fn no_sync<R>(&self, f: impl FnOnce() -> R) -> R {
        let was = self.reducer.syncing.swap(false, Ordering::SeqCst);
        let out = f();
        self.reducer.syncing.store(was, Ordering::SeqCst);
        out
    }
    /// The process group.
    pub fn group(&self) -> &ProcessGroup {
        &self.reducer.group
    }
    /// The number of gradient buckets.
    pub fn num_buckets(&self) -> usize {
        self.reducer.buckets.len()
    }
    /// How many buckets' collectives have started since the last
    /// synchronize: during backward, the ones the hooks already launched.
    pub fn buckets_started(&self) -> usize {
        self.reducer.lock().next_launch
    }
    /// The bytes this rank sent into collectives at its last synchronize
    /// (what compression saves).
    pub fn last_sync_bytes(&self) -> usize {
        self.reducer.last_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for DistributedDataParallel {
    fn drop(&mut self) {
        for h in self.hooks.drain(..) {
            h.remove();
        }
    }
}

/// Buckets, last parameter first, split by width and by `cap` bytes.
fn layout(params: &[(String, Tensor)], cap: usize) -> (Vec<Slot>, Vec<Bucket>) {
    let mut slots: Vec<Slot> = params
        .iter()
        .map(|(name, t)| Slot {
            param: Arc::downgrade(&t.0),
            name: name.clone(),
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            bucket: 0,
            offset: 0,
        })
        .collect();
    let mut buckets: Vec<Bucket> = Vec::new();
    for wide in [false, true] {
        let mut open: Option<Bucket> = None;
        for i in (0..slots.len()).rev() {
            if (slots[i].dtype == DType::F64) != wide {
                continue;
            }
            let elem = if wide { 8 } else { 4 };
            let n: usize = slots[i].shape.iter().product();
            if open.as_ref().is_some_and(|b| b.len > 0 && (b.len + n) * elem > cap) {
                buckets.extend(open.take());
            }
            let b = open.get_or_insert_with(|| Bucket { params: Vec::new(), len: 0, wide });
            slots[i].bucket = buckets.len();
            slots[i].offset = b.len;
            b.params.push(i);
            b.len += n;
        }
        buckets.extend(open);
    }
    (slots, buckets)
}

impl Round {
    fn reset(&mut self, buckets: usize) {
        self.filling = (0..buckets).map(|_| Vec::new()).collect();
        self.filled.clear();
        self.launched = (0..buckets).map(|_| None).collect();
        self.next_launch = 0;
        self.bytes = 0;
    }
}

impl Reducer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The gradient hook: this backward's gradient `g` of parameter `i`.
    fn on_grad(&self, i: usize, g: &Tensor) {
        if !self.syncing.load(Ordering::SeqCst) {
            return;
        }
        let mut round = self.lock();
        if let Err(e) = self.take_grad(&mut round, i, Some(g)) {
            round.error.get_or_insert(e);
        }
    }

    /// Puts parameter `i`'s accumulated gradient (its `.grad` before this
    /// backward plus `g`, as the engine is about to store it) into its bucket,
    /// and starts every bucket that is full, in bucket order.
    fn take_grad(&self, round: &mut Round, i: usize, g: Option<&Tensor>) -> Result<()> {
        let slot = &self.slots[i];
        let b = slot.bucket;
        if round.launched[b].is_some() || round.filled.get(b).is_some_and(|f| f[self.pos(b, i)]) {
            return Err(Error::autograd(
                OP,
                format!(
                    "parameter {:?} got a second gradient before synchronize(): run one backward per \
                     synchronize, or accumulate inside no_sync",
                    slot.name
                ),
            ));
        }
        let param = slot.param.upgrade().map(Tensor);
        let prev = param.as_ref().and_then(Tensor::grad);
        let local = match (prev, g) {
            (Some(p), Some(g)) => Some(crate::no_grad(|| p.add(g))?),
            (p, g) => p.or_else(|| g.cloned()),
        };
        if round.filled.len() != self.buckets.len() {
            round.filled = self.buckets.iter().map(|bk| vec![false; bk.params.len()]).collect();
        }
        let parts = &mut round.filling[b];
        if parts.is_empty() {
            parts.resize(self.buckets[b].params.len(), None);
        }
        parts[self.pos(b, i)] = local.map(|t| t.detach());
        let pos = self.pos(b, i);
        round.filled[b][pos] = true;
        while round.next_launch < self.buckets.len() && round.filled[round.next_launch].iter().all(|f| *f) {
            let next = round.next_launch;
            let parts = std::mem::take(&mut round.filling[next]);
            let payload = self.gather(next, parts).unwrap_or_else(|e| {
                // The collective still runs (with zeros), so the peers are not
                // left waiting; synchronize returns the error.
                round.error.get_or_insert(e);
                self.zeros(next)
            });
            self.launch(round, next, payload);
            round.next_launch += 1;
        }
        Ok(())
    }

    fn pos(&self, b: usize, i: usize) -> usize {
        self.buckets[b].params.iter().position(|p| *p == i).expect("a parameter is in its bucket")
    }

    fn zeros(&self, b: usize) -> Payload {
        let bucket = &self.buckets[b];
        if bucket.wide {
            Payload::F64(vec![0.0; bucket.len])
        } else {
            Payload::F32(vec![0.0; bucket.len])
        }
    }

    /// Bucket `b`'s gradients as one host buffer. Gradients on a GPU are
    /// concatenated there first, so a bucket costs one readback, not one per
    /// parameter.
    fn gather(&self, b: usize, parts: Vec<Option<Tensor>>) -> Result<Payload> {
        let bucket = &self.buckets[b];
        let present: Vec<&Tensor> = parts.iter().flatten().collect();
        let device = present.first().map(|t| t.device());
        let one_gpu = device.as_ref().is_some_and(|d| *d != crate::Device::Cpu)
            && present.iter().all(|t| Some(t.device()) == device);
        if one_gpu {
            let device = device.expect("checked above");
            let dtype = if bucket.wide { DType::F64 } else { DType::F32 };
            let flat = crate::no_grad(|| -> Result<Tensor> {
                let pieces = bucket
                    .params
                    .iter()
                    .zip(&parts)
                    .map(|(&i, t)| match t {
                        Some(t) => t.to_dtype(dtype)?.reshape(&[-1]),
                        None => Tensor::zeros_on(&[self.slots[i].shape.iter().product()], dtype, &device),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Tensor::concat(&pieces, 0)
            })
            .map_err(|e| e.renamed(OP))?;
            return to_host(OP, &flat);
        }
        let mut buf = self.zeros(b);
        for (&i, t) in bucket.params.iter().zip(&parts) {
            let Some(t) = t else { continue }; // no gradient: zeros
            let slot = &self.slots[i];
            let range = slot.offset..slot.offset + slot.shape.iter().product::<usize>();
            match (&mut buf, to_host(OP, t)?) {
                (Payload::F32(dst), Payload::F32(src)) => dst[range].copy_from_slice(&src),
                (Payload::F64(dst), Payload::F64(src)) => dst[range].copy_from_slice(&src),
                _ => unreachable!("buckets are split by gradient width"),
            }
        }
        Ok(buf)
    }

    /// Starts bucket `b`'s collective on `payload`.
    fn launch(&self, round: &mut Round, b: usize, payload: Payload) {
        let g = &self.group;
        let flight = match (payload, self.compression) {
            (Payload::F32(v), Compression::F16) => {
                let bits = compress::f16_encode(&v);
                round.bytes += bits.len() * 2;
                InFlight::F16(g.start(OP, Job::AllGather(Payload::U16(bits))))
            }
            (Payload::F32(mut v), Compression::TopK { ratio }) => {
                let residual = &mut round.residual[b];
                if residual.len() == v.len() {
                    v.iter_mut().zip(residual.iter()).for_each(|(x, r)| *x += r);
                }
                let k = compress::topk_count(v.len(), ratio);
                let (idx, val) = compress::topk_take(&mut v, k);
                *residual = v;
                round.bytes += idx.len() * 8;
                InFlight::TopK {
                    indices: g.start(OP, Job::AllGather(Payload::U32(idx))),
                    values: g.start(OP, Job::AllGather(Payload::F32(val))),
                }
            }
            (p, _) => {
                round.bytes += p.bytes();
                InFlight::Exact(g.start(OP, Job::AllReduce(p, Reduce::Sum)))
            }
        };
        round.launched[b] = Some(flight);
    }

    /// Launches what backward did not (parameters without a gradient count
    /// as zeros), waits for every bucket and writes the means into `.grad`.
    fn finish(&self) -> Result<()> {
        let mut round = self.lock();
        let mut first_error = round.error.take();
        for b in 0..self.buckets.len() {
            if round.launched[b].is_some() {
                continue;
            }
            for &i in &self.buckets[b].params {
                let done = round.filled.get(b).is_some_and(|f| f[self.pos(b, i)]);
                if !done {
                    if let Err(e) = self.take_grad(&mut round, i, None) {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        let world = self.group.world_size();
        let mut written = Ok(());
        for b in 0..self.buckets.len() {
            let Some(flight) = round.launched[b].take() else {
                // Only reachable after an error above: the buckets launch in
                // order once filled, and every slot was filled.
                continue;
            };
            let mean = match flight {
                InFlight::Exact(w) => match w.wait()? {
                    Payload::F32(mut v) => {
                        v.iter_mut().for_each(|x| *x /= world as f32);
                        Payload::F32(v)
                    }
                    Payload::F64(mut v) => {
                        v.iter_mut().for_each(|x| *x /= world as f64);
                        Payload::F64(v)
                    }
                    _ => unreachable!("buckets are f32 or f64"),
                },
                InFlight::F16(w) => {
                    let Payload::U16(all) = w.wait()? else { unreachable!("f16 buckets gather u16") };
                    let mut v = compress::f16_sum(&all, self.buckets[b].len);
                    v.iter_mut().for_each(|x| *x /= world as f32);
                    Payload::F32(v)
                }
                InFlight::TopK { indices, values } => {
                    let (Payload::U32(idx), Payload::F32(val)) = (indices.wait()?, values.wait()?) else {
                        unreachable!("top-k buckets gather u32 indices and f32 values")
                    };
                    let mut v = compress::topk_sum(&idx, &val, self.buckets[b].len);
                    v.iter_mut().for_each(|x| *x /= world as f32);
                    Payload::F32(v)
                }
            };
            if written.is_ok() {
                written = self.write_back(b, mean);
            }
        }
        self.last_bytes.store(round.bytes, Ordering::Relaxed);
        round.reset(self.buckets.len());
        drop(round);
        let synced = self.broadcast_buffers();
        match first_error {
            Some(e) => Err(e),
            None => written.and(synced),
        }
    }

    /// Rank 0's buffers into every rank's (all broadcasts started, then awaited).
    fn broadcast_buffers(&self) -> Result<()> {
        let mut started = Vec::with_capacity(self.buffers.len());
        for (name, cell) in &self.buffers {
            let t = cell.get();
            let values = to_host(OP, &t).map_err(|e| e.renamed(OP))?;
            started.push((name, t, self.group.start(OP, Job::Broadcast(values, 0))));
        }
        for (name, t, wait) in started {
            let rank0 = from_host(OP, wait.wait()?, t.shape(), t.dtype(), &t.device())?;
            crate::no_grad(|| t.copy_(&rank0))
                .map_err(|e| Error::value(OP, format!("writing rank 0's buffer {name:?}: {e}")))?;
        }
        Ok(())
    }

    /// Bucket `b`'s means into its parameters' `.grad`.
    fn write_back(&self, b: usize, mean: Payload) -> Result<()> {
        for &i in &self.buckets[b].params {
            let slot = &self.slots[i];
            let Some(param) = slot.param.upgrade().map(Tensor) else { continue };
            let n: usize = slot.shape.iter().product();
            let part = match &mean {
                Payload::F32(v) => Payload::F32(v[slot.offset..slot.offset + n].to_vec()),
                Payload::F64(v) => Payload::F64(v[slot.offset..slot.offset + n].to_vec()),
                _ => unreachable!("means are f32 or f64"),
            };
            let g = from_host(OP, part, &slot.shape, slot.dtype, &param.device())?;
            param.set_grad(Some(g)).map_err(|e| e.renamed(OP))?;
        }
        Ok(())
    }
}
