//! Comparing runs. Each step of a low-precision run (cpu f32, GPU f32) is
//! checked *locally*: its output against the f64 op applied to fresh copies
//! of the very inputs that run fed it, so rounding carried in from earlier
//! steps cannot blur a wrong kernel. End to end (final values, gradients) the
//! run is compared with the f64 run wherever the program is well-conditioned:
//! a step is *unstable* when the f64 op at the run's inputs and at the f64
//! run's inputs disagree beyond a tolerance (a comparison flipped by rounding,
//! log near 0, an f32 overflow), or when its vector-Jacobian product does (a
//! relu input that rounding moved across 0, a tie in max). Unstable values,
//! whatever reads them, and every alias of a storage they were written into,
//! are left out of the end-to-end comparison; the local checks still apply.
//! Dtypes, shapes, and errors (variant and op) must agree everywhere.

use super::exec::{fresh, host, weights, ErrKey, Host, Program, Record};
use super::program::{Bin, Cx, Op, Red, Un};
use skiff::{DType, Device, Tensor};

/// (atol, rtol): |got - want| <= atol * scale + rtol * |want|, with `scale`
/// the magnitude of the operands (a sum of n terms errs with their size,
/// not the result's).
pub type Tol = (f64, f64);

pub struct Tols {
    /// A step against the f64 op on the same inputs.
    pub local: Tol,
    /// Instability: the f64 op at the run's inputs against the f64 run.
    pub cond: Tol,
    /// Final values (after all in-place writes) against the f64 run.
    pub finals: Tol,
    /// Input gradients against the f64 run.
    pub grads: Tol,
}

/// The f64 run against its own re-runs on fresh contiguous inputs: only the
/// order of summation may differ.
pub const F64_LOCAL: Tol = (1e-10, 1e-10);

pub const CPU_F32: Tols = Tols { local: (2e-5, 2e-5), cond: (2e-4, 2e-4), finals: (5e-4, 5e-4), grads: (1e-3, 1e-3) };

/// The GPU: WGSL's exp/log/pow/tanh/... carry a few ulps more than the
/// cpu's, and sin/cos an absolute 2^-11 (testing::PARITY_TOLERANCES).
pub const GPU_F32: Tols = Tols { local: (5e-4, 1e-4), cond: (2e-4, 2e-4), finals: (2e-3, 2e-3), grads: (3e-3, 3e-3) };

#[derive(Default, Debug, Clone)]
pub struct Stats {
    pub programs: usize,
    pub steps: usize,
    pub steps_err: usize,
    /// Steps of a low-precision run checked against the f64 op locally.
    pub local_checked: usize,
    /// Steps whose values were compared end to end (stable).
    pub stable: usize,
    pub unstable: usize,
    pub grads_compared: usize,
    pub grads_skipped: usize,
    pub backward_err: usize,
    pub fd_checked: usize,
    pub gpu_programs: usize,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.programs += o.programs;
        self.steps += o.steps;
        self.steps_err += o.steps_err;
        self.local_checked += o.local_checked;
        self.stable += o.stable;
        self.unstable += o.unstable;
        self.grads_compared += o.grads_compared;
        self.grads_skipped += o.grads_skipped;
        self.backward_err += o.backward_err;
        self.fd_checked += o.fd_checked;
        self.gpu_programs += o.gpu_programs;
    }
}

/// One op re-run in f64 on fresh copies of its inputs: the output, and the
/// gradients of sum(out * v) for a fixed random v (None for non-float outputs).
pub struct Local {
    pub want: Host,
    pub vjp: Option<Vec<Option<Host>>>,
}

pub fn local_eval(op: &Op, ins: &[Host], step: usize) -> Result<Local, String> {
    local_eval_at(op, ins, step, None)
}

/// `local_eval` with every float input scaled by 1 + 1e-6 u, u uniform in
/// [-1, 1) from `jitter` (when given): a stand-in for the rounding inside an
/// f32 evaluation of the op.
fn local_eval_at(op: &Op, ins: &[Host], step: usize, jitter: Option<u64>) -> Result<Local, String> {
    let mut g = super::gen::Rng(jitter.unwrap_or(0));
    let jittered: Vec<Host> = ins
        .iter()
        .map(|h| match jitter {
            Some(_) if h.dtype.is_float() => {
                Host { data: h.data.iter().map(|v| v * (1.0 + 1e-6 * g.uniform(-1.0, 1.0))).collect(), ..h.clone() }
            }
            _ => h.clone(),
        })
        .collect();
    let ins = &jittered[..];
    let idx = op.inputs();
    let mut distinct: Vec<(usize, Tensor)> = Vec::new();
    for (p, &e) in idx.iter().enumerate() {
        if !distinct.iter().any(|(d, _)| *d == e) {
            distinct.push((e, fresh(&ins[p]).map_err(|e| format!("fresh input: {e}"))?));
        }
    }
    let args: Vec<Tensor> =
        idx.iter().map(|e| distinct.iter().find(|(d, _)| d == e).map(|(_, t)| t.clone()).unwrap()).collect();
    let cx = Cx { float: DType::F64, device: Device::Cpu, local: true };
    let fail =
        |what: &str, e: skiff::Error| format!("the f64 re-run of `{op}` on fresh copies of its inputs {what}: {e}");
    let out = op.run(&args, &cx).map_err(|e| fail("failed", e))?;
    let want = host(&out).map_err(|e| fail("could not be read", e))?;
    let vjp = if out.dtype().is_float() && out.requires_grad() {
        let v = Tensor::from_vec(weights(out.shape(), 0xC0DE + step as u64), out.shape()).map_err(|e| fail("", e))?;
        out.mul(&v)
            .and_then(|l| l.sum_all())
            .and_then(|l| l.backward())
            .map_err(|e| fail("had a failing backward", e))?;
        let grads = distinct.iter().map(|(_, t)| t.grad().as_ref().map(host).transpose());
        Some(grads.collect::<skiff::Result<Vec<_>>>().map_err(|e| fail("gave an unreadable gradient", e))?)
    } else {
        None
    };
    Ok(Local { want, vjp })
}

fn max_abs(h: &Host) -> f64 {
    h.data.iter().filter(|v| v.is_finite()).fold(0.0, |m, v| m.max(v.abs()))
}

/// Ops whose rounding grows with the product of operand magnitudes.
fn quadratic(op: &Op) -> bool {
    matches!(
        op,
        Op::Matmul { .. }
            | Op::Var { .. }
            | Op::Mse { .. }
            | Op::Binary { f: Bin::Mul | Bin::Div | Bin::Pow, .. }
            | Op::InPlace { .. }
    )
}

/// The magnitude that absolute tolerances scale with for `op`'s output.
fn scale(op: &Op, ins: &[Host], want: &Host) -> f64 {
    let m = ins.iter().filter(|h| h.dtype.is_float()).map(max_abs).fold(1.0, f64::max);
    let m = if quadratic(op) { m * m } else { m };
    m.max(max_abs(want)).max(1.0)
}

/// Compares values: shapes; dtypes (floats: `got` in `float`); non-floats
/// exactly; non-finite floats exactly; finite ones within `tol`. With
/// `float == F32` the expected values are first rounded to f32 (so an f64
/// value past f32's range expects an infinity).
pub fn close(got: &Host, want: &Host, (atol, rtol): Tol, scale: f64, float: DType) -> Result<(), String> {
    if got.shape != want.shape {
        return Err(format!("shape {:?}, expected {:?}", got.shape, want.shape));
    }
    let want_dtype = if want.dtype.is_float() { float } else { want.dtype };
    if got.dtype != want_dtype {
        return Err(format!("dtype {}, expected {want_dtype}", got.dtype));
    }
    let exact = !want.dtype.is_float();
    let round = |w: f64| if float == DType::F32 && !exact { w as f32 as f64 } else { w };
    let ok = |g: f64, w: f64| {
        let w = round(w);
        if exact {
            g == w
        } else if !g.is_finite() || !w.is_finite() {
            g == w || (g.is_nan() && w.is_nan())
        } else {
            (g - w).abs() <= atol * scale + rtol * w.abs()
        }
    };
    let bad: Vec<usize> = (0..want.data.len()).filter(|&i| !ok(got.data[i], want.data[i])).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} elements differ (atol {atol:e} x scale {scale:.3}, rtol {rtol:e}); first at flat index {i}: \
             got {} vs expected {} (shape {:?})",
            bad.len(),
            want.data.len(),
            got.data[i],
            round(want.data[i]),
            want.shape
        )),
    }
}

/// Gradients, each with absolute tolerances scaled by the larger of its own
/// magnitude and `floor`.
fn grads_close(a: &[Option<Host>], b: &[Option<Host>], tol: Tol, float: DType, floor: f64) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{} gradients, expected {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        match (x, y) {
            (None, None) => {}
            (Some(x), Some(y)) => {
                close(x, y, tol, max_abs(y).max(floor), float).map_err(|m| format!("input {i}: {m}"))?
            }
            _ => {
                return Err(format!("input {i}: gradient {}, expected {}", presence(x), presence(y)));
            }
        }
    }
    Ok(())
}

fn presence(h: &Option<Host>) -> &'static str {
    if h.is_some() {
        "present"
    } else {
        "absent"
    }
}

/// What the f64 run is checked with, and what the other runs are compared to.
pub struct Truth<'a> {
    pub prog: &'a Program,
    pub rec: &'a Record,
    /// Per step: the op re-run on fresh copies of the f64 run's inputs.
    pub local: Vec<Option<Local>>,
    /// Per step: whether its gradient is singular here: non-finite at the
    /// f64 run's inputs but not a hair away, or the other way round (std at
    /// zero variance: a NaN in f64, a finite number when f32 rounding leaves
    /// a tiny variance). Rounding inside the op then decides, so gradients
    /// are not compared end to end.
    pub singular: Vec<bool>,
    /// The largest partial derivative any step multiplies a gradient by (its
    /// local vector-Jacobian products with weights in [0.5, 1.5]), at least 1:
    /// the size of the terms that backward sums, so of its rounding, even
    /// where they cancel to a small gradient.
    pub partials: f64,
}

impl<'a> Truth<'a> {
    /// Re-runs every successful step on fresh copies and checks the f64 run
    /// against them (views and aliasing against contiguous data).
    pub fn new(prog: &'a Program, rec: &'a Record) -> Result<Truth<'a>, String> {
        let (mut local, mut singular) = (Vec::new(), Vec::new());
        for (i, (op, s)) in prog.ops.iter().zip(&rec.steps).enumerate() {
            let Ok(out) = &s.out else {
                local.push(None);
                singular.push(false);
                continue;
            };
            let l = local_eval(op, &s.ins, i).map_err(|m| format!("step {i}: {m}"))?;
            close(out, &l.want, F64_LOCAL, scale(op, &s.ins, &l.want), DType::F64).map_err(|m| {
                format!("step {i}: the f64 run's `{op}` differs from the same op on contiguous copies: {m}")
            })?;
            let near = local_eval_at(op, &s.ins, i, Some(0x5EED + i as u64)).map_err(|m| format!("step {i}: {m}"))?;
            let finite = |v: &Option<Vec<Option<Host>>>| -> Vec<bool> {
                v.iter().flatten().flatten().flat_map(|h| h.data.iter().map(|x| x.is_finite())).collect()
            };
            singular.push(finite(&l.vjp) != finite(&near.vjp));
            local.push(Some(l));
        }
        let partials =
            local.iter().flatten().flat_map(|l| l.vjp.iter().flatten().flatten()).map(max_abs).fold(1.0, f64::max);
        Ok(Truth { prog, rec, local, singular, partials })
    }
}

/// Compares run `name` (dtype `float`) with the truth.
pub fn compare(name: &str, truth: &Truth, r: &Record, t: &Tols, float: DType, stats: &mut Stats) -> Result<(), String> {
    let n = truth.prog.inputs.len();
    // Per value: unstable itself; the storage root it views; roots written unstably.
    let mut unstable = vec![false; n];
    let mut root: Vec<usize> = (0..n).collect();
    let mut root_unstable = vec![false; n];
    let mut grads_unstable = false;
    for (i, op) in truth.prog.ops.iter().enumerate() {
        let s64 = &truth.rec.steps[i];
        let sr = r.steps.get(i).ok_or_else(|| format!("{name} stopped before step {i}"))?;
        let at = |m: String| format!("step {i} `{op}`: {m}");
        let (o64, or) = match (&s64.out, &sr.out) {
            (Err(a), Err(b)) if a.same(b) => continue,
            (Ok(o64), Ok(or)) => (o64, or),
            (a, b) => return Err(at(format!("the f64 run gave {} but {name} gave {}", show(a), show(b)))),
        };
        if or.shape != o64.shape {
            return Err(at(format!("{name} gave shape {:?}, the f64 run {:?}", or.shape, o64.shape)));
        }
        let l = local_eval(op, &sr.ins, i).map_err(at)?;
        let sc = scale(op, &sr.ins, &l.want);
        close(or, &l.want, t.local, sc, float)
            .map_err(|m| at(format!("{name} differs from the f64 op on the same input values: {m}")))?;
        stats.local_checked += 1;
        let l64 = truth.local[i].as_ref().expect("a successful f64 step has a local re-run");
        let reads_unstable = op.inputs().iter().any(|&e| unstable[e] || root_unstable[root[e]]);
        let this = reads_unstable || close(&l.want, &l64.want, t.cond, sc, DType::F64).is_err();
        let vjp_moved = match (&l.vjp, &l64.vjp) {
            (Some(a), Some(b)) => grads_close(a, b, t.cond, DType::F64, 1.0).is_err(),
            _ => false,
        };
        grads_unstable |= this || vjp_moved || truth.singular[i];
        if this {
            stats.unstable += 1;
        } else {
            stats.stable += 1;
        }
        let v = unstable.len();
        let first = op.inputs()[0];
        unstable.push(this);
        root.push(if op.may_alias() { root[first] } else { v });
        root_unstable.push(false);
        if op.is_inplace() && this {
            root_unstable[root[first]] = true;
        }
    }
    if r.steps.len() != truth.rec.steps.len() || r.finals.len() != truth.rec.finals.len() {
        return Err(format!("{name} ran {} steps, the f64 run {}", r.steps.len(), truth.rec.steps.len()));
    }
    for (k, (want, got)) in truth.rec.finals.iter().zip(&r.finals).enumerate() {
        if unstable[k] || root_unstable[root[k]] {
            continue;
        }
        close(got, want, t.finals, max_abs(want).max(1.0), float)
            .map_err(|m| format!("the final value of v{k} (after all in-place writes) in {name}: {m}"))?;
    }
    match (&truth.rec.backward, &r.backward) {
        (None, None) => {}
        (Some(Err(a)), Some(Err(b))) if a.same(b) => stats.backward_err += 1,
        (Some(Ok(g64)), Some(Ok(gr))) => {
            if grads_unstable {
                stats.grads_skipped += 1;
                // Which inputs get a gradient does not depend on rounding.
                let shown: Vec<bool> = gr.iter().map(Option::is_some).collect();
                if shown != g64.iter().map(Option::is_some).collect::<Vec<_>>() {
                    return Err(format!("{name}: inputs with a gradient {shown:?} differ from the f64 run's"));
                }
            } else {
                grads_close(gr, g64, t.grads, float, truth.partials).map_err(|m| {
                    format!("backward in {name}: {m} (largest partial derivative {:e})", truth.partials)
                })?;
                stats.grads_compared += 1;
            }
        }
        (a, b) => {
            let s = |x: &Option<Result<Vec<Option<Host>>, ErrKey>>| match x {
                None => "no backward".to_string(),
                Some(Ok(_)) => "gradients".to_string(),
                Some(Err(e)) => e.to_string(),
            };
            return Err(format!("backward: the f64 run gave {} but {name} gave {}", s(a), s(b)));
        }
    }
    Ok(())
}

fn show(r: &Result<Host, ErrKey>) -> String {
    match r {
        Ok(h) => format!("Ok({} {:?})", h.dtype, h.shape),
        Err(e) => e.to_string(),
    }
}

/// Ops whose derivative is continuous wherever the op runs (no kinks, ties
/// or discrete outputs), so a central difference of the whole program must
/// match its backward.
pub fn smooth(op: &Op) -> bool {
    use super::program::To;
    match op {
        Op::Unary { f, .. } => !matches!(f, Un::Abs | Un::Sign | Un::Relu | Un::LeakyRelu(_) | Un::Clamp(..)),
        Op::Binary { f, .. } => !matches!(f, Bin::Maximum | Bin::Minimum),
        Op::Reduce { f, .. } => !matches!(f, Red::Max | Red::Min),
        Op::Compare { .. } | Op::CompareScalar { .. } | Op::Arg { .. } => false,
        Op::ToDType { to, .. } => *to == To::Float,
        _ => true,
    }
}

/// Checks the f64 run's gradients against a central difference of the whole
/// program along a random direction of its inputs (those that require grad):
/// d/dt L(x + t d) = sum_i <grad_i, d_i>. Only programs made of smooth ops,
/// with a finite loss and the same successful steps at both probes, qualify;
/// returns whether the check ran.
pub fn directional(prog: &Program, rec: &Record, seed: u64) -> Result<bool, String> {
    use super::exec::run_replay;
    use super::program::Input;
    let (Some((k, w)), Some(Ok(grads))) = (&prog.loss, &rec.backward) else { return Ok(false) };
    let ok: Vec<bool> = rec.steps.iter().map(|s| s.out.is_ok()).collect();
    if prog.ops.iter().zip(&ok).any(|(op, &ok)| ok && (!smooth(op) || matches!(op, Op::Detach { .. }))) {
        return Ok(false);
    }
    let mut g = super::gen::Rng(seed);
    let dirs: Vec<Vec<f64>> = prog
        .inputs
        .iter()
        .map(|i| i.values.iter().map(|_| if i.requires_grad { g.uniform(-1.0, 1.0) } else { 0.0 }).collect())
        .collect();
    let eps = 1e-6;
    let loss_at = |t: f64| -> Result<Option<f64>, String> {
        let inputs: Vec<Input> = prog
            .inputs
            .iter()
            .zip(&dirs)
            .map(|(i, d)| Input { values: i.values.iter().zip(d).map(|(v, d)| v + t * d).collect(), ..i.clone() })
            .collect();
        let p = Program { inputs, ops: prog.ops.clone(), loss: None };
        let cx = Cx { float: DType::F64, device: Device::Cpu, local: false };
        let r = run_replay(&p, &ok, &cx, |_, _| {}).map_err(|e| format!("directional probe: {e}"))?;
        if r.steps.iter().map(|s| s.out.is_ok()).ne(ok.iter().copied()) {
            return Ok(None);
        }
        let l: f64 = r.finals[*k].data.iter().zip(w).map(|(v, w)| v * w).sum();
        Ok(l.is_finite().then_some(l))
    };
    let central = |eps: f64| -> Result<Option<f64>, String> {
        Ok(match (loss_at(eps)?, loss_at(-eps)?) {
            (Some(hi), Some(lo)) => Some((hi - lo) / (2.0 * eps)),
            _ => None,
        })
    };
    let (Some(fd), Some(fd_half)) = (central(eps)?, central(eps / 2.0)?) else { return Ok(false) };
    let mut analytic = 0.0;
    let mut magnitude = 0.0;
    for (gr, d) in grads.iter().zip(&dirs) {
        if let Some(gr) = gr {
            for (a, b) in gr.data.iter().zip(d) {
                analytic += a * b;
                magnitude += (a * b).abs();
            }
        }
    }
    if !analytic.is_finite() {
        return Ok(false);
    }
    // A difference quotient that still moves with the step (1/x near 0)
    // says nothing: its truncation error is not small.
    if (fd - fd_half).abs() > 1e-6 * (1.0 + magnitude) {
        return Ok(false);
    }
    if (fd - analytic).abs() > 1e-5 * (1.0 + magnitude) {
        return Err(format!(
            "the f64 gradients disagree with a central difference of the program along a random direction: \
             sum <grad, d> = {analytic}, (L(x + eps d) - L(x - eps d)) / (2 eps) = {fd} (eps {eps:e})"
        ));
    }
    Ok(true)
}
