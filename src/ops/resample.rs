//! Resampling of `[N, C, L]` and `[N, C, H, W]` along their spatial axes:
//! `interpolate` (PyTorch's `F.interpolate`) in modes `nearest`, `linear`
//! and `bilinear`, `align_corners` either way. The source positions and the
//! linear weights depend only on the sizes, so they are computed on the
//! host, uploaded once, and applied with `index_select`, `mul` and `add`:
//! both backends, gradients of every order and capture follow.

#[cfg(feature = "testing")]
use super::reference::{Host, Kind};
use super::{expect_float, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// How `interpolate` computes an output element from its source positions
/// (PyTorch's `mode` and `align_corners`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// The element at floor(dst * in / out) (PyTorch's `nearest`), any rank.
    Nearest,
    /// Linear along L of `[N, C, L]`.
    Linear { align_corners: bool },
    /// Linear along H and W of `[N, C, H, W]`.
    Bilinear { align_corners: bool },
}

impl Interpolation {
    /// From PyTorch's `mode` and `align_corners` (None: false for the linear
    /// modes; any value is an error for `nearest`, as in PyTorch).
    pub fn parse(op: &'static str, mode: &str, align_corners: Option<bool>) -> Result<Interpolation> {
        let corners = align_corners.unwrap_or(false);
        match mode {
            "nearest" if align_corners.is_some() => {
                Err(Error::value(op, "align_corners applies to the linear modes only, not to 'nearest'"))
            }
            "nearest" => Ok(Interpolation::Nearest),
            "linear" => Ok(Interpolation::Linear { align_corners: corners }),
            "bilinear" => Ok(Interpolation::Bilinear { align_corners: corners }),
            other => Err(Error::value(op, format!("mode must be 'nearest', 'linear' or 'bilinear', got {other:?}"))),
        }
    }
    /// PyTorch's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            Interpolation::Nearest => "nearest",
            Interpolation::Linear { .. } => "linear",
            Interpolation::Bilinear { .. } => "bilinear",
        }
    }
    /// The corner rule of a linear mode; None for nearest.
    fn align_corners(self) -> Option<bool> {
        match self {
            Interpolation::Nearest => None,
            Interpolation::Linear { align_corners } | Interpolation::Bilinear { align_corners } => Some(align_corners),
        }
    }
}

/// The output size of interpolating `input` spatial sizes: `size` (one
/// value for every axis, or one per axis) or `scale` (floor(in * scale)).
pub fn interpolated_size(
    op: &'static str,
    input: &[usize],
    size: Option<&[usize]>,
    scale: Option<f64>,
) -> Result<Vec<usize>> {
    match (size, scale) {
        (Some(s), None) => match s.len() {
            1 => Ok(vec![s[0]; input.len()]),
            n if n == input.len() => Ok(s.to_vec()),
            n => Err(Error::shape(
                op,
                format!("size has {n} entries for {} spatial axes (input spatial sizes {input:?})", input.len()),
            )),
        },
        (None, Some(f)) if f.is_finite() && f > 0.0 => {
            Ok(input.iter().map(|&i| (i as f64 * f).floor() as usize).collect())
        }
        (None, Some(f)) => Err(Error::value(op, format!("scale_factor must be a positive finite number, got {f}"))),
        _ => Err(Error::value(op, "exactly one of size and scale_factor must be given")),
    }
}

/// The source coordinate scale of one axis (PyTorch's `area_pixel_compute_scale`):
/// 1 / scale_factor when one was given, else in / out; (in - 1) / (out - 1)
/// with aligned corners.
fn axis_scale(input: usize, output: usize, scale: Option<f64>, align_corners: bool) -> f64 {
    if align_corners {
        if output > 1 {
            (input as f64 - 1.0) / (output as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        scale.map_or(input as f64 / output as f64, |f| 1.0 / f)
    }
}

/// For each output position of one axis, the nearest source index, made on
/// `device` (no host upload, so `jit` captures it on a GPU too). As
/// PyTorch's kernels, in f32 whatever the data's dtype: floor(d * scale),
/// at most input - 1.
fn nearest_sources(input: usize, output: usize, scale: Option<f64>, device: &Device) -> Result<Tensor> {
    let s = axis_scale(input, output, scale, false);
    let d = Tensor::arange_on(0.0, output as f64, 1.0, DType::F32, device)?;
    // Non-negative, so truncation toward zero is floor.
    d.mul_scalar(s)?.clamp(None, Some((input - 1) as f64))?.to_dtype(DType::I32)
}

/// For each output position of one axis, made on `device` in `dtype` (the
/// data's opmath, as PyTorch: f64 for f64, else f32): the two source indices
/// and the weight of the second.
fn linear_sources(
    input: usize,
    output: usize,
    scale: Option<f64>,
    align_corners: bool,
    dtype: DType,
    device: &Device,
) -> Result<(Tensor, Tensor, Tensor)> {
    let s = axis_scale(input, output, scale, align_corners);
    let d = Tensor::arange_on(0.0, output as f64, 1.0, dtype, device)?;
    let src = if align_corners {
        d.mul_scalar(s)?
    } else {
        // Half-pixel centres, clamped at the first pixel.
        d.add_scalar(0.5)?.mul_scalar(s)?.sub_scalar(0.5)?.clamp(Some(0.0), None)?
    };
    let last = (input - 1) as f64;
    let lo = src.clamp(None, Some(last))?.to_dtype(DType::I32)?;
    let lo_at = lo.to_dtype(dtype)?;
    let hi = lo_at.add_scalar(1.0)?.clamp(None, Some(last))?.to_dtype(DType::I32)?;
    let w = src.sub(&lo_at)?.clamp(Some(0.0), Some(1.0))?;
    Ok((lo, hi, w))
}

impl Tensor {
    /// Resamples the spatial axes of `[N, C, L]` or `[N, C, H, W]` to `size`
    /// (one size for all axes, or one per axis) or by `scale_factor`
    /// (exactly one of the two), as PyTorch's `F.interpolate`.
    pub fn interpolate(
        &self,
        size: Option<&[usize]>,
        scale_factor: Option<f64>,
        mode: Interpolation,
    ) -> Result<Tensor> {
        let op = "interpolate";
        super::as_op(op, || {
            expect_float(op, self)?;
            let nd = self.ndim();
            let fits = match mode {
                Interpolation::Nearest => (3..=4).contains(&nd),
                Interpolation::Linear { .. } => nd == 3,
                Interpolation::Bilinear { .. } => nd == 4,
            };
            if !fits {
                let want = match mode {
                    Interpolation::Nearest => "[N, C, L] or [N, C, H, W]",
                    Interpolation::Linear { .. } => "[N, C, L]",
                    Interpolation::Bilinear { .. } => "[N, C, H, W]",
                };
                return Err(Error::shape(
                    op,
                    format!("mode '{}' expects {want}, got shape {:?}", mode.name(), self.shape()),
                ));
            }
            let spatial = &self.shape()[2..];
            if spatial.contains(&0) {
                return Err(Error::shape(
                    op,
                    format!("cannot resample empty spatial axes of shape {:?}", self.shape()),
                ));
            }
            let out = interpolated_size(op, spatial, size, scale_factor)?;
            if out.contains(&0) {
                return Err(Error::shape(
                    op,
                    format!("the output size {out:?} has an empty axis (input {:?})", self.shape()),
                ));
            }
            crate::shape::check_size(op, &[&self.shape()[..2], &out[..]].concat())?;
            let device = self.device();
            let mut y = self.clone();
            for (k, (&i, &o)) in spatial.iter().zip(&out).enumerate() {
                let axis = (2 + k) as isize;
                if i == o && mode == Interpolation::Nearest {
                    continue;
                }
                y = match mode.align_corners() {
                    None => y.index_select(axis, &nearest_sources(i, o, scale_factor, &device)?)?,
                    Some(align_corners) => {
                        let opmath = if self.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
                        let (lo, hi, w) = linear_sources(i, o, scale_factor, align_corners, opmath, &device)?;
                        let mut wshape = vec![1; nd - 2 - k];
                        wshape[0] = o;
                        let w1 = w.reshape_dims(&wshape)?;
                        let w0 = w1.neg()?.add_scalar(1.0)?.to_dtype(self.dtype())?;
                        let w1 = w1.to_dtype(self.dtype())?;
                        let a = y.index_select(axis, &lo)?;
                        let b = y.index_select(axis, &hi)?;
                        a.mul(&w0)?.add(&b.mul(&w1)?)?
                    }
                };
            }
            Ok(y)
        })
    }
}

/// The source coordinate of output position `d` along an axis, from
/// PyTorch's documented rules (half-pixel centres unless corners align).
#[cfg(feature = "testing")]
fn source(d: usize, input: usize, output: usize, scale: Option<f64>, align_corners: Option<bool>) -> f64 {
    match align_corners {
        None => (d as f64 * scale.map_or(input as f64 / output as f64, |f| 1.0 / f)).floor().min(input as f64 - 1.0),
        Some(true) if output == 1 => 0.0,
        Some(true) => d as f64 * (input - 1) as f64 / (output - 1) as f64,
        Some(false) => ((d as f64 + 0.5) * scale.map_or(input as f64 / output as f64, |f| 1.0 / f) - 0.5).max(0.0),
    }
}

/// Linear interpolation of `x` at real coordinates (one per spatial axis),
/// clamped to the last element: the tensor-product of 1-D hat functions.
#[cfg(feature = "testing")]
fn sample_at(x: &Host, lead: &[usize], coords: &[f64]) -> f64 {
    let spatial = &x.shape[2..];
    let mut total = 0.0;
    for corner in 0..(1usize << coords.len()) {
        let mut idx = lead.to_vec();
        let mut weight = 1.0;
        for (k, &c) in coords.iter().enumerate() {
            let i0 = (c.floor() as usize).min(spatial[k] - 1);
            let t = c - i0 as f64;
            let up = corner >> k & 1 == 1;
            idx.push(if up { (i0 + 1).min(spatial[k] - 1) } else { i0 });
            weight *= if up { t } else { 1.0 - t };
        }
        total += weight * x.at(&idx);
    }
    total
}

/// `interpolate` from the definitions: nearest reads the floor position,
/// linear modes interpolate at the real source coordinate.
#[cfg(feature = "testing")]
fn interpolate_ref(x: &Host, out: &[usize], scale: Option<f64>, align_corners: Option<bool>) -> Host {
    let shape = [&x.shape[..2], out].concat();
    Host::build(&shape, Kind::Float, |i| {
        let coords: Vec<f64> =
            (0..out.len()).map(|k| source(i[2 + k], x.shape[2 + k], out[k], scale, align_corners)).collect();
        if align_corners.is_none() {
            let idx: Vec<usize> = i[..2].iter().copied().chain(coords.iter().map(|&c| c as usize)).collect();
            x.at(&idx)
        } else {
            sample_at(x, &i[..2], &coords)
        }
    })
}

static INTERPOLATE: OpDef = OpDef {
    name: "interpolate",
    signature: "interpolate(self, size: int | int[] | None = None, scale_factor: float | None = None, *, mode: 'nearest' | 'linear' | 'bilinear' = 'nearest', align_corners: bool | None = None) -> Tensor",
    doc: "Resamples the spatial axes of [N, C, L] or [N, C, H, W] to `size` or by `scale_factor` (nearest, linear, bilinear).",
    forward: Some(Forward::One(|a| {
        let size = a.sizes("size")?;
        let mode = Interpolation::parse("interpolate", a.str("mode")?, a.opt_bool("align_corners")?)?;
        a.this()?.interpolate((!size.is_empty()).then_some(&size[..]), a.opt_float("scale_factor")?, mode)
    })),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let img = || vec![Input::Uniform(vec![2, 2, 3, 4], -1.0, 1.0)];
        let seq = || vec![Input::Uniform(vec![2, 3, 5], -1.0, 1.0)];
        vec![
            Case::new("nearest to a size", img(), |x| x[0].interpolate(Some(&[5, 6]), None, Interpolation::Nearest))
                .also(Sample::Empty, &[&[0, 2, 3, 4]])
                .reference(|h| interpolate_ref(&h[0], &[5, 6], None, None)),
            Case::new("nearest by a scale factor", seq(), |x| x[0].interpolate(None, Some(1.5), Interpolation::Nearest))
                .reference(|h| interpolate_ref(&h[0], &[7], Some(1.5), None)),
            Case::new("bilinear", img(), |x| x[0].interpolate(Some(&[5, 7]), None, Interpolation::Bilinear { align_corners: false }))
                .reference(|h| interpolate_ref(&h[0], &[5, 7], None, Some(false))),
            Case::new("bilinear, align_corners", img(), |x| x[0].interpolate(None, Some(2.0), Interpolation::Bilinear { align_corners: true }))
                .reference(|h| interpolate_ref(&h[0], &[6, 8], Some(2.0), Some(true))),
            Case::new("linear downsampling", seq(), |x| x[0].interpolate(Some(&[3]), None, Interpolation::Linear { align_corners: false }))
                .reference(|h| interpolate_ref(&h[0], &[3], None, Some(false))),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&INTERPOLATE]
}
