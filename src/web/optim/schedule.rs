//! The JS `LrScheduler` class: skiff's learning-rate schedules driving a
//! shared `Optimizer`. Like PyTorch's schedulers, building one applies the
//! step-0 rate at once (a warm-up starts from 0) and each `step()` (once per
//! epoch or batch, after `optimizer.step()`) advances it.

use super::{optimizer_arg, OptEntry};
use crate::optim::{CosineAnnealing, ExponentialLR, LrSchedule, OneCycleLR, StepLR};
use crate::web::args::{self, Opts};
use crate::web::nn::bag;
use crate::web::{js_error, JsResult, Kind, Named};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// A learning-rate schedule attached to an `Optimizer` (PyTorch's
/// `lr_scheduler`). Create one with the static factories.
#[wasm_bindgen(js_name = LrScheduler)]
pub struct JsLrScheduler {
    sched: RefCell<Box<dyn LrSchedule>>,
    opt: Rc<OptEntry>,
    name: &'static str,
}

/// A required option.
fn required(op: &str, o: &Opts, key: &str) -> JsResult<JsValue> {
    let v = o.get(key);
    if v.is_undefined() || v.is_null() {
        return Err(js_error(op, Kind::Argument, format!("option {key} is required")));
    }
    Ok(v)
}

/// An error unless option `key` is at least `min` (naming the option and the value).
fn at_least(op: &str, key: &str, v: f64, min: f64) -> JsResult<()> {
    if v >= min {
        return Ok(());
    }
    Err(js_error(op, Kind::Value, format!("{key} must be >= {min}, got {v}")))
}

/// An error unless option `key` is above `min`.
fn above(op: &str, key: &str, v: f64, min: f64) -> JsResult<()> {
    if v > min {
        return Ok(());
    }
    Err(js_error(op, Kind::Value, format!("{key} must be > {min}, got {v}")))
}

fn attach(
    op: &str,
    name: &'static str,
    optimizer: &JsValue,
    mut sched: Box<dyn LrSchedule>,
) -> JsResult<JsLrScheduler> {
    let opt = optimizer_arg(op, "optimizer", optimizer)?;
    sched.attach(opt.borrow_mut(op)?.as_mut()).named(op)?;
    Ok(JsLrScheduler { sched: RefCell::new(sched), opt, name })
}

#[wasm_bindgen(js_class = LrScheduler)]
impl JsLrScheduler {
    /// lr = base * gamma^floor(step / stepSize) (gamma default 0.1).
    #[wasm_bindgen(js_name = stepLR)]
    pub fn step_lr(
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ stepSize: number; gamma?: number }")] options: JsValue,
    ) -> JsResult<JsLrScheduler> {
        const OP: &str = "StepLR";
        let o = bag(OP, &options, &["stepSize", "gamma"])?;
        let step_size = args::usize_arg(OP, "stepSize", &required(OP, &o, "stepSize")?)?;
        let gamma = o.f64("gamma", 0.1)?;
        // Checked here too, so the message uses the JS option names.
        at_least(OP, "stepSize", step_size as f64, 1.0)?;
        at_least(OP, "gamma", gamma, 0.0)?;
        let s = StepLR::new(step_size, gamma).named(OP)?;
        attach(OP, "StepLR", &optimizer, Box::new(s))
    }

    /// lr = base * gamma^step.
    #[wasm_bindgen(js_name = exponentialLR)]
    pub fn exponential_lr(
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ gamma: number }")] options: JsValue,
    ) -> JsResult<JsLrScheduler> {
        const OP: &str = "ExponentialLR";
        let o = bag(OP, &options, &["gamma"])?;
        let gamma = args::finite_arg(OP, "gamma", &required(OP, &o, "gamma")?)?;
        at_least(OP, "gamma", gamma, 0.0)?;
        attach(OP, "ExponentialLR", &optimizer, Box::new(ExponentialLR::new(gamma).named(OP)?))
    }

    /// Linear warm-up from 0 over `warmupSteps` (default 0), then cosine
    /// annealing to `minLr` (default 0) at `totalSteps`.
    #[wasm_bindgen(js_name = cosineAnnealing)]
    pub fn cosine_annealing(
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ totalSteps: number; warmupSteps?: number; minLr?: number }")]
        options: JsValue,
    ) -> JsResult<JsLrScheduler> {
        // PyTorch's class name, as the JS constructor (optim.CosineAnnealingLR) is named.
        const OP: &str = "CosineAnnealingLR";
        let o = bag(OP, &options, &["totalSteps", "warmupSteps", "minLr"])?;
        let total = args::usize_arg(OP, "totalSteps", &required(OP, &o, "totalSteps")?)?;
        let (warmup, min_lr) = (o.usize("warmupSteps", 0)?, o.f64("minLr", 0.0)?);
        if warmup >= total {
            return Err(js_error(
                OP,
                Kind::Value,
                format!("warmupSteps ({warmup}) must be below totalSteps ({total})"),
            ));
        }
        at_least(OP, "minLr", min_lr, 0.0)?;
        attach(OP, OP, &optimizer, Box::new(CosineAnnealing::new(warmup, total, min_lr).named(OP)?))
    }

    /// PyTorch's OneCycleLR (cosine): from maxLr / divFactor up to maxLr over
    /// pctStart of totalSteps, then down to maxLr / divFactor / finalDivFactor.
    #[wasm_bindgen(js_name = oneCycleLR)]
    pub fn one_cycle_lr(
        #[wasm_bindgen(unchecked_param_type = "Optimizer")] optimizer: JsValue,
        #[wasm_bindgen(
            unchecked_param_type = "{ maxLr: number; totalSteps: number; pctStart?: number; divFactor?: number; finalDivFactor?: number }"
        )]
        options: JsValue,
    ) -> JsResult<JsLrScheduler> {
        const OP: &str = "OneCycleLR";
        let o = bag(OP, &options, &["maxLr", "totalSteps", "pctStart", "divFactor", "finalDivFactor"])?;
        let max_lr = args::finite_arg(OP, "maxLr", &required(OP, &o, "maxLr")?)?;
        let total = args::usize_arg(OP, "totalSteps", &required(OP, &o, "totalSteps")?)?;
        let (pct, div, final_div) = (o.f64("pctStart", 0.3)?, o.f64("divFactor", 25.0)?, o.f64("finalDivFactor", 1e4)?);
        above(OP, "maxLr", max_lr, 0.0)?;
        at_least(OP, "totalSteps", total as f64, 2.0)?;
        if !(pct > 0.0 && pct < 1.0) {
            return Err(js_error(OP, Kind::Value, format!("pctStart must be in (0, 1), got {pct}")));
        }
        above(OP, "divFactor", div, 0.0)?;
        above(OP, "finalDivFactor", final_div, 0.0)?;
        let s = OneCycleLR::new(max_lr, total, pct, div, final_div).named(OP)?;
        attach(OP, "OneCycleLR", &optimizer, Box::new(s))
    }

    /// 'StepLR' | 'ExponentialLR' | 'CosineAnnealingLR' | 'OneCycleLR'.
    #[wasm_bindgen(getter, js_name = typeName)]
    pub fn type_name(&self) -> String {
        self.name.to_string()
    }

    /// Advances one step and sets every group's learning rate.
    pub fn step(&self) -> JsResult<()> {
        const OP: &str = "LrScheduler.step";
        let mut sched = self.sched.try_borrow_mut().map_err(|_| js_error(OP, Kind::Value, "in use"))?;
        let mut opt = self.opt.borrow_mut(OP)?;
        sched.step(opt.as_mut()).named(OP)
    }

    /// The rate the schedule set at its current step, per parameter group.
    #[wasm_bindgen(getter, js_name = lastLr, unchecked_return_type = "number[]")]
    pub fn last_lr(&self) -> JsResult<js_sys::Array> {
        let sched = self.sched.try_borrow().map_err(|_| js_error("lastLr", Kind::Value, "in use"))?;
        let st = sched.state();
        Ok(st.base_lrs.iter().map(|&b| JsValue::from_f64(sched.lr_for(st.step, b))).collect())
    }

    /// How many times `step()` was called (PyTorch's `last_epoch`).
    #[wasm_bindgen(getter, js_name = stepCount)]
    pub fn step_count(&self) -> JsResult<usize> {
        let sched = self.sched.try_borrow().map_err(|_| js_error("stepCount", Kind::Value, "in use"))?;
        Ok(sched.state().step)
    }

    /// The rate at any `step` for the first group's base rate (for plotting a schedule).
    #[wasm_bindgen(js_name = lrAt)]
    pub fn lr_at(&self, #[wasm_bindgen(unchecked_param_type = "number")] step: JsValue) -> JsResult<f64> {
        let step = args::usize_arg("lrAt", "step", &step)?;
        let sched = self.sched.try_borrow().map_err(|_| js_error("lrAt", Kind::Value, "in use"))?;
        Ok(sched.lr_at(step))
    }
}
