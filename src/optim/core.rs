//! What every optimizer shares: groups with merged hyperparameters, the
//! per-parameter state, the step loop and state_dict (de)serialisation. Each
//! optimizer supplies only its defaults, a validator and the update rule.
//!
//! Hyperparameters and step counts also live in host cells
//! (`program::HostScalar`), and update rules compute the numbers their
//! kernels take as `Sym`s over them: a captured training step (`jit`) then
//! reads the learning rate a schedule set and the step count at every run,
//! and counts the steps up, instead of repeating the captured call's.
//! Whatever changes the update's shape (a state tensor made or loaded, an
//! option turned on or off) moves the optimizer's `Stamp`, which captured
//! steps assume.

use super::state::{GroupState, OptimState, ParamState};
use super::{IntoParamGroups, ParamGroup};
use crate::autograd::no_grad;
use crate::dispatch::record::{self, Stamp};
use crate::error::{Error, Result};
use crate::program::{HostRef, Sym};
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// Read access to a group's merged hyperparameters (all keys are present
/// after validation; a missing one reads as 0), and to their host cells.
pub(crate) struct Hyper<'a> {
    options: &'a BTreeMap<String, f64>,
    cells: Option<&'a BTreeMap<String, HostRef>>,
}

impl<'a> Hyper<'a> {
    /// Options without cells (validation).
    pub fn plain(options: &'a BTreeMap<String, f64>) -> Hyper<'a> {
        Hyper { options, cells: None }
    }
    pub fn get(&self, key: &str) -> f64 {
        self.options.get(key).copied().unwrap_or(0.0)
    }
    pub fn flag(&self, key: &str) -> bool {
        self.get(key) != 0.0
    }
    /// The option as a number a capture recomputes from its cell at every run.
    pub fn sym(&self, key: &str) -> Sym {
        match self.cells.and_then(|c| c.get(key)) {
            Some(cell) => Sym::cell(cell, record::active()),
            None => Sym::constant(self.get(key)),
        }
    }
}

/// The state tensors of one parameter, created on first use with the
/// parameter's shape, dtype and device; `step` counts this step too.
pub(crate) struct Slot<'a> {
    pub step: Sym,
    buffers: &'a mut BTreeMap<String, Tensor>,
    param: &'a Tensor,
    created: &'a mut bool,
}

impl Slot<'_> {
    /// The named buffer, created filled with `init` when absent.
    pub fn buffer(&mut self, name: &str, init: f64) -> Result<Tensor> {
        if let Some(t) = self.buffers.get(name) {
            return Ok(t.clone());
        }
        let t = self.param.full_like(init)?;
        self.buffers.insert(name.to_string(), t.clone());
        *self.created = true;
        Ok(t)
    }
    /// The named buffer, if it exists.
    pub fn get(&self, name: &str) -> Option<Tensor> {
        self.buffers.get(name).cloned()
    }
    /// Stores a buffer computed by the rule (e.g. a first momentum buffer).
    pub fn insert(&mut self, name: &str, t: Tensor) {
        self.buffers.insert(name.to_string(), t);
        *self.created = true;
    }
}

/// Runs `f`, an op that takes `s.value` as its kernel's scalar `at`; while
/// capturing, ties that scalar to `s`'s expression (`record::bind`).
fn bound<T>(op: &'static str, s: &Sym, at: usize, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if s.expr.is_none() {
        return f();
    }
    let mark = record::mark();
    let out = f()?;
    record::bind(op, mark, at, s);
    Ok(out)
}

/// `t * s`.
pub(crate) fn scale(t: &Tensor, s: &Sym) -> Result<Tensor> {
    bound("mul_scalar", s, 0, || t.mul_scalar(s.value))
}
/// `t *= s`.
pub(crate) fn scale_(t: &Tensor, s: &Sym) -> Result<Tensor> {
    bound("mul_scalar_", s, 0, || t.mul_scalar_(s.value))
}
/// `t / s` (as `div_scalar`: times `1 / s`).
pub(crate) fn divide(t: &Tensor, s: &Sym) -> Result<Tensor> {
    scale(t, &(1.0 / s))
}
/// `t + s`.
pub(crate) fn shift(t: &Tensor, s: &Sym) -> Result<Tensor> {
    bound("add_scalar", s, 0, || t.add_scalar(s.value))
}
/// Runs `f`, which dispatches one kernel taking `syms[at].value` as its
/// scalar `at` (the fused Adam step), binding each while capturing.
pub(crate) fn bound_all(op: &'static str, syms: &[Sym], f: impl FnOnce() -> Result<()>) -> Result<()> {
    let mark = record::mark();
    f()?;
    for (at, s) in syms.iter().enumerate() {
        record::bind(op, mark, at, s);
    }
    Ok(())
}

/// One parameter's live state: its step count (a host cell) and tensors.
#[derive(Clone)]
pub(crate) struct Live {
    step: HostRef,
    buffers: BTreeMap<String, Tensor>,
}

/// The cells of a group's options.
fn option_cells(name: &str, g: usize, options: &BTreeMap<String, f64>) -> BTreeMap<String, HostRef> {
    options.iter().map(|(k, &v)| (k.clone(), HostRef::new(format!("{name}.{k}[{g}]"), v))).collect()
}

/// An update rule: (hyperparameters, parameter, gradient, state) -> in-place update.
pub(crate) type Rule = fn(&Hyper, &Tensor, &Tensor, &mut Slot) -> Result<()>;

pub(crate) struct Core {
    pub name: &'static str,
    pub groups: Vec<ParamGroup>,
    /// Each group's options as host cells (kept equal to `groups[g].options`).
    cells: Vec<BTreeMap<String, HostRef>>,
    /// Moves when the update's shape changes (state made or loaded, an
    /// option turned on or off): captured steps assume it.
    stamp: Stamp,
    state: Vec<Option<Live>>,
    /// The state buffer names this optimizer may hold.
    pub buffers: &'static [&'static str],
    pub validate: fn(&Hyper) -> std::result::Result<(), String>,
}

impl Core {
    pub fn new(
        name: &'static str,
        params: impl IntoParamGroups,
        defaults: BTreeMap<String, f64>,
        buffers: &'static [&'static str],
        validate: fn(&Hyper) -> std::result::Result<(), String>,
    ) -> Result<Core> {
        let mut groups = params.into_param_groups();
        if groups.is_empty() {
            return Err(Error::value(name, "needs at least one parameter group"));
        }
        for (g, group) in groups.iter_mut().enumerate() {
            for key in group.options.keys() {
                if !defaults.contains_key(key) {
                    let known: Vec<&String> = defaults.keys().collect();
                    return Err(Error::value(name, format!("group {g}: unknown option {key:?} (known: {known:?})")));
                }
            }
            for (k, &v) in &defaults {
                group.options.entry(k.clone()).or_insert(v);
            }
            validate(&Hyper::plain(&group.options)).map_err(|m| Error::value(name, format!("group {g}: {m}")))?;
            for (i, p) in group.params.iter().enumerate() {
                if !p.dtype().is_float() {
                    return Err(Error::dtype(
                        name,
                        format!("group {g}, parameter {i}: parameters must be floating-point, got {}", p.dtype()),
                    ));
                }
                // PyTorch's "can't optimize a non-leaf Tensor": the update
                // writes in place, which a tensor with history must not get,
                // and its `.grad` is never filled by backward.
                if !p.is_leaf() {
                    return Err(Error::value(
                        name,
                        format!(
                            "group {g}, parameter {i}: can't optimize a non-leaf tensor (shape {:?}, made by {}); \
                             pass the leaf it was computed from",
                            p.shape(),
                            p.grad_fn_name().unwrap_or_default()
                        ),
                    ));
                }
                if !p.requires_grad() {
                    return Err(Error::value(
                        name,
                        format!(
                            "group {g}, parameter {i}: a tensor of shape {:?} that does not require grad never gets a \
                             gradient; call requires_grad_(true) on it or leave it out",
                            p.shape()
                        ),
                    ));
                }
            }
        }
        let all: Vec<&Tensor> = groups.iter().flat_map(|g| g.params.iter()).collect();
        for (i, p) in all.iter().enumerate() {
            if let Some(j) = all[..i].iter().position(|q| q.same_tensor(p)) {
                return Err(Error::value(name, format!("parameters {j} and {i} are the same tensor (listed twice)")));
            }
        }
        let total = all.len();
        let cells = groups.iter().enumerate().map(|(g, group)| option_cells(name, g, &group.options)).collect();
        let stamp = Stamp::new(format!("{name}'s state"));
        Ok(Core { name, groups, cells, stamp, state: vec![None; total], buffers, validate })
    }

    pub fn step(&mut self, rule: Rule) -> Result<()> {
        let name = self.name;
        let mut index = 0;
        let traced = record::active();
        self.stamp.read();
        for (g, group) in self.groups.iter().enumerate() {
            let hyper = Hyper { options: &group.options, cells: Some(&self.cells[g]) };
            for p in &group.params {
                let i = index;
                index += 1;
                let Some(grad) = p.grad() else { continue };
                if grad.device() != p.device() {
                    return Err(Error::Device {
                        op: name,
                        found: format!(
                            "group {g}: parameter {i} on {} but its grad on {}",
                            p.device().describe(),
                            grad.device().describe()
                        ),
                    });
                }
                if grad.dtype() != p.dtype() {
                    return Err(Error::dtype(
                        name,
                        format!(
                            "group {g}: parameter {i} is a {} tensor but its grad is a {} tensor",
                            p.dtype(),
                            grad.dtype()
                        ),
                    ));
                }
                if grad.shape() != p.shape() {
                    return Err(Error::shape(
                        name,
                        format!(
                            "group {g}: parameter {i} has shape {:?} but its grad has shape {:?}",
                            p.shape(),
                            grad.shape()
                        ),
                    ));
                }
                let mut created = self.state[i].is_none();
                let st = self.state[i].get_or_insert_with(|| Live {
                    step: HostRef::new(format!("{name}.step[{i}]"), 0.0),
                    buffers: BTreeMap::new(),
                });
                // The count goes up first, so the rule sees this step's number
                // (and a replay counts on from the cell); an error takes it back.
                let before = st.step.get();
                let step = &Sym::cell(&st.step, traced) + 1.0;
                st.step.set(step.value);
                if let Some(expr) = &step.expr {
                    record::host(name, &st.step, expr.clone());
                }
                let mut slot = Slot {
                    step: Sym::cell(&st.step, traced),
                    buffers: &mut st.buffers,
                    param: p,
                    created: &mut created,
                };
                let result = no_grad(|| rule(&hyper, p, &grad, &mut slot));
                if created {
                    self.stamp.changed(&format!("made state for parameter {i}"));
                }
                if let Err(e) = result {
                    st.step.set(before);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    pub fn set_option(&mut self, group: usize, key: &str, value: f64) -> Result<()> {
        let name = self.name;
        let count = self.groups.len();
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| Error::value(name, format!("group {group} is out of range ({count} groups)")))?;
        if !g.options.contains_key(key) {
            let known: Vec<&String> = g.options.keys().collect();
            return Err(Error::value(name, format!("group {group}: unknown option {key:?} (known: {known:?})")));
        }
        let mut options = g.options.clone();
        let old = options.insert(key.to_string(), value).unwrap_or(0.0);
        (self.validate)(&Hyper::plain(&options)).map_err(|m| Error::value(name, format!("group {group}: {m}")))?;
        g.options = options;
        if let Some(cell) = self.cells[group].get(key) {
            cell.set(value);
        }
        // Update rules branch on whether an option is zero (weight decay,
        // momentum, flags): a captured step that took the other branch is stale.
        if (old == 0.0) != (value == 0.0) {
            self.stamp.changed(&format!("group {group}: option {key:?} went from {old} to {value}"));
        }
        Ok(())
    }

    pub fn state_dict(&self) -> Result<OptimState> {
        let groups =
            self.groups.iter().map(|g| GroupState { options: g.options.clone(), num_params: g.params.len() }).collect();
        let mut state = Vec::with_capacity(self.state.len());
        for s in &self.state {
            state.push(match s {
                None => None,
                Some(s) => {
                    let mut buffers = BTreeMap::new();
                    for (k, t) in &s.buffers {
                        buffers.insert(k.clone(), no_grad(|| t.contiguous_copy())?);
                    }
                    Some(ParamState { step: s.step.get() as u64, buffers })
                }
            });
        }
        Ok(OptimState { groups, state })
    }

    pub fn load_state_dict(&mut self, src: &OptimState) -> Result<()> {
        let name = self.name;
        let err = |m: String| Error::value(name, format!("load_state_dict: {m}"));
        if src.groups.len() != self.groups.len() {
            return Err(err(format!("the state has {} groups, the optimizer {}", src.groups.len(), self.groups.len())));
        }
        let mut options = Vec::new();
        for (g, (mine, theirs)) in self.groups.iter().zip(&src.groups).enumerate() {
            if mine.params.len() != theirs.num_params {
                return Err(err(format!(
                    "group {g} has {} parameters in the state, {} in the optimizer",
                    theirs.num_params,
                    mine.params.len()
                )));
            }
            let keys_mine: Vec<&String> = mine.options.keys().collect();
            let keys_theirs: Vec<&String> = theirs.options.keys().collect();
            if keys_mine != keys_theirs {
                return Err(err(format!(
                    "group {g} options {keys_theirs:?} differ from this optimizer's {keys_mine:?}"
                )));
            }
            (self.validate)(&Hyper::plain(&theirs.options)).map_err(|m| err(format!("group {g}: {m}")))?;
            options.push(theirs.options.clone());
        }
        let params: Vec<&Tensor> = self.groups.iter().flat_map(|g| g.params.iter()).collect();
        if src.state.len() != params.len() {
            return Err(err(format!(
                "the state covers {} parameters, the optimizer has {}",
                src.state.len(),
                params.len()
            )));
        }
        let mut state = Vec::with_capacity(params.len());
        for (i, (p, s)) in params.iter().zip(&src.state).enumerate() {
            let Some(s) = s else {
                state.push(None);
                continue;
            };
            let mut buffers = BTreeMap::new();
            for (k, t) in &s.buffers {
                if !self.buffers.contains(&k.as_str()) {
                    return Err(err(format!(
                        "state.{i}.{k} is not a {name} buffer (expected one of {:?})",
                        self.buffers
                    )));
                }
                if t.shape() != p.shape() {
                    return Err(Error::shape(
                        name,
                        format!(
                            "load_state_dict: state.{i}.{k} has shape {:?} but parameter {i} has shape {:?}",
                            t.shape(),
                            p.shape()
                        ),
                    ));
                }
                let copy = no_grad(|| t.to(&p.device())?.to_dtype(p.dtype())?.contiguous_copy())?;
                buffers.insert(k.clone(), copy);
            }
            state.push(Some(Live { step: HostRef::new(format!("{name}.step[{i}]"), s.step as f64), buffers }));
        }
        for (g, o) in self.groups.iter_mut().zip(options) {
            g.options = o;
        }
        self.cells = self.groups.iter().enumerate().map(|(g, group)| option_cells(name, g, &group.options)).collect();
        self.state = state;
        self.stamp.changed("load_state_dict replaced its state");
        Ok(())
    }
}

/// Implements `Optimizer` for a struct with a `core: Core` field and an update rule.
macro_rules! impl_optimizer {
    ($ty:ty, $rule:expr) => {
        impl $crate::optim::Optimizer for $ty {
            fn step(&mut self) -> $crate::error::Result<()> {
                self.core.step($rule)
            }
            fn param_groups(&self) -> &[$crate::optim::ParamGroup] {
                &self.core.groups
            }
            fn set_option(&mut self, group: usize, name: &str, value: f64) -> $crate::error::Result<()> {
                self.core.set_option(group, name, value)
            }
            fn state_dict(&self) -> $crate::error::Result<$crate::optim::OptimState> {
                self.core.state_dict()
            }
            fn load_state_dict(&mut self, state: &$crate::optim::OptimState) -> $crate::error::Result<()> {
                self.core.load_state_dict(state)
            }
        }
    };
}
pub(crate) use impl_optimizer;

/// Builds an options map from (name, value) pairs.
pub(crate) fn options(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

/// Checks that a value is finite and at least 0.
pub(crate) fn non_negative(h: &Hyper, key: &str) -> std::result::Result<(), String> {
    let v = h.get(key);
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{key} must be a finite value >= 0, got {v}"))
    }
}

/// Checks that a value lies in [0, 1).
pub(crate) fn unit(h: &Hyper, key: &str) -> std::result::Result<(), String> {
    let v = h.get(key);
    if (0.0..1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("{key} must be in [0, 1), got {v}"))
    }
}
