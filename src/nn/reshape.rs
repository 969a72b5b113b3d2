//! Parameter-free layers that move elements: `Identity`, `Unflatten`,
//! `PixelShuffle` / `PixelUnshuffle`, `ZeroPad2d` and `Upsample`, with
//! PyTorch's constructor arguments and reprs.

use super::{py_float, py_tuple, Core, Layer};
use crate::error::{Error, Result};
use crate::ops::resample::Interpolation;
use crate::tensor::Tensor;

/// Returns its input (a placeholder where a model wants a layer).
#[derive(Default)]
pub struct Identity {
    core: Core,
}
impl Identity {
    pub fn new() -> Identity {
        Identity::default()
    }
}
impl Layer for Identity {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Identity"
    }
}

/// Splits axis `dim` into `sizes` (one entry may be -1), the inverse of `Flatten`.
pub struct Unflatten {
    core: Core,
    pub dim: isize,
    pub sizes: Vec<isize>,
}
impl Unflatten {
    pub fn new(dim: isize, sizes: &[isize]) -> Result<Unflatten> {
        let inferred = sizes.iter().filter(|&&s| s == -1).count();
        if sizes.is_empty() || inferred > 1 || sizes.iter().any(|&s| s < -1) {
            return Err(Error::value(
                "Unflatten",
                format!("unflattened_size must be non-empty sizes with at most one -1, got {sizes:?}"),
            ));
        }
        Ok(Unflatten { core: Core::default(), dim, sizes: sizes.to_vec() })
    }
}
impl Layer for Unflatten {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let d = crate::shape::normalize_axis("Unflatten", self.dim, x.shape())?;
        let shape = x.shape();
        let known: usize = self.sizes.iter().filter(|&&s| s >= 0).map(|&s| s as usize).product();
        let size = shape.get(d).copied().unwrap_or(1);
        let fits = if self.sizes.contains(&-1) { known > 0 && size % known == 0 } else { known == size };
        if !fits {
            return Err(Error::shape(
                "Unflatten",
                format!("axis {} of shape {shape:?} (size {size}) cannot be split into {:?}", self.dim, self.sizes),
            ));
        }
        let mut new: Vec<isize> = shape[..d].iter().map(|&s| s as isize).collect();
        new.extend(&self.sizes);
        new.extend(shape.iter().skip(d + 1).map(|&s| s as isize));
        x.reshape(&new)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Unflatten"
    }
    fn extra_repr(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|s| s.to_string()).collect();
        let tuple = if sizes.len() == 1 { format!("({},)", sizes[0]) } else { format!("({})", sizes.join(", ")) };
        format!("dim={}, unflattened_size={tuple}", self.dim)
    }
}

/// `[*, C r^2, H, W]` to `[*, C, H r, W r]` (`Tensor::pixel_shuffle`).
pub struct PixelShuffle {
    core: Core,
    pub upscale_factor: usize,
}
impl PixelShuffle {
    pub fn new(upscale_factor: usize) -> PixelShuffle {
        PixelShuffle { core: Core::default(), upscale_factor }
    }
}
impl Layer for PixelShuffle {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.pixel_shuffle(self.upscale_factor)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "PixelShuffle"
    }
    fn extra_repr(&self) -> String {
        format!("upscale_factor={}", self.upscale_factor)
    }
}

/// `[*, C, H r, W r]` to `[*, C r^2, H, W]` (`Tensor::pixel_unshuffle`).
pub struct PixelUnshuffle {
    core: Core,
    pub downscale_factor: usize,
}
impl PixelUnshuffle {
    pub fn new(downscale_factor: usize) -> PixelUnshuffle {
        PixelUnshuffle { core: Core::default(), downscale_factor }
    }
}
impl Layer for PixelUnshuffle {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.pixel_unshuffle(self.downscale_factor)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "PixelUnshuffle"
    }
    fn extra_repr(&self) -> String {
        format!("downscale_factor={}", self.downscale_factor)
    }
}

/// Pads the last two axes with zeros: `padding` is (left, right, top,
/// bottom), PyTorch's order; `ZeroPad2d::uniform(p)` pads p on every side.
pub struct ZeroPad2d {
    core: Core,
    pub padding: [usize; 4],
}
impl ZeroPad2d {
    pub fn new(padding: [usize; 4]) -> ZeroPad2d {
        ZeroPad2d { core: Core::default(), padding }
    }
    pub fn uniform(p: usize) -> ZeroPad2d {
        ZeroPad2d::new([p; 4])
    }
}
impl Layer for ZeroPad2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let n = x.ndim();
        if n < 2 {
            return Err(Error::shape(
                "ZeroPad2d",
                format!("expects at least 2 dims [*, H, W], got shape {:?}", x.shape()),
            ));
        }
        let [left, right, top, bottom] = self.padding;
        let mut pads = vec![(0, 0); n - 2];
        pads.extend([(top, bottom), (left, right)]);
        x.pad(&pads, 0.0)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "ZeroPad2d"
    }
    fn extra_repr(&self) -> String {
        py_tuple(&self.padding)
    }
}

/// Resamples the spatial axes of `[N, C, L]` or `[N, C, H, W]`
/// (`Tensor::interpolate`): to a fixed `size` or by a `scale_factor`, in
/// PyTorch's modes (`nearest`, `linear`, `bilinear`).
pub struct Upsample {
    core: Core,
    pub size: Option<Vec<usize>>,
    pub scale_factor: Option<f64>,
    pub mode: Interpolation,
}

impl Upsample {
    /// By `scale_factor` along every spatial axis.
    pub fn with_scale(scale_factor: f64, mode: Interpolation) -> Result<Upsample> {
        if !(scale_factor.is_finite() && scale_factor > 0.0) {
            return Err(Error::value(
                "Upsample",
                format!("scale_factor must be a positive finite number, got {scale_factor}"),
            ));
        }
        Ok(Upsample { core: Core::default(), size: None, scale_factor: Some(scale_factor), mode })
    }
    /// To `size` (one size for every spatial axis, or one per axis).
    pub fn with_size(size: &[usize], mode: Interpolation) -> Result<Upsample> {
        if size.is_empty() || size.contains(&0) {
            return Err(Error::value("Upsample", format!("size must be positive sizes, got {size:?}")));
        }
        Ok(Upsample { core: Core::default(), size: Some(size.to_vec()), scale_factor: None, mode })
    }
}

impl Layer for Upsample {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.interpolate(self.size.as_deref(), self.scale_factor, self.mode)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Upsample"
    }
    /// PyTorch's: the size or the scale factor, then the mode.
    fn extra_repr(&self) -> String {
        let what = match (&self.size, self.scale_factor) {
            (Some(s), _) if s.len() == 1 => format!("size={}", s[0]),
            (Some(s), _) => format!("size={}", py_tuple(s)),
            (None, Some(f)) => format!("scale_factor={}", py_float(f)),
            (None, None) => String::new(),
        };
        format!("{what}, mode='{}'", self.mode.name())
    }
}
