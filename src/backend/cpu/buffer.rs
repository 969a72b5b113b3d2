//! Host memory for the cpu backend: one typed Vec per dtype, plus the strided
//! gather/scatter loops every other cpu kernel builds on.

use crate::dtype::DType;
use crate::shape::{coalesce, Layout};

/// A typed host buffer. Bool masks are stored as one byte per element (0 or 1).
#[derive(Clone, Debug)]
pub enum CpuBuffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    Bool(Vec<u8>),
}

/// An element type the cpu backend stores.
pub trait Elem: Copy + Default + PartialOrd + Send + Sync + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn slice(buf: &CpuBuffer) -> Option<&[Self]>;
    fn slice_mut(buf: &mut CpuBuffer) -> Option<&mut [Self]>;
    fn wrap(v: Vec<Self>) -> CpuBuffer;
    /// Moves the Vec out of a buffer of this dtype.
    fn unwrap(b: CpuBuffer) -> Option<Vec<Self>>;
}

macro_rules! impl_elem {
    ($t:ty, $variant:ident, $to:expr, $from:expr) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$variant;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            fn slice(buf: &CpuBuffer) -> Option<&[Self]> {
                match buf {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(buf: &mut CpuBuffer) -> Option<&mut [Self]> {
                match buf {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(v: Vec<Self>) -> CpuBuffer {
                CpuBuffer::$variant(v)
            }
            fn unwrap(b: CpuBuffer) -> Option<Vec<Self>> {
                match b {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
impl_elem!(f32, F32, |x: f32| x as f64, |v: f64| v as f32);
impl_elem!(f64, F64, |x: f64| x, |v: f64| v);
impl_elem!(i32, I32, |x: i32| x as f64, |v: f64| v as i32);
impl_elem!(u8, Bool, |x: u8| x as f64, |v: f64| (v != 0.0) as u8);

/// Runs `$body` with `$v` bound to the buffer's typed slice-able Vec and `$T` to its element type.
#[macro_export]
#[doc(hidden)]
macro_rules! with_cpu_buffer {
    ($buf:expr, $v:ident, $T:ident => $body:expr) => {
        match $buf {
            $crate::backend::cpu::CpuBuffer::F32($v) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::backend::cpu::CpuBuffer::F64($v) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            $crate::backend::cpu::CpuBuffer::I32($v) => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            $crate::backend::cpu::CpuBuffer::Bool($v) => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
        }
    };
}

impl CpuBuffer {
    pub fn dtype(&self) -> DType {
        match self {
            CpuBuffer::F32(_) => DType::F32,
            CpuBuffer::F64(_) => DType::F64,
            CpuBuffer::I32(_) => DType::I32,
            CpuBuffer::Bool(_) => DType::Bool,
        }
    }
    pub fn len(&self) -> usize {
        with_cpu_buffer!(self, v, T => v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A buffer of `n` copies of `value` (converted to `dtype`).
    pub fn filled(dtype: DType, n: usize, value: f64) -> CpuBuffer {
        use super::pool::take_filled;
        match dtype {
            DType::F32 => CpuBuffer::F32(take_filled(n, value as f32)),
            DType::F64 => CpuBuffer::F64(take_filled(n, value)),
            DType::I32 => CpuBuffer::I32(take_filled(n, value as i32)),
            DType::Bool => CpuBuffer::Bool(take_filled(n, (value != 0.0) as u8)),
        }
    }
}

/// Calls `f(offsets)` once per innermost row of a strided iteration over
/// `shape`, where `offsets[k]` is the start of the row in operand `k` (whose
/// strides are `strides[k]`, starting at `starts[k]`). Returns the row length
/// and each operand's inner stride through `f`'s arguments.
pub fn for_each_row<const N: usize>(
    shape: &[usize],
    strides: [&[usize]; N],
    starts: [usize; N],
    mut f: impl FnMut([usize; N], usize, [usize; N]),
) {
    let (cshape, cstrides) = coalesce(shape, &strides);
    if shape.contains(&0) {
        return;
    }
    let nd = cshape.len();
    let inner = cshape[nd - 1];
    let inner_strides: [usize; N] = std::array::from_fn(|k| cstrides[k][nd - 1]);
    let outer: usize = cshape[..nd - 1].iter().product();
    let mut idx: crate::shape::Dims = smallvec::smallvec![0; nd];
    let mut offs = starts;
    for _ in 0..outer {
        f(offs, inner, inner_strides);
        // Advance the multi-index over the outer dims (odometer).
        let mut d = nd - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            for k in 0..N {
                offs[k] += cstrides[k][d];
            }
            if idx[d] < cshape[d] {
                break;
            }
            for k in 0..N {
                offs[k] -= cstrides[k][d] * cshape[d];
            }
            idx[d] = 0;
        }
    }
}

/// The elements of the view `layout` of `src` in row-major order, borrowed
/// when the view is already contiguous (no copy), else gathered.
pub fn contiguous<'a, T: Elem>(src: &'a [T], layout: &Layout) -> std::borrow::Cow<'a, [T]> {
    if layout.is_contiguous() {
        std::borrow::Cow::Borrowed(&src[layout.offset..layout.offset + layout.numel()])
    } else {
        std::borrow::Cow::Owned(gather_strided(src, layout))
    }
}

/// Copies the strided view `layout` of `src` into a new contiguous Vec.
pub fn gather_strided<T: Elem>(src: &[T], layout: &Layout) -> Vec<T> {
    let n = layout.numel();
    let mut out = super::pool::take::<T>(n);
    // An empty view's offset may lie past the end of its buffer.
    if n == 0 {
        return out;
    }
    if layout.is_contiguous() {
        out.copy_from_slice(&src[layout.offset..layout.offset + n]);
        return out;
    }
    let mut pos = 0;
    for_each_row(&layout.shape, [&layout.strides], [layout.offset], |[o], len, [s]| {
        let dst = &mut out[pos..pos + len];
        if s == 1 {
            dst.copy_from_slice(&src[o..o + len]);
        } else {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = src[o + i * s];
            }
        }
        pos += len;
    });
    out
}

/// Writes contiguous `src` (in row-major order of `layout.shape`) into the strided view `layout` of `dst`.
pub fn scatter_strided<T: Elem>(dst: &mut [T], layout: &Layout, src: &[T]) {
    let mut pos = 0;
    // An empty view's offset may lie past the end of its buffer.
    if src.is_empty() {
        return;
    }
    if layout.is_contiguous() {
        dst[layout.offset..layout.offset + src.len()].copy_from_slice(src);
        return;
    }
    for_each_row(&layout.shape, [&layout.strides], [layout.offset], |[o], len, [s]| {
        if s == 1 {
            dst[o..o + len].copy_from_slice(&src[pos..pos + len]);
        } else {
            for i in 0..len {
                dst[o + i * s] = src[pos + i];
            }
        }
        pos += len;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn gather_transposed_view() {
        let src: Vec<f32> = (0..6).map(|x| x as f32).collect();
        // [2,3] transposed to [3,2]
        let l = Layout { shape: smallvec::smallvec![3, 2], strides: smallvec::smallvec![1, 3], offset: 0 };
        assert_eq!(gather_strided(&src, &l), vec![0., 3., 1., 4., 2., 5.]);
        let mut dst = vec![0f32; 6];
        scatter_strided(&mut dst, &l, &[0., 3., 1., 4., 2., 5.]);
        assert_eq!(dst, src);
    }
}
