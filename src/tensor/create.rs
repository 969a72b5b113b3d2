//! Tensor creation. Fills, sequences (arange, linspace, eye) and random
//! draws are kernel specs (`KernelSpec::{Fill, Sequence, Random}`) that run
//! on the device they are made for (`*_on`; the plain forms make them on
//! the cpu); host data (`from_vec`, `scalar`) starts on the cpu.

use super::Tensor;
use crate::backend::{Buffer, CpuBuffer, Elem};
use crate::device::Device;
use crate::dispatch::create::{create, random, room_on};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{Distribution, KernelSpec, Scalar, Sequence};
use crate::shape::{check_size, MAX_ELEMENTS};

/// A shape's element count for messages, even when it overflows.
fn describe_count(shape: &[usize]) -> String {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).map_or_else(|| "too many".to_string(), |n| n.to_string())
}

/// Random samples need a float dtype (PyTorch: "normal_" is not implemented
/// for integers); integers come from `randint`.
fn random_float(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        return Ok(());
    }
    Err(Error::dtype(
        op,
        format!("draws floating-point samples and needs a float dtype, got {dtype} (use randint for integers)"),
    ))
}

/// An error unless `dtype` can hold `value` as given: integers in range for
/// i32 (never a silent wrap, saturation or truncation); any value for
/// floats (NaN included) and for bool (nonzero is true, as in PyTorch).
fn representable(op: &'static str, what: &str, value: f64, dtype: DType) -> Result<()> {
    let ok = match dtype {
        DType::F32 | DType::F64 | DType::F16 | DType::Bool => true,
        DType::I32 => value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64,
    };
    if ok {
        return Ok(());
    }
    Err(Error::value(op, format!("{what} {value} cannot be represented exactly as {dtype}")))
}

impl Tensor {
    fn filled(op: &'static str, shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        representable(op, "fill value", value, dtype)?;
        room_on(op, device, shape, dtype)?;
        create(op, &KernelSpec::Fill { dtype, value: Scalar(value) }, shape, device)
    }
    /// A tensor of `shape` filled with `value` (an error when the shape is
    /// too large to hold, or the value does not fit the dtype exactly).
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::full_on(shape, value, dtype, &Device::Cpu)
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::zeros_on(shape, dtype, &Device::Cpu)
    }
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::ones_on(shape, dtype, &Device::Cpu)
    }
    /// Zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::full_like(self, 0.0)
    }
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::full_like(self, 1.0)
    }
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        Tensor::full_on(self.shape(), value, self.dtype(), &self.device())
    }
    /// `full` made on `device` (a fill kernel there: nothing is uploaded).
    pub fn full_on(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::filled("full", shape, value, dtype, device)
    }
    /// `zeros` made on `device`.
    pub fn zeros_on(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::filled("zeros", shape, 0.0, dtype, device)
    }
    /// `ones` made on `device`.
    pub fn ones_on(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::filled("ones", shape, 1.0, dtype, device)
    }
    /// A rank-0 cpu tensor holding `value` (converted to `dtype` as a cast
    /// would): host data, like `from_vec`.
    pub fn scalar(value: f64, dtype: DType) -> Tensor {
        Tensor::from_buffer(Buffer::from(CpuBuffer::filled(dtype, 1, value)), &[])
    }
    /// Values `start, start+step, ...` below `end` (above it for a negative step).
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        Tensor::arange_on(start, end, step, dtype, &Device::Cpu)
    }
    /// `arange` made on `device`.
    pub fn arange_on(start: f64, end: f64, step: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        const OP: &str = "arange";
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::value(OP, format!("invalid range start={start} end={end} step={step}")));
        }
        // The count in f64 first: a huge range must be an error, not a
        // saturated or wrapped usize.
        let count = ((end - start) / step).ceil().max(0.0);
        if !count.is_finite() || count > MAX_ELEMENTS as f64 {
            return Err(Error::memory(
                OP,
                format!("the range start={start} end={end} step={step} has {count} values, more than one tensor may hold here ({MAX_ELEMENTS})"),
            ));
        }
        let n = count as usize;
        if n > 0 {
            representable(OP, "start", start, dtype)?;
            representable(OP, "the last value", start + (n - 1) as f64 * step, dtype)?;
        }
        room_on(OP, device, &[n], dtype)?;
        let seq = Sequence::Arange { start: Scalar(start), step: Scalar(step) };
        create(OP, &KernelSpec::Sequence { seq, dtype }, &[n], device)
    }
    /// `steps` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        Tensor::linspace_on(start, end, steps, dtype, &Device::Cpu)
    }
    /// `linspace` made on `device`.
    pub fn linspace_on(start: f64, end: f64, steps: usize, dtype: DType, device: &Device) -> Result<Tensor> {
        const OP: &str = "linspace";
        if !dtype.is_float() {
            return Err(Error::dtype(OP, format!("needs a float dtype, got {dtype}")));
        }
        room_on(OP, device, &[steps], dtype)?;
        let seq = Sequence::Linspace { start: Scalar(start), end: Scalar(end) };
        create(OP, &KernelSpec::Sequence { seq, dtype }, &[steps], device)
    }
    /// The `n` x `n` identity matrix.
    pub fn eye(n: usize, dtype: DType) -> Result<Tensor> {
        Tensor::eye_on(n, dtype, &Device::Cpu)
    }
    /// `eye` made on `device`.
    pub fn eye_on(n: usize, dtype: DType, device: &Device) -> Result<Tensor> {
        room_on("eye", device, &[n, n], dtype)?;
        create("eye", &KernelSpec::Sequence { seq: Sequence::Eye, dtype }, &[n, n], device)
    }
    /// Uniform samples in [0, 1) from the global seeded generator (`manual_seed`).
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::rand_on(shape, dtype, &Device::Cpu)
    }
    /// `rand` drawn on `device` (the same values as on the cpu for the same seed).
    pub fn rand_on(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        random_float("rand", dtype)?;
        let dist = Distribution::Uniform { lo: Scalar(0.0), hi: Scalar(1.0) };
        random("rand", dist, dtype, shape, device)
    }
    /// Uniform samples in [lo, hi).
    pub fn uniform(shape: &[usize], lo: f64, hi: f64, dtype: DType) -> Result<Tensor> {
        Tensor::uniform_on(shape, lo, hi, dtype, &Device::Cpu)
    }
    /// `uniform` drawn on `device`.
    pub fn uniform_on(shape: &[usize], lo: f64, hi: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Err(Error::value("uniform", format!("needs finite bounds with lo <= hi, got [{lo}, {hi})")));
        }
        random_float("uniform", dtype)?;
        random("uniform", Distribution::Uniform { lo: Scalar(lo), hi: Scalar(hi) }, dtype, shape, device)
    }
    /// Standard-normal samples from the global seeded generator.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::randn_on(shape, dtype, &Device::Cpu)
    }
    /// `randn` drawn on `device`.
    pub fn randn_on(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        random_float("randn", dtype)?;
        random("randn", Distribution::Normal, dtype, shape, device)
    }
    /// Integers uniformly drawn from [lo, hi).
    pub fn randint(lo: i32, hi: i32, shape: &[usize]) -> Result<Tensor> {
        Tensor::randint_on(lo, hi, shape, &Device::Cpu)
    }
    /// `randint` drawn on `device`.
    pub fn randint_on(lo: i32, hi: i32, shape: &[usize], device: &Device) -> Result<Tensor> {
        if hi <= lo {
            return Err(Error::value("randint", format!("empty range [{lo}, {hi})")));
        }
        random("randint", Distribution::RandInt { lo, hi }, DType::I32, shape, device)
    }
    /// A bool mask on `device`, each element true with probability `p`
    /// (PyTorch's `bernoulli` of a constant probability; dropout's keep mask).
    pub fn bernoulli_on(shape: &[usize], p: f64, device: &Device) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value("bernoulli", format!("probability p must be in [0, 1], got {p}")));
        }
        random("bernoulli", Distribution::Bernoulli { p: Scalar(p) }, DType::Bool, shape, device)
    }
    /// Takes ownership of `data` (row-major) as a tensor of `shape`.
    pub fn from_vec<T: Elem>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if check_size("from_vec", shape).ok() != Some(data.len()) {
            return Err(Error::shape(
                "from_vec",
                format!("{} elements cannot fill shape {shape:?} ({} elements)", data.len(), describe_count(shape)),
            ));
        }
        Ok(Tensor::from_buffer(Buffer::from(T::wrap(data)), shape))
    }
    pub fn from_slice<T: Elem>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }
    /// A bool mask from a slice of bools.
    pub fn from_bools(data: &[bool], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(data.iter().map(|&b| b as u8).collect::<Vec<u8>>(), shape)
    }
    /// Moves (copies) the tensor to `device`; a no-op when it is already there.
    /// The result keeps autograd history, so gradients flow back across devices.
    pub fn to(&self, device: &Device) -> Result<Tensor> {
        if &self.device() == device {
            return Ok(self.clone());
        }
        crate::ops::movement::to_device(self, device)
    }
    /// `to` without blocking: a move off a GPU awaits its readback (the only
    /// way in the browser); other moves are `to`. Recorded like `to`.
    pub async fn to_async(&self, device: &Device) -> Result<Tensor> {
        if &self.device() == device || !self.device().is_gpu() {
            return self.to(device);
        }
        let host = crate::dispatch::host_copy_async(self).await?;
        crate::ops::movement::to_device_read(self, host, device)
    }
}

impl From<f32> for Tensor {
    fn from(v: f32) -> Tensor {
        Tensor::scalar(v as f64, DType::F32)
    }
}
impl From<f64> for Tensor {
    fn from(v: f64) -> Tensor {
        Tensor::scalar(v, DType::F64)
    }
}
