//! Optimizer options: the camelCase JS names of each optimizer's skiff
//! options, option bags, parameter groups and the configs built from them.

use crate::optim::{AdamConfig, ParamGroup};
use crate::web::args::{self, describe};
use crate::web::nn::bag;
use crate::web::{js_error, JsResult, Kind};
use js_sys::{Array, Reflect};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;

/// How a JS option maps to skiff's group options.
#[derive(Clone, Copy)]
pub(super) enum Ty {
    Num,
    /// 1.0 / 0.0.
    Bool,
    /// `[beta1, beta2]`.
    Betas,
}

/// One JS option: its name, type and skiff option name(s).
pub(super) struct Opt {
    pub(super) js: &'static str,
    pub(super) ty: Ty,
    pub(super) keys: &'static [&'static str],
}

const fn num(js: &'static str, keys: &'static [&'static str]) -> Opt {
    Opt { js, ty: Ty::Num, keys }
}
const fn flag(js: &'static str, keys: &'static [&'static str]) -> Opt {
    Opt { js, ty: Ty::Bool, keys }
}

pub(super) const SGD: &[Opt] = &[
    num("lr", &["lr"]),
    num("momentum", &["momentum"]),
    num("dampening", &["dampening"]),
    num("weightDecay", &["weight_decay"]),
    flag("nesterov", &["nesterov"]),
];
pub(super) const ADAM: &[Opt] = &[
    num("lr", &["lr"]),
    Opt { js: "betas", ty: Ty::Betas, keys: &["beta1", "beta2"] },
    num("eps", &["eps"]),
    num("weightDecay", &["weight_decay"]),
    flag("amsgrad", &["amsgrad"]),
];
pub(super) const RMSPROP: &[Opt] = &[
    num("lr", &["lr"]),
    num("alpha", &["alpha"]),
    num("eps", &["eps"]),
    num("weightDecay", &["weight_decay"]),
    num("momentum", &["momentum"]),
    flag("centered", &["centered"]),
];
pub(super) const ADAGRAD: &[Opt] = &[
    num("lr", &["lr"]),
    num("lrDecay", &["lr_decay"]),
    num("weightDecay", &["weight_decay"]),
    num("initialAccumulatorValue", &["initial_accumulator_value"]),
    num("eps", &["eps"]),
];

/// skiff option values of one JS option value.
pub(super) fn option_values(op: &str, opt: &Opt, v: &JsValue) -> JsResult<Vec<(&'static str, f64)>> {
    Ok(match opt.ty {
        Ty::Num => vec![(opt.keys[0], args::finite_arg(op, opt.js, v)?)],
        Ty::Bool => {
            let b = v.as_bool().ok_or_else(|| {
                js_error(op, Kind::Argument, format!("option {} must be a boolean, got {}", opt.js, describe(v)))
            })?;
            vec![(opt.keys[0], if b { 1.0 } else { 0.0 })]
        }
        Ty::Betas => {
            let Some(pair) = args::as_array(v).filter(|a| a.length() == 2) else {
                return Err(js_error(
                    op,
                    Kind::Argument,
                    format!("option {} must be [beta1, beta2], got {}", opt.js, describe(v)),
                ));
            };
            vec![
                (opt.keys[0], args::finite_arg(op, "betas[0]", &pair.get(0))?),
                (opt.keys[1], args::finite_arg(op, "betas[1]", &pair.get(1))?),
            ]
        }
    })
}

/// The skiff options an options bag sets (absent ones are left out).
pub(super) fn parse_options(
    op: &str,
    spec: &[Opt],
    bag_value: &JsValue,
    also: &[&str],
) -> JsResult<BTreeMap<String, f64>> {
    let allowed: Vec<&str> = spec.iter().map(|o| o.js).chain(also.iter().copied()).collect();
    let o = bag(op, bag_value, &allowed)?;
    let mut out = BTreeMap::new();
    for opt in spec {
        let v = o.get(opt.js);
        if v.is_undefined() || v.is_null() {
            continue;
        }
        for (k, x) in option_values(op, opt, &v)? {
            out.insert(k.to_string(), x);
        }
    }
    Ok(out)
}

/// `params`: Tensor[] (one group) or `{ params: Tensor[], ...options }[]`.
pub(super) fn param_groups(op: &str, spec: &[Opt], params: &JsValue) -> JsResult<Vec<ParamGroup>> {
    if !Array::is_array(params) {
        return Err(js_error(
            op,
            Kind::Argument,
            format!("params must be an array of Tensors or of parameter groups, got {}", describe(params)),
        ));
    }
    let list: &Array = params.unchecked_ref();
    let is_group = |v: &JsValue| {
        v.is_object() && !Array::is_array(v) && Reflect::has(v, &JsValue::from_str("params")).unwrap_or(false)
    };
    let groups = if list.length() > 0 && list.iter().all(|v| is_group(&v)) {
        let mut groups = Vec::new();
        for (g, v) in list.iter().enumerate() {
            let ps = Reflect::get(&v, &JsValue::from_str("params")).unwrap_or(JsValue::UNDEFINED);
            let mut group = ParamGroup::new(args::tensors(op, &format!("params[{g}].params"), &ps)?);
            for (k, x) in parse_options(op, spec, &v, &["params"])? {
                group = group.with(&k, x);
            }
            groups.push(group);
        }
        groups
    } else {
        vec![ParamGroup::new(args::tensors(op, "params", params)?)]
    };
    if groups.iter().all(|g| g.params().is_empty()) {
        return Err(js_error(op, Kind::Value, "got an empty parameter list"));
    }
    Ok(groups)
}

/// A value of the top-level options, else the config default.
pub(super) fn pick(m: &BTreeMap<String, f64>, key: &str, default: f64) -> f64 {
    m.get(key).copied().unwrap_or(default)
}

pub(super) fn adam_config(m: &BTreeMap<String, f64>, d: AdamConfig) -> AdamConfig {
    AdamConfig {
        lr: pick(m, "lr", d.lr),
        betas: (pick(m, "beta1", d.betas.0), pick(m, "beta2", d.betas.1)),
        eps: pick(m, "eps", d.eps),
        weight_decay: pick(m, "weight_decay", d.weight_decay),
        amsgrad: pick(m, "amsgrad", d.amsgrad as u8 as f64) != 0.0,
    }
}

/// Parses `(params, options)` for an optimizer factory.
pub(super) fn setup(
    op: &str,
    spec: &[Opt],
    params: &JsValue,
    options: Option<JsValue>,
) -> JsResult<(Vec<ParamGroup>, BTreeMap<String, f64>)> {
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let m = parse_options(op, spec, &options, &[])?;
    Ok((param_groups(op, spec, params)?, m))
}
