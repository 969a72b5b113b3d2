//! `compile(f)`: a function that captures itself on its first call and
//! replays afterwards, as long as nothing the capture assumed has changed.
//!
//! Each cached program is keyed by a guard: per input its dtype, shape,
//! strides, device and requires_grad; the grad mode; the host state the
//! capture read (`record::Stamp`s: which tensor each module parameter cell
//! holds, training flags, which state tensors an optimizer has and which
//! options it has on); and the `.grad` fields the program reads. A call
//! whose guard no cached program matches runs `f` eagerly and captures
//! again (a guard miss), and the log says why. A capture during which host
//! state it read changed (the optimizer's first step makes its state
//! tensors) is not kept: the next call captures the steady step.

use super::{trace, InputSpec, Traced};
use crate::autograd::is_grad_enabled;
use crate::error::Result;
use crate::tensor::Tensor;

/// How many programs a compiled function keeps (least recently used go first).
const DEFAULT_CAPACITY: usize = 8;
/// How many log lines a compiled function keeps.
const LOG_LINES: usize = 64;

/// What a program assumed of its call (the host state and `.grad` fields
/// it read are checked by `Traced::mismatch`).
#[derive(Clone, Debug, PartialEq)]
struct Guard {
    inputs: Vec<(InputSpec, bool)>,
    grad_enabled: bool,
}

impl Guard {
    fn now(inputs: &[Tensor]) -> Guard {
        Guard {
            inputs: inputs.iter().map(|t| (InputSpec::of(t), t.requires_grad())).collect(),
            grad_enabled: is_grad_enabled(),
        }
    }

    /// Why `self` (a call) does not match `cached`.
    fn differs(&self, cached: &Guard) -> String {
        if self.inputs.len() != cached.inputs.len() {
            return format!("{} inputs instead of {}", self.inputs.len(), cached.inputs.len());
        }
        for (k, ((now, rg_now), (was, rg_was))) in self.inputs.iter().zip(&cached.inputs).enumerate() {
            if now != was {
                return format!("input {k} is {} instead of {}", now.describe(), was.describe());
            }
            if rg_now != rg_was {
                return format!("input {k} has requires_grad={rg_now} instead of {rg_was}");
            }
        }
        if self.grad_enabled != cached.grad_enabled {
            return format!("grad mode is {} instead of {}", on_off(self.grad_enabled), on_off(cached.grad_enabled));
        }
        "nothing (internal: the guards match)".into()
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

struct Entry {
    guard: Guard,
    traced: Traced,
    last_used: u64,
}

/// A compiled function (see `compile`).
pub struct Compiled<F> {
    f: F,
    cache: Vec<Entry>,
    capacity: usize,
    calls: u64,
    captures: u64,
    log: Vec<String>,
}

/// `f` as a compiled function: its first call runs `f` eagerly while
/// recording a program (forward, `backward()`, clipping, `optimizer.step()`:
/// whatever `f` dispatches), later calls replay that program when their
/// guard matches, and a call that matches no cached program captures anew.
///
/// ```
/// use skiff::optim::{Optimizer, Sgd, SgdConfig};
/// use skiff::{jit, nn::{Layer, Linear}, Reduction, Tensor};
/// # fn main() -> skiff::Result<()> {
/// let model = Linear::new(4, 3)?;
/// let mut opt = Sgd::new(model.parameters(), SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() })?;
/// let mut step = jit::compile(|xs: &[Tensor]| {
///     opt.zero_grad();
///     let loss = model.forward(&xs[0])?.cross_entropy(&xs[1], Reduction::Mean, 0.0)?;
///     loss.backward()?;
///     opt.step()?;
///     Ok(vec![loss.detach()])
/// });
/// let x = Tensor::from_vec((0..8).map(|i| i as f32 / 8.0).collect(), &[2, 4])?;
/// let y = Tensor::from_vec(vec![0i32, 2], &[2])?;
/// for _ in 0..5 {
///     step.call(&[x.clone(), y.clone()])?;
/// }
/// // The first call made SGD's momentum buffers, so the second captured the
/// // steady step; calls 3 to 5 replayed it.
/// assert_eq!((step.captures(), step.replays()), (2, 3));
/// # Ok(())
/// # }
/// ```
pub fn compile<F>(f: F) -> Compiled<F>
where
    F: FnMut(&[Tensor]) -> Result<Vec<Tensor>>,
{
    Compiled { f, cache: Vec::new(), capacity: DEFAULT_CAPACITY, calls: 0, captures: 0, log: Vec::new() }
}

impl<F> Compiled<F>
where
    F: FnMut(&[Tensor]) -> Result<Vec<Tensor>>,
{
    /// Keeps at most `n` programs (at least one).
    pub fn with_capacity(mut self, n: usize) -> Self {
        self.capacity = n.max(1);
        self
    }

    /// Calls the function: replays a cached program whose guard matches,
    /// else runs `f` eagerly and captures it.
    pub fn call(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        self.calls += 1;
        let guard = Guard::now(inputs);
        let hit = self.cache.iter().position(|e| e.guard == guard && e.traced.mismatch(inputs).is_none());
        if let Some(i) = hit {
            self.cache[i].last_used = self.calls;
            return self.cache[i].traced.replay(inputs);
        }
        let why = match self.cache.iter().max_by_key(|e| e.last_used) {
            None if self.captures == 0 => "first call".to_string(),
            None => "no program kept".to_string(),
            Some(e) if e.guard == guard => e.traced.mismatch(inputs).unwrap_or_else(|| guard.differs(&e.guard)),
            Some(e) => guard.differs(&e.guard),
        };
        self.captures += 1;
        let (outputs, mut traced) = trace(inputs, &mut self.f)?;
        if let Some(stale) = traced.stale() {
            self.note(format!("call {}: captured ({why}); not kept, {stale} during the capture", self.calls));
            return Ok(outputs);
        }
        let stats = traced.optimize();
        self.note(format!(
            "call {}: captured ({why}): {} kernels after the passes removed {} ({stats:?})",
            self.calls,
            traced.program().kernels(),
            stats.removed()
        ));
        if self.cache.len() >= self.capacity {
            let oldest = (0..self.cache.len()).min_by_key(|&i| self.cache[i].last_used).expect("the cache is full");
            self.cache.remove(oldest);
            self.note(format!("call {}: dropped the least recently used program", self.calls));
        }
        self.cache.push(Entry { guard, traced, last_used: self.calls });
        Ok(outputs)
    }

    fn note(&mut self, line: String) {
        if std::env::var_os("SKIFF_JIT_LOG").is_some() {
            eprintln!("skiff jit: {line}");
        }
        if self.log.len() == LOG_LINES {
            self.log.remove(0);
        }
        self.log.push(line);
    }

    /// What the compiled function did and why (captures, guard misses,
    /// evictions), latest last; also printed to stderr when `SKIFF_JIT_LOG`
    /// is set.
    pub fn log(&self) -> &[String] {
        &self.log
    }
    /// How many calls ran `f` (captured).
    pub fn captures(&self) -> u64 {
        self.captures
    }
    /// How many calls replayed a program.
    pub fn replays(&self) -> u64 {
        self.calls - self.captures
    }
    /// The cached programs, most recently used first.
    pub fn programs(&self) -> Vec<&Traced> {
        let mut entries: Vec<&Entry> = self.cache.iter().collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.last_used));
        entries.into_iter().map(|e| &e.traced).collect()
    }
    /// Drops every cached program: the next call captures.
    pub fn clear(&mut self) {
        self.cache.clear();
    }
}
