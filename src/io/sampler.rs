//! [`DistributedSampler`]: each rank of a data-parallel job its own shard of
//! every epoch (PyTorch's `DistributedSampler`).

use crate::{Error, Result};

/// Splits each epoch's sample order into `world_size` disjoint shards and
/// keeps shard `rank`: positions `rank, rank + world_size, ...` of the order.
/// Every rank must use the same shuffle seed, so that the shards are cut from
/// one permutation; the order changes every epoch with it.
///
/// When the dataset does not divide evenly, the order is padded with its own
/// first indices (every rank gets the same number of samples, so every rank
/// runs the same number of steps: a rank with one step more would wait for
/// the others' collectives forever), or, with `drop_tail(true)`, cut to a
/// multiple of `world_size`.
///
/// ```
/// use skiff::io::{DataLoader, DistributedSampler, TensorDataset};
/// use skiff::Tensor;
///
/// # fn main() -> skiff::Result<()> {
/// let data = TensorDataset::new(vec![Tensor::from_vec((0..10).collect::<Vec<i32>>(), &[10])?])?;
/// let loader = |rank| -> skiff::Result<DataLoader> {
///     Ok(DataLoader::new(data.clone(), 2)?.shuffle(5).distributed(DistributedSampler::new(rank, 3)?))
/// };
/// let shards: Vec<Vec<usize>> = (0..3).map(|r| Ok(loader(r)?.indices(0))).collect::<skiff::Result<_>>()?;
/// assert!(shards.iter().all(|s| s.len() == 4)); // 10 samples padded to 12
/// let mut all: Vec<usize> = shards.concat();
/// all.sort();
/// all.dedup();
/// assert_eq!(all, (0..10).collect::<Vec<_>>()); // together, every sample
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistributedSampler {
    rank: usize,
    world_size: usize,
    drop_tail: bool,
}

impl DistributedSampler {
    /// Shard `rank` of `world_size` (`rank < world_size`).
    pub fn new(rank: usize, world_size: usize) -> Result<DistributedSampler> {
        if rank >= world_size {
            return Err(Error::value(
                "DistributedSampler",
                format!("rank {rank} is out of range for a world of {world_size}"),
            ));
        }
        Ok(DistributedSampler { rank, world_size, drop_tail: false })
    }
    /// Cuts the order to a multiple of the world size instead of padding it.
    pub fn drop_tail(mut self, on: bool) -> DistributedSampler {
        self.drop_tail = on;
        self
    }
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn world_size(&self) -> usize {
        self.world_size
    }
    /// The number of samples each rank gets from a dataset of `n`.
    pub fn shard_len(&self, n: usize) -> usize {
        if self.drop_tail {
            n / self.world_size
        } else {
            n.div_ceil(self.world_size)
        }
    }
    /// This rank's shard of `order` (an epoch's sample order).
    pub fn shard(&self, order: &[usize]) -> Vec<usize> {
        let total = self.shard_len(order.len()) * self.world_size;
        // Padding repeats the order from its start (more than once when the
        // dataset is smaller than the world).
        (self.rank..total).step_by(self.world_size).map(|i| order[i % order.len().max(1)]).collect()
    }
}
