//! Host memory for the cpu backend: one typed Vec per dtype, the one place a
//! `Layout` becomes an ndarray view (`view`, `view_mut`), and the strided
//! gather/scatter copies built on them.

use crate::dtype::DType;
use crate::shape::{coalesce, Layout};
use ndarray::{
    s, ArrayView, ArrayView2, ArrayViewD, ArrayViewMut, ArrayViewMut2, ArrayViewMutD, Ix2, IxDyn, ShapeBuilder,
};

/// A typed host buffer. Bool masks are stored as one byte per element (0 or 1).
#[derive(Clone, Debug)]
pub enum CpuBuffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Storage only: kernels read it widened to f32 (`backend::half`).
    F16(Vec<half::f16>),
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
impl_elem!(half::f16, F16, f64::from, f16_from_f64);

/// f64 to f16, correctly rounded (to nearest, ties to even) on every target.
///
/// `half::f16::from_f64` is neither: where the processor has F16C it rounds
/// through f32 (twice: 32.70313847889264 lands on a tie and goes the wrong
/// way), and elsewhere (wasm) it rounds from the top 32 bits of the f64 only,
/// so the same cast gave other bits natively than in wasm. Here the first
/// rounding, to f32, is to odd: an inexact result keeps a sticky last bit,
/// which f32's 13 spare bits carry through the one rounding to f16 that
/// follows (Boldo and Melquiond's round-to-odd).
pub fn f16_from_f64(x: f64) -> half::f16 {
    let nearest = x as f32;
    if !x.is_finite() || nearest as f64 == x {
        return half::f16::from_f32(nearest);
    }
    // The f32 neighbour toward zero, its last bit set: odd, and inexact only
    // where x was.
    let toward_zero = if (nearest as f64).abs() > x.abs() { f32::from_bits(nearest.to_bits() - 1) } else { nearest };
    half::f16::from_f32(f32::from_bits(toward_zero.to_bits() | 1))
}
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
            $crate::backend::cpu::CpuBuffer::F16($v) => {
                #[allow(dead_code)]
                type $T = half::f16;
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
            CpuBuffer::F16(_) => DType::F16,
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
            DType::F16 => CpuBuffer::F16(take_filled(n, f16_from_f64(value))),
            DType::I32 => CpuBuffer::I32(take_filled(n, value as i32)),
            DType::Bool => CpuBuffer::Bool(take_filled(n, (value != 0.0) as u8)),
        }
    }
}

/// The view `layout` of `buf` as an ndarray view: shape, strides and offset
/// carry over as they are, and broadcast dims keep stride 0 (ndarray lets a
/// read-only view alias its elements). Every cpu kernel reads its strided
/// operands through this one constructor.
pub fn view<'a, T>(buf: &'a [T], layout: &Layout) -> ArrayViewD<'a, T> {
    // An empty view's offset and strides may reach past its buffer: it has no elements to read.
    if layout.numel() == 0 {
        return ArrayView::from_shape(IxDyn(&layout.shape), &[]).expect("an empty shape");
    }
    let shape = IxDyn(&layout.shape).strides(IxDyn(&layout.strides));
    ArrayView::from_shape(shape, &buf[layout.offset..]).expect("layouts are validated against their buffers")
}

/// The mutable counterpart of `view`. A written view never aliases (dispatch
/// refuses in-place writes into expanded tensors), which ndarray checks.
pub fn view_mut<'a, T>(buf: &'a mut [T], layout: &Layout) -> ArrayViewMutD<'a, T> {
    if layout.numel() == 0 {
        return ArrayViewMut::from_shape(IxDyn(&layout.shape), &mut []).expect("an empty shape");
    }
    let shape = IxDyn(&layout.shape).strides(IxDyn(&layout.strides));
    ArrayViewMut::from_shape(shape, &mut buf[layout.offset..]).expect("written layouts are validated and never alias")
}

/// A buffer from the pool that a kernel needs only while it runs (a gathered
/// copy of a strided input, im2col columns): it goes back to the pool when
/// dropped (`pool::give_back`), as a storage's buffer does, so a training
/// loop reuses it instead of faulting fresh pages in every step.
pub struct Scratch<T: Elem>(Vec<T>);

impl<T: Elem> Scratch<T> {
    /// Holds `v` (normally from `pool::take`) until dropped.
    pub fn new(v: Vec<T>) -> Self {
        Scratch(v)
    }
}

impl<T: Elem> std::ops::Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Elem> std::ops::DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T: Elem> Drop for Scratch<T> {
    fn drop(&mut self) {
        super::pool::give_back(std::mem::take(&mut self.0));
    }
}

/// The elements of a view in row-major order (`contiguous`).
pub enum Contiguous<'a, T: Elem> {
    /// The view was contiguous already: its elements, not copied.
    Borrowed(&'a [T]),
    /// A strided view, gathered into a buffer that returns to the pool.
    Gathered(Scratch<T>),
}

impl<T: Elem> std::ops::Deref for Contiguous<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Contiguous::Borrowed(s) => s,
            Contiguous::Gathered(s) => s,
        }
    }
}

/// The elements of the view `layout` of `src` in row-major order, borrowed
/// when the view is already contiguous (no copy), else gathered.
pub fn contiguous<'a, T: Elem>(src: &'a [T], layout: &Layout) -> Contiguous<'a, T> {
    if layout.is_contiguous() {
        Contiguous::Borrowed(&src[layout.offset..layout.offset + layout.numel()])
    } else {
        Contiguous::Gathered(Scratch::new(gather_strided(src, layout)))
    }
}

/// Copies the strided view `layout` of `src` into a new contiguous Vec (from the pool).
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
    if layout.strides.iter().all(|&s| s == 0) {
        // One value expanded (a backward rule's zeros, a broadcast scalar):
        // a fill, not ndarray's element-by-element copy from stride 0.
        out.fill(src[layout.offset]);
        return out;
    }
    // Merging dims first gives ndarray's copy fewer, longer rows.
    let (shape, strides) = coalesce(&layout.shape, &[&layout.strides]);
    let merged = Layout { shape, strides: strides[0].clone(), offset: layout.offset };
    let dst = Layout::contiguous(&merged.shape);
    let (mut to, from) = (view_mut(&mut out, &dst), view(src, &merged));
    match (to.view_mut().into_dimensionality::<Ix2>(), from.view().into_dimensionality::<Ix2>()) {
        // Two dims left: a transpose (or a strided slice) of a matrix, the
        // common case (weights and activations in backward rules).
        (Ok(to), Ok(from)) => copy_2d(to, from),
        _ => to.assign(&from),
    }
    out
}

/// `to.assign(from)` for matrices, in square tiles when `from`'s rows are
/// strided: a transposed read then touches a few cache lines per tile
/// instead of one per element (backward rules' transposed copies are a
/// large part of a small training step).
fn copy_2d<T: Copy>(mut to: ArrayViewMut2<T>, from: ArrayView2<T>) {
    const TILE: usize = 32;
    let (rows, cols) = from.dim();
    if from.strides()[1] == 1 || rows < TILE || cols < TILE {
        to.assign(&from);
        return;
    }
    for r in (0..rows).step_by(TILE) {
        for c in (0..cols).step_by(TILE) {
            let (r1, c1) = ((r + TILE).min(rows), (c + TILE).min(cols));
            to.slice_mut(s![r..r1, c..c1]).assign(&from.slice(s![r..r1, c..c1]));
        }
    }
}

/// Writes contiguous `src` (in row-major order of `layout.shape`) into the strided view `layout` of `dst`.
pub fn scatter_strided<T: Elem>(dst: &mut [T], layout: &Layout, src: &[T]) {
    // An empty view's offset may lie past the end of its buffer.
    if src.is_empty() {
        return;
    }
    if layout.is_contiguous() {
        dst[layout.offset..layout.offset + src.len()].copy_from_slice(src);
        return;
    }
    let (shape, strides) = coalesce(&layout.shape, &[&layout.strides]);
    let merged = Layout { shape, strides: strides[0].clone(), offset: layout.offset };
    view_mut(dst, &merged).assign(&view(src, &Layout::contiguous(&merged.shape)));
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

    #[test]
    fn tiled_transposes_match_the_definition() {
        // [70, 45] transposed and offset (tiles with ragged edges), and a 3-d permutation.
        let src: Vec<f64> = (0..3200).map(f64::from).collect();
        let t = Layout { shape: smallvec::smallvec![45, 70], strides: smallvec::smallvec![1, 45], offset: 7 };
        let want: Vec<f64> = (0..45).flat_map(|i| (0..70).map(move |j| (7 + i + 45 * j) as f64)).collect();
        assert_eq!(gather_strided(&src, &t), want);
        let p = Layout { shape: smallvec::smallvec![5, 4, 40], strides: smallvec::smallvec![1, 200, 5], offset: 0 };
        let want: Vec<f64> =
            (0..5).flat_map(|a| (0..4).flat_map(move |b| (0..40).map(move |c| (a + 200 * b + 5 * c) as f64))).collect();
        assert_eq!(gather_strided(&src, &p), want);
    }

    #[test]
    fn views_follow_strides_offsets_and_broadcasts() {
        let src: Vec<i32> = (0..12).collect();
        // Column 1 of a [3, 4] matrix, broadcast along a new leading dim of 2: [2, 3].
        let l = Layout { shape: smallvec::smallvec![2, 3], strides: smallvec::smallvec![0, 4], offset: 1 };
        let v = view(&src, &l);
        assert_eq!(v.shape(), &[2, 3]);
        assert_eq!(v.iter().copied().collect::<Vec<_>>(), vec![1, 5, 9, 1, 5, 9]);
        assert_eq!(gather_strided(&src, &l), vec![1, 5, 9, 1, 5, 9]);
        // An empty view whose offset lies past the end reads nothing.
        let empty = Layout { shape: smallvec::smallvec![3, 0], strides: smallvec::smallvec![7, 1], offset: 40 };
        assert_eq!(view(&src, &empty).len(), 0);
        assert!(gather_strided(&src, &empty).is_empty());
        // A written step-2 view touches only its own elements.
        let mut dst = vec![0; 8];
        let every_other = Layout { shape: smallvec::smallvec![2, 2], strides: smallvec::smallvec![4, 2], offset: 1 };
        view_mut(&mut dst, &every_other).fill(7);
        assert_eq!(dst, vec![0, 7, 0, 7, 0, 7, 0, 7]);
    }
}

#[cfg(test)]
mod f16_tests {
    use super::f16_from_f64;
    use half::f16;

    /// The f16 nearest a positive, finite `x` (ties to even): of the three
    /// patterns around a rounding of it, the closest (f64 holds every f16,
    /// and the distances here, exactly).
    fn nearest_f16(x: f64) -> f16 {
        let guess = f16::from_f32(x as f32).to_bits();
        let candidates = [guess.saturating_sub(1), guess, (guess + 1).min(0x7C00)];
        // Infinity stands where 2^16 would be: rounding past MAX goes there.
        let value = |b: u16| if b == 0x7C00 { 65536.0 } else { f16::from_bits(b).to_f64() };
        let distance = |b: u16| (value(b) - x).abs();
        let mut best = candidates[0];
        for &b in &candidates[1..] {
            if distance(b) < distance(best) || (distance(b) == distance(best) && b & 1 == 0) {
                best = b;
            }
        }
        f16::from_bits(best)
    }

    #[test]
    fn f64_to_f16_is_correctly_rounded() {
        // The value that exposed it: half's F16C path rounds it through f32
        // onto a tie (0x5016), its software path from 32 bits (0x5016 too).
        assert_eq!(f16_from_f64(32.70313847889264).to_bits(), 0x5017);
        assert_eq!(f16_from_f64(65520.0), f16::INFINITY); // the tie above f16::MAX rounds up
        assert_eq!(f16_from_f64(65519.99), f16::MAX);
        assert_eq!(f16_from_f64(-0.0).to_bits(), 0x8000);
        assert!(f16_from_f64(f64::NAN).is_nan());
        assert_eq!(f16_from_f64(1e-30).to_bits(), 0);
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Doubles from 2^-26 (f16 subnormals) to 2^16, with random low bits.
            let exp = 0x3E5 + (s >> 52) % 0x2A;
            let x = f64::from_bits((s & 0x000F_FFFF_FFFF_FFFF) | (exp << 52));
            assert_eq!(f16_from_f64(x).to_bits(), nearest_f16(x).to_bits(), "{x:e}");
            assert_eq!(f16_from_f64(-x).to_bits(), nearest_f16(x).to_bits() | 0x8000, "{:e}", -x);
        }
    }
}
