//! Rearrangements composed from movement, indexing and selection: flip, roll,
//! repeat and tile, the triangles (tril, triu), and pixel (un)shuffle. None
//! has a kernel or a backward rule of its own: each is a few primitives, so
//! both backends, every derivative order and capture come from those.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{composite_op, OpDef};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{check_size, normalize_axes, normalize_axis};
use crate::tensor::Tensor;

impl Tensor {
    /// Reverses the order of the elements along each of `dims` (PyTorch's
    /// `flip`). Each flipped axis is an `index_select` with a descending
    /// index made on the tensor's device.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        super::as_op("flip", || {
            if dims.is_empty() || self.ndim() == 0 {
                // normalize_axes would read an empty list as "every axis".
                dims.iter().try_for_each(|&d| normalize_axis("flip", d, self.shape()).map(|_| ()))?;
                return Ok(self.clone());
            }
            let mut y = self.clone();
            for a in normalize_axes("flip", dims, self.shape())? {
                let n = self.shape()[a];
                if n > 1 {
                    let index = Tensor::arange_on((n - 1) as f64, -1.0, -1.0, DType::I32, &self.device())?;
                    y = y.index_select(a as isize, &index)?;
                }
            }
            Ok(y)
        })
    }

    /// Shifts the elements along each of `dims` by the matching entry of
    /// `shifts`, wrapping around (PyTorch's `roll`). With no `dims`, the
    /// tensor is rolled as if flattened, by the one shift given.
    pub fn roll(&self, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
        super::as_op("roll", || {
            if dims.is_empty() {
                if shifts.len() != 1 {
                    return Err(Error::value(
                        "roll",
                        format!("without dims, shifts must be one number, got {shifts:?}"),
                    ));
                }
                return self.reshape(&[-1])?.roll(shifts, &[0])?.reshape_dims(self.shape());
            }
            if shifts.len() != dims.len() {
                return Err(Error::value(
                    "roll",
                    format!("shifts {shifts:?} and dims {dims:?} must have the same length"),
                ));
            }
            let mut y = self.clone();
            for (&s, &d) in shifts.iter().zip(dims) {
                let a = normalize_axis("roll", d, self.shape())?;
                let n = if self.ndim() == 0 { 1 } else { self.shape()[a] };
                let k = if n == 0 { 0 } else { s.rem_euclid(n as isize) as usize };
                if k != 0 {
                    let a = a as isize;
                    y = Tensor::concat(&[y.narrow(a, n - k, k)?, y.narrow(a, 0, n - k)?], a)?;
                }
            }
            Ok(y)
        })
    }

    /// The tensor repeated `repeats[k]` times along axis k (PyTorch's
    /// `Tensor.repeat`): at least one count per axis; extra leading counts
    /// add leading axes. An expand of an interleaved reshape, so the
    /// gradient sums the copies.
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        super::as_op("repeat", || {
            if repeats.len() < self.ndim() {
                return Err(Error::shape(
                    "repeat",
                    format!(
                        "{} repeat counts for a tensor of shape {:?}: give at least one per axis",
                        repeats.len(),
                        self.shape()
                    ),
                ));
            }
            let lead = repeats.len() - self.ndim();
            let padded: Vec<usize> = std::iter::repeat_n(1, lead).chain(self.shape().iter().copied()).collect();
            let out: Vec<usize> = padded.iter().zip(repeats).map(|(&s, &r)| s.saturating_mul(r)).collect();
            check_size("repeat", &out)?;
            let interleaved: Vec<usize> = padded.iter().flat_map(|&s| [1, s]).collect();
            let expanded: Vec<usize> = padded.iter().zip(repeats).flat_map(|(&s, &r)| [r, s]).collect();
            self.reshape_dims(&interleaved)?.expand_dims(&expanded)?.reshape_dims(&out)
        })
    }

    /// `repeat` with fewer counts than axes allowed: missing leading counts
    /// are 1 (PyTorch's `tile`).
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        super::as_op("tile", || {
            let mut counts = vec![1; self.ndim().saturating_sub(reps.len())];
            counts.extend_from_slice(reps);
            self.repeat(&counts)
        })
    }

    /// The lower triangle of the last two axes: elements (i, j) with
    /// j - i <= diagonal kept, the rest 0.
    pub fn tril(&self, diagonal: isize) -> Result<Tensor> {
        triangle("tril", self, diagonal, true)
    }

    /// The upper triangle of the last two axes: elements (i, j) with
    /// j - i >= diagonal kept, the rest 0.
    pub fn triu(&self, diagonal: isize) -> Result<Tensor> {
        triangle("triu", self, diagonal, false)
    }

    /// `[*, C * r^2, H, W]` to `[*, C, H * r, W * r]` (sub-pixel convolution's
    /// rearrangement, PyTorch's `pixel_shuffle`).
    pub fn pixel_shuffle(&self, upscale_factor: usize) -> Result<Tensor> {
        let op = "pixel_shuffle";
        super::as_op(op, || {
            let (lead, [c, h, w]) = image_dims(op, self)?;
            let r = upscale_factor;
            if r == 0 || c % (r * r) != 0 {
                return Err(Error::shape(
                    op,
                    format!("{c} channels (shape {:?}) are not divisible by upscale_factor^2 = {r}^2", self.shape()),
                ));
            }
            let l = lead.len();
            let split = [&lead[..], &[c / (r * r), r, r, h, w]].concat();
            let perm = [(0..l).collect(), [l, l + 3, l + 1, l + 4, l + 2].to_vec()].concat();
            let out = [&lead[..], &[c / (r * r), h * r, w * r]].concat();
            permuted(self, &split, &perm)?.reshape_dims(&out)
        })
    }

    /// The inverse of `pixel_shuffle`: `[*, C, H * r, W * r]` to `[*, C * r^2, H, W]`.
    pub fn pixel_unshuffle(&self, downscale_factor: usize) -> Result<Tensor> {
        let op = "pixel_unshuffle";
        super::as_op(op, || {
            let (lead, [c, h, w]) = image_dims(op, self)?;
            let r = downscale_factor;
            if r == 0 || h % r != 0 || w % r != 0 {
                return Err(Error::shape(
                    op,
                    format!(
                        "height {h} and width {w} (shape {:?}) must be divisible by downscale_factor {r}",
                        self.shape()
                    ),
                ));
            }
            let l = lead.len();
            let split = [&lead[..], &[c, h / r, r, w / r, r]].concat();
            let perm = [(0..l).collect(), [l, l + 2, l + 4, l + 1, l + 3].to_vec()].concat();
            let out = [&lead[..], &[c * r * r, h / r, w / r]].concat();
            permuted(self, &split, &perm)?.reshape_dims(&out)
        })
    }
}

/// `x` reshaped to `split`, then its axes permuted by `perm`.
fn permuted(x: &Tensor, split: &[usize], perm: &[usize]) -> Result<Tensor> {
    let perm: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
    x.reshape_dims(split)?.permute(&perm)
}

/// The leading dims and `[C, H, W]` of an image batch of rank >= 3.
fn image_dims(op: &'static str, x: &Tensor) -> Result<(Vec<usize>, [usize; 3])> {
    let s = x.shape();
    if s.len() < 3 {
        return Err(Error::shape(op, format!("expects [*, C, H, W] (at least 3 dims), got shape {s:?}")));
    }
    let n = s.len();
    Ok((s[..n - 3].to_vec(), [s[n - 3], s[n - 2], s[n - 1]]))
}

/// tril / triu: a mask from comparing column and row numbers (made on the
/// device, broadcast over the leading axes) selects between `x` and 0.
fn triangle(op: &'static str, x: &Tensor, diagonal: isize, lower: bool) -> Result<Tensor> {
    super::as_op(op, || {
        let n = x.ndim();
        if n < 2 {
            return Err(Error::shape(op, format!("expects at least 2 dims, got shape {:?}", x.shape())));
        }
        let (rows, cols) = (x.shape()[n - 2], x.shape()[n - 1]);
        let device = x.device();
        // Row i holds i + diagonal; element (i, j) is kept where j <= i + diagonal (tril).
        let d = diagonal as f64;
        let bound = Tensor::arange_on(d, d + rows as f64, 1.0, DType::I32, &device)?.reshape_dims(&[rows, 1])?;
        let column = Tensor::arange_on(0.0, cols as f64, 1.0, DType::I32, &device)?.reshape_dims(&[1, cols])?;
        let keep = if lower { column.le(&bound)? } else { column.ge(&bound)? };
        Tensor::where_(&keep, x, &x.zeros_scalar()?)
    })
}

#[cfg(feature = "testing")]
fn u(shape: &[usize]) -> Input {
    Input::Uniform(shape.to_vec(), -1.0, 1.0)
}

composite_op!(FLIP, "flip", sig: "flip(self, dims: int | int[]) -> Tensor", doc: "Reverses the order of elements along `dims`.", fwd: |a| a.this()?.flip(&a.ints("dims")?), cases: || vec![
    Case::new("flip axes 0 and 2", vec![u(&[2, 3, 4])], |x| x[0].flip(&[0, -1])).also(Sample::Empty, &[&[2, 0, 4]])
        .reference(|h| r::flip(&h[0], &[0, 2])),
    Case::new("flip a 1-D tensor", vec![u(&[5])], |x| x[0].flip(&[0])).reference(|h| r::flip(&h[0], &[0])),
    Case::new("flip no axes", vec![u(&[2, 3])], |x| x[0].flip(&[])).also(Sample::Scalar, &[&[]]).reference(|h| h[0].clone()),
]);
composite_op!(ROLL, "roll", sig: "roll(self, shifts: int | int[], dims: int | int[] | None = None) -> Tensor", doc: "Shifts elements along `dims` by `shifts`, wrapping around (flattened when `dims` is omitted).", fwd: |a| a.this()?.roll(&a.ints("shifts")?, &a.ints("dims")?), cases: || vec![
    Case::new("roll two axes", vec![u(&[3, 4, 5])], |x| x[0].roll(&[1, -2], &[0, 2])).also(Sample::Empty, &[&[3, 0, 5]])
        .reference(|h| r::roll(&h[0], &[1, -2], &[0, 2])),
    Case::new("roll flattened", vec![u(&[2, 5])], |x| x[0].roll(&[3], &[])).also(Sample::Scalar, &[&[]])
        .reference(|h| r::roll(&h[0], &[3], &[])),
    Case::new("roll by more than the size", vec![u(&[4])], |x| x[0].roll(&[-9], &[0])).reference(|h| r::roll(&h[0], &[-9], &[0])),
]);
composite_op!(REPEAT, "repeat", sig: "repeat(self, repeats: size[]) -> Tensor", doc: "Repeats the tensor `repeats[k]` times along axis k (extra counts add leading axes).", fwd: |a| a.this()?.repeat(&a.sizes("repeats")?), cases: || vec![
    Case::new("repeat with a new leading axis", vec![u(&[3, 2])], |x| x[0].repeat(&[2, 1, 3])).also(Sample::Empty, &[&[0, 2]])
        .reference(|h| r::repeat(&h[0], &[2, 1, 3])),
    Case::new("repeat a scalar", vec![u(&[])], |x| x[0].repeat(&[2, 3])).reference(|h| r::repeat(&h[0], &[2, 3])),
    Case::new("repeat zero times", vec![u(&[2, 3])], |x| x[0].repeat(&[0, 2])).reference(|h| r::repeat(&h[0], &[0, 2])),
]);
composite_op!(TILE, "tile", sig: "tile(self, dims: size[]) -> Tensor", doc: "`repeat` where missing leading counts are 1.", fwd: |a| a.this()?.tile(&a.sizes("dims")?), cases: || vec![
    Case::new("tile the last axis", vec![u(&[2, 3])], |x| x[0].tile(&[2])).also(Sample::Scalar, &[&[]])
        .reference(|h| r::repeat(&h[0], &[[1].repeat(h[0].rank().saturating_sub(1)), vec![2]].concat())),
]);
composite_op!(TRIL, "tril", sig: "tril(self, diagonal: int = 0) -> Tensor", doc: "The lower triangle of the last two axes (j - i <= diagonal), zeros above.", fwd: |a| a.this()?.tril(a.int("diagonal")?), cases: || vec![
    Case::new("tril below the diagonal", vec![u(&[4, 5])], |x| x[0].tril(-1)).also(Sample::Empty, &[&[0, 5]])
        .reference(|h| r::triangle(&h[0], -1, true)),
    Case::new("tril batched, main diagonal", vec![u(&[2, 3, 3])], |x| x[0].tril(0)).reference(|h| r::triangle(&h[0], 0, true)),
]);
composite_op!(TRIU, "triu", sig: "triu(self, diagonal: int = 0) -> Tensor", doc: "The upper triangle of the last two axes (j - i >= diagonal), zeros below.", fwd: |a| a.this()?.triu(a.int("diagonal")?), cases: || vec![
    Case::new("triu above the diagonal, batched", vec![u(&[2, 3, 4])], |x| x[0].triu(1)).also(Sample::Empty, &[&[2, 0, 4]])
        .reference(|h| r::triangle(&h[0], 1, false)),
    Case::new("triu tall", vec![u(&[5, 3])], |x| x[0].triu(-2)).reference(|h| r::triangle(&h[0], -2, false)),
]);
composite_op!(PIXEL_SHUFFLE, "pixel_shuffle", sig: "pixel_shuffle(self, upscale_factor: int) -> Tensor", doc: "[*, C r^2, H, W] to [*, C, H r, W r].", fwd: |a| a.this()?.pixel_shuffle(a.size("upscale_factor")?), cases: || vec![
    Case::new("pixel_shuffle by 2", vec![u(&[2, 8, 2, 3])], |x| x[0].pixel_shuffle(2)).also(Sample::Empty, &[&[0, 8, 2, 3]])
        .reference(|h| r::pixel_shuffle(&h[0], 2)),
]);
composite_op!(PIXEL_UNSHUFFLE, "pixel_unshuffle", sig: "pixel_unshuffle(self, downscale_factor: int) -> Tensor", doc: "[*, C, H r, W r] to [*, C r^2, H, W] (the inverse of pixel_shuffle).", fwd: |a| a.this()?.pixel_unshuffle(a.size("downscale_factor")?), cases: || vec![
    Case::new("pixel_unshuffle by 2", vec![u(&[2, 4, 6])], |x| x[0].pixel_unshuffle(2)).also(Sample::Empty, &[&[0, 4, 6]])
        .reference(|h| r::pixel_unshuffle(&h[0], 2)),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![&FLIP, &ROLL, &REPEAT, &TILE, &TRIL, &TRIU, &PIXEL_SHUFFLE, &PIXEL_UNSHUFFLE]
}
