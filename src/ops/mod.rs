//! THE REGISTRY (DESIGN principles 1-3, 7). Every op has one `OpDef`: its name,
//! its backward rule (tensor code, so it can be differentiated again), and the
//! test cases the generated gradchecks run. The forward function that owns the
//! shape/dtype rule and calls the backend sits next to the `OpDef`.
//!
//! Elementwise ops are table rows (`unary.rs`, `binary.rs`); composite ops are
//! built from primitives and get their gradients from them.

pub mod args;
pub mod arrange;
pub mod attention;
pub mod binary;
pub mod compare;
pub mod composite;
pub mod conv;
pub mod conv_variants;
pub mod einsum;
pub mod index;
pub mod join;
pub mod logical;
pub mod matmul;
pub mod movement;
pub mod norm;
pub mod normalize;
pub mod reduce;
#[cfg(feature = "testing")]
pub mod reference;
pub mod resample;
#[cfg(feature = "testing")]
pub mod sample;
pub mod scan;
pub mod scatter;
pub mod signature;
pub mod slice;
pub mod sort;
pub mod surface;
pub mod unary;

#[cfg(feature = "testing")]
pub use reference::{Host, Reference};
#[cfg(feature = "testing")]
pub use sample::{Input, Sample};

use crate::autograd::node::BackwardCtx;
#[cfg(feature = "testing")]
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Dims;
use crate::tensor::Tensor;

/// Runs a composite op's body and reports any error of the ops it is made of
/// under the composite's name: the user called `logsumexp`, not `max`.
pub(crate) fn as_op<T>(op: &'static str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    body().map_err(|e| e.renamed(op))
}

/// A backward rule: given the context and the gradient of each output, the
/// gradient of each input (None where an input needs none).
pub type BackwardFn = fn(&BackwardCtx, &[Tensor]) -> Result<Vec<Option<Tensor>>>;

/// An op's forward over its arguments as data (the signature's parameters).
#[derive(Clone, Copy)]
pub enum Forward {
    /// One tensor (`-> Tensor`).
    One(fn(&args::Args) -> Result<Tensor>),
    /// PyTorch's (values, indices) pair (`-> (Tensor, Tensor<int32>)`:
    /// `sort`, `topk`), which JS returns as a two-element array.
    Pair(fn(&args::Args) -> Result<(Tensor, Tensor)>),
}

/// An op's output tensors, in order (one, or a pair), without a heap
/// allocation per call.
pub type Outputs = smallvec::SmallVec<[Tensor; 2]>;

impl Forward {
    /// Runs the op: its output tensors in order.
    pub fn run(&self, a: &args::Args) -> Result<Outputs> {
        match self {
            Forward::One(f) => Ok(smallvec::smallvec![f(a)?]),
            Forward::Pair(f) => f(a).map(|(v, i)| smallvec::smallvec![v, i]),
        }
    }
}

/// How an op relates to autodiff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Has a cpu kernel and a backward rule.
    Primitive,
    /// Built from other ops; differentiable through them.
    Composite,
    /// Produces masks, indices or other non-differentiable results.
    NoGrad,
}

/// One registry entry.
pub struct OpDef {
    pub name: &'static str,
    /// The user-facing call in PyTorch's notation (`signature.rs`): the op
    /// list's table (docs/ops.md), the JS method and its TypeScript declaration follow from it.
    pub signature: &'static str,
    /// One line saying what the op computes (docs/ops.md, JS docs).
    pub doc: &'static str,
    /// Runs the op from its arguments as data (`args.rs`): what the JS
    /// methods call. `None` while the op's JS method is still written by hand.
    pub forward: Option<Forward>,
    pub kind: OpKind,
    pub backward: Option<BackwardFn>,
    /// Gradchecks also check second derivatives for this op.
    pub second_order: bool,
    /// The cases the generated tests run (an op without cases fails the suite).
    /// Only with the cargo feature `testing`, so the published builds carry none.
    #[cfg(feature = "testing")]
    pub cases: fn() -> Vec<Case>,
}

/// One test case: input specs, how to call the op on them, and the
/// independent truth its forward is checked against. `cases_of` expands each
/// case into its samples (`sample.rs`); `sample` says which one this is.
#[cfg(feature = "testing")]
#[derive(Clone)]
pub struct Case {
    pub name: &'static str,
    pub inputs: Vec<Input>,
    pub run: fn(&[Tensor]) -> Result<Tensor>,
    /// Scales the gradcheck tolerances (1.0 normally; larger only where the
    /// case itself loses precision).
    pub tol: f64,
    /// What the forward must compute, from a naive f64 definition
    /// (`reference.rs`); every case has one (`testing::registry_problems`).
    pub reference: Option<Reference>,
    /// The case's outputs may hold NaN or infinities (compared exactly, NaN
    /// with NaN); without this a non-finite value anywhere is a failure.
    pub nonfinite: bool,
    /// The highest derivative order checked: 2 (where the op is marked
    /// second-order), 1 at ties (once differentiable only), 0 for forward only.
    pub max_order: u8,
    /// The central-difference step; `None` for `testing::EPS`.
    pub eps: Option<f64>,
    /// Input shapes for the empty and 0-d samples (one shape per input).
    pub shapes: Vec<(Sample, Vec<Vec<usize>>)>,
    /// The layout of this instance (`Contiguous` as written).
    pub sample: Sample,
}

#[cfg(feature = "testing")]
impl Case {
    pub fn new(name: &'static str, inputs: Vec<Input>, run: fn(&[Tensor]) -> Result<Tensor>) -> Case {
        Case {
            name,
            inputs,
            run,
            tol: 1.0,
            reference: None,
            nonfinite: false,
            max_order: 2,
            eps: None,
            shapes: Vec::new(),
            sample: Sample::Contiguous,
        }
    }
    /// Loosens this case's gradcheck tolerances by `factor` (say why at the call).
    pub fn tolerance(mut self, factor: f64) -> Case {
        self.tol = factor;
        self
    }
    /// The expected output, computed naively from the inputs' values.
    pub fn reference(mut self, f: fn(&[Host]) -> Host) -> Case {
        self.reference = Some(Reference::Values(f));
        self
    }
    /// A property the output must have, where the exact output is random.
    pub fn property(mut self, f: fn(&[Host], &Host) -> std::result::Result<(), String>) -> Case {
        self.reference = Some(Reference::Property(f));
        self
    }
    /// Allows NaN and infinities in the outputs (say why at the call).
    pub fn nonfinite(mut self) -> Case {
        self.nonfinite = true;
        self
    }
    /// Checks gradients to first order only (say why at the call: ties).
    pub fn first_order_only(mut self) -> Case {
        self.max_order = self.max_order.min(1);
        self
    }
    /// Checks the forward only (say why at the call).
    pub fn forward_only(mut self) -> Case {
        self.max_order = 0;
        self
    }
    /// Another central-difference step (say why at the call).
    pub fn step(mut self, eps: f64) -> Case {
        self.eps = Some(eps);
        self
    }
    /// Also runs the case with these input shapes, as the `sample` (`Empty` or `Scalar`).
    pub fn also(mut self, sample: Sample, shapes: &[&[usize]]) -> Case {
        debug_assert!(matches!(sample, Sample::Empty | Sample::Scalar), "only empty and 0-d samples take shapes");
        self.shapes.push((sample, shapes.iter().map(|s| s.to_vec()).collect()));
        self
    }

    /// The name and, for any other sample than `Contiguous`, the sample: what failures print.
    pub fn label(&self) -> String {
        match self.sample {
            Sample::Contiguous => self.name.to_string(),
            s => format!("{} [{}]", self.name, s.name()),
        }
    }

    /// This case once per sample that lays out some input differently, the
    /// written (contiguous) case first.
    pub fn expand(&self) -> Vec<Case> {
        let mut out = vec![self.clone()];
        for sample in [Sample::Transposed, Sample::Strided, Sample::Expanded] {
            if self.inputs.iter().any(|i| i.varies_in(sample)) {
                out.push(Case { sample, ..self.clone() });
            }
        }
        for (sample, _) in &self.shapes {
            out.push(Case { sample: *sample, ..self.clone() });
        }
        out
    }

    /// The input specs of this sample (the case's, or its empty/0-d shapes).
    pub fn input_specs(&self) -> Vec<Input> {
        match self.shapes.iter().find(|(s, _)| *s == self.sample) {
            Some((_, shapes)) => self.inputs.iter().zip(shapes).map(|(i, s)| i.with_shape(s)).collect(),
            None => self.inputs.clone(),
        }
    }

    /// The case's inputs for run `k` of op `op` on `device`, reproducible
    /// across test files and targets (the gradcheck, the GPU parity test and
    /// the browser draw the same values).
    pub fn make_inputs_on(&self, op: &str, k: usize, dtype: DType, device: &Device) -> Result<Vec<Tensor>> {
        let mut g = crate::random::Generator::new(case_seed(op, k));
        self.input_specs().iter().map(|s| s.materialise(self.sample, dtype, &mut g, device)).collect()
    }

    /// `make_inputs_on` the cpu.
    pub fn make_inputs(&self, op: &str, k: usize, dtype: DType) -> Result<Vec<Tensor>> {
        self.make_inputs_on(op, k, dtype, &Device::Cpu)
    }
}

/// Every sample of every case of `def`, in order: what the checks index.
#[cfg(feature = "testing")]
pub fn cases_of(def: &OpDef) -> Vec<Case> {
    (def.cases)().iter().flat_map(Case::expand).collect()
}

/// The seed of case `k` of op `name` (FNV-1a of the name, mixed with `k`).
#[cfg(feature = "testing")]
pub fn case_seed(name: &str, k: usize) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)) ^ k as u64
}

/// Attributes a node stores for its backward rule (records are data).
#[derive(Clone, Debug, PartialEq)]
pub enum Attrs {
    None,
    /// Scalar parameters (exponent, slope, clamp bounds, ...).
    Scalars([f64; 2]),
    /// Reduced axes (sorted, normalised) and keepdim.
    Reduce {
        axes: Dims,
        keepdim: bool,
    },
    /// A single axis (index_select, gather, concat, argmax, ...).
    Axis(usize),
    /// A scan's axis and direction (`reverse`: from the last element).
    Scan {
        axis: usize,
        reverse: bool,
    },
    /// A target shape (reshape, expand) or a source shape (sum_to).
    Shape(Dims),
    /// A permutation of the axes.
    Perm(Dims),
    /// A strided slice along one axis: elements start, start+step, ... (len of
    /// them) of an axis of size `dim`.
    Slice {
        axis: usize,
        start: usize,
        step: usize,
        len: usize,
        dim: usize,
    },
    /// Sizes of consecutive pieces along an axis (concat).
    Sizes {
        axis: usize,
        sizes: Dims,
    },
    /// Constant padding: (before, after) per axis, from the first axis.
    Pad {
        pads: Vec<(usize, usize)>,
        value: f64,
    },
    /// 2-D sliding windows: kernel, stride, padding, dilation and the input's spatial size.
    Window {
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        input: [usize; 2],
    },
    /// A target dtype (cast).
    DType(DType),
}

/// Every op, for the generated tests and the docs.
pub fn registry() -> Vec<&'static OpDef> {
    families().into_iter().flat_map(|(_, ops)| ops).collect()
}

/// The registry by family, in the order the op table (docs/ops.md) lists them.
pub fn families() -> Vec<(&'static str, Vec<&'static OpDef>)> {
    vec![
        ("Unary elementwise", unary::ops()),
        ("Binary elementwise (broadcast, no implicit dtype promotion)", binary::ops()),
        ("Comparison and selection", compare::ops()),
        ("Tests of values and masks", logical::ops()),
        ("Reductions", [reduce::ops(), norm::ops(), scan::reductions()].concat()),
        ("Scans and sorting", [scan::ops(), sort::ops()].concat()),
        ("Linear algebra", [matmul::ops(), einsum::ops()].concat()),
        ("Movement (views where strides allow)", movement::ops()),
        ("Rearrangement (copies)", arrange::ops()),
        ("Joining and padding", join::ops()),
        ("Indexing", [index::ops(), scatter::ops()].concat()),
        ("Convolution and pooling (NCHW)", [conv::ops(), conv_variants::ops()].concat()),
        ("Resampling", resample::ops()),
        ("Neural-network functions and losses", [composite::ops(), normalize::ops(), attention::ops()].concat()),
    ]
}

/// The op list's table of registry ops (docs/ops.md), generated from each
/// entry's signature and doc line (`tests/core/readme.rs` fails when the page's
/// copy differs): one table per family.
pub fn op_table_markdown() -> String {
    let mut out = String::new();
    for (family, ops) in families() {
        out += &format!(
            "**{family}**\n\n| op | call (PyTorch notation; JS uses camelCase) | what it does |\n| --- | --- | --- |\n"
        );
        for def in ops {
            let kind = match def.kind {
                OpKind::Primitive => "",
                OpKind::Composite => " (composite)",
                OpKind::NoGrad => " (no grad)",
            };
            // GitHub's tables need `\|` for a pipe, even inside code spans.
            let cell = |s: &str| s.replace('|', "\\|");
            out += &format!("| `{}`{kind} | `{}` | {} |\n", def.name, cell(def.signature), cell(def.doc));
        }
        out += "\n";
    }
    out
}

/// Every WGSL source the GPU backend can build for this registry: its fixed
/// kernel families plus one instantiation per elementwise table row (for
/// validation with naga natively and with the browser's compiler).
#[cfg(feature = "gpu")]
pub fn gpu_kernel_sources() -> Vec<(String, String)> {
    let rows = crate::kernel::RowSources {
        unary: unary::rows().into_iter().map(|r| (r.op.name, r.kernel.wgsl)).collect(),
        binary: binary::rows().into_iter().map(|r| (r.op.name, r.kernel.wgsl)).collect(),
        compare: compare::rows().into_iter().map(|r| (r.op.name, r.kernel.wgsl)).collect(),
    };
    crate::backend::shader_sources(&rows)
}

/// Every elementwise table row, for reading programs that name them
/// (`program::Program::from_json`).
pub fn row_table() -> crate::kernel::RowTable {
    crate::kernel::RowTable {
        unary: unary::rows().into_iter().map(|r| &r.kernel).collect(),
        binary: binary::rows().into_iter().map(|r| &r.kernel).collect(),
        compare: compare::rows().into_iter().map(|r| &r.kernel).collect(),
    }
}

/// The one device check every multi-input op runs (DESIGN: placement rules).
pub(crate) fn same_device(op: &'static str, ts: &[&Tensor]) -> Result<()> {
    if let Some(first) = ts.first() {
        let d = first.device();
        if let Some(bad) = ts.iter().find(|t| t.device() != d) {
            return Err(Error::Device { op, found: format!("{} and {}", d, bad.device()) });
        }
    }
    Ok(())
}

/// Rejects non-float operands of ops that only make sense on floats.
pub(crate) fn expect_float(op: &'static str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        return Err(Error::dtype(op, format!("expected a float tensor, got {} of shape {:?}", t.dtype(), t.shape())));
    }
    Ok(())
}

/// Rejects operands whose dtypes differ (no implicit promotion).
pub(crate) fn same_dtype(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "dtypes differ: {} {:?} vs {} {:?} (cast one with to_dtype)",
                a.dtype(),
                a.shape(),
                b.dtype(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

/// A registry entry with no kernel and no backward rule of its own: its
/// forward composes other ops, which give both backends, every derivative
/// order (`second_order` defaults to true) and capture.
macro_rules! composite_op {
    ($NAME:ident, $name:literal, sig: $sig:literal, doc: $doc:literal, fwd: $fw:expr, cases: $cases:expr) => {
        $crate::ops::composite_op!($NAME, $name, sig: $sig, doc: $doc, fwd: $fw, second_order: true, cases: $cases);
    };
    ($NAME:ident, $name:literal, sig: $sig:literal, doc: $doc:literal, fwd: $fw:expr, second_order: $so:expr, cases: $cases:expr) => {
        static $NAME: $crate::ops::OpDef = $crate::ops::OpDef {
            name: $name,
            signature: $sig,
            doc: $doc,
            forward: Some($crate::ops::Forward::One($fw)),
            kind: $crate::ops::OpKind::Composite,
            backward: None,
            second_order: $so,
            #[cfg(feature = "testing")]
            cases: $cases,
        };
    };
}
pub(crate) use composite_op;
