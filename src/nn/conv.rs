//! `Conv1d` and `ConvTranspose2d`, with PyTorch's constructor options,
//! parameter names, weight layouts and initialisation.

use super::linear::{default_weight_and_bias, weight_and_bias};
use super::{py_pair, Core, Layer, Param};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Options of `Conv1d` (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct Conv1dConfig {
    pub stride: usize,
    pub padding: usize,
    pub dilation: usize,
    pub groups: usize,
    pub bias: bool,
}

impl Default for Conv1dConfig {
    fn default() -> Self {
        Conv1dConfig { stride: 1, padding: 0, dilation: 1, groups: 1, bias: true }
    }
}

/// 1-D convolution of `[N, C, L]` (or `[C, L]`): weight `[out, in/groups, k]`, bias `[out]`.
pub struct Conv1d {
    core: Core,
    pub weight: Param,
    pub bias: Option<Param>,
    pub config: Conv1dConfig,
}

/// Zero sizes and groups that do not divide both channel counts are errors
/// when a layer is built, as in PyTorch.
fn check_sizes(
    op: &'static str,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    sizes: &[(&str, usize)],
) -> Result<()> {
    if in_channels == 0 || out_channels == 0 {
        return Err(Error::value(
            op,
            format!("in_channels and out_channels must be positive, got {in_channels} and {out_channels}"),
        ));
    }
    for (what, v) in sizes {
        if *v == 0 {
            return Err(Error::value(op, format!("{what} must be at least 1, got 0")));
        }
    }
    if groups == 0 || in_channels % groups != 0 || out_channels % groups != 0 {
        return Err(Error::value(
            op,
            format!("groups {groups} must divide in_channels {in_channels} and out_channels {out_channels}"),
        ));
    }
    Ok(())
}

impl Conv1d {
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: usize) -> Result<Conv1d> {
        Conv1d::with_config(in_channels, out_channels, kernel_size, Conv1dConfig::default())
    }
    pub fn with_config(in_channels: usize, out_channels: usize, kernel_size: usize, c: Conv1dConfig) -> Result<Conv1d> {
        const OP: &str = "Conv1d";
        check_sizes(
            OP,
            in_channels,
            out_channels,
            c.groups,
            &[("kernel_size", kernel_size), ("stride", c.stride), ("dilation", c.dilation)],
        )?;
        let wshape = [out_channels, in_channels / c.groups, kernel_size];
        let (weight, bias) = default_weight_and_bias(OP, &wshape, c.bias.then_some(out_channels))?;
        Ok(Conv1d { core: Core::default(), weight, bias, config: c })
    }
}

impl Layer for Conv1d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let c = &self.config;
        let b = self.bias.as_ref().map(|b| b.get());
        x.conv1d(&self.weight.get(), b.as_ref(), c.stride, c.padding, c.dilation, c.groups)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        "Conv1d"
    }
    /// PyTorch's: the sizes, then the settings that differ from their defaults.
    fn extra_repr(&self) -> String {
        let (c, w) = (&self.config, self.weight.get());
        let mut s = format!(
            "{}, {}, kernel_size=({},), stride=({},)",
            w.shape()[1] * c.groups,
            w.shape()[0],
            w.shape()[2],
            c.stride
        );
        if c.padding != 0 {
            s += &format!(", padding=({},)", c.padding);
        }
        if c.dilation != 1 {
            s += &format!(", dilation=({},)", c.dilation);
        }
        if c.groups != 1 {
            s += &format!(", groups={}", c.groups);
        }
        if self.bias.is_none() {
            s += ", bias=False";
        }
        s
    }
}

/// Options of `ConvTranspose2d` (PyTorch's defaults).
#[derive(Clone, Copy, Debug)]
pub struct ConvTranspose2dConfig {
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub output_padding: [usize; 2],
    pub groups: usize,
    pub bias: bool,
    pub dilation: [usize; 2],
}

impl Default for ConvTranspose2dConfig {
    fn default() -> Self {
        ConvTranspose2dConfig {
            stride: [1, 1],
            padding: [0, 0],
            output_padding: [0, 0],
            groups: 1,
            bias: true,
            dilation: [1, 1],
        }
    }
}

/// Transposed 2-D convolution of `[N, C, H, W]`: weight `[in, out/groups, kh, kw]`
/// (PyTorch's layout), bias `[out]`.
pub struct ConvTranspose2d {
    core: Core,
    pub weight: Param,
    pub bias: Option<Param>,
    pub config: ConvTranspose2dConfig,
}

impl ConvTranspose2d {
    pub fn new(in_channels: usize, out_channels: usize, kernel: [usize; 2]) -> Result<ConvTranspose2d> {
        ConvTranspose2d::with_config(in_channels, out_channels, kernel, ConvTranspose2dConfig::default())
    }
    pub fn with_config(
        in_channels: usize,
        out_channels: usize,
        kernel: [usize; 2],
        c: ConvTranspose2dConfig,
    ) -> Result<ConvTranspose2d> {
        const OP: &str = "ConvTranspose2d";
        let sizes = [
            ("kernel_size", kernel[0].min(kernel[1])),
            ("stride", c.stride[0].min(c.stride[1])),
            ("dilation", c.dilation[0].min(c.dilation[1])),
        ];
        check_sizes(OP, in_channels, out_channels, c.groups, &sizes)?;
        if c.output_padding[0] >= c.stride[0] || c.output_padding[1] >= c.stride[1] {
            return Err(Error::value(
                OP,
                format!("output_padding {:?} must be smaller than the stride {:?}", c.output_padding, c.stride),
            ));
        }
        // PyTorch's layout [in, out/groups, kh, kw]; its fan-in (dim 1 times
        // the kernel) sets the default initialisation, as PyTorch's does.
        let wshape = [in_channels, out_channels / c.groups, kernel[0], kernel[1]];
        let (weight, bias) = default_weight_and_bias(OP, &wshape, c.bias.then_some(out_channels))?;
        Ok(ConvTranspose2d { core: Core::default(), weight, bias, config: c })
    }
}

impl Layer for ConvTranspose2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        let c = &self.config;
        let b = self.bias.as_ref().map(|b| b.get());
        x.conv_transpose2d(&self.weight.get(), b.as_ref(), c.stride, c.padding, c.output_padding, c.groups, c.dilation)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn local_parameters(&self) -> Vec<(String, Param)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn type_name(&self) -> &'static str {
        "ConvTranspose2d"
    }
    fn extra_repr(&self) -> String {
        let (c, w) = (&self.config, self.weight.get());
        let kernel = [w.shape()[2], w.shape()[3]];
        let mut s = format!(
            "{}, {}, kernel_size={}, stride={}",
            w.shape()[0],
            w.shape()[1] * c.groups,
            py_pair(kernel),
            py_pair(c.stride)
        );
        if c.padding != [0, 0] {
            s += &format!(", padding={}", py_pair(c.padding));
        }
        if c.output_padding != [0, 0] {
            s += &format!(", output_padding={}", py_pair(c.output_padding));
        }
        if c.dilation != [1, 1] {
            s += &format!(", dilation={}", py_pair(c.dilation));
        }
        if c.groups != 1 {
            s += &format!(", groups={}", c.groups);
        }
        if self.bias.is_none() {
            s += ", bias=False";
        }
        s
    }
}
