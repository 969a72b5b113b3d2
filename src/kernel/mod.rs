//! What the backends run, as data: the kernel descriptions both backends
//! implement. This module sits below `backend`, `dispatch` and `ops` and
//! imports only the core types, so the registry (`ops`) can describe its
//! kernels here and the backends can run them without knowing any op.

mod check;
pub mod custom;
pub mod fused;
pub mod math;
pub mod random;
mod sequence;
mod serial;
mod spec;
pub(crate) mod wgsl_text;

pub use check::{CheckWhat, Effect, IndexCheck};
pub use custom::CustomKernel;
pub use fused::{Epilogue, FusedElementwise, FusedOp, FusedStep, Operand};
pub use random::Distribution;
pub use sequence::Sequence;
pub use serial::{intern, unary_row, with_rows, RowTable};
pub use spec::{KernelSpec, Scalar};

/// The elementwise table rows, as (name, WGSL expression): the registry
/// (`ops::gpu_kernel_sources` above the backends) hands them to
/// `backend::shader_sources`, so a backend lists every instantiation of its
/// templates without knowing which ops exist.
#[derive(Default)]
pub struct RowSources {
    pub unary: Vec<(&'static str, &'static str)>,
    pub binary: Vec<(&'static str, &'static str)>,
    pub compare: Vec<(&'static str, &'static str)>,
}

/// What a reduction computes along its axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReduceKind {
    Sum,
    Max,
    Min,
}

/// What a scan (`KernelSpec::Scan`) accumulates along its axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ScanKind {
    Sum,
    Prod,
}

/// The geometry of one unfold/fold: input [n, c, h, w], kernel, stride,
/// padding, dilation, and the resulting grid of out_h x out_w windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Window2d {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub out_h: usize,
    pub out_w: usize,
}

impl Window2d {
    /// Rows of the column matrix per image (c * kh * kw).
    pub fn col_rows(&self) -> usize {
        self.c * self.kernel[0] * self.kernel[1]
    }
    /// Windows per image (out_h * out_w).
    pub fn windows(&self) -> usize {
        self.out_h * self.out_w
    }
    /// Whether the output grid is the one the kernel, stride, padding and
    /// dilation give over the input (none of them zero).
    pub fn is_consistent(&self) -> bool {
        let side = |size: usize, k: usize, s: usize, p: usize, d: usize, out: usize| {
            if k == 0 || s == 0 || d == 0 {
                return false;
            }
            let span = d * (k - 1) + 1;
            size + 2 * p >= span && (size + 2 * p - span) / s + 1 == out
        };
        side(self.h, self.kernel[0], self.stride[0], self.padding[0], self.dilation[0], self.out_h)
            && side(self.w, self.kernel[1], self.stride[1], self.padding[1], self.dilation[1], self.out_w)
    }
}

/// The window geometry of a max-pool argmax over [h, w] planes (dilation 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PoolWindows {
    pub h: usize,
    pub w: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}

/// Slice kernel of a unary op: `out[i] = f(x[i], params)`.
pub type UnarySlice<T> = fn(&[T], &mut [T], [T; 2]);

/// Slice kernels of a binary op, for the contiguous/broadcast combinations.
pub struct BinarySlices<T, U> {
    pub vv: fn(&[T], &[T], &mut [U]),
    pub vs: fn(&[T], T, &mut [U]),
    pub sv: fn(T, &[T], &mut [U]),
    pub ss: fn(T, T) -> U,
}

// Manual impls: derive would require T: Clone.
impl<T, U> Clone for BinarySlices<T, U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, U> Copy for BinarySlices<T, U> {}

/// A unary row's cpu kernels for one route of the math (`math::fast` or
/// `math::portable`): one per float dtype.
#[derive(Clone, Copy)]
pub struct UnaryFns {
    pub f32: UnarySlice<f32>,
    pub f64: UnarySlice<f64>,
}

/// A unary row's kernels: the cpu's, built twice from one formula (the
/// target's own math, and the portable math of deterministic mode), and a
/// WGSL expression over `x` (with scalars `p0`, `p1`) for the GPU template.
/// A row is identified by its op's name (equality and hashing use it).
///
/// wasm32 builds the portable kernels only: there the target's own math is
/// compiler-builtins' copy of the same libm code (`kernel/math.rs`), so a
/// second set would double the elementwise kernels in the package for nothing.
pub struct UnaryKernel {
    pub name: &'static str,
    #[cfg(not(target_arch = "wasm32"))]
    pub fast: UnaryFns,
    pub portable: UnaryFns,
    pub wgsl: &'static str,
}

impl UnaryKernel {
    /// The cpu kernels of the current mode (`crate::determinism`).
    #[inline]
    pub fn cpu(&self) -> &UnaryFns {
        #[cfg(not(target_arch = "wasm32"))]
        if !crate::determinism::is_deterministic() {
            return &self.fast;
        }
        &self.portable
    }
}

/// A binary row's cpu kernels for one route of the math, one per float dtype.
#[derive(Clone, Copy)]
pub struct BinaryFns {
    pub f32: BinarySlices<f32, f32>,
    pub f64: BinarySlices<f64, f64>,
}

/// A binary row's kernels, built twice like a unary row's (once on wasm32),
/// and a WGSL expression over `a`, `b`.
pub struct BinaryKernel {
    pub name: &'static str,
    #[cfg(not(target_arch = "wasm32"))]
    pub fast: BinaryFns,
    pub portable: BinaryFns,
    pub wgsl: &'static str,
}

impl BinaryKernel {
    /// The cpu kernels of the current mode (`crate::determinism`).
    #[inline]
    pub fn cpu(&self) -> &BinaryFns {
        #[cfg(not(target_arch = "wasm32"))]
        if !crate::determinism::is_deterministic() {
            return &self.fast;
        }
        &self.portable
    }
}

/// A comparison's kernels, one per dtype, producing masks, and a WGSL bool expression.
pub struct CompareKernel {
    pub name: &'static str,
    pub f32: BinarySlices<f32, u8>,
    pub f64: BinarySlices<f64, u8>,
    pub i32: BinarySlices<i32, u8>,
    pub bool: BinarySlices<u8, u8>,
    pub wgsl: &'static str,
}

/// Rows are identified by name: one static row per op.
macro_rules! row_identity {
    ($($row:ident),*) => {$(
        impl std::fmt::Debug for $row {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($row), self.name)
            }
        }
        impl PartialEq for $row {
            fn eq(&self, other: &Self) -> bool {
                self.name == other.name
            }
        }
        impl Eq for $row {}
        impl std::hash::Hash for $row {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.name.hash(h);
            }
        }
    )*};
}
row_identity!(UnaryKernel, BinaryKernel, CompareKernel);
