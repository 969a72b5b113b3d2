//! Checking a program that did not come from a capture (read from a file):
//! a replay trusts its instructions as the dispatch layer checked them, so
//! a program from elsewhere must first be shown to be one a capture could
//! have made. Every slot is made once before it is read, every view lies
//! inside its buffer, every kernel gets the arity, dtypes and shapes its
//! spec needs, every index operand is range-checked before a kernel reads
//! it, and no result is too large. A failure is an error naming the
//! instruction, never a panic in a kernel.

use super::{Arg, Instr, Program, Source, ValueId};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{KernelSpec, PoolWindows, Window2d};
use crate::shape::{broadcast_shapes, check_size, Layout};

const OP: &str = "load program";

fn bad(at: usize, what: impl std::fmt::Display) -> Error {
    Error::value(OP, format!("instruction {at}: {what}"))
}

fn pool_ok(p: &PoolWindows) -> bool {
    let w = Window2d {
        n: 1,
        c: 1,
        h: p.h,
        w: p.w,
        kernel: p.kernel,
        stride: p.stride,
        padding: p.padding,
        dilation: [1, 1],
        out_h: p.out_h,
        out_w: p.out_w,
    };
    w.is_consistent()
}

impl Program {
    /// Checks that replaying the program cannot fail inside a kernel (see the module docs).
    pub fn validate(&self) -> Result<()> {
        let n = self.values.len();
        let mut made = vec![false; n];
        let mut inputs = Vec::new();
        for (id, v) in self.values.iter().enumerate() {
            check_size(OP, &[v.len])?;
            match &v.source {
                Source::Input(k) => {
                    made[id] = true;
                    inputs.push(*k);
                }
                Source::Captured(s) => {
                    made[id] = true;
                    let g = s.read();
                    if g.len() != v.len || g.dtype() != v.dtype {
                        return Err(Error::value(OP, format!("%{id}: the captured buffer does not match its slot")));
                    }
                }
                // Each result must fit its device before anything runs.
                Source::Computed => crate::backend::room(OP, &v.device, v.len, v.dtype)?,
            }
        }
        inputs.sort_unstable();
        if inputs.iter().enumerate().any(|(i, &k)| i != k) {
            return Err(Error::value(OP, format!("the input slots are numbered {inputs:?}, not 0..{}", inputs.len())));
        }
        // Index views checked so far (slot, view), cleared when the slot is written.
        let mut checked: Vec<(ValueId, Layout, usize)> = Vec::new();
        for (at, instr) in self.instrs.iter().enumerate() {
            if let Some(spec) = instr.spec() {
                let scalars = spec.scalars().len();
                if let Some(b) = instr.binds().iter().find(|b| b.at >= scalars) {
                    return Err(bad(at, format!("binds scalar {} of a kernel with {scalars}", b.at)));
                }
            }
            match instr {
                Instr::Run { spec, inputs, out, shape, .. } => {
                    if inputs.len() != spec.arity() {
                        return Err(bad(
                            at,
                            format!("{} takes {} inputs, got {}", spec.name(), spec.arity(), inputs.len()),
                        ));
                    }
                    let ins = inputs.iter().map(|a| self.read(at, a, &made)).collect::<Result<Vec<_>>>()?;
                    for a in inputs.iter().filter(|_| needs_check(spec)).skip(1).take(1) {
                        if !checked.iter().any(|(v, l, _)| self.same_elements(*v, l, a)) {
                            return Err(bad(
                                at,
                                format!("{} reads index %{} without a range check", spec.name(), a.value),
                            ));
                        }
                    }
                    let dtype = run_type(at, spec, &ins, shape)?;
                    self.made(at, *out, dtype, shape, &mut made)?;
                    // Argmax's values lie in their axis by construction, as
                    // a check would have found (captures record none for them).
                    if let Some(bound) = bound_by_kernel(spec, inputs) {
                        checked.push((*out, Layout::contiguous(shape), bound));
                    }
                }
                Instr::Create { spec, out, shape, .. } => {
                    let dtype = match spec {
                        KernelSpec::Fill { dtype, .. } => *dtype,
                        KernelSpec::Sequence { seq, dtype } if seq.fits(shape) => *dtype,
                        KernelSpec::Random { dist, dtype, .. } if dist.produces(*dtype) => *dtype,
                        other => return Err(bad(at, format!("{} makes no new buffer from nothing", other.name()))),
                    };
                    self.made(at, *out, dtype, shape, &mut made)?;
                }
                Instr::Into { spec, inputs, targets, .. } => {
                    let ins = inputs.iter().map(|a| self.read(at, a, &made)).collect::<Result<Vec<_>>>()?;
                    let outs = targets.iter().map(|a| self.read(at, a, &made)).collect::<Result<Vec<_>>>()?;
                    into_types(at, spec, &ins, &outs)?;
                    checked.retain(|(v, _, _)| !targets.iter().any(|t| t.value == *v));
                }
                Instr::Check { spec, index } => {
                    let KernelSpec::IndexCheck(c) = spec else {
                        return Err(bad(at, format!("{} is no range check", spec.name())));
                    };
                    let (dtype, _) = self.read(at, index, &made)?;
                    if dtype != DType::I32 {
                        return Err(bad(at, "a range check reads an i32 index"));
                    }
                    checked.push((index.value, index.layout.clone(), c.dim));
                }
                Instr::Host { .. } => {}
            }
            // An index kernel's positions must be below the checked bound: the
            // data operand's extent along its axis.
            if let Instr::Run { spec, inputs, .. } = instr {
                if let Some(axis) = index_axis(spec) {
                    let (data, index) = (&inputs[0], &inputs[1]);
                    let dim = data.layout.shape.get(axis).copied();
                    let bound = checked.iter().find(|(v, l, _)| self.same_elements(*v, l, index)).map(|c| c.2);
                    if dim.is_none() || bound.is_none_or(|b| Some(b) > dim) {
                        return Err(bad(
                            at,
                            format!("{} indexes axis {axis} with a check for another bound", spec.name()),
                        ));
                    }
                }
            }
        }
        for a in &self.outputs {
            self.read(self.instrs.len(), a, &made)?;
        }
        Ok(())
    }

    /// Whether a check of view `l` of slot `v` checked the elements `a` reads:
    /// the same view, or both every element of the buffer.
    fn same_elements(&self, v: ValueId, l: &Layout, a: &Arg) -> bool {
        let len = self.values[v].len;
        let whole = |l: &Layout| l.offset == 0 && l.is_contiguous() && l.numel() == len;
        v == a.value && (*l == a.layout || (whole(l) && whole(&a.layout)))
    }

    /// The dtype and shape instruction `at` reads through `a`, once it is
    /// sure the slot exists, is made and holds the view.
    fn read<'a>(&self, at: usize, a: &'a Arg, made: &[bool]) -> Result<(DType, &'a [usize])> {
        let v = self.values.get(a.value).ok_or_else(|| bad(at, format!("%{} does not exist", a.value)))?;
        if !made[a.value] {
            return Err(bad(at, format!("%{} is read before it is made", a.value)));
        }
        if !a.layout.fits_in(v.len) {
            return Err(bad(at, format!("a view of %{} lies outside its {} elements", a.value, v.len)));
        }
        Ok((v.dtype, &a.layout.shape))
    }

    /// Marks `out` made by instruction `at` with `dtype` and `shape`.
    fn made(&self, at: usize, out: ValueId, dtype: DType, shape: &[usize], made: &mut [bool]) -> Result<()> {
        let v = self.values.get(out).ok_or_else(|| bad(at, format!("%{out} does not exist")))?;
        if !matches!(v.source, Source::Computed) || made[out] {
            return Err(bad(at, format!("%{out} is made twice (or is an input or captured)")));
        }
        check_size(OP, shape)?;
        if v.dtype != dtype || v.len != shape.iter().product::<usize>() {
            return Err(bad(
                at,
                format!("%{out} is {} of {} elements, the kernel makes {dtype} {shape:?}", v.dtype, v.len),
            ));
        }
        made[out] = true;
        Ok(())
    }
}

fn needs_check(spec: &KernelSpec) -> bool {
    index_axis(spec).is_some()
}

/// The bound an index kernel's own values keep (`dispatch::index`).
fn bound_by_kernel(spec: &KernelSpec, inputs: &[Arg]) -> Option<usize> {
    match spec {
        KernelSpec::ArgReduce { axis, .. } | KernelSpec::Argsort { axis, .. } => {
            inputs.first()?.layout.shape.get(*axis).copied()
        }
        KernelSpec::WindowArgmax(g) => g.h.checked_mul(g.w),
        _ => None,
    }
}

/// The axis an index kernel's positions run along (its input 1 is the index).
fn index_axis(spec: &KernelSpec) -> Option<usize> {
    match spec {
        KernelSpec::IndexSelect { axis }
        | KernelSpec::Gather { axis }
        | KernelSpec::IndexAdd { axis }
        | KernelSpec::ScatterAdd { axis, .. } => Some(*axis),
        _ => None,
    }
}

fn float(at: usize, spec: &KernelSpec, d: DType) -> Result<()> {
    if d.is_float() {
        Ok(())
    } else {
        Err(bad(at, format!("{} runs on floats, got {d}", spec.name())))
    }
}

fn same(at: usize, spec: &KernelSpec, a: &[usize], b: &[usize]) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(bad(at, format!("{} needs shape {a:?}, got {b:?}", spec.name())))
    }
}

/// The dtype a `Run` of `spec` makes from `ins` (dtype, shape) into `shape`, or why it cannot.
fn run_type(at: usize, spec: &KernelSpec, ins: &[(DType, &[usize])], shape: &[usize]) -> Result<DType> {
    let numel = |s: &[usize]| s.iter().product::<usize>();
    let broadcast = |shapes: &[&[usize]]| -> Result<()> {
        let mut all: Vec<usize> = Vec::new();
        for s in shapes {
            all = broadcast_shapes(OP, &all, s)?.to_vec();
        }
        same(at, spec, &all, shape)
    };
    Ok(match spec {
        KernelSpec::Unary { .. } => {
            float(at, spec, ins[0].0)?;
            same(at, spec, ins[0].1, shape)?;
            ins[0].0
        }
        KernelSpec::Binary { .. } | KernelSpec::Compare { .. } => {
            if ins[0].0 != ins[1].0 {
                return Err(bad(at, format!("{} needs one dtype, got {} and {}", spec.name(), ins[0].0, ins[1].0)));
            }
            broadcast(&[ins[0].1, ins[1].1])?;
            if matches!(spec, KernelSpec::Binary { .. }) {
                float(at, spec, ins[0].0)?;
                ins[0].0
            } else {
                DType::Bool
            }
        }
        KernelSpec::Where => {
            if ins[0].0 != DType::Bool || ins[1].0 != ins[2].0 {
                return Err(bad(at, "where needs a bool condition and two operands of one dtype"));
            }
            broadcast(&[ins[0].1, ins[1].1, ins[2].1])?;
            ins[1].0
        }
        KernelSpec::Cast { to } => {
            same(at, spec, ins[0].1, shape)?;
            *to
        }
        KernelSpec::Copy => {
            same(at, spec, ins[0].1, shape)?;
            ins[0].0
        }
        KernelSpec::Reduce { axes, .. } => {
            float(at, spec, ins[0].0)?;
            let x = ins[0].1;
            if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= x.len()) {
                return Err(bad(at, format!("reduce axes {axes:?} for shape {x:?}")));
            }
            let kept: usize = x.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, d)| d).product();
            if kept != numel(shape) {
                return Err(bad(at, format!("reducing {x:?} over {axes:?} cannot give {shape:?}")));
            }
            ins[0].0
        }
        KernelSpec::ArgReduce { axis, .. } => {
            let x = ins[0].1;
            if *axis >= x.len() || x[*axis] == 0 || numel(x) / x[*axis] != numel(shape) {
                return Err(bad(at, format!("arg reduce along {axis} of {x:?} into {shape:?}")));
            }
            DType::I32
        }
        KernelSpec::Scan { axis, .. } | KernelSpec::Argsort { axis, .. } => {
            float(at, spec, ins[0].0)?;
            if *axis >= ins[0].1.len() {
                return Err(bad(at, format!("{} along {axis} of {:?}", spec.name(), ins[0].1)));
            }
            same(at, spec, ins[0].1, shape)?;
            if matches!(spec, KernelSpec::Scan { .. }) {
                ins[0].0
            } else {
                DType::I32
            }
        }
        KernelSpec::Matmul { batch } => {
            let (a, b) = (ins[0].1, ins[1].1);
            let r = a.len();
            if ins[0].0 != ins[1].0 || r < 2 || b.len() != r || a[r - 1] != b[r - 2] {
                return Err(bad(at, format!("matmul of {a:?} and {b:?}")));
            }
            let mut want: Vec<usize> = broadcast_shapes(OP, &a[..r - 2], &b[..r - 2])?.to_vec();
            if want != batch.as_slice() {
                return Err(bad(at, format!("matmul batch {batch:?} for {a:?} and {b:?}")));
            }
            want.extend([a[r - 2], b[r - 1]]);
            same(at, spec, &want, shape)?;
            float(at, spec, ins[0].0)?;
            ins[0].0
        }
        KernelSpec::Unfold(w) | KernelSpec::Fold(w) | KernelSpec::WindowArgmax(w) => {
            if !w.is_consistent() {
                return Err(bad(at, format!("{}: inconsistent window geometry", spec.name())));
            }
            let image = [w.n, w.c, w.h, w.w];
            let cols = [w.n, w.col_rows(), w.windows()];
            let (from, to, dtype): (&[usize], Vec<usize>, DType) = match spec {
                KernelSpec::Unfold(_) => (&image, cols.to_vec(), ins[0].0),
                KernelSpec::Fold(_) => (&cols, image.to_vec(), ins[0].0),
                _ => (&image, vec![w.n, w.c, w.out_h, w.out_w], DType::I32),
            };
            float(at, spec, ins[0].0)?;
            same(at, spec, from, ins[0].1)?;
            same(at, spec, &to, shape)?;
            dtype
        }
        KernelSpec::ConvGemm(w) => {
            if !w.is_consistent() {
                return Err(bad(at, format!("{}: inconsistent window geometry", spec.name())));
            }
            let (weight, image) = (ins[0].1, ins[1].1);
            if ins[0].0 != ins[1].0 || weight.len() != 2 || weight[1] != w.col_rows() {
                return Err(bad(at, format!("conv_gemm of weight {weight:?} and image {image:?}")));
            }
            same(at, spec, &[w.n, w.c, w.h, w.w], image)?;
            same(at, spec, &[w.n, weight[0], w.windows()], shape)?;
            float(at, spec, ins[0].0)?;
            ins[0].0
        }
        KernelSpec::ConvWeightGemm(w) => {
            if !w.is_consistent() {
                return Err(bad(at, format!("{}: inconsistent window geometry", spec.name())));
            }
            let (gy, image) = (ins[0].1, ins[1].1);
            if ins[0].0 != ins[1].0 || gy.len() != 3 || gy[0] != w.n || gy[2] != w.windows() {
                return Err(bad(at, format!("conv_weight_gemm of gradient {gy:?} and image {image:?}")));
            }
            same(at, spec, &[w.n, w.c, w.h, w.w], image)?;
            same(at, spec, &[w.n, gy[1], w.col_rows()], shape)?;
            float(at, spec, ins[0].0)?;
            ins[0].0
        }
        KernelSpec::IndexSelect { axis } => {
            let (x, index) = (ins[0].1, ins[1].1);
            if ins[1].0 != DType::I32 || index.len() != 1 || *axis >= x.len() {
                return Err(bad(at, "index_select needs a 1-D i32 index and an axis of the data"));
            }
            let mut want = x.to_vec();
            want[*axis] = index[0];
            same(at, spec, &want, shape)?;
            ins[0].0
        }
        KernelSpec::Gather { axis } => {
            let (x, index) = (ins[0].1, ins[1].1);
            let fits =
                index.len() == x.len() && index.iter().zip(x).enumerate().all(|(i, (a, b))| i == *axis || a <= b);
            if ins[1].0 != DType::I32 || *axis >= x.len() || !fits {
                return Err(bad(at, format!("gather of {x:?} along {axis} by {index:?}")));
            }
            same(at, spec, index, shape)?;
            ins[0].0
        }
        KernelSpec::IndexAdd { axis } => {
            let (base, index, src) = (ins[0].1, ins[1].1, ins[2].1);
            if ins[1].0 != DType::I32 || index.len() != 1 || *axis >= base.len() || ins[0].0 != ins[2].0 {
                return Err(bad(at, "index_add needs a 1-D i32 index, an axis of the base and one dtype"));
            }
            let mut want = base.to_vec();
            want[*axis] = index[0];
            same(at, spec, &want, src)?;
            same(at, spec, base, shape)?;
            ins[0].0
        }
        KernelSpec::ScatterAdd { axis, windows } => {
            let (base, index, src) = (ins[0].1, ins[1].1, ins[2].1);
            let fits =
                index.len() == base.len() && index.iter().zip(base).enumerate().all(|(i, (a, b))| i == *axis || a <= b);
            if ins[1].0 != DType::I32 || *axis >= base.len() || !fits || ins[0].0 != ins[2].0 {
                return Err(bad(at, format!("scatter_add into {base:?} along {axis} by {index:?}")));
            }
            if windows.as_ref().is_some_and(|w| !pool_ok(w)) {
                return Err(bad(at, "scatter_add: inconsistent pool windows"));
            }
            same(at, spec, index, src)?;
            same(at, spec, base, shape)?;
            ins[0].0
        }
        KernelSpec::Fused(f) => {
            let dtypes: Vec<DType> = ins.iter().map(|i| i.0).collect();
            f.check(&dtypes).map_err(|m| bad(at, format!("{}: {m}", spec.name())))?;
            for (_, s) in ins {
                broadcast(&[s, shape])?;
            }
            f.dtype().ok_or_else(|| bad(at, "a fused kernel without steps"))?
        }
        KernelSpec::Epilogue(e) => {
            let n = e.head.arity();
            if ins.len() != e.arity() || !matches!(e.head, KernelSpec::Matmul { .. } | KernelSpec::Reduce { .. }) {
                return Err(bad(at, format!("{}: not a matmul or reduction with its tail's inputs", spec.name())));
            }
            let head = run_type(at, &e.head, &ins[..n], shape)?;
            let extras: Vec<DType> = ins[n..].iter().map(|i| i.0).collect();
            e.check(head, &extras).map_err(|m| bad(at, format!("{}: {m}", spec.name())))?;
            for (_, s) in &ins[n..] {
                broadcast(&[s, shape])?;
            }
            head
        }
        KernelSpec::Custom { kernel, scalars } => {
            let dtypes: Vec<DType> = ins.iter().map(|i| i.0).collect();
            let shapes: Vec<&[usize]> = ins.iter().map(|i| i.1).collect();
            let (dtype, out) = kernel.output(&dtypes, &shapes, scalars.len()).map_err(|e| bad(at, e.to_string()))?;
            same(at, spec, &out, shape)?;
            dtype
        }
        other => return Err(bad(at, format!("{} is not a kernel that makes a buffer from inputs", other.name()))),
    })
}

/// Whether an `Into` of `spec` can write `outs` from `ins`.
fn into_types(at: usize, spec: &KernelSpec, ins: &[(DType, &[usize])], outs: &[(DType, &[usize])]) -> Result<()> {
    match spec {
        KernelSpec::CopyInto if ins.len() == 1 && outs.len() == 1 => {
            if ins[0].0 != outs[0].0 {
                return Err(bad(at, "copy_ between dtypes"));
            }
            same(at, spec, outs[0].1, ins[0].1)
        }
        KernelSpec::Adam { .. } if ins.len() == 1 && outs.len() == 3 => {
            float(at, spec, ins[0].0)?;
            for o in outs {
                if o.0 != ins[0].0 {
                    return Err(bad(at, "adam needs one dtype"));
                }
                same(at, spec, ins[0].1, o.1)?;
            }
            Ok(())
        }
        other => Err(bad(at, format!("{} does not write in place with {} inputs", other.name(), ins.len()))),
    }
}
