//! Getting data in and out: safetensors weights and checkpoints, datasets and
//! a batching [`data::DataLoader`], and a reader for MNIST's IDX files.

pub mod data;
pub mod mnist;
pub mod safetensors;
mod sampler;

pub use data::{DataLoader, Dataset, Sample, TensorDataset};
pub use mnist::Mnist;
pub use sampler::DistributedSampler;
