//! Tensor creation. Everything is created on the cpu; `to(device)` moves it.

use super::Tensor;
use crate::backend::cpu::{CpuBuffer, Elem};
use crate::backend::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random::with_generator;
use crate::shape::numel;

fn from_f64s(vals: Vec<f64>, shape: &[usize], dtype: DType) -> Tensor {
    let buf = match dtype {
        DType::F32 => CpuBuffer::F32(vals.into_iter().map(|v| v as f32).collect()),
        DType::F64 => CpuBuffer::F64(vals),
        DType::I32 => CpuBuffer::I32(vals.into_iter().map(|v| v as i32).collect()),
        DType::Bool => CpuBuffer::Bool(vals.into_iter().map(|v| (v != 0.0) as u8).collect()),
    };
    Tensor::from_buffer(Buffer::Cpu(buf), shape)
}

impl Tensor {
    /// A tensor of `shape` filled with `value`.
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Tensor {
        Tensor::from_buffer(Buffer::Cpu(CpuBuffer::filled(dtype, numel(shape), value)), shape)
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::full(shape, 0.0, dtype)
    }
    pub fn ones(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::full(shape, 1.0, dtype)
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
            Device::Cpu => Ok(Tensor::full(shape, value, dtype)),
            #[cfg(feature = "gpu")]
            Device::Gpu(g) => {
                let b = crate::backend::gpu::elementwise::full(g.context(), dtype, numel(shape), value)?;
                Ok(Tensor::from_buffer(Buffer::Gpu(b), shape))
            }
        }
    }
    /// A rank-0 tensor.
    pub fn scalar(value: f64, dtype: DType) -> Tensor {
        Tensor::full(&[], value, dtype)
    }
    /// Values `start, start+step, ...` below `end` (above it for a negative step).
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::value("arange", format!("invalid range start={start} end={end} step={step}")));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        Ok(from_f64s((0..n).map(|i| start + i as f64 * step).collect(), &[n], dtype))
    }
    /// `steps` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(Error::dtype("linspace", format!("needs a float dtype, got {dtype}")));
        }
        let vals = match steps {
            0 => vec![],
            1 => vec![start],
            _ => (0..steps).map(|i| start + (end - start) * i as f64 / (steps - 1) as f64).collect(),
        };
        Ok(from_f64s(vals, &[steps], dtype))
    }
    /// The `n` x `n` identity matrix.
    pub fn eye(n: usize, dtype: DType) -> Tensor {
        let mut v = vec![0.0; n * n];
        for i in 0..n {
            v[i * n + i] = 1.0;
        }
        from_f64s(v, &[n, n], dtype)
    }
    /// Uniform samples in [0, 1) from the global seeded generator (`manual_seed`).
    pub fn rand(shape: &[usize], dtype: DType) -> Tensor {
        let n = numel(shape);
        from_f64s(with_generator(|g| (0..n).map(|_| g.uniform()).collect()), shape, dtype)
    }
    /// Uniform samples in [lo, hi).
    pub fn uniform(shape: &[usize], lo: f64, hi: f64, dtype: DType) -> Tensor {
        let n = numel(shape);
        from_f64s(with_generator(|g| (0..n).map(|_| lo + (hi - lo) * g.uniform()).collect()), shape, dtype)
    }
    /// Standard-normal samples from the global seeded generator.
    pub fn randn(shape: &[usize], dtype: DType) -> Tensor {
        let n = numel(shape);
        from_f64s(with_generator(|g| (0..n).map(|_| g.normal()).collect()), shape, dtype)
    }
    /// Integers uniformly drawn from [lo, hi).
    pub fn randint(lo: i32, hi: i32, shape: &[usize]) -> Result<Tensor> {
        if hi <= lo {
            return Err(Error::value("randint", format!("empty range [{lo}, {hi})")));
        }
        let n = numel(shape);
        let span = (hi as i64 - lo as i64) as u64;
        let v: Vec<i32> =
            with_generator(|g| (0..n).map(|_| (lo as i64 + (g.next_u64() % span) as i64) as i32).collect());
        Tensor::from_vec(v, shape)
    }
    /// Takes ownership of `data` (row-major) as a tensor of `shape`.
    pub fn from_vec<T: Elem>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if data.len() != numel(shape) {
            return Err(Error::shape(
                "from_vec",
                format!("{} elements cannot fill shape {:?} ({} elements)", data.len(), shape, numel(shape)),
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
        let host = crate::backend::host_copy_async(self).await?;
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
