//! Saving a captured program with its weights, and running it elsewhere
//! (PaddlePaddle's `save_inference_model` / `load_inference_model`).
//!
//! One safetensors file holds both: each buffer the program captured (the
//! model's parameters and buffers under their state-dict names, other
//! constants as `const.<slot>`) is a 1-D tensor, and the header's metadata
//! carries, under the one key `skiff` (so the header's bytes are the same
//! at every save), what the inputs must be and the program in its stable
//! JSON form: `{"inputs": [...], "program": {"format": "skiff.program", ...}}`. Any tool that reads safetensors sees the
//! weights; `load` runs the program on any device, natively or in wasm.
//! Shapes are fixed as traced: a model saved for batch 32 runs batches of 32.

use super::{InputSpec, Traced};
use crate::autograd::no_grad;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::io::safetensors;
use crate::nn::Layer;
use crate::program::{Program, Source};
use crate::shape::Layout;
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;

const KEY: &str = "skiff";

#[derive(serde::Serialize, serde::Deserialize)]
struct InputDoc {
    dtype: DType,
    layout: Layout,
    len: usize,
}

/// The metadata document, as read (the program is handed on as JSON).
#[derive(serde::Deserialize)]
struct SavedDoc {
    inputs: Vec<InputDoc>,
    program: serde_json::Value,
}

impl Traced {
    /// The program and its captured buffers as safetensors bytes; `names`
    /// names a captured buffer (None: `const.<slot>`). A program that reads
    /// or assigns `.grad` fields (a training step) is refused: save a
    /// forward program (see `save_inference_model`).
    pub fn to_bytes_named(&self, names: &dyn Fn(&Tensor) -> Option<String>) -> Result<Vec<u8>> {
        const OP: &str = "save";
        if !self.grad_inputs.is_empty() || !self.grad_outputs.is_empty() {
            return Err(Error::value(
                OP,
                "the program reads or assigns .grad fields (a training step): save a forward program, traced under no_grad",
            ));
        }
        let mut entries = Vec::new();
        let mut slot_names = HashMap::new();
        for (id, v) in self.program.values.iter().enumerate() {
            if let Source::Captured(s) = &v.source {
                let t = Tensor::from_storage(s.clone(), Layout::contiguous(&[v.len]), v.dtype);
                let name = names(&t).unwrap_or_else(|| format!("const.{id}"));
                slot_names.insert(id, name.clone());
                entries.push((name, t));
            }
        }
        let json = self.program.to_json(&|id| slot_names.get(&id).cloned().unwrap_or_default())?;
        let inputs: Vec<InputDoc> =
            self.inputs.iter().map(|i| InputDoc { dtype: i.dtype, layout: i.layout.clone(), len: i.len }).collect();
        let inputs = serde_json::to_string(&inputs).map_err(|e| Error::value(OP, e.to_string()))?;
        let doc = format!(r#"{{"inputs":{inputs},"program":{json}}}"#);
        let metadata = HashMap::from([(KEY.to_string(), doc)]);
        safetensors::to_bytes_with_metadata(&entries, metadata)
    }

    /// `to_bytes_named` with every captured buffer named `const.<slot>`.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_bytes_named(&|_| None)
    }

    /// Writes `to_bytes` to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        write(path.as_ref(), &self.to_bytes()?)
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::value("save", format!("writing {}: {e}", path.display())))
}

/// Reads a program saved by `Traced::to_bytes` (or `save_inference_model`)
/// onto `device`; `run` replays it. A file that is not one, or whose program
/// could not have been captured (`Program::validate`), is an error.
pub fn load(bytes: &[u8], device: &Device) -> Result<Traced> {
    const OP: &str = "load program";
    let (tensors, metadata) = safetensors::from_bytes_with_metadata(bytes, device)?;
    let doc = metadata
        .get(KEY)
        .ok_or_else(|| Error::value(OP, format!("the file has no {KEY:?} metadata: not a saved skiff program")))?;
    let doc: SavedDoc = serde_json::from_str(doc).map_err(|e| Error::value(OP, format!("not a skiff program: {e}")))?;
    let (json, inputs) = (doc.program.to_string(), doc.inputs);
    let by_name: HashMap<&str, &Tensor> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut captured = |name: &str, dtype: DType, len: usize| {
        let t = by_name
            .get(name)
            .ok_or_else(|| Error::value(OP, format!("the program reads {name:?}, which the file lacks")))?;
        if t.dtype() != dtype || t.numel() != len || !t.is_contiguous() {
            return Err(Error::value(
                OP,
                format!("{name:?} is {} {:?}, the program reads {dtype} of {len} elements", t.dtype(), t.shape()),
            ));
        }
        Ok(t.storage().clone())
    };
    let program = Program::from_json(&json, crate::ops::row_table(), device, &mut captured)?;
    if inputs.len() != program.inputs() {
        return Err(Error::value(
            OP,
            format!("{} input specs for a program of {} inputs", inputs.len(), program.inputs()),
        ));
    }
    for (k, i) in inputs.iter().enumerate() {
        let slot = program.values.iter().find(|v| matches!(v.source, Source::Input(j) if j == k));
        let fits = slot.is_some_and(|v| v.dtype == i.dtype && v.len == i.len) && i.layout.fits_in(i.len);
        if !fits {
            return Err(Error::value(OP, format!("input {k}'s spec does not fit the program")));
        }
    }
    let inputs = inputs
        .into_iter()
        .map(|i| InputSpec { layout: i.layout, dtype: i.dtype, device: device.clone(), len: i.len })
        .collect();
    Ok(Traced {
        plan: program.plan_memory(),
        kept: crate::backend::ReplayState::default(),
        program,
        inputs,
        grad_inputs: Vec::new(),
        grad_absent: Vec::new(),
        grad_outputs: Vec::new(),
        assumptions: Vec::new(),
    })
}

/// Traces `layer`'s forward on `inputs` in eval mode without autograd (the
/// forward program only), optimises it and writes it with the layer's
/// parameters and buffers (under their state-dict names) to `path`.
/// `load_inference_model` runs it again, in Rust or in JS
/// (`skiff.loadInferenceModel`). The layer's training flag is restored.
///
/// ```
/// use skiff::jit::{load_inference_model, save_inference_model};
/// use skiff::nn::{Layer, Linear, ReLU, Sequential};
/// use skiff::{Device, Tensor};
/// # fn main() -> skiff::Result<()> {
/// let model = Sequential::new().push(Linear::new(4, 8)?).push(ReLU::new()).push(Linear::new(8, 3)?);
/// let x = Tensor::from_vec((0..8).map(|i| i as f32 / 8.0).collect(), &[2, 4])?;
/// let path = std::env::temp_dir().join("skiff-doc-model.safetensors");
/// save_inference_model(&path, &model, &[x.clone()])?;
/// let loaded = load_inference_model(&path, &Device::Cpu)?;
/// let want = skiff::no_grad(|| model.forward(&x))?;
/// assert_eq!(loaded.run(&[x])?[0].to_f32_vec()?, want.to_f32_vec()?);
/// # Ok(())
/// # }
/// ```
pub fn save_inference_model(path: impl AsRef<Path>, layer: &dyn Layer, inputs: &[Tensor]) -> Result<()> {
    write(path.as_ref(), &inference_bytes(layer, inputs)?)
}

/// `save_inference_model`'s bytes.
pub fn inference_bytes(layer: &dyn Layer, inputs: &[Tensor]) -> Result<Vec<u8>> {
    let [x] = inputs else {
        return Err(Error::value("save_inference_model", format!("a layer takes one input, got {}", inputs.len())));
    };
    let was_training = layer.is_training();
    layer.eval();
    let traced = no_grad(|| super::trace(std::slice::from_ref(x), |xs| Ok(vec![layer.forward(&xs[0])?])));
    layer.train(was_training);
    let (_, mut traced) = traced?;
    traced.optimize();
    let names: Vec<(String, Tensor)> = layer.state_dict();
    traced.to_bytes_named(&|t| {
        names.iter().find(|(_, p)| std::sync::Arc::ptr_eq(p.storage(), t.storage())).map(|(n, _)| n.clone())
    })
}

/// Reads a model written by `save_inference_model` onto `device`.
pub fn load_inference_model(path: impl AsRef<Path>, device: &Device) -> Result<Traced> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|e| Error::value("load_inference_model", format!("reading {}: {e}", path.display())))?;
    load(&bytes, device)
}
