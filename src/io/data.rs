//! Datasets and a batching, shuffling, prefetching [`DataLoader`].
//!
//! ```
//! use skiff::io::{DataLoader, TensorDataset};
//! use skiff::{Device, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let x = Tensor::from_vec((0..20).map(|v| v as f32).collect(), &[10, 2])?;
//! let y = Tensor::from_vec((0..10).collect::<Vec<i32>>(), &[10])?;
//! let loader = DataLoader::new(TensorDataset::new(vec![x, y])?, 4)?.shuffle(7).device(&Device::Cpu);
//! let mut seen = 0;
//! for batch in loader.epoch(0) {
//!     let (x, y) = batch?;
//!     assert_eq!(x.shape()[1], 2);
//!     seen += y.shape()[0];
//! }
//! assert_eq!(seen, 10);
//! # Ok(())
//! # }
//! ```

use super::DistributedSampler;
use crate::random::Generator;
use crate::{Device, Error, Result, Tensor};
use std::sync::Arc;

/// One sample (or one batch): a tensor per field, e.g. `[input, target]`.
pub type Sample = Vec<Tensor>;

/// A random-access collection of samples.
///
/// ```
/// use skiff::io::{DataLoader, Dataset, Sample};
/// use skiff::{Error, Result, Tensor};
///
/// /// Sample i: the input `[i, i * i]` and the label `i % 2`.
/// struct Squares(usize);
///
/// impl Dataset for Squares {
///     fn len(&self) -> usize {
///         self.0
///     }
///     fn get(&self, i: usize) -> Result<Sample> {
///         if i >= self.0 {
///             return Err(Error::Value { op: "Squares::get", msg: format!("index {i} of {}", self.0) });
///         }
///         let x = i as f32;
///         Ok(vec![Tensor::from_vec(vec![x, x * x], &[2])?, Tensor::from_vec(vec![(i % 2) as i32], &[])?])
///     }
/// }
///
/// # fn main() -> skiff::Result<()> {
/// let loader = DataLoader::new(Squares(10), 4)?.drop_last(true);
/// assert_eq!(loader.num_batches(), 2);
/// let batches = loader.batches(0).collect::<Result<Vec<Sample>>>()?;
/// assert_eq!(batches[1][0].shape(), &[4, 2]); // fields stacked along a new first axis
/// assert_eq!(batches[1][0].to_vec::<f32>()?[..2], [4.0, 16.0]);
/// assert_eq!(batches[1][1].to_vec::<i32>()?, vec![0, 1, 0, 1]);
/// # Ok(())
/// # }
/// ```
pub trait Dataset: Send + Sync {
    /// The number of samples.
    fn len(&self) -> usize;
    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The sample at `index` (`index < len()`, else an error).
    fn get(&self, index: usize) -> Result<Sample>;
    /// The samples at `indices`, collated: each field stacked along a new
    /// first axis. Override it when a whole batch can be gathered at once.
    fn get_batch(&self, indices: &[usize]) -> Result<Sample> {
        let samples = indices.iter().map(|&i| self.get(i)).collect::<Result<Vec<_>>>()?;
        collate(&samples)
    }
}

/// Stacks samples field by field along a new first axis.
pub fn collate(samples: &[Sample]) -> Result<Sample> {
    let first = samples.first().ok_or_else(|| Error::value("collate", "needs at least one sample"))?;
    if let Some(bad) = samples.iter().find(|s| s.len() != first.len()) {
        return Err(Error::value(
            "collate",
            format!("samples have different numbers of fields ({} and {})", first.len(), bad.len()),
        ));
    }
    (0..first.len()).map(|f| Tensor::stack(&samples.iter().map(|s| s[f].clone()).collect::<Vec<_>>(), 0)).collect()
}

/// A dataset over in-memory tensors that share their first axis: sample `i`
/// is `[t[i] for t in tensors]`.
#[derive(Debug, Clone)]
pub struct TensorDataset {
    tensors: Vec<Tensor>,
    len: usize,
}

impl TensorDataset {
    /// Errors when `tensors` is empty, one is a scalar, or their first axes differ.
    pub fn new(tensors: Vec<Tensor>) -> Result<TensorDataset> {
        let first = tensors.first().ok_or_else(|| Error::value("TensorDataset", "needs at least one tensor"))?;
        let len = *first.shape().first().ok_or_else(|| {
            Error::shape("TensorDataset", format!("tensors need at least one axis, got shape {:?}", first.shape()))
        })?;
        if let Some(bad) = tensors.iter().find(|t| t.shape().first() != Some(&len)) {
            return Err(Error::shape(
                "TensorDataset",
                format!("all tensors need the same first axis, got shapes {:?} and {:?}", first.shape(), bad.shape()),
            ));
        }
        Ok(TensorDataset { tensors: tensors.iter().map(Tensor::detach).collect(), len })
    }
    /// The underlying tensors.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }
}

impl Dataset for TensorDataset {
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, index: usize) -> Result<Sample> {
        if index >= self.len {
            return Err(Error::value(
                "TensorDataset::get",
                format!("index {index} out of range for {} samples", self.len),
            ));
        }
        self.tensors.iter().map(|t| t.narrow(0, index, 1)?.squeeze(Some(0))).collect()
    }
    fn get_batch(&self, indices: &[usize]) -> Result<Sample> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.len) {
            return Err(Error::value(
                "TensorDataset::get",
                format!("index {bad} out of range for {} samples", self.len),
            ));
        }
        let idx = Tensor::from_vec(indices.iter().map(|&i| i as i32).collect::<Vec<i32>>(), &[indices.len()])?;
        let idx_on = |t: &Tensor| idx.to(&t.device());
        self.tensors.iter().map(|t| t.index_select(0, &idx_on(t)?)).collect()
    }
}

/// Batches a dataset: optional seeded shuffling (a new permutation each epoch,
/// reproducible from the seed), `drop_last`, collation into batch tensors on a
/// target device, and (natively) background prefetching of upcoming batches.
///
/// ```
/// use skiff::io::{DataLoader, TensorDataset};
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::arange(0.0, 10.0, 1.0, DType::F32)?.reshape(&[10, 1])?;
/// let y = Tensor::zeros(&[10], DType::I32)?;
/// let loader = DataLoader::new(TensorDataset::new(vec![x, y])?, 4)?.shuffle(42);
/// assert_eq!(loader.num_batches(), 3); // 4 + 4 + 2
///
/// // A new permutation each epoch, the same one for the same seed and epoch.
/// assert_ne!(loader.indices(0), loader.indices(1));
/// assert_eq!(loader.indices(1), loader.indices(1));
/// let mut seen: Vec<f32> = Vec::new();
/// for batch in loader.epoch(0) {
///     let (inputs, _labels) = batch?;
///     seen.extend(inputs.to_vec::<f32>()?);
/// }
/// seen.sort_by(f32::total_cmp);
/// assert_eq!(seen, (0..10).map(|v| v as f32).collect::<Vec<_>>());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DataLoader {
    dataset: Arc<dyn Dataset>,
    batch_size: usize,
    seed: Option<u64>,
    drop_last: bool,
    device: Device,
    prefetch: usize,
    shard: Option<DistributedSampler>,
}

impl DataLoader {
    /// Batches of `batch_size` (at least 1) samples, in order, on the cpu,
    /// prefetching two batches ahead on native targets.
    pub fn new(dataset: impl Dataset + 'static, batch_size: usize) -> Result<DataLoader> {
        DataLoader::from_arc(Arc::new(dataset), batch_size)
    }
    /// Like [`DataLoader::new`] for a shared dataset.
    pub fn from_arc(dataset: Arc<dyn Dataset>, batch_size: usize) -> Result<DataLoader> {
        if batch_size == 0 {
            return Err(Error::value("DataLoader", "batch_size must be at least 1, got 0"));
        }
        Ok(DataLoader {
            dataset,
            batch_size,
            seed: None,
            drop_last: false,
            device: Device::Cpu,
            prefetch: 2,
            shard: None,
        })
    }
    /// Shuffles every epoch with a permutation derived from `seed` and the epoch number.
    pub fn shuffle(mut self, seed: u64) -> DataLoader {
        self.seed = Some(seed);
        self
    }
    /// Drops the last batch when it would be smaller than `batch_size`.
    pub fn drop_last(mut self, on: bool) -> DataLoader {
        self.drop_last = on;
        self
    }
    /// Keeps this rank's shard of every epoch (data-parallel training): give
    /// every rank the same `shuffle` seed.
    pub fn distributed(mut self, sampler: DistributedSampler) -> DataLoader {
        self.shard = Some(sampler);
        self
    }
    /// Moves each batch to `device` (on the consuming thread).
    pub fn device(mut self, device: &Device) -> DataLoader {
        self.device = device.clone();
        self
    }
    /// How many batches a background thread prepares ahead (0: none). Ignored on wasm32.
    pub fn prefetch(mut self, batches: usize) -> DataLoader {
        self.prefetch = batches;
        self
    }
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.dataset
    }
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
    /// Batches per epoch.
    pub fn num_batches(&self) -> usize {
        let n = self.shard.map_or(self.dataset.len(), |s| s.shard_len(self.dataset.len()));
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }
    /// The sample order of `epoch`: `0..len` unshuffled, else a seeded
    /// permutation; with [`DataLoader::distributed`], this rank's shard of it.
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.dataset.len()).collect();
        if let Some(seed) = self.seed {
            let mut g = Generator::new(seed ^ epoch.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for i in (1..idx.len()).rev() {
                let j = (g.next_u64() % (i as u64 + 1)) as usize;
                idx.swap(i, j);
            }
        }
        match self.shard {
            Some(s) => s.shard(&idx),
            None => idx,
        }
    }
    fn batch_indices(&self, epoch: u64) -> Vec<Vec<usize>> {
        let mut batches: Vec<Vec<usize>> = self.indices(epoch).chunks(self.batch_size).map(<[usize]>::to_vec).collect();
        if self.drop_last && batches.last().is_some_and(|b| b.len() < self.batch_size) {
            batches.pop();
        }
        batches
    }
    /// The batches of `epoch`, every field collated: one `Vec<Tensor>` per batch.
    pub fn batches(&self, epoch: u64) -> Batches {
        Batches::new(self, epoch)
    }
    /// The batches of `epoch` as `(input, target)` pairs; a dataset whose
    /// samples do not have exactly two fields yields an error.
    pub fn epoch(&self, epoch: u64) -> impl Iterator<Item = Result<(Tensor, Tensor)>> {
        self.batches(epoch).map(|b| {
            let mut b = b?;
            if b.len() != 2 {
                return Err(Error::value(
                    "DataLoader::epoch",
                    format!("samples have {} fields, not 2; use batches()", b.len()),
                ));
            }
            let y = b.pop().ok_or_else(|| Error::value("DataLoader::epoch", "empty batch"))?;
            let x = b.pop().ok_or_else(|| Error::value("DataLoader::epoch", "empty batch"))?;
            Ok((x, y))
        })
    }
}

/// The iterator returned by [`DataLoader::batches`].
pub struct Batches {
    source: Source,
    device: Device,
}

enum Source {
    Inline {
        dataset: Arc<dyn Dataset>,
        batches: std::vec::IntoIter<Vec<usize>>,
    },
    #[cfg(not(target_arch = "wasm32"))]
    Prefetch {
        rx: Option<std::sync::mpsc::Receiver<Result<Sample>>>,
        worker: Option<std::thread::JoinHandle<()>>,
        left: usize,
    },
}

impl Batches {
    fn new(loader: &DataLoader, epoch: u64) -> Batches {
        let batches = loader.batch_indices(epoch);
        let dataset = loader.dataset.clone();
        #[cfg(not(target_arch = "wasm32"))]
        if loader.prefetch > 0 && batches.len() > 1 {
            let (tx, rx) = std::sync::mpsc::sync_channel(loader.prefetch);
            let left = batches.len();
            let spawned = std::thread::Builder::new().name("skiff-prefetch".into()).spawn(move || {
                for b in batches {
                    // A send error means the consumer stopped early.
                    if tx.send(dataset.get_batch(&b)).is_err() {
                        break;
                    }
                }
            });
            if let Ok(worker) = spawned {
                return Batches {
                    source: Source::Prefetch { rx: Some(rx), worker: Some(worker), left },
                    device: loader.device.clone(),
                };
            }
            // Spawning failed: fall back to building batches inline.
            return Batches::new(&loader.clone().prefetch(0), epoch);
        }
        Batches { source: Source::Inline { dataset, batches: batches.into_iter() }, device: loader.device.clone() }
    }
}

impl Iterator for Batches {
    type Item = Result<Sample>;
    fn next(&mut self) -> Option<Result<Sample>> {
        let batch = match &mut self.source {
            Source::Inline { dataset, batches } => dataset.get_batch(&batches.next()?),
            #[cfg(not(target_arch = "wasm32"))]
            Source::Prefetch { rx, left, .. } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                match rx.as_ref()?.recv() {
                    Ok(b) => b,
                    Err(_) => {
                        *left = 0;
                        Err(Error::value("DataLoader", "the prefetch thread stopped (a dataset panicked?)"))
                    }
                }
            }
        };
        Some(batch.and_then(|b| b.iter().map(|t| t.to(&self.device)).collect()))
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        #[cfg(not(target_arch = "wasm32"))]
        if let Source::Prefetch { rx, worker, .. } = &mut self.source {
            drop(rx.take()); // unblocks a worker waiting to send
            if let Some(w) = worker.take() {
                let _ = w.join();
            }
        }
    }
}
