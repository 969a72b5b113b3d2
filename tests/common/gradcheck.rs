//! A gradcheck for "a closure from tensors to a tensor" that also reads
//! parameter cells (an nn layer's forward), in f64 on the cpu.
//!
//! The scalar checked is sum(f(xs) * w) with w drawn uniformly from [-1, 1]
//! (fixed seed): unlike `sum_all`, whose gradient can be degenerate (batch
//! norm's weight gradient is exactly 0 under it, since the normalised values
//! of a channel sum to 0), every output element counts with its own weight.
//!
//! Inputs are perturbed as fresh tensors; parameters are perturbed through the
//! layer's own cells (written in place under `no_grad`, then restored), so the
//! numeric side runs exactly the code path the layer runs in training.

use skiff::nn::Param;
use skiff::random::Generator;
use skiff::{enable_grad, grad, no_grad, DType, GradOptions, Result, Tensor};

/// Central-difference step. In f64 the rounding error of a difference of two
/// O(10) losses is ~1e-16 * 10 / 1e-6 = 1e-9, far below the tolerances, and
/// the truncation error is O(EPS^2).
pub const EPS: f64 = 1e-6;
/// First order: |analytic - numeric| <= ATOL + RTOL * |numeric| (the registry's values).
pub const ATOL: f64 = 1e-5;
pub const RTOL: f64 = 1e-4;
/// Second order differences first-order gradients (one more backward pass of
/// rounding): 10x looser, as the registry's second-order check.
pub const SECOND_ATOL: f64 = 1e-4;
pub const SECOND_RTOL: f64 = 1e-3;

/// An f64 tensor of `shape` uniform in [lo, hi), from a private generator
/// (the global one is shared by the test threads and the initialisers).
pub fn uniform(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Tensor {
    let mut g = Generator::new(seed);
    let n = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| lo + (hi - lo) * g.uniform()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// Overwrites every float parameter and buffer of `cells` (e.g. a layer's
/// `state_dict`) with uniform values in [lo, hi) (seeded), in place. Default
/// initialisations (ones, zeros, a running variance of 1) are special points
/// that hide mistakes; random values do not.
pub fn randomise(cells: &[(String, Tensor)], lo: f64, hi: f64, seed: u64) {
    for (k, (_, t)) in cells.iter().enumerate() {
        if t.dtype().is_float() {
            let v = uniform(t.shape(), lo, hi, seed.wrapping_mul(31).wrapping_add(k as u64 + 1))
                .to_dtype(t.dtype())
                .unwrap();
            no_grad(|| t.copy_(&v)).unwrap();
        }
    }
}

/// What the closure is differentiated with respect to.
#[derive(Clone, Copy, Debug)]
enum Target {
    Input(usize),
    Param(usize),
}

struct Problem<'a> {
    name: &'a str,
    f: &'a dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &'a [Tensor],
    params: &'a [(String, Param)],
    w: Tensor,
}

impl Problem<'_> {
    fn targets(&self) -> Vec<Target> {
        let ins = (0..self.inputs.len()).map(Target::Input);
        ins.chain((0..self.params.len()).map(Target::Param)).collect()
    }
    fn label(&self, t: Target) -> String {
        match t {
            Target::Input(i) => format!("input {i}"),
            Target::Param(k) => format!("parameter {}", self.params[k].0),
        }
    }
    fn value(&self, t: Target) -> Tensor {
        match t {
            Target::Input(i) => self.inputs[i].clone(),
            Target::Param(k) => self.params[k].1.get(),
        }
    }

    /// Fresh input leaves, every target's leaf, and the gradients of
    /// sum(f * w) with respect to them (zeros where unused).
    fn grads(&self, inputs: &[Tensor], create_graph: bool) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let xs: Vec<Tensor> = inputs.iter().map(|x| x.detach().requires_grad_(true)).collect::<Result<_>>()?;
        let mut leaves = xs.clone();
        leaves.extend(self.params.iter().map(|(_, p)| p.get()));
        let loss = enable_grad(|| (self.f)(&xs)?.mul(&self.w)?.sum_all())?;
        let opts = GradOptions { create_graph, retain_graph: None, allow_unused: true };
        let gs = grad(&[loss], &leaves, None, opts)?;
        let gs =
            gs.into_iter().zip(&leaves).map(|(g, l)| g.map_or_else(|| l.zeros_like(), Ok)).collect::<Result<_>>()?;
        Ok((leaves, gs))
    }

    /// `eval(inputs)` with element `j` of target `t` moved by `delta`. A
    /// parameter is written into its cell in place and restored afterwards.
    fn at(&self, t: Target, j: usize, delta: f64, eval: &dyn Fn(&[Tensor]) -> Result<f64>) -> f64 {
        let moved = |x: &Tensor| {
            let mut v = x.to_vec::<f64>().unwrap();
            v[j] += delta;
            Tensor::from_vec(v, x.shape()).unwrap()
        };
        let what = || format!("{}: {} element {j} moved by {delta}", self.name, self.label(t));
        match t {
            Target::Input(i) => {
                let mut xs: Vec<Tensor> = self.inputs.to_vec();
                xs[i] = moved(&xs[i]);
                eval(&xs).unwrap_or_else(|e| panic!("{}: {e}", what()))
            }
            Target::Param(k) => {
                let cell = self.params[k].1.get();
                let saved = cell.detach().contiguous_copy().unwrap();
                no_grad(|| cell.copy_(&moved(&saved))).unwrap();
                let r = eval(self.inputs);
                no_grad(|| cell.copy_(&saved)).unwrap();
                r.unwrap_or_else(|e| panic!("{}: {e}", what()))
            }
        }
    }

    /// Compares `analytic[t]` with central differences of `eval`.
    fn compare(&self, order: &str, analytic: &[Tensor], eval: &dyn Fn(&[Tensor]) -> Result<f64>, tol: (f64, f64)) {
        for (t, a) in self.targets().into_iter().zip(analytic) {
            let a = a.to_vec::<f64>().unwrap();
            for (j, aj) in a.iter().enumerate() {
                let num = (self.at(t, j, EPS, eval) - self.at(t, j, -EPS, eval)) / (2.0 * EPS);
                assert!(
                    (aj - num).abs() <= tol.0 + tol.1 * num.abs(),
                    "{}: {order} gradient of {} element {j}: analytic {aj} vs numeric {num}",
                    self.name,
                    self.label(t)
                );
            }
        }
    }
}

/// Checks the gradient of sum(f(inputs) * w) with respect to every input and
/// every parameter cell in `params` against central differences, and, when
/// `second_order`, the gradient of sum_t <grad_t, v_t> (random directions v)
/// with respect to all of them. Inputs and parameters must be f64 (parameters
/// leaves that require grad: see `Layer::to_dtype`). Non-float inputs (indices,
/// masks) belong inside `f`. Panics with the first mismatch; returns how many
/// gradient elements were checked.
pub fn gradcheck(
    name: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    params: &[(String, Param)],
    second_order: bool,
) -> usize {
    for (i, x) in inputs.iter().enumerate() {
        assert_eq!(x.dtype(), DType::F64, "{name}: input {i} must be f64");
    }
    for (n, p) in params {
        let p = p.get();
        assert!(p.dtype() == DType::F64 && p.requires_grad(), "{name}: parameter {n} must be an f64 leaf");
    }
    let out = no_grad(|| f(inputs)).unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    let w = uniform(out.shape(), -1.0, 1.0, 7);
    let p = Problem { name, f, inputs, params, w };
    let loss = |xs: &[Tensor]| no_grad(|| (p.f)(xs)?.mul(&p.w)?.sum_all()?.item());
    let (_, analytic) = p.grads(inputs, false).unwrap_or_else(|e| panic!("{name}: backward failed: {e}"));
    p.compare("first-order", &analytic, &loss, (ATOL, RTOL));
    let checked = analytic.iter().map(|a| a.numel()).sum();
    if !second_order {
        return checked;
    }
    let vs: Vec<Tensor> =
        p.targets().iter().enumerate().map(|(k, &t)| uniform(p.value(t).shape(), -1.0, 1.0, 11 + k as u64)).collect();
    let s_of = |gs: &[Tensor]| -> Result<Tensor> {
        let mut s = Tensor::scalar(0.0, DType::F64);
        for (g, v) in gs.iter().zip(&vs) {
            s = s.add(&g.mul(v)?.sum_all()?)?;
        }
        Ok(s)
    };
    let second = || -> Result<Vec<Tensor>> {
        let (leaves, gs) = p.grads(inputs, true)?;
        let s = s_of(&gs)?;
        if !s.requires_grad() {
            return leaves.iter().map(|l| l.zeros_like()).collect();
        }
        let opts = GradOptions { create_graph: false, retain_graph: None, allow_unused: true };
        let hs = grad(&[s], &leaves, None, opts)?;
        hs.into_iter().zip(&leaves).map(|(h, l)| h.map_or_else(|| l.zeros_like(), Ok)).collect()
    };
    let analytic2 = second().unwrap_or_else(|e| panic!("{name}: second-order backward failed: {e}"));
    let s_at = |xs: &[Tensor]| s_of(&p.grads(xs, false)?.1)?.item();
    p.compare("second-order", &analytic2, &s_at, (SECOND_ATOL, SECOND_RTOL));
    checked
}
