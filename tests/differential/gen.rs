//! Random programs. proptest draws a *raw* program (shapes, value seeds, and
//! per op a kind and a row of numbers); `resolve` turns each raw op into a
//! concrete `Op` against the shapes of the values computed so far. Every
//! choice reads one number, and 0 always means the plainest valid choice
//! (the latest value, the first axis, a valid argument), so proptest's
//! shrinking towards 0 simplifies a failing program while keeping it valid
//! wherever validity is not what fails. About one argument in twenty is drawn
//! invalid on purpose (bad axes, incompatible shapes, out-of-range indices):
//! those calls must fail with an `Err` on every backend alike.

use super::program::Input;
use proptest::prelude::*;
use skiff::DType;

/// Numbers per raw op (choices past them come from a generator seeded by the last).
pub const ARGS: usize = 16;

#[derive(Clone, Debug)]
pub struct RawInput {
    /// 0: the base shape; 1: a suffix of it; 2: it with some dims set to 1; 3: `free`.
    pub relation: u8,
    pub mask: u8,
    pub free: Vec<usize>,
    pub requires_grad: bool,
    /// 0: uniform in [-2, 2]; 1: uniform in [0.25, 2] (inside log's and sqrt's domain);
    /// 2: a grid of halves in [-2, 2] (ties for max/argmax/compare).
    pub values: u8,
    pub seed: u64,
}

#[derive(Clone, Debug)]
pub struct RawOp {
    pub kind: u32,
    pub args: [u32; ARGS],
}

#[derive(Clone, Debug)]
pub struct RawProgram {
    pub base: Vec<usize>,
    pub inputs: Vec<RawInput>,
    pub ops: Vec<RawOp>,
}

fn dim() -> impl Strategy<Value = usize> {
    // Size 1 (broadcasting) and 0 (empty tensors) often enough to matter.
    prop_oneof![8 => 2..=5usize, 3 => Just(1usize), 1 => Just(0usize)]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(dim(), 0..=4)
}

pub fn program(max_ops: usize) -> impl Strategy<Value = RawProgram> {
    let input = (
        prop_oneof![4 => Just(0u8), 2 => Just(1u8), 2 => Just(2u8), 1 => Just(3u8)],
        any::<u8>(),
        shape(),
        prop::bool::weighted(0.7),
        prop_oneof![3 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
        any::<u64>(),
    )
        .prop_map(|(relation, mask, free, requires_grad, values, seed)| RawInput {
            relation,
            mask,
            free,
            requires_grad,
            values,
            seed,
        });
    let op = (any::<u32>(), prop::array::uniform16(any::<u32>())).prop_map(|(kind, args)| RawOp { kind, args });
    (shape(), prop::collection::vec(input, 1..=3), prop::collection::vec(op, 1..=max_ops))
        .prop_map(|(base, inputs, ops)| RawProgram { base, inputs, ops })
}

/// splitmix64: the values of inputs and the long tails of argument lists.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    /// Uniform in [lo, hi), rounded to f32 so every run starts from the same numbers.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo + (hi - lo) * u) as f32 as f64
    }
}

impl RawInput {
    pub fn resolve(&self, base: &[usize]) -> Input {
        let shape: Vec<usize> = match self.relation {
            0 => base.to_vec(),
            1 => base[(self.mask as usize) % (base.len() + 1)..].to_vec(),
            2 => base.iter().enumerate().map(|(i, &d)| if self.mask >> i & 1 == 1 { 1 } else { d }).collect(),
            _ => self.free.clone(),
        };
        let mut g = Rng(self.seed);
        let n: usize = shape.iter().product();
        let values = (0..n)
            .map(|_| match self.values {
                0 => g.uniform(-2.0, 2.0),
                1 => g.uniform(0.25, 2.0),
                _ => g.below(9) as f64 * 0.5 - 2.0,
            })
            .collect();
        Input { shape, values, requires_grad: self.requires_grad }
    }
}

/// What the resolver knows of a value.
#[derive(Clone, Debug)]
pub struct Info {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// A leaf that requires grad (in-place writes to it fail while recording).
    pub leaf_rg: bool,
    /// Made by a view op (in-place writes to views of graph tensors fail).
    pub view: bool,
    /// Holds a NaN (now, in the f64 run).
    pub nan: bool,
    /// Holds a value outside i32's range (an infinity included).
    pub huge: bool,
    /// The value whose storage this one shares (itself unless made by an
    /// op that may alias its first input).
    pub root: usize,
    /// Never read again: shares storage with a tensor whose history an
    /// in-place op rewrote after this one was made. Such a value's own
    /// history is out of date, and skiff then computes wrong gradients
    /// through it without an error (reported with this test's findings:
    /// `v2 = v1.transpose(0, 1); v1.mul_scalar_(3.0); v2.matmul(&v1)` gives
    /// v2's gradient as if v1 had not been scaled; PyTorch rebuilds the
    /// view's history). Not drawn until that is fixed.
    pub stale: bool,
}

impl Info {
    pub fn float(&self) -> bool {
        self.dtype.is_float()
    }
    pub fn nd(&self) -> usize {
        self.shape.len()
    }
}

/// The NumPy broadcast of two shapes, if they broadcast.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i < n - a.len() { 1 } else { a[i - (n - a.len())] };
        let y = if i < n - b.len() { 1 } else { b[i - (n - b.len())] };
        out[i] = match (x, y) {
            _ if x == y => x,
            (1, _) => y,
            (_, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

pub fn matmul_ok(a: &[usize], b: &[usize]) -> bool {
    match (a.len(), b.len()) {
        (0, _) | (_, 0) => false,
        (1, 1) => a[0] == b[0],
        (1, _) => a[0] == b[b.len() - 2],
        (_, 1) => a[a.len() - 1] == b[0],
        _ => a[a.len() - 1] == b[b.len() - 2] && broadcast(&a[..a.len() - 2], &b[..b.len() - 2]).is_some(),
    }
}

pub fn transposed(s: &[usize]) -> Vec<usize> {
    let mut t = s.to_vec();
    let n = t.len();
    if n >= 2 {
        t.swap(n - 1, n - 2);
    }
    t
}

/// The choices of one raw op.
pub struct A<'a> {
    pub raw: &'a [u32],
    pub i: usize,
    pub tail: Rng,
}

/// Percent of argument draws that are invalid on purpose.
const BAD: u32 = 5;

impl A<'_> {
    pub fn next(&mut self) -> u32 {
        let v = match self.raw.get(self.i) {
            Some(&v) => v,
            None => self.tail.next() as u32,
        };
        self.i += 1;
        v
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next() as usize % n
        }
    }
    /// True with `pct` percent (and for a shrunk 0).
    pub fn chance(&mut self, pct: u32) -> bool {
        self.next() % 100 < pct
    }
    /// True for an invalid draw (never for a shrunk 0).
    pub fn bad(&mut self) -> bool {
        self.next() % 100 >= 100 - BAD
    }
    pub fn pick_of<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    /// A value satisfying `ok`, latest first; any value on a bad draw or when
    /// none fits (never a stale one: see `Info::stale`).
    pub fn pick(&mut self, env: &[Info], ok: impl Fn(&Info) -> bool) -> usize {
        let live: Vec<usize> = (0..env.len()).rev().filter(|&i| !env[i].stale).collect();
        let cands: Vec<usize> = live.iter().copied().filter(|&i| ok(&env[i])).collect();
        if self.bad() || cands.is_empty() {
            return live[self.below(live.len())];
        }
        // Mostly one of the latest two, so ops chain into deep programs.
        let n = if self.chance(60) { cands.len().min(2) } else { cands.len() };
        cands[self.below(n)]
    }
    /// An axis of a rank-`nd` tensor (either sign), or an invalid one.
    pub fn axis(&mut self, nd: usize) -> isize {
        if self.bad() {
            return self.pick_of(&[nd as isize, -(nd as isize) - 1, isize::MAX, isize::MIN]);
        }
        let n = nd.max(1) as isize;
        let a = self.below(n as usize) as isize;
        if self.chance(70) {
            a
        } else {
            a - n
        }
    }
    /// An axis where a new one may go (`unsqueeze`, `stack`): `0..=nd`.
    pub fn insert_axis(&mut self, nd: usize) -> isize {
        self.axis(nd + 1)
    }
    pub fn axes(&mut self, nd: usize) -> Vec<isize> {
        let mut out: Vec<isize> = Vec::new();
        for a in 0..nd {
            if !self.chance(50) {
                out.push(if self.chance(70) { a as isize } else { a as isize - nd as isize });
            }
        }
        if self.bad() {
            out.push(if nd > 0 && self.chance(50) { 0 } else { nd as isize });
        }
        out
    }
    pub fn size(&mut self, hi: usize) -> usize {
        if self.bad() {
            return self.pick_of(&[hi + 1, usize::MAX]);
        }
        self.below(hi + 1)
    }
}

/// A shape with `n` elements: `n`'s prime factors spread over 1-4 dims (for
/// n = 0, some zero dim among small ones).
pub fn factor_shape(a: &mut A, n: usize) -> Vec<usize> {
    let rank = if n == 1 && a.chance(20) { 0 } else { 1 + a.below(4) };
    if n == 0 {
        let mut s: Vec<usize> = (0..rank).map(|_| a.below(4)).collect();
        let z = a.below(rank);
        s[z] = 0;
        return s;
    }
    let mut s = vec![1; rank];
    let (mut m, mut p) = (n, 2);
    while m > 1 {
        while m % p == 0 {
            let i = a.below(rank);
            s[i] *= p;
            m /= p;
        }
        p += 1;
    }
    s
}

pub fn index_values(a: &mut A, n: usize, bound: usize) -> Vec<i32> {
    (0..n).map(|_| if a.bad() { a.pick_of(&[bound as i32, -1, i32::MAX]) } else { a.below(bound) as i32 }).collect()
}
