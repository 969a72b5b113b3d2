//! Optimizer state: per-group hyperparameters and per-parameter step counts
//! and tensors, convertible to and from a flat list of named tensors (the
//! form the io module saves as safetensors).
//!
//! Flat names follow PyTorch's state_dict layout:
//! `param_groups.{g}.{option}` and `param_groups.{g}.num_params` (f64 scalars),
//! `state.{i}.step` (an f64 scalar) and `state.{i}.{buffer}` (tensors), where
//! `i` numbers parameters across groups in order.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// One parameter group's hyperparameters and size.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupState {
    pub options: BTreeMap<String, f64>,
    pub num_params: usize,
}

/// One parameter's step count and state tensors (e.g. "exp_avg").
#[derive(Clone, Debug)]
pub struct ParamState {
    pub step: u64,
    pub buffers: BTreeMap<String, Tensor>,
}

/// A whole optimizer's state. `state[i]` is None for a parameter that has not
/// been updated yet.
#[derive(Clone, Debug)]
pub struct OptimState {
    pub groups: Vec<GroupState>,
    pub state: Vec<Option<ParamState>>,
}

const OP: &str = "OptimState::from_flat";

fn scalar(v: f64) -> Tensor {
    Tensor::scalar(v, DType::F64)
}

fn read_scalar(name: &str, t: &Tensor) -> Result<f64> {
    if t.numel() != 1 {
        return Err(Error::value(OP, format!("{name} must be a one-element tensor, got shape {:?}", t.shape())));
    }
    t.item()
}

fn read_count(name: &str, t: &Tensor) -> Result<u64> {
    let v = read_scalar(name, t)?;
    if !(v >= 0.0 && v.fract() == 0.0 && v < 9.0e15) {
        return Err(Error::value(OP, format!("{name} must be a non-negative integer, got {v}")));
    }
    Ok(v as u64)
}

fn parse_index(name: &str, part: &str) -> Result<usize> {
    part.parse::<usize>().map_err(|_| Error::value(OP, format!("{name}: {part:?} is not an index")))
}

impl OptimState {
    /// The state as named tensors (scalars as f64 rank-0 tensors).
    pub fn to_flat(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            out.push((format!("param_groups.{g}.num_params"), scalar(group.num_params as f64)));
            for (k, &v) in &group.options {
                out.push((format!("param_groups.{g}.{k}"), scalar(v)));
            }
        }
        for (i, s) in self.state.iter().enumerate() {
            let Some(s) = s else { continue };
            out.push((format!("state.{i}.step"), scalar(s.step as f64)));
            for (k, t) in &s.buffers {
                out.push((format!("state.{i}.{k}"), t.clone()));
            }
        }
        out
    }

    /// Rebuilds the state from `to_flat`'s names; errors on unknown or
    /// malformed names, missing group sizes, or state beyond the parameter count.
    pub fn from_flat(entries: &[(String, Tensor)]) -> Result<OptimState> {
        let mut groups: BTreeMap<usize, (Option<usize>, BTreeMap<String, f64>)> = BTreeMap::new();
        let mut state: BTreeMap<usize, (Option<u64>, BTreeMap<String, Tensor>)> = BTreeMap::new();
        for (name, t) in entries {
            let parts: Vec<&str> = name.splitn(3, '.').collect();
            match parts.as_slice() {
                ["param_groups", g, key] if !key.is_empty() => {
                    let entry = groups.entry(parse_index(name, g)?).or_default();
                    if *key == "num_params" {
                        entry.0 = Some(read_count(name, t)? as usize);
                    } else {
                        entry.1.insert(key.to_string(), read_scalar(name, t)?);
                    }
                }
                ["state", i, key] if !key.is_empty() => {
                    let entry = state.entry(parse_index(name, i)?).or_default();
                    if *key == "step" {
                        entry.0 = Some(read_count(name, t)?);
                    } else {
                        entry.1.insert(key.to_string(), t.clone());
                    }
                }
                _ => {
                    return Err(Error::value(
                        OP,
                        format!("unexpected entry {name:?} (expected param_groups.<g>.<option> or state.<i>.<name>)"),
                    ))
                }
            }
        }
        let mut out_groups = Vec::new();
        for (expected, (g, (num, options))) in groups.into_iter().enumerate() {
            if g != expected {
                return Err(Error::value(OP, format!("parameter group {expected} is missing (found group {g})")));
            }
            let num_params = num.ok_or_else(|| Error::value(OP, format!("param_groups.{g}.num_params is missing")))?;
            out_groups.push(GroupState { options, num_params });
        }
        let total: usize = out_groups.iter().map(|g| g.num_params).sum();
        let mut out_state: Vec<Option<ParamState>> = vec![None; total];
        for (i, (step, buffers)) in state {
            if i >= total {
                return Err(Error::value(OP, format!("state.{i} is beyond the {total} parameters of the groups")));
            }
            let step = step.ok_or_else(|| Error::value(OP, format!("state.{i}.step is missing")))?;
            out_state[i] = Some(ParamState { step, buffers });
        }
        Ok(OptimState { groups: out_groups, state: out_state })
    }
}
