//! Pooling and reshaping layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten.

use super::{py_pair, Core, Layer};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A pool's window: positive kernel and stride, and padding at most half the
/// kernel (PyTorch's rule, which `max_pool2d`/`avg_pool2d` also apply), so
/// every window holds a real element.
fn check_window(op: &'static str, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<()> {
    if kernel.contains(&0) || stride.contains(&0) {
        return Err(Error::value(op, format!("kernel {kernel:?} and stride {stride:?} must be positive")));
    }
    if (0..2).any(|i| padding[i] > kernel[i] / 2) {
        return Err(Error::value(op, format!("padding {padding:?} must be at most half of kernel {kernel:?}")));
    }
    Ok(())
}

/// Max over windows (floor mode). The stride defaults to the kernel size.
pub struct MaxPool2d {
    core: Core,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}
impl MaxPool2d {
    pub fn new(kernel: [usize; 2]) -> Result<MaxPool2d> {
        MaxPool2d::with_options(kernel, kernel, [0, 0])
    }
    pub fn with_options(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<MaxPool2d> {
        check_window("MaxPool2d", kernel, stride, padding)?;
        Ok(MaxPool2d { core: Core::default(), kernel, stride, padding })
    }
}
impl Layer for MaxPool2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool2d(self.kernel, self.stride, self.padding)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "MaxPool2d"
    }
    fn extra_repr(&self) -> String {
        window_repr(self.kernel, self.stride, self.padding)
    }
}

/// Mean over windows (floor mode, zero padding counted). Stride defaults to the kernel.
pub struct AvgPool2d {
    core: Core,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}
impl AvgPool2d {
    pub fn new(kernel: [usize; 2]) -> Result<AvgPool2d> {
        AvgPool2d::with_options(kernel, kernel, [0, 0])
    }
    pub fn with_options(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Result<AvgPool2d> {
        check_window("AvgPool2d", kernel, stride, padding)?;
        Ok(AvgPool2d { core: Core::default(), kernel, stride, padding })
    }
}
impl Layer for AvgPool2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool2d(self.kernel, self.stride, self.padding)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "AvgPool2d"
    }
    fn extra_repr(&self) -> String {
        window_repr(self.kernel, self.stride, self.padding)
    }
}

/// Averages `[N, C, H, W]` down to `[N, C, out_h, out_w]`. Output cell i covers
/// rows floor(i*H/out_h) .. ceil((i+1)*H/out_h) (PyTorch's rule), likewise for
/// columns. When the sizes divide evenly this is one `avg_pool2d`; otherwise
/// rows then columns are averaged per cell (the cells are rectangles, so the
/// mean of row means is the cell mean) and concatenated.
pub struct AdaptiveAvgPool2d {
    core: Core,
    pub output_size: [usize; 2],
}
impl AdaptiveAvgPool2d {
    pub fn new(output_size: [usize; 2]) -> Result<AdaptiveAvgPool2d> {
        if output_size.contains(&0) {
            return Err(Error::value("AdaptiveAvgPool2d", format!("output size {output_size:?} must be positive")));
        }
        Ok(AdaptiveAvgPool2d { core: Core::default(), output_size })
    }
}

fn adaptive_axis(x: &Tensor, axis: usize, out: usize) -> Result<Tensor> {
    let n = x.shape()[axis];
    let cells = (0..out)
        .map(|i| {
            let (s, e) = (i * n / out, ((i + 1) * n).div_ceil(out));
            x.slice(axis as isize, s as isize, e as isize, 1)?.mean(&[axis as isize], true)
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::concat(&cells, axis as isize)
}

impl Layer for AdaptiveAvgPool2d {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        if x.ndim() != 4 {
            return Err(Error::shape("AdaptiveAvgPool2d", format!("expects [N, C, H, W], got shape {:?}", x.shape())));
        }
        let ([h, w], [oh, ow]) = ([x.shape()[2], x.shape()[3]], self.output_size);
        if oh > h || ow > w {
            return Err(Error::shape(
                "AdaptiveAvgPool2d",
                format!("output size {:?} is larger than the input's {:?}", self.output_size, [h, w]),
            ));
        }
        if h % oh == 0 && w % ow == 0 {
            let k = [h / oh, w / ow];
            return x.avg_pool2d(k, k, [0, 0]);
        }
        adaptive_axis(&adaptive_axis(x, 2, oh)?, 3, ow)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "AdaptiveAvgPool2d"
    }
    fn extra_repr(&self) -> String {
        format!("output_size={}", py_pair(self.output_size))
    }
}

/// Flattens axes `start..=end` (default 1..=-1) into one.
pub struct Flatten {
    core: Core,
    pub start: isize,
    pub end: isize,
}
impl Flatten {
    pub fn new() -> Flatten {
        Flatten::with_axes(1, -1)
    }
    pub fn with_axes(start: isize, end: isize) -> Flatten {
        Flatten { core: Core::default(), start, end }
    }
}
impl Default for Flatten {
    fn default() -> Self {
        Flatten::new()
    }
}
impl Layer for Flatten {
    fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
        x.flatten(self.start, self.end)
    }
    fn core(&self) -> &Core {
        &self.core
    }
    fn type_name(&self) -> &'static str {
        "Flatten"
    }
    fn extra_repr(&self) -> String {
        format!("start_dim={}, end_dim={}", self.start, self.end)
    }
}

/// A pool's PyTorch `extra_repr`: `kernel_size=2, stride=2, padding=0` (pairs as `(2, 3)`).
fn window_repr(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> String {
    format!("kernel_size={}, stride={}, padding={}", py_pair(kernel), py_pair(stride), py_pair(padding))
}
