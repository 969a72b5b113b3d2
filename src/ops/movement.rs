//! Movement ops. Views (reshape where strides allow, permute, expand,
//! squeeze/unsqueeze; slicing is in `slice.rs`) share storage and only change
//! the layout. Each backward is the adjoint movement, so all of them are
//! differentiable to any order.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{Attrs, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::autograd::{needs_record, record};
use crate::dispatch::elementwise as be_copy;
use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, normalize_axis, normalize_real_axis, numel, Dims, Layout};
use crate::tensor::Tensor;

pub(super) fn one(g: Result<Tensor>) -> Result<Vec<Option<Tensor>>> {
    Ok(vec![Some(g?)])
}

/// Makes `layout` a view of `x`, recording `def` when needed.
pub(super) fn view_op(def: &'static OpDef, x: &Tensor, layout: Layout, attrs: Attrs) -> Result<Tensor> {
    let out = x.alias_with_layout(layout);
    if !needs_record(&[x]) {
        return Ok(out);
    }
    let out = record(def, attrs, &[x], &[], false, out)?;
    out.meta().is_grad_view = true;
    Ok(out)
}

static RESHAPE: OpDef = OpDef {
    name: "reshape",
    signature: "reshape(self, shape: int | int[]) -> Tensor",
    doc: "The same elements in `shape` (one entry may be -1); a view where strides allow.",
    forward: Some(Forward::One(|a| a.this()?.reshape(&a.ints("shape")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| one(g[0].reshape_dims(c.input_shape(0)))),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("reshape", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| x[0].reshape(&[4, -1]))
                .reference(|h| r::reshape(&h[0], &[4, -1])),
            Case::new("reshape of a transposed view", vec![Input::Uniform(vec![3, 4], -1.0, 1.0)], |x| {
                x[0].transpose(0, 1)?.reshape(&[2, 6])
            })
            .reference(|h| r::reshape(&r::transpose(&h[0], 0, 1), &[2, 6])),
            Case::new("reshape i32", vec![Input::Int(vec![2, 3, 4], -9, 9)], |x| x[0].reshape(&[-1, 6]))
                .reference(|h| r::reshape(&h[0], &[-1, 6])),
            Case::new("reshape an empty tensor", vec![Input::Uniform(vec![2, 0, 3], -1.0, 1.0)], |x| {
                x[0].reshape(&[0, 6])
            })
            .reference(|h| r::reshape(&h[0], &[0, 6])),
            Case::new("reshape a 0-d tensor", vec![Input::Uniform(vec![], -1.0, 1.0)], |x| x[0].reshape(&[1, -1, 1]))
                .reference(|h| r::reshape(&h[0], &[1, 1, 1])),
        ]
    },
};

static PERMUTE: OpDef = OpDef {
    name: "permute",
    signature: "permute(self, dims: int[]) -> Tensor",
    doc: "Reorders the axes, each listed once (a view).",
    forward: Some(Forward::One(|a| a.this()?.permute(&a.ints("dims")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| {
        let Attrs::Perm(p) = c.attrs() else { unreachable!() };
        let mut inv = vec![0isize; p.len()];
        for (i, &d) in p.iter().enumerate() {
            inv[d] = i as isize;
        }
        one(g[0].permute(&inv))
    }),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("permute", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| {
                x[0].permute(&[2, 0, 1])?.mul_scalar(1.0)
            })
            .also(Sample::Empty, &[&[2, 0, 4]])
            .reference(|h| r::permute(&h[0], &[2, 0, 1])),
            Case::new("transpose", vec![Input::Uniform(vec![3, 4], -1.0, 1.0)], |x| x[0].transpose(0, 1))
                .reference(|h| r::transpose(&h[0], 0, 1)),
            Case::new("permute a mask", vec![Input::Mask(vec![2, 3, 4])], |x| x[0].permute(&[1, 2, 0])?.contiguous())
                .reference(|h| r::permute(&h[0], &[1, 2, 0])),
        ]
    },
};

static EXPAND: OpDef = OpDef {
    name: "expand",
    signature: "expand(self, shape: int | int[]) -> Tensor",
    doc: "Broadcasts size-1 (or new leading) dims to `shape`; -1 keeps a size (a view).",
    forward: Some(Forward::One(|a| a.this()?.expand(&a.ints("shape")?))),
    kind: OpKind::Primitive,
    backward: Some(|c, g| one(g[0].sum_to(c.input_shape(0)))),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("expand", vec![Input::Uniform(vec![3, 1], -1.0, 1.0)], |x| x[0].expand(&[2, 3, 4]))
                .reference(|h| r::expand(&h[0], &[2, 3, 4])),
            Case::new("broadcast_to", vec![Input::Uniform(vec![4], -1.0, 1.0)], |x| x[0].broadcast_to(&[3, 4]))
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::expand(&h[0], &[3, 4])),
            Case::new("expand i32", vec![Input::Int(vec![1, 4], -9, 9)], |x| x[0].expand(&[3, -1])?.contiguous())
                .reference(|h| r::expand(&h[0], &[3, 4])),
            Case::new("expand to an empty axis", vec![Input::Uniform(vec![1, 4], -1.0, 1.0)], |x| x[0].expand(&[0, 4]))
                .reference(|h| r::expand(&h[0], &[0, 4])),
        ]
    },
};

static CONTIGUOUS: OpDef = OpDef {
    name: "contiguous",
    signature: "contiguous(self) -> Tensor",
    doc: "The same values laid out row-major (a copy only when needed).",
    forward: Some(Forward::One(|a| a.this()?.contiguous())),
    kind: OpKind::Primitive,
    backward: Some(|_, g| one(Ok(g[0].clone()))),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![Case::new("contiguous of a permuted view", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| {
            x[0].permute(&[1, 2, 0])?.contiguous()
        })
        .also(Sample::Empty, &[&[0, 3, 4]])
        .reference(|h| r::permute(&h[0], &[1, 2, 0]))]
    },
};

static SQUEEZE: OpDef = OpDef {
    name: "squeeze_unsqueeze_flatten",
    signature: "flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor",
    doc: "Merges axes start_dim..=end_dim; `squeeze` and `unsqueeze` are the same view op.",
    forward: Some(Forward::One(|a| a.this()?.flatten(a.int("start_dim")?, a.int("end_dim")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        vec![
            Case::new("squeeze", vec![Input::Uniform(vec![2, 1, 3], -1.0, 1.0)], |x| x[0].squeeze(Some(1)))
                .reference(|h| r::squeeze(&h[0], Some(1))),
            Case::new("squeeze all", vec![Input::Uniform(vec![1, 3, 1], -1.0, 1.0)], |x| x[0].squeeze(None))
                .reference(|h| r::squeeze(&h[0], None)),
            Case::new("unsqueeze", vec![Input::Uniform(vec![2, 3], -1.0, 1.0)], |x| x[0].unsqueeze(-1))
                .also(Sample::Scalar, &[&[]])
                .reference(|h| r::unsqueeze(&h[0], -1)),
            Case::new("flatten", vec![Input::Uniform(vec![2, 3, 4], -1.0, 1.0)], |x| x[0].flatten(1, -1))
                .also(Sample::Empty, &[&[2, 0, 4]])
                .reference(|h| r::flatten(&h[0], 1, -1)),
        ]
    },
};

/// Moving between devices: the gradient moves back.
static TO_DEVICE: OpDef = OpDef {
    name: "to_device",
    signature: "to(self, device: Device) -> Tensor",
    doc: "A copy on `device` (the same tensor when already there); recorded by autodiff.",
    forward: Some(Forward::One(|a| {
        let (x, device) = (a.this()?, a.device("device")?);
        // In the browser a readback cannot block: leaving the GPU must await it.
        if cfg!(target_arch = "wasm32") && x.device().is_gpu() && x.device() != *device {
            return Err(Error::value(
                "to",
                format!(
                    "moving a tensor of shape {:?} off the GPU reads it back, which cannot block in the browser: use await t.toAsync('{}')",
                    x.shape(),
                    if device.is_gpu() { "webgpu" } else { "cpu" }
                ),
            ));
        }
        x.to(device)
    })),
    kind: OpKind::Primitive,
    backward: Some(|c, g| one(g[0].to(c.input_device(0)))),
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        // On the cpu alone this is the identity; the cpu-vs-gpu parity tests
        // move every case's inputs and gradients across devices for real.
        vec![Case::new("to the same device", vec![Input::Uniform(vec![2, 3], -1.0, 1.0)], |x| {
            x[0].to(&x[0].device())?.mul_scalar(2.0)
        })
        .also(Sample::Empty, &[&[0, 3]])
        .also(Sample::Scalar, &[&[]])
        .reference(|h| r::map(&h[0], |v| 2.0 * v))]
    },
};

/// Copies `x` to `device` (recorded, so gradients flow back to `x`'s device).
pub(crate) fn to_device(x: &Tensor, device: &crate::device::Device) -> Result<Tensor> {
    let out = crate::dispatch::transfer(x, device)?;
    if !needs_record(&[x]) {
        return Ok(out);
    }
    record(&TO_DEVICE, Attrs::None, &[x], &[], false, out)
}

/// `to_device` for a source whose elements were already read into `host`
/// (asynchronously, from a GPU): the same recorded op, without blocking.
pub(crate) fn to_device_read(
    x: &Tensor,
    host: crate::backend::CpuBuffer,
    device: &crate::device::Device,
) -> Result<Tensor> {
    let cpu = Tensor::from_buffer(crate::backend::Buffer::from(host), x.shape());
    let out = if device.is_gpu() { crate::dispatch::transfer(&cpu, device)? } else { cpu };
    if !needs_record(&[x]) {
        return Ok(out);
    }
    record(&TO_DEVICE, Attrs::None, &[x], &[], false, out)
}

pub fn ops() -> Vec<&'static OpDef> {
    let mut v = vec![&TO_DEVICE, &RESHAPE, &PERMUTE, &EXPAND];
    v.extend(super::slice::ops());
    v.extend([&CONTIGUOUS, &SQUEEZE]);
    v
}

/// Resolves one -1 in a requested shape.
fn infer_shape(op: &'static str, from: &[usize], to: &[isize]) -> Result<Dims> {
    let n = numel(from);
    let bad = || Error::shape(op, format!("cannot reshape tensor of shape {from:?} ({n} elements) to {to:?}"));
    let holes = to.iter().filter(|&&d| d == -1).count();
    if holes > 1 || to.iter().any(|&d| d < -1) {
        return Err(bad());
    }
    // Checked: a requested shape whose count overflows must not wrap onto `n`.
    let known = to.iter().filter(|&&d| d >= 0).try_fold(1usize, |a, &d| a.checked_mul(d as usize)).ok_or_else(bad)?;
    let out: Dims = to.iter().map(|&d| if d == -1 { n.checked_div(known).unwrap_or(0) } else { d as usize }).collect();
    if crate::shape::check_size(op, &out).ok() != Some(n) {
        return Err(bad());
    }
    Ok(out)
}

impl Tensor {
    /// A tensor with the same elements in `shape` (one entry may be -1).
    /// A view when strides can express it (always for contiguous data, and
    /// for inserting or removing size-1 axes), else a copy.
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        let dims = infer_shape("reshape", self.shape(), shape)?;
        self.reshape_dims(&dims)
    }
    /// `reshape` with explicit sizes.
    pub fn reshape_dims(&self, shape: &[usize]) -> Result<Tensor> {
        if crate::shape::check_size("reshape", shape).ok() != Some(self.numel()) {
            return Err(Error::shape(
                "reshape",
                format!("cannot reshape tensor of shape {:?} ({} elements) to {:?}", self.shape(), self.numel(), shape),
            ));
        }
        if self.shape() == shape {
            return Ok(self.clone());
        }
        // A view whenever strides can express the new shape (transposed or
        // sliced data often can: squeeze/unsqueeze always), else a copy.
        if let Some(layout) = self.layout().reshaped(shape) {
            return view_op(&RESHAPE, self, layout, Attrs::Shape(shape.into()));
        }
        let src = self.contiguous()?;
        let layout = Layout { shape: shape.into(), strides: contiguous_strides(shape), offset: src.layout().offset };
        view_op(&RESHAPE, &src, layout, Attrs::Shape(shape.into()))
    }
    /// PyTorch's `view`: `reshape` that never copies. A layout strides
    /// cannot express (a transposed tensor flattened, say) is an error, as in
    /// PyTorch: a silent copy would let an in-place write through the "view"
    /// miss the tensor it was taken from.
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        let dims = infer_shape("view", self.shape(), shape)?;
        if self.shape() != dims.as_slice() && self.layout().reshaped(&dims).is_none() {
            return Err(Error::shape(
                "view",
                format!(
                    "a tensor of shape {:?} with strides {:?} cannot be viewed as {dims:?} without a copy; use reshape()",
                    self.shape(),
                    self.layout().strides
                ),
            ));
        }
        self.reshape_dims(&dims).map_err(|e| e.renamed("view"))
    }
    /// Reorders the axes (a view).
    pub fn permute(&self, perm: &[isize]) -> Result<Tensor> {
        let nd = self.ndim();
        if perm.len() != nd {
            return Err(Error::shape(
                "permute",
                format!("permutation {perm:?} does not match rank {nd} (shape {:?})", self.shape()),
            ));
        }
        let mut p = Dims::new();
        for &a in perm {
            let a = normalize_axis("permute", a, self.shape())?;
            if p.contains(&a) {
                return Err(Error::value(
                    "permute",
                    format!("{perm:?} is not a permutation of the axes of shape {:?}", self.shape()),
                ));
            }
            p.push(a);
        }
        let l = self.layout();
        let layout = Layout {
            shape: p.iter().map(|&d| l.shape[d]).collect(),
            strides: p.iter().map(|&d| l.strides[d]).collect(),
            offset: l.offset,
        };
        view_op(&PERMUTE, self, layout, Attrs::Perm(p))
    }
    /// Swaps two axes (a view).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        let a = normalize_real_axis("transpose", a, self.shape())?;
        let b = normalize_real_axis("transpose", b, self.shape())?;
        let mut perm: Vec<isize> = (0..self.ndim() as isize).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }
    /// Broadcasts size-1 (or missing leading) dims to `shape`; -1 keeps a size. A view.
    pub fn expand(&self, shape: &[isize]) -> Result<Tensor> {
        let nd = shape.len();
        if nd < self.ndim() {
            return Err(Error::shape(
                "expand",
                format!("cannot expand shape {:?} to fewer dims {shape:?}", self.shape()),
            ));
        }
        let lead = nd - self.ndim();
        if let Some((i, &d)) = shape.iter().enumerate().find(|&(i, &d)| d < -1 || (d == -1 && i < lead)) {
            return Err(Error::shape(
                "expand",
                format!(
                    "size {d} at position {i} of {shape:?} is invalid for shape {:?} (-1 only keeps an existing size)",
                    self.shape()
                ),
            ));
        }
        let dims: Dims =
            shape.iter().enumerate().map(|(i, &d)| if d == -1 { self.shape()[i - lead] } else { d as usize }).collect();
        self.expand_dims(&dims)
    }
    /// `expand` with explicit sizes.
    pub fn expand_dims(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        crate::shape::check_size("expand", shape)?;
        let ok = shape.len() >= self.ndim()
            && self.shape().iter().rev().zip(shape.iter().rev()).all(|(&s, &d)| s == d || s == 1);
        if !ok {
            return Err(Error::shape("expand", format!("cannot expand shape {:?} to {:?}", self.shape(), shape)));
        }
        let layout = Layout {
            shape: shape.into(),
            strides: self.layout().broadcast_strides(shape),
            offset: self.layout().offset,
        };
        view_op(&EXPAND, self, layout, Attrs::Shape(shape.into()))
    }
    /// NumPy's `broadcast_to`.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        super::as_op("broadcast_to", || self.expand_dims(shape))
    }
    /// Removes size-1 axes (one axis, or all of them).
    pub fn squeeze(&self, axis: Option<isize>) -> Result<Tensor> {
        let shape: Dims = match axis {
            None => self.shape().iter().copied().filter(|&d| d != 1).collect(),
            Some(a) => {
                let a = normalize_axis("squeeze", a, self.shape())?;
                self.shape().iter().enumerate().filter(|&(i, &d)| !(i == a && d == 1)).map(|(_, &d)| d).collect()
            }
        };
        self.reshape_dims(&shape)
    }
    /// Inserts a size-1 axis at `axis` (which may be `ndim`, or negative).
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor> {
        let nd = self.ndim() as isize + 1;
        let a = if axis < 0 { axis + nd } else { axis };
        if a < 0 || a >= nd {
            return Err(Error::Axis { op: "unsqueeze", axis, ndim: self.ndim(), shape: self.shape().to_vec() });
        }
        let mut shape = self.dims();
        shape.insert(a as usize, 1);
        self.reshape_dims(&shape)
    }
    /// Merges axes `start..=end` into one.
    pub fn flatten(&self, start: isize, end: isize) -> Result<Tensor> {
        super::as_op("flatten", || {
            if self.ndim() == 0 {
                return self.reshape_dims(&[1]);
            }
            let s = normalize_axis("flatten", start, self.shape())?;
            let e = normalize_axis("flatten", end, self.shape())?;
            if s > e {
                return Err(Error::value(
                    "flatten",
                    format!("start axis {start} is after end axis {end} (shape {:?})", self.shape()),
                ));
            }
            let mut shape: Dims = self.shape()[..s].into();
            shape.push(self.shape()[s..=e].iter().product());
            shape.extend_from_slice(&self.shape()[e + 1..]);
            self.reshape_dims(&shape)
        })
    }
    /// The same values laid out row-major (a copy only when needed).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let out = be_copy::copy(self)?;
        if !needs_record(&[self]) {
            return Ok(out);
        }
        record(&CONTIGUOUS, Attrs::None, &[self], &[], false, out)
    }
    /// A fresh contiguous copy that never shares storage (differentiable, like PyTorch's `clone`).
    pub fn contiguous_copy(&self) -> Result<Tensor> {
        let out = be_copy::copy(self)?;
        if !needs_record(&[self]) {
            return Ok(out);
        }
        record(&CONTIGUOUS, Attrs::None, &[self], &[], false, out)
    }
}
