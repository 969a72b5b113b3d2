//! Resolving a raw op into a concrete `Op` (see gen.rs for how choices are read).

use super::gen::{broadcast, factor_shape, index_values, matmul_ok, transposed, Info, RawOp, Rng, A, ARGS};
use super::program::{Bin, Cmp, Ints, Ip, Op, Red, To, Un};
use skiff::{DType, Reduction};

const UNARY: &[Un] = &[
    Un::Neg,
    Un::Exp,
    Un::Log,
    Un::Sqrt,
    Un::Rsqrt,
    Un::Abs,
    Un::Sign,
    Un::Sin,
    Un::Cos,
    Un::Tanh,
    Un::Sigmoid,
    Un::Relu,
    Un::LeakyRelu(0.2),
    Un::Gelu,
    Un::GeluErf,
    Un::Erf,
    Un::Silu,
    Un::Softplus,
    Un::PowScalar(2.0),
    Un::PowScalar(0.5),
    Un::PowScalar(-1.0),
    Un::PowScalar(3.0),
    Un::PowScalar(1.5),
    Un::AddScalar(0.5),
    Un::SubScalar(1.5),
    Un::MulScalar(-2.0),
    Un::MulScalar(0.0),
    Un::DivScalar(4.0),
    Un::DivScalar(0.0),
    Un::Clamp(Some(-0.5), Some(1.0)),
    Un::Clamp(Some(0.0), None),
    Un::Clamp(None, Some(0.5)),
    Un::Clamp(Some(1.0), Some(-1.0)),
];

const BINARY: &[Bin] = &[Bin::Add, Bin::Sub, Bin::Mul, Bin::Div, Bin::Pow, Bin::Maximum, Bin::Minimum];
const CMP: &[Cmp] = &[Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];
const REDUCTIONS: &[Reduction] = &[Reduction::Mean, Reduction::Sum, Reduction::None];

/// Op kinds and their weights (the first is what a shrunk kind becomes).
const KINDS: &[(K, u32)] = &[
    (K::Unary, 14),
    (K::Binary, 12),
    (K::Compare, 5),
    (K::CompareScalar, 3),
    (K::Where, 4),
    (K::Reduce, 8),
    (K::Var, 3),
    (K::Arg, 3),
    (K::SumAll, 1),
    (K::SumTo, 2),
    (K::Softmax, 3),
    (K::Matmul, 6),
    (K::Reshape, 5),
    (K::Permute, 3),
    (K::Transpose, 3),
    (K::Expand, 3),
    (K::Slice, 4),
    (K::Narrow, 2),
    (K::Squeeze, 2),
    (K::Unsqueeze, 2),
    (K::Flatten, 1),
    (K::Contiguous, 2),
    (K::Concat, 3),
    (K::Stack, 2),
    (K::Pad, 2),
    (K::Split, 2),
    (K::IndexSelect, 3),
    (K::Gather, 2),
    (K::ScatterAdd, 2),
    (K::InPlace, 8),
    (K::ToDType, 2),
    (K::Detach, 1),
    (K::RoundTrip, 1),
    (K::Mse, 1),
    (K::CrossEntropy, 2),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum K {
    Unary,
    Binary,
    Compare,
    CompareScalar,
    Where,
    Reduce,
    Var,
    Arg,
    SumAll,
    SumTo,
    Softmax,
    Matmul,
    Reshape,
    Permute,
    Transpose,
    Expand,
    Slice,
    Narrow,
    Squeeze,
    Unsqueeze,
    Flatten,
    Contiguous,
    Concat,
    Stack,
    Pad,
    Split,
    IndexSelect,
    Gather,
    ScatterAdd,
    InPlace,
    ToDType,
    Detach,
    RoundTrip,
    Mse,
    CrossEntropy,
}

fn kind(k: u32) -> K {
    let total: u32 = KINDS.iter().map(|&(_, w)| w).sum();
    let mut r = k % total;
    for &(kind, w) in KINDS {
        if r < w {
            return kind;
        }
        r -= w;
    }
    K::Unary
}

/// The concrete op a raw op means for values with `env`'s shapes and dtypes.
pub fn resolve(raw: &RawOp, env: &[Info]) -> Op {
    let mut a = A { raw: &raw.args, i: 0, tail: Rng(raw.args[ARGS - 1] as u64) };
    let a = &mut a;
    let float = |i: &Info| i.float();
    match kind(raw.kind) {
        K::Unary => Op::Unary { x: a.pick(env, float), f: a.pick_of(UNARY) },
        K::Binary | K::Compare | K::Mse => {
            let x = a.pick(env, float);
            let s = env[x].shape.clone();
            let k = kind(raw.kind);
            let b = if k == K::Mse {
                a.pick(env, |i| i.float() && i.shape == s)
            } else {
                a.pick(env, |i| i.float() && broadcast(&s, &i.shape).is_some())
            };
            match k {
                K::Binary => Op::Binary { a: x, b, f: a.pick_of(BINARY) },
                K::Compare => Op::Compare { a: x, b, f: a.pick_of(CMP) },
                _ => Op::Mse { a: x, b, reduction: a.pick_of(REDUCTIONS) },
            }
        }
        K::CompareScalar => {
            let x = a.pick(env, float);
            Op::CompareScalar { a: x, f: a.pick_of(CMP), v: a.pick_of(&[0.0, 0.5, -1.0, 1.5]) }
        }
        K::Where => {
            if !env.iter().any(|i| i.dtype == DType::Bool) {
                let x = a.pick(env, float);
                return Op::CompareScalar { a: x, f: Cmp::Gt, v: 0.0 };
            }
            let c = a.pick(env, |i| i.dtype == DType::Bool);
            let cs = env[c].shape.clone();
            let x = a.pick(env, |i| i.float() && broadcast(&cs, &i.shape).is_some());
            let xs = broadcast(&cs, &env[x].shape).unwrap_or_default();
            let y = a.pick(env, |i| i.float() && broadcast(&xs, &i.shape).is_some());
            Op::Where { c, a: x, b: y }
        }
        K::Reduce => {
            let x = a.pick(env, float);
            let f = a.pick_of(&[Red::Sum, Red::Mean, Red::Max, Red::Min, Red::Logsumexp]);
            Op::Reduce { x, f, axes: a.axes(env[x].nd()), keepdim: a.chance(50) }
        }
        K::Var => {
            let x = a.pick(env, float);
            let axes = a.axes(env[x].nd());
            Op::Var { x, axes, correction: a.pick_of(&[1.0, 0.0]), keepdim: a.chance(50), std: a.chance(50) }
        }
        K::Arg => {
            let x = a.pick(env, float);
            let axis = if a.chance(70) { Some(a.axis(env[x].nd())) } else { None };
            Op::Arg { x, max: a.chance(50), axis, keepdim: a.chance(50) }
        }
        K::SumAll => Op::SumAll { x: a.pick(env, float) },
        K::SumTo => {
            let x = a.pick(env, float);
            let s = &env[x].shape;
            let drop = a.below(s.len() + 1);
            let mut shape: Vec<usize> = s[drop..].iter().map(|&d| if a.chance(50) { d } else { 1 }).collect();
            if a.bad() {
                shape.insert(0, 2);
            }
            Op::SumTo { x, shape }
        }
        K::Softmax => {
            let x = a.pick(env, float);
            Op::Softmax { x, axis: a.axis(env[x].nd()), log: a.chance(50) }
        }
        K::Matmul => {
            let x = a.pick(env, float);
            let s = env[x].shape.clone();
            if s.len() >= 2 && a.chance(25) {
                return Op::Matmul { a: x, b: x, transpose_b: true };
            }
            let b = a.pick(env, |i| {
                i.float() && (matmul_ok(&s, &i.shape) || (i.nd() >= 2 && matmul_ok(&s, &transposed(&i.shape))))
            });
            let bs = &env[b].shape;
            let transpose_b = if matmul_ok(&s, bs) { bs.len() >= 2 && a.chance(10) } else { bs.len() >= 2 };
            Op::Matmul { a: x, b, transpose_b }
        }
        K::Reshape => {
            let x = a.pick(env, |_| true);
            let n: usize = env[x].shape.iter().product();
            let mut shape: Vec<isize> = factor_shape(a, n).into_iter().map(|d| d as isize).collect();
            if !shape.is_empty() && a.chance(30) {
                let i = a.below(shape.len());
                shape[i] = -1;
            }
            if a.bad() {
                shape.push(2);
            }
            Op::Reshape { x, shape }
        }
        K::Permute => {
            let x = a.pick(env, |_| true);
            let nd = env[x].nd();
            let mut perm: Vec<isize> = (0..nd as isize).collect();
            for i in (1..nd).rev() {
                let j = a.below(i + 1);
                perm.swap(i, j);
            }
            if a.bad() {
                match perm.len() {
                    0 | 1 => perm.push(0),
                    _ => perm[0] = perm[1],
                }
            }
            Op::Permute { x, perm }
        }
        K::Transpose => {
            let x = a.pick(env, |_| true);
            let nd = env[x].nd();
            Op::Transpose { x, a: a.axis(nd), b: a.axis(nd) }
        }
        K::Expand => {
            let x = a.pick(env, |_| true);
            let s = env[x].shape.clone();
            let lead = a.below(3);
            let mut shape: Vec<isize> = (0..lead).map(|_| 1 + a.below(3) as isize).collect();
            for &d in &s {
                shape.push(match d {
                    1 => a.pick_of(&[3, 1, -1, 2, 0]),
                    d if a.chance(50) => d as isize,
                    _ => -1,
                });
            }
            if a.bad() && !shape.is_empty() {
                let i = a.below(shape.len());
                shape[i] += 2;
            }
            Op::Expand { x, shape }
        }
        K::Slice => {
            let x = a.pick(env, |_| true);
            let s = &env[x].shape;
            let axis = a.axis(s.len());
            let d = s.get(axis.rem_euclid(s.len().max(1) as isize) as usize).copied().unwrap_or(1) as isize;
            let end_point = |a: &mut A| a.below(2 * d as usize + 5) as isize - d - 2;
            let (start, end) = (end_point(a), end_point(a));
            let (start, end) = if a.chance(80) { (start.min(end), start.max(end)) } else { (start, end) };
            let step = if a.bad() { 0 } else { 1 + a.below(3) };
            Op::Slice { x, axis, start, end, step }
        }
        K::Narrow => {
            let x = a.pick(env, |_| true);
            let s = &env[x].shape;
            let axis = a.axis(s.len());
            let d = s.get(axis.rem_euclid(s.len().max(1) as isize) as usize).copied().unwrap_or(1);
            let start = a.size(d);
            let len = a.size(d.saturating_sub(start));
            Op::Narrow { x, axis, start, len }
        }
        K::Squeeze => {
            let x = a.pick(env, |_| true);
            let nd = env[x].nd();
            Op::Squeeze { x, axis: if a.chance(60) { Some(a.axis(nd)) } else { None } }
        }
        K::Unsqueeze => {
            let x = a.pick(env, |_| true);
            Op::Unsqueeze { x, axis: a.insert_axis(env[x].nd()) }
        }
        K::Flatten => {
            let x = a.pick(env, |_| true);
            let nd = env[x].nd();
            let (s, e) = (a.axis(nd), a.axis(nd));
            let (s, e) = if a.chance(80) && s >= 0 && e >= 0 { (s.min(e), s.max(e)) } else { (s, e) };
            Op::Flatten { x, start: s, end: e }
        }
        K::Contiguous => Op::Contiguous { x: a.pick(env, |_| true), copy: a.chance(40) },
        K::Concat | K::Stack => {
            let x = a.pick(env, |i| i.nd() >= 1 || kind(raw.kind) == K::Stack);
            let (s, dt) = (env[x].shape.clone(), env[x].dtype);
            let stack = kind(raw.kind) == K::Stack;
            let axis = if stack { a.insert_axis(s.len()) } else { a.axis(s.len()) };
            let ax = axis.rem_euclid(s.len().max(1) as isize) as usize;
            let fits = |i: &Info| {
                i.dtype == dt
                    && i.nd() == s.len()
                    && i.shape.iter().zip(&s).enumerate().all(|(k, (p, q))| p == q || (!stack && k == ax))
            };
            let mut xs = vec![x];
            for _ in 0..a.below(3) {
                let y = a.pick(env, fits);
                xs.push(y);
            }
            if stack {
                Op::Stack { xs, axis }
            } else {
                Op::Concat { xs, axis }
            }
        }
        K::Pad => {
            let x = a.pick(env, |_| true);
            let nd = env[x].nd();
            let n = if a.bad() { nd + 1 } else { a.below(nd + 1) };
            let pads = (0..n).map(|_| (a.below(3), a.below(3))).collect();
            Op::Pad { x, pads, value: a.pick_of(&[0.0, 1.5, -1.0]) }
        }
        K::Split => {
            let x = a.pick(env, |i| i.nd() >= 1);
            let s = &env[x].shape;
            let axis = a.axis(s.len());
            let d = s.get(axis.rem_euclid(s.len().max(1) as isize) as usize).copied().unwrap_or(1);
            let size = if a.bad() { 0 } else { 1 + a.below(d.max(1)) };
            Op::Split { x, size, axis, pick: a.below(6) }
        }
        K::IndexSelect => {
            let x = a.pick(env, |i| i.nd() >= 1);
            let s = &env[x].shape;
            let axis = a.axis(s.len());
            let d = s.get(axis.rem_euclid(s.len().max(1) as isize) as usize).copied().unwrap_or(1);
            let n = if d == 0 { 0 } else { a.below(5) };
            let values = index_values(a, n, d);
            let shape = if a.bad() { vec![1, n] } else { vec![n] };
            Op::IndexSelect { x, axis, index: Ints { shape, values } }
        }
        K::Gather | K::ScatterAdd => {
            let scatter = kind(raw.kind) == K::ScatterAdd;
            let x = a.pick(env, |i| i.nd() >= 1 && (!scatter || i.float()));
            let s = env[x].shape.clone();
            let axis = a.axis(s.len());
            let ax = axis.rem_euclid(s.len().max(1) as isize) as usize;
            let src = scatter.then(|| a.pick(env, |i| i.float() && i.nd() == s.len()));
            let src_shape = src.map(|i| env[i].shape.clone());
            let mut shape: Vec<usize> = (0..s.len())
                .map(|k| {
                    let cap = match &src_shape {
                        Some(ss) if ss.len() == s.len() => {
                            if k == ax {
                                ss[k]
                            } else {
                                ss[k].min(s[k])
                            }
                        }
                        _ if k == ax => 4,
                        _ => s[k],
                    };
                    if a.chance(50) {
                        cap
                    } else {
                        a.below(cap + 1)
                    }
                })
                .collect();
            if s.get(ax) == Some(&0) {
                shape[ax] = 0;
            }
            if a.bad() {
                shape.push(1);
            }
            let n = shape.iter().product();
            let values = index_values(a, n, s.get(ax).copied().unwrap_or(1));
            let index = Ints { shape, values };
            match src {
                Some(src) => Op::ScatterAdd { x, axis, index, src },
                None => Op::Gather { x, axis, index },
            }
        }
        K::InPlace => {
            let x =
                if a.chance(80) { a.pick(env, |i| i.float() && !i.leaf_rg && !i.view) } else { a.pick(env, |_| true) };
            let s = env[x].shape.clone();
            let f = a.pick_of(&[
                Ip::Add,
                Ip::Mul,
                Ip::Sub,
                Ip::Div,
                Ip::Copy,
                Ip::AddScalar(0.5),
                Ip::MulScalar(-1.5),
                Ip::Fill(0.25),
                Ip::Zero,
            ]);
            let o = matches!(f, Ip::Add | Ip::Sub | Ip::Mul | Ip::Div | Ip::Copy)
                .then(|| a.pick(env, |i| i.float() && broadcast(&s, &i.shape).as_deref() == Some(&s[..])));
            Op::InPlace { x, o, f }
        }
        K::ToDType => {
            let x = a.pick(env, |_| true);
            let to = a.pick_of(&[To::Float, To::I32, To::Bool, To::Float]);
            // Values past i32's range saturate, but whether one lies past it
            // can differ between the f64 truth and the f32 runs (2^31 - 50
            // rounds to 2^31 in f32), so such casts are not drawn. NaN casts
            // are (0 for i32, true for bool, on every backend).
            let to = match to {
                To::I32 if env[x].huge => To::Float,
                to => to,
            };
            Op::ToDType { x, to }
        }
        K::Detach => Op::Detach { x: a.pick(env, |_| true) },
        K::RoundTrip => Op::RoundTrip { x: a.pick(env, |_| true) },
        K::CrossEntropy => {
            let x = a.pick(env, |i| i.float() && i.nd() == 2);
            let s = &env[x].shape;
            let (n, c) = match s.as_slice() {
                [n, c] => (*n, *c),
                _ => (2, 3),
            };
            let values = index_values(a, n, c.max(1));
            Op::CrossEntropy {
                x,
                labels: Ints { shape: vec![n], values },
                reduction: a.pick_of(REDUCTIONS),
                smoothing: a.pick_of(&[0.0, 0.1]),
            }
        }
    }
}
