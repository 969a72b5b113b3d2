//! Tensor creation. Everything is created on the cpu; `to(device)` moves it.

use super::Tensor;
use crate::backend::cpu::room;
use crate::backend::cpu::{CpuBuffer, Elem};
use crate::backend::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random::{with_generator, Generator};
use crate::shape::{check_size, MAX_ELEMENTS};

/// A shape's element count for messages, even when it overflows.
fn describe_count(shape: &[usize]) -> String {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).map_or_else(|| "too many".to_string(), |n| n.to_string())
}

/// The element count of a new tensor of `shape` and `dtype`, once the count
/// is valid (`shape::check_size`) and the host can hold the buffer.
fn host_room(op: &'static str, shape: &[usize], dtype: DType) -> Result<usize> {
    let n = check_size(op, shape)?;
    room::ensure(op, n, dtype)?;
    Ok(n)
}

/// A host buffer of `n` values `f(i)` converted to `dtype`, built directly
/// in that dtype (no f64 staging copy of the whole tensor).
fn generated(n: usize, dtype: DType, mut f: impl FnMut(usize) -> f64) -> CpuBuffer {
    match dtype {
        DType::F32 => CpuBuffer::F32((0..n).map(|i| f(i) as f32).collect()),
        DType::F64 => CpuBuffer::F64((0..n).map(f).collect()),
        DType::I32 => CpuBuffer::I32((0..n).map(|i| f(i) as i32).collect()),
        DType::Bool => CpuBuffer::Bool((0..n).map(|i| (f(i) != 0.0) as u8).collect()),
    }
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
        DType::F32 | DType::F64 | DType::Bool => true,
        DType::I32 => value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64,
    };
    if ok {
        return Ok(());
    }
    Err(Error::value(op, format!("{what} {value} cannot be represented exactly as {dtype}")))
}

impl Tensor {
    fn filled(op: &'static str, shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        representable(op, "fill value", value, dtype)?;
        let n = host_room(op, shape, dtype)?;
        Ok(Tensor::from_buffer(Buffer::Cpu(CpuBuffer::filled(dtype, n, value)), shape))
    }
    /// A tensor of `shape` filled with `value` (an error when the shape is
    /// too large to hold, or the value does not fit the dtype exactly).
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::filled("full", shape, value, dtype)
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::filled("zeros", shape, 0.0, dtype)
    }
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::filled("ones", shape, 1.0, dtype)
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
    /// `full` placed directly on `device` (on a GPU: a fill kernel, no upload).
    pub fn full_on(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        match device {
            Device::Cpu => Tensor::full(shape, value, dtype),
            #[cfg(feature = "gpu")]
            Device::Gpu(_) => {
                representable("full", "fill value", value, dtype)?;
                check_size("full", shape)?;
                let spec = crate::kernel::KernelSpec::Fill { dtype, value: crate::kernel::Scalar(value) };
                Ok(Tensor::from_buffer(crate::backend::create("full", &spec, device, shape)?, shape))
            }
        }
    }
    /// A rank-0 tensor (`value` converted to `dtype` as a cast would).
    pub fn scalar(value: f64, dtype: DType) -> Tensor {
        Tensor::from_buffer(Buffer::Cpu(CpuBuffer::filled(dtype, 1, value)), &[])
    }
    /// Values `start, start+step, ...` below `end` (above it for a negative step).
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
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
        let n = host_room(OP, &[n], dtype)?;
        Ok(Tensor::from_buffer(Buffer::Cpu(generated(n, dtype, |i| start + i as f64 * step)), &[n]))
    }
    /// `steps` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        const OP: &str = "linspace";
        if !dtype.is_float() {
            return Err(Error::dtype(OP, format!("needs a float dtype, got {dtype}")));
        }
        let n = host_room(OP, &[steps], dtype)?;
        let value = |i: usize| match n {
            1 => start,
            _ => start + (end - start) * i as f64 / (n - 1) as f64,
        };
        Ok(Tensor::from_buffer(Buffer::Cpu(generated(n, dtype, value)), &[n]))
    }
    /// The `n` x `n` identity matrix.
    pub fn eye(n: usize, dtype: DType) -> Result<Tensor> {
        host_room("eye", &[n, n], dtype)?;
        let buf = generated(n * n, dtype, |i| if i % (n + 1) == 0 { 1.0 } else { 0.0 });
        Ok(Tensor::from_buffer(Buffer::Cpu(buf), &[n, n]))
    }
    /// Uniform samples in [0, 1) from the global seeded generator (`manual_seed`).
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::sampled("rand", shape, dtype, |g| g.uniform())
    }
    /// Uniform samples in [lo, hi).
    pub fn uniform(shape: &[usize], lo: f64, hi: f64, dtype: DType) -> Result<Tensor> {
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Err(Error::value("uniform", format!("needs finite bounds with lo <= hi, got [{lo}, {hi})")));
        }
        Tensor::sampled("uniform", shape, dtype, |g| lo + (hi - lo) * g.uniform())
    }
    /// Standard-normal samples from the global seeded generator.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::sampled("randn", shape, dtype, |g| g.normal())
    }
    fn sampled(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        mut draw: impl FnMut(&mut Generator) -> f64,
    ) -> Result<Tensor> {
        random_float(op, dtype)?;
        let n = host_room(op, shape, dtype)?;
        let buf = with_generator(|g| generated(n, dtype, |_| draw(g)));
        Ok(Tensor::from_buffer(Buffer::Cpu(buf), shape))
    }
    /// Integers uniformly drawn from [lo, hi).
    pub fn randint(lo: i32, hi: i32, shape: &[usize]) -> Result<Tensor> {
        if hi <= lo {
            return Err(Error::value("randint", format!("empty range [{lo}, {hi})")));
        }
        let n = host_room("randint", shape, DType::I32)?;
        let span = (hi as i64 - lo as i64) as u64;
        let v: Vec<i32> =
            with_generator(|g| (0..n).map(|_| (lo as i64 + (g.next_u64() % span) as i64) as i32).collect());
        Ok(Tensor::from_buffer(Buffer::Cpu(CpuBuffer::I32(v)), shape))
    }
    /// Takes ownership of `data` (row-major) as a tensor of `shape`.
    pub fn from_vec<T: Elem>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if check_size("from_vec", shape).ok() != Some(data.len()) {
            return Err(Error::shape(
                "from_vec",
                format!("{} elements cannot fill shape {shape:?} ({} elements)", data.len(), describe_count(shape)),
            ));
        }
        Ok(Tensor::from_buffer(Buffer::Cpu(T::wrap(data)), shape))
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
