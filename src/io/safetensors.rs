//! Reading and writing tensors in the [safetensors] format (the format
//! Hugging Face and PyTorch use for weights), plus a one-file training
//! checkpoint (model state, optimizer state and step count).
//!
//! Dtypes map both ways: F32, F64, I32 and Bool (safetensors `BOOL`, one byte
//! per element). On load, `I64` tensors (PyTorch's default integer type) are
//! narrowed to I32 when every value fits. GPU tensors are read back on save.
//!
//! ```
//! use skiff::{io::safetensors, Device, Tensor};
//!
//! # fn main() -> skiff::Result<()> {
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let bytes = safetensors::to_bytes(&[("w".to_string(), w)])?;
//! let back = safetensors::from_bytes(&bytes, &Device::Cpu)?;
//! assert_eq!(back[0].0, "w");
//! assert_eq!(back[0].1.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
//! # Ok(())
//! # }
//! ```
//!
//! [safetensors]: https://github.com/huggingface/safetensors

use crate::{DType, Device, Error, Result, Tensor};
use ::safetensors::tensor::{Dtype as StDtype, SafeTensors, TensorView};
use std::collections::{HashMap, HashSet};
use std::path::Path;

const OP: &str = "safetensors";

/// Named tensors, as saved and loaded (a state dict).
pub type NamedTensors = Vec<(String, Tensor)>;

/// A checkpoint read back by [`load_checkpoint`].
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Model tensors, names without the `model.` prefix, sorted by name.
    pub model: NamedTensors,
    /// Optimizer tensors, names without the `optim.` prefix, sorted by name.
    pub optimizer: NamedTensors,
    /// The training step stored with the checkpoint.
    pub step: u64,
}

fn st_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::value(OP, format!("{what}: {e}"))
}

/// The raw little-endian bytes and safetensors dtype of a tensor (read back from a GPU if needed).
fn tensor_bytes(name: &str, t: &Tensor) -> Result<(StDtype, Vec<u8>)> {
    let t = t.detach();
    let err = |e: Error| st_err(&format!("reading tensor {name:?}"), e);
    Ok(match t.dtype() {
        DType::F32 => (StDtype::F32, t.to_vec::<f32>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        DType::F64 => (StDtype::F64, t.to_vec::<f64>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        DType::F16 => {
            (StDtype::F16, t.to_vec::<half::f16>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect())
        }
        DType::I32 => (StDtype::I32, t.to_vec::<i32>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        DType::Bool => (StDtype::BOOL, t.to_vec::<u8>().map_err(err)?.into_iter().map(|b| (b != 0) as u8).collect()),
    })
}

fn serialize(entries: &[(String, Tensor)], metadata: Option<HashMap<String, String>>) -> Result<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut raw = Vec::with_capacity(entries.len());
    for (name, t) in entries {
        if !seen.insert(name.as_str()) {
            return Err(Error::value(OP, format!("tensor name {name:?} appears twice")));
        }
        let (dtype, bytes) = tensor_bytes(name, t)?;
        raw.push((name.as_str(), dtype, t.shape().to_vec(), bytes));
    }
    let views = raw
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(*dtype, shape.clone(), bytes).map(|v| (*name, v)).map_err(|e| st_err(name, e))
        })
        .collect::<Result<Vec<_>>>()?;
    ::safetensors::serialize(views, metadata).map_err(|e| st_err("serialize", e))
}

/// Serializes named tensors to safetensors bytes. Names must be unique.
pub fn to_bytes(entries: &[(String, Tensor)]) -> Result<Vec<u8>> {
    serialize(entries, None)
}

/// Like [`to_bytes`], with string metadata in the header's `__metadata__`.
pub fn to_bytes_with_metadata(entries: &[(String, Tensor)], metadata: HashMap<String, String>) -> Result<Vec<u8>> {
    serialize(entries, Some(metadata))
}

/// Writes named tensors to a safetensors file at `path`.
///
/// Saving a model's state dict and loading it into another model of the same
/// architecture (PyTorch's names, so the file also loads with
/// `safetensors.torch.load_file`):
///
/// ```
/// use skiff::io::safetensors;
/// use skiff::nn::{Layer, Linear};
/// use skiff::Device;
///
/// # fn main() -> skiff::Result<()> {
/// let path = std::env::temp_dir().join(format!("skiff-doc-save-{}.safetensors", std::process::id()));
/// let model = Linear::new(3, 2)?;
/// safetensors::save(&path, &model.state_dict())?;
///
/// let copy = Linear::new(3, 2)?; // other random weights
/// let entries = safetensors::load(&path, &Device::Cpu)?;
/// assert_eq!(entries.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["bias", "weight"]);
/// copy.load_state_dict(&entries, true)?;
/// assert_eq!(copy.weight.get().to_vec::<f32>()?, model.weight.get().to_vec::<f32>()?);
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
pub fn save(path: impl AsRef<Path>, entries: &[(String, Tensor)]) -> Result<()> {
    write_file(path.as_ref(), &to_bytes(entries)?)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| st_err(&format!("writing {}", path.display()), e))
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| st_err(&format!("reading {}", path.display()), e))
}

fn view_to_tensor(name: &str, view: &TensorView<'_>, device: &Device) -> Result<Tensor> {
    let shape = view.shape();
    let data = view.data();
    let t = match view.dtype() {
        StDtype::F32 => Tensor::from_vec(
            data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            shape,
        )?,
        StDtype::F64 => Tensor::from_vec(
            data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect(),
            shape,
        )?,
        StDtype::F16 => {
            Tensor::from_vec(data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]])).collect(), shape)?
        }
        StDtype::I32 => Tensor::from_vec(
            data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            shape,
        )?,
        StDtype::I64 => {
            let wide = data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
            let narrow = wide
                .map(|v| {
                    i32::try_from(v)
                        .map_err(|_| Error::value(OP, format!("tensor {name:?}: I64 value {v} does not fit in i32")))
                })
                .collect::<Result<Vec<i32>>>()?;
            Tensor::from_vec(narrow, shape)?
        }
        StDtype::BOOL => Tensor::from_vec(data.iter().map(|&b| (b != 0) as u8).collect::<Vec<u8>>(), shape)?,
        other => {
            return Err(Error::dtype(
                OP,
                format!("tensor {name:?} has dtype {other:?}; skiff reads F32, F64, F16, I32, I64 (narrowed) and BOOL"),
            ))
        }
    };
    t.to(device)
}

/// Parses safetensors bytes: the tensors sorted by name, and the header metadata.
pub fn from_bytes_with_metadata(bytes: &[u8], device: &Device) -> Result<(NamedTensors, HashMap<String, String>)> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| st_err("invalid safetensors data", e))?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| st_err("invalid safetensors header", e))?;
    let mut views = st.tensors();
    views.sort_by(|a, b| a.0.cmp(&b.0));
    let tensors = views
        .iter()
        .map(|(name, view)| view_to_tensor(name, view, device).map(|t| (name.clone(), t)))
        .collect::<Result<Vec<_>>>()?;
    Ok((tensors, meta.metadata().clone().unwrap_or_default()))
}

/// Parses safetensors bytes into named tensors on `device`, sorted by name.
pub fn from_bytes(bytes: &[u8], device: &Device) -> Result<NamedTensors> {
    Ok(from_bytes_with_metadata(bytes, device)?.0)
}

/// Reads a safetensors file into named tensors on `device`, sorted by name.
pub fn load(path: impl AsRef<Path>, device: &Device) -> Result<NamedTensors> {
    from_bytes(&read_file(path.as_ref())?, device)
}

/// Writes model state, optimizer state and the step count to one safetensors
/// file: tensors as `model.<name>` and `optim.<name>`, the step as the
/// metadata entry `step` (and `format` = `skiff-checkpoint`).
///
/// ```
/// use skiff::io::safetensors::{load_checkpoint, save_checkpoint};
/// use skiff::nn::{Layer, Linear};
/// use skiff::optim::{Adam, AdamConfig, OptimState, Optimizer};
/// use skiff::{DType, Device, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let path = std::env::temp_dir().join(format!("skiff-doc-ckpt-{}.safetensors", std::process::id()));
/// let model = Linear::new(3, 2)?;
/// let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
/// model.forward(&Tensor::ones(&[1, 3], DType::F32)?)?.sum_all()?.backward()?;
/// opt.step()?;
/// save_checkpoint(&path, &model.state_dict(), &opt.state_dict()?.to_flat(), 1)?;
///
/// // Resuming: build the model and optimizer again, then restore both.
/// let ckpt = load_checkpoint(&path, &Device::Cpu)?;
/// assert_eq!(ckpt.step, 1);
/// let resumed = Linear::new(3, 2)?;
/// resumed.load_state_dict(&ckpt.model, true)?;
/// let mut resumed_opt = Adam::new(resumed.parameters(), AdamConfig::default())?;
/// resumed_opt.load_state_dict(&OptimState::from_flat(&ckpt.optimizer)?)?;
/// assert_eq!(resumed.weight.get().to_vec::<f32>()?, model.weight.get().to_vec::<f32>()?);
/// // The same step counts and moment estimates, by name.
/// let flat = |o: &Adam| -> skiff::Result<Vec<(String, Vec<f64>)>> {
///     o.state_dict()?.to_flat().into_iter().map(|(k, t)| Ok((k, t.to_f64_vec()?))).collect()
/// };
/// assert_eq!(flat(&resumed_opt)?, flat(&opt)?);
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
pub fn save_checkpoint(
    path: impl AsRef<Path>,
    model: &[(String, Tensor)],
    optimizer: &[(String, Tensor)],
    step: u64,
) -> Result<()> {
    let entries: Vec<(String, Tensor)> = model
        .iter()
        .map(|(n, t)| (format!("model.{n}"), t.clone()))
        .chain(optimizer.iter().map(|(n, t)| (format!("optim.{n}"), t.clone())))
        .collect();
    let meta =
        HashMap::from([("format".to_string(), "skiff-checkpoint".to_string()), ("step".to_string(), step.to_string())]);
    write_file(path.as_ref(), &serialize(&entries, Some(meta))?)
}

/// Reads a checkpoint written by [`save_checkpoint`] onto `device`.
pub fn load_checkpoint(path: impl AsRef<Path>, device: &Device) -> Result<Checkpoint> {
    let path = path.as_ref();
    let (tensors, meta) = from_bytes_with_metadata(&read_file(path)?, device)?;
    let step = meta.get("step").ok_or_else(|| {
        Error::value(OP, format!("{} is not a skiff checkpoint (no `step` metadata)", path.display()))
    })?;
    let step = step.parse::<u64>().map_err(|e| Error::value(OP, format!("checkpoint step {step:?}: {e}")))?;
    let (mut model, mut optimizer) = (Vec::new(), Vec::new());
    for (name, t) in tensors {
        if let Some(n) = name.strip_prefix("model.") {
            model.push((n.to_string(), t));
        } else if let Some(n) = name.strip_prefix("optim.") {
            optimizer.push((n.to_string(), t));
        } else {
            return Err(Error::value(
                OP,
                format!("checkpoint tensor {name:?} has neither a `model.` nor an `optim.` prefix"),
            ));
        }
    }
    Ok(Checkpoint { model, optimizer, step })
}
