//! What the [`Layer`] trait provides over a layer tree (state dicts, names,
//! train/eval, device and dtype moves), written once over `&dyn Layer`.
//!
//! Why not in the trait's default methods: a default method is compiled once
//! per layer type, and these walk whole trees, so every layer in the crate
//! (and the npm package's wasm) carried its own copy. The defaults in
//! `nn/mod.rs` now call these through [`AsLayer`], one short call each.

use super::{prefixed, Layer, LoadReport, Param, StateCell};
use crate::autograd::no_grad;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

/// Any layer as `&dyn Layer` (implemented for every sized [`Layer`]; never
/// implemented by hand). The provided methods of [`Layer`] hand `self` to
/// the functions of this module through it.
pub trait AsLayer {
    fn as_layer(&self) -> &dyn Layer;
}

impl<L: Layer> AsLayer for L {
    fn as_layer(&self) -> &dyn Layer {
        self
    }
}

pub(super) fn state_cells(layer: &dyn Layer) -> Vec<StateCell> {
    let mut out: Vec<StateCell> = layer.local_parameters().into_iter().map(|(n, p)| (n, p, true)).collect();
    out.extend(layer.local_buffers().into_iter().map(|(n, p)| (n, p, false)));
    for (cname, child) in layer.children() {
        out.extend(child.state_cells().into_iter().map(|(n, p, is_p)| (prefixed(&cname, &n), p, is_p)));
    }
    out
}

pub(super) fn named_parameter_cells(layer: &dyn Layer) -> Vec<(String, Param)> {
    let mut out: Vec<(String, Param)> = Vec::new();
    let mut own = layer.local_parameters();
    for (cname, child) in layer.children() {
        own.extend(child.named_parameter_cells().into_iter().map(|(n, p)| (prefixed(&cname, &n), p)));
    }
    for (n, p) in own {
        if !out.iter().any(|(_, q)| q.ptr_eq(&p)) {
            out.push((n, p));
        }
    }
    out
}

pub(super) fn named_parameters(layer: &dyn Layer) -> Vec<(String, Tensor)> {
    layer.named_parameter_cells().into_iter().map(|(n, p)| (n, p.get())).collect()
}

pub(super) fn named_buffers(layer: &dyn Layer) -> Vec<(String, Tensor)> {
    layer.state_cells().into_iter().filter(|c| !c.2).map(|(n, p, _)| (n, p.get())).collect()
}

pub(super) fn parameters(layer: &dyn Layer) -> Vec<Tensor> {
    layer.named_parameter_cells().into_iter().map(|(_, p)| p.get()).collect()
}

pub(super) fn state_dict(layer: &dyn Layer) -> Vec<(String, Tensor)> {
    layer.state_cells().into_iter().map(|(n, p, _)| (n, p.get())).collect()
}

pub(super) fn load_state_dict(layer: &dyn Layer, entries: &[(String, Tensor)], strict: bool) -> Result<LoadReport> {
    const OP: &str = "load_state_dict";
    let cells = layer.state_cells();
    let given: HashMap<&str, &Tensor> = entries.iter().map(|(k, t)| (k.as_str(), t)).collect();
    let mut report = LoadReport::default();
    let mut writes = Vec::new();
    for (name, cell, _) in &cells {
        match given.get(name.as_str()) {
            None => report.missing_keys.push(name.clone()),
            Some(src) => {
                let dst = cell.get();
                if src.shape() != dst.shape() {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "size mismatch for {name}: the entry has shape {:?}, the layer's tensor has shape {:?}",
                            src.shape(),
                            dst.shape()
                        ),
                    ));
                }
                writes.push((dst, *src));
            }
        }
    }
    let mut seen = HashSet::new();
    for (k, _) in entries {
        if !cells.iter().any(|(n, _, _)| n == k) && seen.insert(k.as_str()) {
            report.unexpected_keys.push(k.clone());
        }
    }
    if strict && !report.missing_keys.is_empty() {
        return Err(Error::value(OP, format!("missing keys in the entries: {:?}", report.missing_keys)));
    }
    if strict && !report.unexpected_keys.is_empty() {
        return Err(Error::value(OP, format!("unexpected keys in the entries: {:?}", report.unexpected_keys)));
    }
    no_grad(|| -> Result<()> {
        for (dst, src) in writes {
            dst.copy_(src)?;
        }
        Ok(())
    })?;
    Ok(report)
}

pub(super) fn train(layer: &dyn Layer, on: bool) {
    layer.core().set_training(on);
    for (_, child) in layer.children() {
        child.train(on);
    }
}

pub(super) fn to(layer: &dyn Layer, device: &Device) -> Result<()> {
    for (_, cell, is_param) in layer.state_cells() {
        let t = cell.get();
        if &t.device() == device {
            continue;
        }
        let moved = no_grad(|| t.detach().to(device))?;
        cell.set(if is_param && t.requires_grad() { moved.requires_grad_(true)? } else { moved });
    }
    Ok(())
}

pub(super) fn to_dtype(layer: &dyn Layer, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(Error::dtype("Layer::to_dtype", format!("expected a float dtype, got {dtype}")));
    }
    for (_, cell, is_param) in layer.state_cells() {
        let t = cell.get();
        if !t.dtype().is_float() || t.dtype() == dtype {
            continue;
        }
        let converted = no_grad(|| t.detach().to_dtype(dtype))?;
        cell.set(if is_param && t.requires_grad() { converted.requires_grad_(true)? } else { converted });
    }
    Ok(())
}

pub(super) fn zero_grad(layer: &dyn Layer) {
    for p in layer.parameters() {
        p.zero_grad();
    }
}
