//! Test inputs of the registry cases, and the samples each case is expanded
//! into (in the spirit of PyTorch's OpInfo sample inputs).
//!
//! A case states its inputs once, as fresh contiguous tensors (`Input`). The
//! registry checks then run every case several times, once per `Sample`: the
//! same input specs laid out as transposed, strided (sliced with an offset and
//! a step) and expanded (stride 0) views, plus the empty and 0-d shapes the
//! case lists for itself. Views are made on the device the check runs on
//! (generated on the cpu, moved, then viewed), so a GPU run reads strided
//! operands with its own kernels rather than a contiguous upload.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::random::Generator;
use crate::tensor::Tensor;

/// How to generate one test input (in the dtype the test asks for, for floats).
#[derive(Clone, Debug)]
pub enum Input {
    /// Uniform floats in [lo, hi).
    Uniform(Vec<usize>, f64, f64),
    /// Floats with |x| uniform in [lo, hi) and random sign: keeps kinks (abs,
    /// relu, ...) away from finite-difference steps.
    AwayFromZero(Vec<usize>, f64, f64),
    /// Floats that are distinct per element (no ties for max/min/sort-like ops).
    Distinct(Vec<usize>),
    /// Floats from `levels` evenly spaced values in [lo, hi] (levels >= 2):
    /// equal values are common (ties for maximum/minimum, true `eq` for the
    /// comparisons), and with a power-of-two spacing every value is exact in
    /// f32.
    Grid(Vec<usize>, f64, f64, u32),
    /// Distinct values each drawn exactly twice, in a random order: two-way
    /// ties, never three (so an even split of the gradient between the tied
    /// elements matches central differences: each gets one half).
    Pairs(Vec<usize>),
    /// I32 integers uniform in [lo, hi) (indices, labels).
    Int(Vec<usize>, i32, i32),
    /// A random bool mask.
    Mask(Vec<usize>),
}

/// One way of laying out a case's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sample {
    /// Fresh contiguous tensors (the case as written).
    Contiguous,
    /// Inputs of rank >= 2 are transposed views of their last two axes.
    Transposed,
    /// Inputs of rank >= 1 are views into a larger buffer: an offset on every
    /// axis and a step of 2 on the last.
    Strided,
    /// One axis of size > 1 per input is broadcast from size 1 (stride 0),
    /// where the input's values may repeat.
    Expanded,
    /// The empty shapes the case lists (`Case::also`).
    Empty,
    /// The 0-d shapes the case lists (`Case::also`).
    Scalar,
}

impl Sample {
    pub fn name(self) -> &'static str {
        match self {
            Sample::Contiguous => "contiguous",
            Sample::Transposed => "transposed",
            Sample::Strided => "strided",
            Sample::Expanded => "expanded",
            Sample::Empty => "empty",
            Sample::Scalar => "0-d",
        }
    }
}

impl Input {
    pub fn shape(&self) -> &[usize] {
        match self {
            Input::Uniform(s, ..)
            | Input::AwayFromZero(s, ..)
            | Input::Distinct(s)
            | Input::Grid(s, ..)
            | Input::Pairs(s)
            | Input::Int(s, ..)
            | Input::Mask(s) => s,
        }
    }

    /// The same spec with another shape (for the empty and 0-d samples).
    pub fn with_shape(&self, shape: &[usize]) -> Input {
        let s = shape.to_vec();
        match self {
            Input::Uniform(_, lo, hi) => Input::Uniform(s, *lo, *hi),
            Input::AwayFromZero(_, lo, hi) => Input::AwayFromZero(s, *lo, *hi),
            Input::Distinct(_) => Input::Distinct(s),
            Input::Grid(_, lo, hi, n) => Input::Grid(s, *lo, *hi, *n),
            Input::Pairs(_) => Input::Pairs(s),
            Input::Int(_, lo, hi) => Input::Int(s, *lo, *hi),
            Input::Mask(_) => Input::Mask(s),
        }
    }

    /// The axis the expanded sample broadcasts: the first of size > 1, where
    /// repeated values keep the spec's promise (not for distinct values or pairs).
    fn expand_axis(&self) -> Option<usize> {
        if matches!(self, Input::Distinct(_) | Input::Pairs(_)) {
            return None;
        }
        self.shape().iter().position(|&d| d > 1)
    }

    /// Whether `sample` lays this input out differently from `Contiguous`.
    pub fn varies_in(&self, sample: Sample) -> bool {
        let s = self.shape();
        match sample {
            Sample::Transposed => s.len() >= 2 && s[s.len() - 2..].iter().all(|&d| d > 1),
            Sample::Strided => !s.is_empty() && s.iter().all(|&d| d > 0),
            Sample::Expanded => self.expand_axis().is_some(),
            Sample::Contiguous | Sample::Empty | Sample::Scalar => false,
        }
    }

    /// A contiguous cpu tensor for this spec, drawn from `g` (floats in
    /// `dtype`; indices are I32 and masks Bool whatever `dtype` says).
    pub fn generate(&self, dtype: DType, g: &mut Generator) -> Result<Tensor> {
        let n: usize = self.shape().iter().product();
        let floats = |v: Vec<f64>| Tensor::from_vec(v, self.shape())?.to_dtype(dtype);
        match self {
            Input::Uniform(_, lo, hi) => floats((0..n).map(|_| lo + (hi - lo) * g.uniform()).collect()),
            Input::AwayFromZero(_, lo, hi) => floats(
                (0..n)
                    .map(|_| {
                        let m = lo + (hi - lo) * g.uniform();
                        if g.uniform() < 0.5 {
                            -m
                        } else {
                            m
                        }
                    })
                    .collect(),
            ),
            Input::Distinct(_) => {
                // Evenly spaced values in a random order: no ties, and gaps far
                // wider than any finite-difference step.
                let mut v: Vec<f64> = (0..n).map(|i| -1.0 + 2.0 * (i as f64 + 0.5) / n as f64).collect();
                shuffle(&mut v, g);
                floats(v)
            }
            Input::Grid(_, lo, hi, levels) => {
                let steps = (*levels).max(2) - 1;
                floats(
                    (0..n)
                        .map(|_| lo + (hi - lo) * (g.next_u64() % (steps as u64 + 1)) as f64 / steps as f64)
                        .collect(),
                )
            }
            Input::Pairs(_) => {
                let m = n.div_ceil(2);
                let mut v: Vec<f64> = (0..n).map(|i| -1.0 + 2.0 * ((i / 2) as f64 + 0.5) / m as f64).collect();
                shuffle(&mut v, g);
                floats(v)
            }
            Input::Int(_, lo, hi) => {
                let span = (*hi as i64 - *lo as i64).max(1) as u64;
                Tensor::from_vec(
                    (0..n).map(|_| (*lo as i64 + (g.next_u64() % span) as i64) as i32).collect::<Vec<_>>(),
                    self.shape(),
                )
            }
            Input::Mask(_) => {
                Tensor::from_vec((0..n).map(|_| (g.uniform() < 0.5) as u8).collect::<Vec<u8>>(), self.shape())
            }
        }
    }

    /// This input laid out as `sample` on `device`: generated on the cpu (the
    /// larger source buffer of a strided view, the size-1 axis of an expanded
    /// one), moved to `device`, then viewed there. Shapes are the spec's; the
    /// empty and 0-d samples come in through `with_shape`.
    pub fn materialise(&self, sample: Sample, dtype: DType, g: &mut Generator, device: &Device) -> Result<Tensor> {
        if !self.varies_in(sample) {
            return self.generate(dtype, g)?.to(device);
        }
        let shape = self.shape();
        let r = shape.len();
        match sample {
            Sample::Transposed => {
                let mut src = shape.to_vec();
                src.swap(r - 2, r - 1);
                self.with_shape(&src).generate(dtype, g)?.to(device)?.transpose(-2, -1)
            }
            Sample::Strided => {
                // One extra element before each axis, and every other element
                // of the last: offset > 0 and no axis with its natural stride.
                let mut src: Vec<usize> = shape.iter().map(|&d| d + 1).collect();
                src[r - 1] = 2 * shape[r - 1] + 1;
                let mut t = self.with_shape(&src).generate(dtype, g)?.to(device)?;
                for (axis, &d) in shape.iter().enumerate().take(r - 1) {
                    t = t.narrow(axis as isize, 1, d)?;
                }
                t.slice((r - 1) as isize, 1, (2 * shape[r - 1] + 1) as isize, 2)
            }
            Sample::Expanded => {
                let axis = self.expand_axis().expect("varies_in checked the axis");
                let mut src = shape.to_vec();
                src[axis] = 1;
                let target: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
                self.with_shape(&src).generate(dtype, g)?.to(device)?.expand(&target)
            }
            Sample::Contiguous | Sample::Empty | Sample::Scalar => unreachable!("no view for {sample:?}"),
        }
    }
}

/// Fisher-Yates with the case's generator (reproducible on every target).
fn shuffle(v: &mut [f64], g: &mut Generator) {
    for i in (1..v.len()).rev() {
        v.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::{Input, Sample};
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::random::Generator;

    fn lay(spec: &Input, s: Sample) -> crate::tensor::Tensor {
        spec.materialise(s, DType::F64, &mut Generator::new(1), &Device::Cpu).unwrap()
    }

    #[test]
    fn each_sample_has_the_layout_it_promises() {
        let spec = Input::Uniform(vec![3, 4], -1.0, 1.0);
        let c = lay(&spec, Sample::Contiguous);
        assert!(c.is_contiguous() && c.layout().offset == 0);
        let t = lay(&spec, Sample::Transposed);
        assert_eq!((t.shape(), t.layout().strides.as_slice()), (&[3, 4][..], &[1, 3][..]));
        let s = lay(&spec, Sample::Strided);
        // A [4, 9] buffer viewed from (1, 1) with steps (9, 2).
        assert_eq!((s.shape(), s.layout().strides.as_slice(), s.layout().offset), (&[3, 4][..], &[9, 2][..], 10));
        let e = lay(&spec, Sample::Expanded);
        assert_eq!((e.shape(), e.layout().strides.as_slice()), (&[3, 4][..], &[0, 1][..]));
        let rows = e.to_vec::<f64>().unwrap();
        assert!(rows.chunks(4).all(|r| r == &rows[..4]), "an expanded axis repeats its values");
    }

    #[test]
    fn specs_that_promise_distinct_values_or_pairs_keep_the_promise() {
        for spec in [Input::Distinct(vec![4, 6]), Input::Pairs(vec![4, 6])] {
            assert!(!spec.varies_in(Sample::Expanded), "{spec:?} must not be expanded (repeats)");
            for s in [Sample::Contiguous, Sample::Transposed, Sample::Strided] {
                let mut v = lay(&spec, s).to_vec::<f64>().unwrap();
                v.sort_by(f64::total_cmp);
                let most = v.chunk_by(|a, b| a == b).map(<[f64]>::len).max().unwrap();
                let allowed = if matches!(spec, Input::Pairs(_)) { 2 } else { 1 };
                assert!(most <= allowed, "{spec:?} as {s:?}: a value repeats {most} times");
            }
        }
        let mut pairs = lay(&Input::Pairs(vec![4, 6]), Sample::Contiguous).to_vec::<f64>().unwrap();
        pairs.sort_by(f64::total_cmp);
        assert!(pairs.chunks(2).all(|p| p[0] == p[1]), "every value of Pairs appears twice: {pairs:?}");
    }

    #[test]
    fn grid_values_are_exact_steps() {
        let v = lay(&Input::Grid(vec![50], -2.0, 2.0, 65), Sample::Contiguous).to_vec::<f64>().unwrap();
        assert!(v.iter().all(|x| (x * 16.0).fract() == 0.0 && x.abs() <= 2.0), "{v:?}");
    }
}
