//! Running a program on one backend and recording what every step read and
//! produced, then the backward pass. The f64 cpu run also resolves the raw
//! program (it is the truth the other runs replay).

use super::gen::{Info, RawProgram, Rng};
use super::program::{Cx, Input, Op};
use super::resolve::resolve;
use skiff::{DType, Device, Error, Result, Tensor};

/// A tensor's values on the host (any dtype, as f64).
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub data: Vec<f64>,
}

pub fn host(t: &Tensor) -> Result<Host> {
    Ok(Host { shape: t.shape().to_vec(), dtype: t.dtype(), data: t.to_f64_vec()? })
}

/// A fresh contiguous f64 (or i32/bool) cpu tensor with `h`'s values; floats require grad.
pub fn fresh(h: &Host) -> Result<Tensor> {
    match h.dtype {
        DType::I32 => Tensor::from_vec(h.data.iter().map(|&v| v as i32).collect::<Vec<_>>(), &h.shape),
        DType::Bool => Tensor::from_bools(&h.data.iter().map(|&v| v != 0.0).collect::<Vec<_>>(), &h.shape),
        _ => Tensor::from_vec(h.data.clone(), &h.shape)?.requires_grad_(true),
    }
}

/// An error as the runs compare it: its variant and the op it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrKey {
    pub variant: String,
    pub op: String,
    pub msg: String,
}

impl ErrKey {
    pub fn of(e: &Error) -> ErrKey {
        let debug = format!("{e:?}");
        let variant = debug.split([' ', '{', '(']).next().unwrap_or("").to_string();
        let msg = e.to_string();
        let op = msg.split(": ").next().unwrap_or("").to_string();
        ErrKey { variant, op, msg }
    }
    /// Same variant and op (messages may name dtypes and devices).
    pub fn same(&self, o: &ErrKey) -> bool {
        self.variant == o.variant && self.op == o.op
    }
}

impl std::fmt::Display for ErrKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Err({}) {:?}", self.variant, self.msg)
    }
}

pub struct Step {
    /// The inputs' values just before the op ran.
    pub ins: Vec<Host>,
    pub out: std::result::Result<Host, ErrKey>,
}

#[derive(Default)]
pub struct Record {
    pub steps: Vec<Step>,
    /// Every value's final state (in-place writes show through aliases).
    pub finals: Vec<Host>,
    /// The loss's backward: Ok(the inputs' gradients) or its error; None without a loss.
    pub backward: Option<std::result::Result<Vec<Option<Host>>, ErrKey>>,
}

/// The loss of a program: the value whose `sum(v * w)` is differentiated, and `w`.
pub type Loss = Option<(usize, Vec<f64>)>;

/// A resolved program.
pub struct Program {
    pub inputs: Vec<Input>,
    pub ops: Vec<Op>,
    /// The value whose `sum(v * w)` is differentiated, and `w`.
    pub loss: Option<(usize, Vec<f64>)>,
}

/// The weights of the loss over a value of `shape` (in [0.5, 1.5], f32-exact).
pub fn weights(shape: &[usize], seed: u64) -> Vec<f64> {
    let mut g = Rng(seed);
    (0..shape.iter().product::<usize>()).map(|_| g.uniform(0.5, 1.5)).collect()
}

fn make(h: &Host, cx: &Cx) -> Result<Tensor> {
    let t = match cx.float {
        DType::F32 => Tensor::from_vec(h.data.iter().map(|&v| v as f32).collect::<Vec<_>>(), &h.shape)?,
        _ => Tensor::from_vec(h.data.clone(), &h.shape)?,
    };
    t.to(&cx.device)
}

/// Runs the program's ops (`next` hands out the next one given what is known
/// of the values so far; the f64 run resolves them there), then the backward.
/// `on_step` sees each op before it runs (None) and with its outcome (the
/// trace printed on failure is written from it, so it is complete up to a panic).
pub fn run(
    inputs: &[Input],
    cx: &Cx,
    mut next: impl FnMut(&[Info]) -> Option<Op>,
    mut on_step: impl FnMut(&Op, Option<&std::result::Result<Host, ErrKey>>),
    loss: impl FnOnce(&[Tensor], &[Info]) -> Option<(usize, Vec<f64>)>,
) -> Result<(Record, Loss)> {
    let mut leaves = Vec::new();
    let mut env: Vec<Tensor> = Vec::new();
    let mut info: Vec<Info> = Vec::new();
    for i in inputs {
        let h = Host { shape: i.shape.clone(), dtype: cx.float, data: i.values.clone() };
        let t = make(&h, cx)?.requires_grad_(i.requires_grad)?;
        let root = info.len();
        info.push(Info {
            shape: i.shape.clone(),
            dtype: t.dtype(),
            leaf_rg: i.requires_grad,
            view: false,
            nan: false,
            huge: false,
            root,
            stale: false,
        });
        leaves.push(t.clone());
        env.push(t);
    }
    let mut rec = Record::default();
    loop {
        // The resolver avoids casting NaN (see resolve.rs); only the cpu
        // runs resolve, so the GPU run reads nothing back for this.
        if cx.device == Device::Cpu {
            for (i, t) in info.iter_mut().zip(&env) {
                let v = if t.dtype().is_float() { t.to_f64_vec()? } else { Vec::new() };
                i.nan = v.iter().any(|v| v.is_nan());
                i.huge = v.iter().any(|v| v.abs() >= 2f64.powi(31));
            }
        }
        let Some(op) = next(&info) else { break };
        let args: Vec<Tensor> = op.inputs().iter().map(|&i| env[i].clone()).collect();
        let ins = args.iter().map(host).collect::<Result<Vec<_>>>()?;
        on_step(&op, None);
        let out = op.run(&args, cx);
        let out_host = match &out {
            Ok(t) => Ok(host(t)?),
            Err(e) => Err(ErrKey::of(e)),
        };
        on_step(&op, Some(&out_host));
        if let Ok(t) = out {
            let first = op.inputs()[0];
            let view = if op.is_inplace() { info[first].view } else { op.may_alias() };
            let root = if op.may_alias() { info[first].root } else { info.len() };
            if op.is_inplace() && t.requires_grad() {
                // A recorded in-place write rewrote `first`'s history: the
                // other tensors on its storage keep an outdated one.
                for (j, i) in info.iter_mut().enumerate() {
                    i.stale |= i.root == root && j != first;
                }
            }
            info.push(Info {
                shape: t.shape().to_vec(),
                dtype: t.dtype(),
                leaf_rg: false,
                view,
                nan: false,
                huge: false,
                root,
                stale: false,
            });
            env.push(t);
        }
        rec.steps.push(Step { ins, out: out_host });
    }
    rec.finals = env.iter().map(host).collect::<Result<Vec<_>>>()?;
    let loss = loss(&env, &info).filter(|(k, _)| *k < env.len());
    if let Some((k, w)) = &loss {
        let h = Host { shape: env[*k].shape().to_vec(), dtype: cx.float, data: w.clone() };
        let result = make(&h, cx).and_then(|w| env[*k].mul(&w)?.sum_all()?.backward());
        rec.backward = Some(match result {
            Ok(()) => Ok(leaves.iter().map(|l| l.grad().as_ref().map(host).transpose()).collect::<Result<Vec<_>>>()?),
            Err(e) => Err(ErrKey::of(&e)),
        });
    }
    Ok((rec, loss))
}

/// The f64 cpu run of a raw program, resolving it: the program and its record.
pub fn run_truth(
    raw: &RawProgram,
    mut on_step: impl FnMut(&Op, Option<&std::result::Result<Host, ErrKey>>),
    on_inputs: impl FnOnce(&[Input]),
) -> Result<(Program, Record)> {
    let inputs: Vec<Input> = raw.inputs.iter().map(|i| i.resolve(&raw.base)).collect();
    on_inputs(&inputs);
    let cx = Cx { float: DType::F64, device: Device::Cpu, local: false };
    let mut ops = Vec::new();
    let mut raw_ops = raw.ops.iter();
    let seed = raw.inputs[0].seed ^ 0x5151;
    let (rec, loss) = run(
        &inputs,
        &cx,
        |info| {
            let op = resolve(raw_ops.next()?, info);
            ops.push(op.clone());
            Some(op)
        },
        |op, out| on_step(op, out),
        |env, info| {
            // The latest float value in the graph (not a stale one: see `Info::stale`).
            let k = (0..env.len())
                .rev()
                .find(|&k| env[k].dtype().is_float() && env[k].requires_grad() && !info[k].stale)?;
            Some((k, weights(env[k].shape(), seed)))
        },
    )?;
    Ok((Program { inputs, ops, loss }, rec))
}

/// A replay of a resolved program on `cx`. It stops after the first step
/// whose success differs from the truth's (`truth_ok`): later value numbers
/// would no longer name the same values.
pub fn run_replay(
    prog: &Program,
    truth_ok: &[bool],
    cx: &Cx,
    mut on_step: impl FnMut(&Op, Option<&std::result::Result<Host, ErrKey>>),
) -> Result<Record> {
    let diverged = std::cell::Cell::new(false);
    let step = std::cell::Cell::new(0);
    let mut ops = prog.ops.iter().cloned();
    let next = |_: &[Info]| if diverged.get() { None } else { ops.next() };
    let on_step = |op: &Op, out: Option<&std::result::Result<Host, ErrKey>>| {
        if let Some(out) = out {
            if truth_ok.get(step.get()) != Some(&out.is_ok()) {
                diverged.set(true);
            }
            step.set(step.get() + 1);
        }
        on_step(op, out)
    };
    let loss = |_: &[Tensor], _: &[Info]| if diverged.get() { None } else { prog.loss.clone() };
    Ok(run(&prog.inputs, cx, next, on_step, loss)?.0)
}
