//! The JS `Optimizer` class (SGD, Adam, AdamW, RMSprop, Adagrad), the
//! `LrScheduler` class (`schedule.rs`) and gradient clipping.
//!
//! An `Optimizer` handle shares an `OptEntry` (the optimizer in a
//! `RefCell`: wasm32 has one thread) with the schedulers built on it; a
//! scheduler finds it behind its JS argument through the
//! `_skiffOptimizerId` getter, so the caller's handle stays usable.
//!
//! Options use PyTorch's names in camelCase (`weightDecay`, `betas`,
//! `lrDecay`, ...); `params` is an array of Tensors or of parameter groups
//! (`{ params: Tensor[], lr?, ... }`, PyTorch's per-group options).

mod clip;
mod options;
mod schedule;

use options::{adam_config, option_values, pick, setup, Opt, Ty, ADAGRAD, ADAM, RMSPROP, SGD};

use crate::optim::{
    Adagrad, AdagradConfig, Adam, AdamConfig, AdamW, OptimState, Optimizer, RmsProp, RmsPropConfig, Sgd, SgdConfig,
};
use crate::web::args::{self, describe, object};
use crate::web::handles::{Class, Found};
use crate::web::nn::{bag, py_float, read_entries, serialize_promise};
use crate::web::{js_error, JsResult, Kind, Named};
use js_sys::Array;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_PARAM_GROUP: &str = r#"
/** A parameter group (PyTorch's param_groups): its tensors and options overriding the optimizer's. */
export interface ParamGroup { params: Tensor[]; [option: string]: unknown }
"#;

/// The property every JS `Optimizer` handle exposes with its registry id.
pub const OPTIMIZER_ID_PROPERTY: &str = "_skiffOptimizerId";

/// One optimizer, shared by its JS handles and schedulers.
pub(crate) struct OptEntry {
    id: u32,
    opt: RefCell<Box<dyn Optimizer>>,
    name: &'static str,
    spec: &'static [Opt],
}

impl OptEntry {
    /// The optimizer, mutably (an error, not a panic, if it is already in use).
    pub(crate) fn borrow_mut(&self, op: &str) -> JsResult<std::cell::RefMut<'_, Box<dyn Optimizer>>> {
        self.opt.try_borrow_mut().map_err(|_| js_error(op, Kind::Value, "the optimizer is in use"))
    }
    pub(crate) fn borrow(&self, op: &str) -> JsResult<std::cell::Ref<'_, Box<dyn Optimizer>>> {
        self.opt.try_borrow().map_err(|_| js_error(op, Kind::Value, "the optimizer is in use"))
    }
}

impl Drop for OptEntry {
    fn drop(&mut self) {
        let _ = OPTIMIZERS.try_with(|m| {
            if let Ok(mut m) = m.try_borrow_mut() {
                m.1.remove(&self.id);
            }
        });
    }
}

thread_local! {
    static OPTIMIZERS: RefCell<(u32, HashMap<u32, Weak<OptEntry>>)> = RefCell::new((0, HashMap::new()));
}

thread_local! {
    /// The JS `Optimizer` class (see `handles.rs`).
    static OPTIMIZER_CLASS: OnceCell<Class> = const { OnceCell::new() };
}

/// An `Optimizer` handle in no registry (id 0; an SGD over one number), made
/// once to find the JS class. None if skiff refused to build it.
fn blank_optimizer() -> JsValue {
    let w = crate::tensor::Tensor::scalar(0.0, crate::DType::F32).requires_grad_(true);
    match w.and_then(|w| Sgd::new(vec![crate::optim::ParamGroup::new(vec![w])], SgdConfig::default())) {
        Ok(sgd) => {
            let opt: Box<dyn Optimizer> = Box::new(sgd);
            JsOptimizer { entry: Rc::new(OptEntry { id: 0, opt: RefCell::new(opt), name: "SGD", spec: SGD }) }.into()
        }
        Err(_) => JsValue::UNDEFINED,
    }
}

/// The optimizer behind a JS `Optimizer` argument (a real handle: see `handles.rs`).
pub(crate) fn optimizer_arg(op: &str, name: &str, v: &JsValue) -> JsResult<Rc<OptEntry>> {
    let found =
        OPTIMIZER_CLASS.with(|c| c.get_or_init(|| Class::of(&blank_optimizer(), OPTIMIZER_ID_PROPERTY)).find(v));
    let id = match found {
        Found::Id(id) => id,
        Found::Freed => {
            let msg = format!("{name} must be an Optimizer, got a freed Optimizer (free() was called on it)");
            return Err(js_error(op, Kind::Argument, msg));
        }
        Found::Other => {
            return Err(js_error(op, Kind::Argument, format!("{name} must be an Optimizer, got {}", describe(v))))
        }
    };
    OPTIMIZERS
        .with(|m| m.borrow().1.get(&id).and_then(Weak::upgrade))
        .ok_or_else(|| js_error(op, Kind::Argument, format!("{name} is an Optimizer that was freed")))
}

/// An optimizer (PyTorch's `torch.optim`). Create one with the static
/// factories after moving the model to its device (`Module.to` replaces the
/// parameter tensors).
#[wasm_bindgen(js_name = Optimizer)]
pub struct JsOptimizer {
    entry: Rc<OptEntry>,
}

impl JsOptimizer {
    fn new(opt: Box<dyn Optimizer>, name: &'static str, spec: &'static [Opt]) -> JsOptimizer {
        OPTIMIZERS.with(|m| {
            let mut m = m.borrow_mut();
            m.0 = m.0.wrapping_add(1).max(1); // 0 is the blank handle's
            let entry = Rc::new(OptEntry { id: m.0, opt: RefCell::new(opt), name, spec });
            m.1.insert(entry.id, Rc::downgrade(&entry));
            JsOptimizer { entry }
        })
    }
}

#[wasm_bindgen(js_class = Optimizer)]
impl JsOptimizer {
    /// The registry id of this optimizer (used to find it behind a JS value).
    #[wasm_bindgen(getter = _skiffOptimizerId, skip_typescript)]
    pub fn skiff_optimizer_id(&self) -> u32 {
        self.entry.id
    }

    /// Stochastic gradient descent with momentum, dampening, Nesterov and
    /// weight decay (PyTorch's `optim.SGD`; default lr 1e-3).
    pub fn sgd(
        #[wasm_bindgen(unchecked_param_type = "Tensor[] | ParamGroup[]")] params: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ lr?: number; momentum?: number; dampening?: number; weightDecay?: number; nesterov?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsOptimizer> {
        let (groups, m) = setup("SGD", SGD, &params, options)?;
        let d = SgdConfig::default();
        let c = SgdConfig {
            lr: pick(&m, "lr", d.lr),
            momentum: pick(&m, "momentum", d.momentum),
            dampening: pick(&m, "dampening", d.dampening),
            weight_decay: pick(&m, "weight_decay", d.weight_decay),
            nesterov: pick(&m, "nesterov", d.nesterov as u8 as f64) != 0.0,
        };
        Ok(JsOptimizer::new(Box::new(Sgd::new(groups, c).named("SGD")?), "SGD", SGD))
    }

    /// Adam with L2 weight decay (PyTorch's `optim.Adam`; lr 1e-3, betas [0.9, 0.999], eps 1e-8).
    pub fn adam(
        #[wasm_bindgen(unchecked_param_type = "Tensor[] | ParamGroup[]")] params: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number; amsgrad?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsOptimizer> {
        let (groups, m) = setup("Adam", ADAM, &params, options)?;
        let c = adam_config(&m, AdamConfig::default());
        Ok(JsOptimizer::new(Box::new(Adam::new(groups, c).named("Adam")?), "Adam", ADAM))
    }

    /// Adam with decoupled weight decay (PyTorch's `optim.AdamW`; weightDecay 0.01).
    pub fn adamw(
        #[wasm_bindgen(unchecked_param_type = "Tensor[] | ParamGroup[]")] params: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number; amsgrad?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsOptimizer> {
        let (groups, m) = setup("AdamW", ADAM, &params, options)?;
        let c = adam_config(&m, AdamW::default_config());
        Ok(JsOptimizer::new(Box::new(AdamW::new(groups, c).named("AdamW")?), "AdamW", ADAM))
    }

    /// RMSprop (PyTorch's `optim.RMSprop`; lr 1e-2, alpha 0.99, eps 1e-8).
    pub fn rmsprop(
        #[wasm_bindgen(unchecked_param_type = "Tensor[] | ParamGroup[]")] params: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ lr?: number; alpha?: number; eps?: number; weightDecay?: number; momentum?: number; centered?: boolean }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsOptimizer> {
        let (groups, m) = setup("RMSprop", RMSPROP, &params, options)?;
        let d = RmsPropConfig::default();
        let c = RmsPropConfig {
            lr: pick(&m, "lr", d.lr),
            alpha: pick(&m, "alpha", d.alpha),
            eps: pick(&m, "eps", d.eps),
            weight_decay: pick(&m, "weight_decay", d.weight_decay),
            momentum: pick(&m, "momentum", d.momentum),
            centered: pick(&m, "centered", d.centered as u8 as f64) != 0.0,
        };
        Ok(JsOptimizer::new(Box::new(RmsProp::new(groups, c).named("RMSprop")?), "RMSprop", RMSPROP))
    }

    /// Adagrad (PyTorch's `optim.Adagrad`; lr 1e-2, eps 1e-10).
    pub fn adagrad(
        #[wasm_bindgen(unchecked_param_type = "Tensor[] | ParamGroup[]")] params: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ lr?: number; lrDecay?: number; weightDecay?: number; initialAccumulatorValue?: number; eps?: number }"
        )]
        options: Option<JsValue>,
    ) -> JsResult<JsOptimizer> {
        let (groups, m) = setup("Adagrad", ADAGRAD, &params, options)?;
        let d = AdagradConfig::default();
        let c = AdagradConfig {
            lr: pick(&m, "lr", d.lr),
            lr_decay: pick(&m, "lr_decay", d.lr_decay),
            weight_decay: pick(&m, "weight_decay", d.weight_decay),
            initial_accumulator_value: pick(&m, "initial_accumulator_value", d.initial_accumulator_value),
            eps: pick(&m, "eps", d.eps),
        };
        Ok(JsOptimizer::new(Box::new(Adagrad::new(groups, c).named("Adagrad")?), "Adagrad", ADAGRAD))
    }

    /// 'SGD' | 'Adam' | 'AdamW' | 'RMSprop' | 'Adagrad'.
    #[wasm_bindgen(getter, js_name = typeName)]
    pub fn type_name(&self) -> String {
        self.entry.name.to_string()
    }

    /// Updates every parameter that has a gradient (on its device, no readback).
    pub fn step(&self) -> JsResult<()> {
        let op = format!("{}.step", self.entry.name);
        self.entry.borrow_mut(&op)?.step().within(&op)
    }

    /// Clears every parameter's gradient.
    #[wasm_bindgen(js_name = zeroGrad)]
    pub fn zero_grad(&self) -> JsResult<()> {
        self.entry.borrow_mut("zeroGrad")?.zero_grad();
        Ok(())
    }

    /// The first group's learning rate.
    #[wasm_bindgen(getter)]
    pub fn lr(&self) -> JsResult<f64> {
        Ok(self.entry.borrow("lr")?.lr(0).unwrap_or(f64::NAN))
    }

    /// Sets every group's learning rate.
    #[wasm_bindgen(setter)]
    pub fn set_lr(&self, #[wasm_bindgen(unchecked_param_type = "number")] lr: JsValue) -> JsResult<()> {
        const OP: &str = "lr";
        let lr = args::finite_arg(OP, "lr", &lr)?;
        let mut opt = self.entry.borrow_mut(OP)?;
        for g in 0..opt.param_groups().len() {
            opt.set_lr(g, lr).named(OP)?;
        }
        Ok(())
    }

    /// Sets one option (camelCase: 'lr', 'weightDecay', 'betas', ...) of
    /// group `options.group`, or of every group when omitted.
    #[wasm_bindgen(js_name = setOption)]
    pub fn set_option(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number | boolean | [number, number]")] value: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ group?: number }")] options: Option<JsValue>,
    ) -> JsResult<()> {
        const OP: &str = "setOption";
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let o = bag(OP, &options, &["group"])?;
        let name = args::string_arg(OP, "name", &name)?;
        let Some(opt) = self.entry.spec.iter().find(|o| o.js == name) else {
            let known: Vec<&str> = self.entry.spec.iter().map(|o| o.js).collect();
            return Err(js_error(
                OP,
                Kind::Argument,
                format!("{} has no option {name:?} (known: {})", self.entry.name, known.join(", ")),
            ));
        };
        let values = option_values(OP, opt, &value)?;
        let mut optimizer = self.entry.borrow_mut(OP)?;
        let n = optimizer.param_groups().len();
        let groups: Vec<usize> = match o.get("group") {
            v if v.is_undefined() || v.is_null() => (0..n).collect(),
            v => match args::usize_arg(OP, "option group", &v)? {
                g if g < n => vec![g],
                g => {
                    return Err(js_error(
                        OP,
                        Kind::Value,
                        format!("option group is {g}, but there are {n} parameter groups"),
                    ))
                }
            },
        };
        for g in groups {
            for &(k, x) in &values {
                optimizer.set_option(g, k, x).named(OP)?;
            }
        }
        Ok(())
    }

    /// Each group's options (camelCase) and parameter count.
    #[wasm_bindgen(js_name = paramGroups, unchecked_return_type = "Array<Record<string, number | boolean | number[]>>")]
    pub fn param_groups(&self) -> JsResult<Array> {
        let opt = self.entry.borrow("paramGroups")?;
        Ok(opt
            .param_groups()
            .iter()
            .map(|g| {
                let mut fields: Vec<(&str, JsValue)> = vec![("numParams", (g.params().len() as f64).into())];
                for o in self.entry.spec {
                    let v = |i: usize| g.get(o.keys[i]).unwrap_or(f64::NAN);
                    fields.push((
                        o.js,
                        match o.ty {
                            Ty::Num => v(0).into(),
                            Ty::Bool => (v(0) != 0.0).into(),
                            Ty::Betas => Array::of2(&v(0).into(), &v(1).into()).into(),
                        },
                    ));
                }
                object(&fields)
            })
            .collect())
    }

    /// Options, step counts and state tensors as safetensors bytes
    /// (PyTorch's layout: 'param_groups.0.lr', 'state.0.exp_avg', ...).
    #[wasm_bindgen(js_name = stateDict, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn state_dict(&self) -> JsResult<js_sys::Promise> {
        let state = self.entry.borrow("stateDict")?.state_dict().named("Optimizer.stateDict")?;
        serialize_promise("Optimizer.stateDict", state.to_flat())
    }

    /// Restores a `stateDict` (bytes, or a record of cpu tensors); errors,
    /// leaving the optimizer unchanged, when groups, sizes or names differ.
    #[wasm_bindgen(js_name = loadStateDict)]
    pub fn load_state_dict(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer | Record<string, Tensor>")] state: JsValue,
    ) -> JsResult<()> {
        const OP: &str = "Optimizer.loadStateDict";
        let entries = read_entries(OP, &state)?;
        let state = OptimState::from_flat(&entries).named(OP)?;
        // skiff's optimizers prefix their own checks with "load_state_dict: ".
        self.entry.borrow_mut(OP)?.load_state_dict(&state).map_err(|e| {
            let msg = crate::web::without_op(&e);
            js_error(OP, Kind::of(&e), msg.strip_prefix("load_state_dict: ").unwrap_or(&msg))
        })
    }

    /// PyTorch's summary: `Adam (\nParameter Group 0\n    betas: (0.9, 0.999)\n ...)`.
    #[wasm_bindgen(js_name = toString)]
    pub fn to_js_string(&self) -> String {
        let Ok(opt) = self.entry.opt.try_borrow() else { return format!("{} (in use)", self.entry.name) };
        let mut s = format!("{} (", self.entry.name);
        for (i, g) in opt.param_groups().iter().enumerate() {
            s += &format!("\nParameter Group {i}");
            let mut lines: Vec<String> = self
                .entry
                .spec
                .iter()
                .map(|o| {
                    let v = |i: usize| g.get(o.keys[i]).unwrap_or(f64::NAN);
                    let shown = match o.ty {
                        Ty::Num => py_float(v(0)),
                        Ty::Bool => super::nn::py_bool(v(0) != 0.0).to_string(),
                        Ty::Betas => format!("({}, {})", py_float(v(0)), py_float(v(1))),
                    };
                    format!("\n    {}: {shown}", o.js)
                })
                .collect();
            lines.sort();
            s += &lines.concat();
        }
        s + "\n)"
    }
}
