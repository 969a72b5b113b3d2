//! Containers: `Sequential` (children "0", "1", ... run in order), `LayerList`
//! (indexed, no forward) and `LayerDict` (named, insertion-ordered, no forward).

use super::{Core, Layer};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Runs its layers in order; their state is named "0.weight", "1.bias", ...
///
/// ```
/// use skiff::nn::{Dropout, Layer, Linear, ReLU, Sequential};
/// use skiff::{DType, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let model = Sequential::new()
///     .push(Linear::new(2, 16)?)
///     .push(ReLU::new())
///     .push(Dropout::new(0.5)?)
///     .push(Linear::new(16, 1)?);
/// assert_eq!(model.len(), 4);
/// assert_eq!(model.parameters().len(), 4); // two weights, two biases
///
/// // eval() reaches every layer: dropout is off, so forward is deterministic.
/// model.eval();
/// let x = Tensor::randn(&[8, 2], DType::F32)?;
/// let y = model.forward(&x)?;
/// assert_eq!(y.shape(), &[8, 1]);
/// assert_eq!(y.to_vec::<f32>()?, model.forward(&x)?.to_vec::<f32>()?);
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct Sequential {
    core: Core,
    layers: Vec<Box<dyn Layer>>,
}

impl Sequential {
    pub fn new() -> Sequential {
        Sequential::default()
    }
    /// Appends a layer (builder style).
    pub fn push(mut self, layer: impl Layer + 'static) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }
    /// Appends a boxed layer.
    pub fn add(&mut self, layer: Box<dyn Layer>) {
        self.layers.push(layer);
    }
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&dyn Layer> {
        self.layers.get(i).map(|l| l.as_ref())
    }
}

impl From<Vec<Box<dyn Layer>>> for Sequential {
    fn from(layers: Vec<Box<dyn Layer>>) -> Sequential {
        Sequential { core: Core::default(), layers }
    }
}

fn indexed(layers: &[Box<dyn Layer>]) -> Vec<(String, &dyn Layer)> {
    layers.iter().enumerate().map(|(i, l)| (i.to_string(), l.as_ref())).collect()
}

impl Layer for Sequential {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for l in &self.layers {
            y = l.forward(&y)?;
        }
        Ok(y)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Sequential"
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        indexed(&self.layers)
    }
}

/// An indexed list of layers (PyTorch's `ModuleList`): it registers their
/// state ("0.weight", ...) but has no forward of its own.
#[derive(Default)]
pub struct LayerList {
    core: Core,
    layers: Vec<Box<dyn Layer>>,
}

impl LayerList {
    pub fn new() -> LayerList {
        LayerList::default()
    }
    pub fn push(&mut self, layer: impl Layer + 'static) {
        self.layers.push(Box::new(layer));
    }
    pub fn add(&mut self, layer: Box<dyn Layer>) {
        self.layers.push(layer);
    }
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&dyn Layer> {
        self.layers.get(i).map(|l| l.as_ref())
    }
    pub fn iter(&self) -> impl Iterator<Item = &dyn Layer> {
        self.layers.iter().map(|l| l.as_ref())
    }
}

impl From<Vec<Box<dyn Layer>>> for LayerList {
    fn from(layers: Vec<Box<dyn Layer>>) -> LayerList {
        LayerList { core: Core::default(), layers }
    }
}

impl Layer for LayerList {
    fn forward_impl(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::value("LayerList::forward", "a LayerList has no forward; call its layers (iter/get) instead"))
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "ModuleList"
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        indexed(&self.layers)
    }
}

/// Layers by name, in insertion order (PyTorch's `ModuleDict`); no forward.
#[derive(Default)]
pub struct LayerDict {
    core: Core,
    layers: Vec<(String, Box<dyn Layer>)>,
}

impl LayerDict {
    pub fn new() -> LayerDict {
        LayerDict::default()
    }
    /// Inserts (or replaces, keeping its position) the layer under `key`.
    /// Keys may not be empty or contain '.', which would break dotted names.
    pub fn insert(&mut self, key: &str, layer: impl Layer + 'static) -> Result<()> {
        self.insert_boxed(key, Box::new(layer))
    }
    pub fn insert_boxed(&mut self, key: &str, layer: Box<dyn Layer>) -> Result<()> {
        if key.is_empty() || key.contains('.') {
            return Err(Error::value("LayerDict::insert", format!("key {key:?} must be non-empty and contain no '.'")));
        }
        match self.layers.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = layer,
            None => self.layers.push((key.to_string(), layer)),
        }
        Ok(())
    }
    pub fn get(&self, key: &str) -> Option<&dyn Layer> {
        self.layers.iter().find(|(k, _)| k == key).map(|(_, l)| l.as_ref())
    }
    pub fn keys(&self) -> Vec<String> {
        self.layers.iter().map(|(k, _)| k.clone()).collect()
    }
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl Layer for LayerDict {
    fn forward_impl(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::value("LayerDict::forward", "a LayerDict has no forward; call its layers (get) instead"))
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "ModuleDict"
    }
    fn children(&self) -> Vec<(String, &dyn Layer)> {
        self.layers.iter().map(|(k, l)| (k.clone(), l.as_ref())).collect()
    }
}

/// Boxed and shared layers are layers too: an `Arc<L>` pushed into two
/// containers shares its parameters (weight tying; `named_parameters` lists
/// them once, `state_dict` under every name, as PyTorch does).
macro_rules! delegate_layer {
    ($($ptr:ident),*) => {$(
        impl<L: Layer + ?Sized> Layer for $ptr<L> {
            fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
                (**self).forward_impl(x)
            }
            fn core(&self) -> &Core {
                (**self).core()
            }
            fn local_parameters(&self) -> Vec<(String, super::Param)> {
                (**self).local_parameters()
            }
            fn local_buffers(&self) -> Vec<(String, super::Param)> {
                (**self).local_buffers()
            }
            fn children(&self) -> Vec<(String, &dyn Layer)> {
                (**self).children()
            }
            fn type_name(&self) -> &'static str {
                (**self).type_name()
            }
            fn extra_repr(&self) -> String {
                (**self).extra_repr()
            }
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                (**self).forward(x)
            }
        }
    )*};
}
use std::sync::Arc;
delegate_layer!(Box, Arc);
