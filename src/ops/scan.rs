//! Running sums and products (`cumsum`, `cumprod`: one scan kernel,
//! `KernelSpec::Scan`, on both backends) and `prod`, composed from
//! `cumprod` so that its gradient is exact at zeros.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{expect_float, Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::node::BackwardCtx;
use crate::autograd::{needs_record, record};
use crate::dispatch::scan as be;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::ScanKind;
use crate::shape::{normalize_axes, normalize_axis};
use crate::tensor::Tensor;

impl Tensor {
    /// The running sum along `dim` (PyTorch's `cumsum`).
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        scan(&CUMSUM, ScanKind::Sum, self, dim, false)
    }

    /// The running product along `dim` (PyTorch's `cumprod`). Its gradient
    /// is exact where elements are 0 (no division by the input).
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        scan(&CUMPROD, ScanKind::Prod, self, dim, false)
    }

    /// The product over `axes` (all when empty), as `sum` takes them: the
    /// last element of a `cumprod` over the reduced axes moved last and
    /// flattened, so the kernel and the exact gradient are cumprod's.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let op = PROD.name;
        super::as_op(op, || {
            // Under autocast a product is an f32 op, as a sum is (`amp`).
            if let Some(wide) = crate::amp::widened(self)? {
                return wide.prod(axes, keepdim);
            }
            expect_float(op, self)?;
            let ax = if self.ndim() == 0 {
                axes.iter().try_for_each(|&a| dim_of(op, a, self.shape()).map(|_| ()))?;
                Vec::new()
            } else {
                normalize_axes(op, axes, self.shape())?.to_vec()
            };
            let kept: Vec<usize> = (0..self.ndim()).filter(|d| !ax.contains(d)).collect();
            let kept_dims: Vec<usize> = kept.iter().map(|&d| self.shape()[d]).collect();
            let out: Vec<usize> = if keepdim {
                (0..self.ndim()).map(|d| if ax.contains(&d) { 1 } else { self.shape()[d] }).collect()
            } else {
                kept_dims.clone()
            };
            let m: usize = ax.iter().map(|&a| self.shape()[a]).product();
            if m == 0 {
                // The empty product, 1, kept in the graph (an empty sum times
                // 0, plus 1) so its gradient is the (empty) zero one.
                return self.sum(axes, keepdim)?.mul_scalar(0.0)?.add_scalar(1.0);
            }
            let perm: Vec<isize> = kept.iter().chain(&ax).map(|&d| d as isize).collect();
            let rows = [kept_dims, vec![m]].concat();
            let lines = if self.ndim() == 0 { self.clone() } else { self.permute(&perm)? };
            lines.reshape_dims(&rows)?.cumprod(-1)?.narrow(-1, m - 1, 1)?.reshape_dims(&out)
        })
    }
}

/// A scan along `dim` (from the end when `reverse`, which only backward
/// rules ask for), recorded with its direction.
fn scan(def: &'static OpDef, kind: ScanKind, x: &Tensor, dim: isize, reverse: bool) -> Result<Tensor> {
    // Under autocast running sums and products are f32 ops (`amp`), as sums are.
    if let Some(wide) = crate::amp::widened(x)? {
        return scan(def, kind, &wide, dim, reverse);
    }
    expect_float(def.name, x)?;
    let axis = dim_of(def.name, dim, x.shape())?;
    if x.ndim() == 0 {
        // A 0-d tensor is its own running sum or product.
        return scan(def, kind, &x.reshape_dims(&[1])?, 0, reverse)?.reshape_dims(&[]);
    }
    let out = be::scan(def.name, x, axis, kind, reverse)?;
    if !needs_record(&[x]) {
        return Ok(out);
    }
    let saved: &[&Tensor] = if kind == ScanKind::Prod { &[x] } else { &[] };
    record(def, Attrs::Scan { axis, reverse }, &[x], saved, false, out)
}

/// `dim` normalised; a 0-d tensor takes 0 and -1, as in PyTorch (its one
/// element is its only line).
pub(super) fn dim_of(op: &'static str, dim: isize, shape: &[usize]) -> Result<usize> {
    if shape.is_empty() && dim == -1 {
        return Ok(0);
    }
    normalize_axis(op, dim, shape)
}

fn scan_attrs(c: &BackwardCtx) -> (usize, bool) {
    let Attrs::Scan { axis, reverse } = c.attrs() else { unreachable!("scan node without Scan attrs") };
    (*axis, *reverse)
}

/// The gradient of a running sum is the running sum of the gradient taken
/// the other way round.
fn cumsum_backward(c: &BackwardCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    let (axis, reverse) = scan_attrs(c);
    Ok(vec![Some(scan(&CUMSUM, ScanKind::Sum, &g[0], axis as isize, !reverse)?)])
}

/// `t` moved `k` places up `axis`, the first `k` places filled with `fill`.
fn shift_up(t: &Tensor, axis: usize, k: usize, fill: f64) -> Result<Tensor> {
    let n = t.shape()[axis];
    let mut pads = vec![(0, 0); t.ndim()];
    pads[axis] = (k, 0);
    t.narrow(axis as isize, 0, n - k)?.pad(&pads, fill)
}

/// `t` moved `k` places down `axis`, the last `k` places 0.
fn shift_down(t: &Tensor, axis: usize, k: usize) -> Result<Tensor> {
    let n = t.shape()[axis];
    let mut pads = vec![(0, 0); t.ndim()];
    pads[axis] = (0, k);
    t.narrow(axis as isize, k, n - k)?.pad(&pads, 0.0)
}

/// Note (cumprod's gradient at zeros): the usual `cumsum(g * y, reversed) /
/// x` divides by the input and is wrong (NaN) wherever an element is 0,
/// while the true gradient, a polynomial in x, is finite there. Instead the
/// scan is written again as log2(n) steps of products (Hillis-Steele: y' =
/// y * (y shifted up by 2^s, 1 in front)) and the gradient is carried back
/// through those steps: g = g' * (y shifted up) + (g' * y) shifted down.
/// Only products, shifts and sums: exact with any number of zeros, O(n log n)
/// work, and itself differentiable (so second derivatives are exact too).
///
/// f16 operands are carried through the steps in f32 and the gradient
/// rounded once, as an f16 kernel computes (`backend::half`): 2 log2(n)
/// roundings to f16 would lose the gradient of a long row.
fn cumprod_backward(c: &BackwardCtx, g: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    let (axis, reverse) = scan_attrs(c);
    let a = [axis as isize];
    let dtype = c.saved(0).dtype();
    let wide = |t: &Tensor| if dtype == DType::F16 { t.to_dtype(DType::F32) } else { Ok(t.clone()) };
    let (x, g) = (wide(c.saved(0))?, wide(&g[0])?);
    // A reversed scan is the forward scan of the reversed line.
    let (x, mut g) = if reverse { (x.flip(&a)?, g.flip(&a)?) } else { (x, g) };
    let n = x.shape()[axis];
    let mut levels = vec![x];
    let mut k = 1;
    while k < n {
        let y = levels.last().expect("one level at least");
        let next = y.mul(&shift_up(y, axis, k, 1.0)?)?;
        levels.push(next);
        k *= 2;
    }
    // Back through every step but the last (whose output is the scan itself).
    for s in (0..levels.len() - 1).rev() {
        let (y, k) = (&levels[s], 1 << s);
        g = g.mul(&shift_up(y, axis, k, 1.0)?)?.add(&shift_down(&g.mul(y)?, axis, k)?)?;
    }
    let g = if reverse { g.flip(&a)? } else { g };
    Ok(vec![Some(if dtype == DType::F16 { g.to_dtype(dtype)? } else { g })])
}

#[cfg(feature = "testing")]
fn u(shape: &[usize]) -> Input {
    Input::Uniform(shape.to_vec(), -1.0, 1.0)
}

/// Values from {-1, -0.5, 0, 0.5, 1}: zeros in most lines, often two.
#[cfg(feature = "testing")]
fn with_zeros(shape: &[usize]) -> Input {
    Input::Grid(shape.to_vec(), -1.0, 1.0, 5)
}

static CUMSUM: OpDef = OpDef {
    name: "cumsum",
    signature: "cumsum(self, dim: int) -> Tensor",
    doc: "The running sum along `dim`.",
    forward: Some(Forward::One(|a| a.this()?.cumsum(a.int("dim")?))),
    kind: OpKind::Primitive,
    backward: Some(cumsum_backward),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("cumsum axis 1", vec![u(&[2, 3, 4])], |x| x[0].cumsum(1))
                .also(Sample::Empty, &[&[2, 0, 4]])
                .reference(|h| r::cumsum(&h[0], 1)),
            Case::new("cumsum first axis by a negative dim", vec![u(&[3, 2, 2])], |x| x[0].cumsum(-3))
                .reference(|h| r::cumsum(&h[0], 0)),
            Case::new("cumsum last axis", vec![u(&[2, 5])], |x| x[0].cumsum(-1))
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::cumsum(&h[0], -1)),
            // Longer than one 256-element chunk of the GPU scan: the carry.
            Case::new("cumsum a row of 300", vec![u(&[1, 300])], |x| x[0].cumsum(1)).reference(|h| r::cumsum(&h[0], 1)),
        ]
    },
};

static CUMPROD: OpDef = OpDef {
    name: "cumprod",
    signature: "cumprod(self, dim: int) -> Tensor",
    doc: "The running product along `dim` (its gradient is exact at zeros).",
    forward: Some(Forward::One(|a| a.this()?.cumprod(a.int("dim")?))),
    kind: OpKind::Primitive,
    backward: Some(cumprod_backward),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("cumprod axis 1", vec![u(&[2, 3, 4])], |x| x[0].cumprod(1))
                .also(Sample::Empty, &[&[2, 0, 4]])
                .reference(|h| r::cumprod(&h[0], 1)),
            Case::new("cumprod last axis with zeros", vec![with_zeros(&[4, 6])], |x| x[0].cumprod(-1))
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::cumprod(&h[0], -1)),
            Case::new("cumprod first axis with zeros", vec![with_zeros(&[5, 3])], |x| x[0].cumprod(0))
                .reference(|h| r::cumprod(&h[0], 0)),
            // Longer than one 256-element chunk of the GPU scan; factors near
            // 1 keep the product in range.
            Case::new("cumprod a row of 300", vec![Input::Uniform(vec![1, 300], 0.95, 1.05)], |x| x[0].cumprod(1))
                .reference(|h| r::cumprod(&h[0], 1)),
        ]
    },
};

static PROD: OpDef = OpDef {
    name: "prod",
    signature: "prod(self, axes: int | int[] | None = None, *, keepdim: bool = False) -> Tensor",
    doc: "Product over `axes` (all when omitted); its gradient is exact at zeros.",
    forward: Some(Forward::One(|a| a.this()?.prod(&a.ints("axes")?, a.bool("keepdim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("prod axis 1", vec![u(&[2, 3, 4])], |x| x[0].prod(&[1], false))
                .also(Sample::Empty, &[&[2, 0, 4]])
                .reference(|h| r::prod(&h[0], &[1], false)),
            Case::new("prod all", vec![u(&[2, 3])], |x| x[0].prod(&[], false))
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::prod(&h[0], &[], false)),
            Case::new("prod axes 0,2 keepdim with zeros", vec![with_zeros(&[2, 3, 2])], |x| x[0].prod(&[0, -1], true))
                .reference(|h| r::prod(&h[0], &[0, 2], true)),
            Case::new("prod last axis with zeros", vec![with_zeros(&[6, 4])], |x| x[0].prod(&[-1], false))
                .reference(|h| r::prod(&h[0], &[1], false)),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&CUMSUM, &CUMPROD]
}

/// `prod`, listed with the reductions.
pub fn reductions() -> Vec<&'static OpDef> {
    vec![&PROD]
}
