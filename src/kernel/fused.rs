//! A fused elementwise kernel as data: a short straight-line program of
//! elementwise steps (the table rows, where, casts, copies) over N input
//! views, each broadcast to the output shape, writing one contiguous output
//! (the last step's value). `program::fuse` builds these from chains of
//! elementwise instructions; the cpu backend runs one pass over the output
//! in chunks with the rows' own slice kernels (so a fused kernel computes
//! eager's bits), the GPU backend generates one WGSL kernel per distinct
//! program.

use super::{BinaryKernel, CompareKernel, Scalar, UnaryKernel};
use crate::dtype::DType;
use std::fmt;

/// Inputs a fused kernel may read: a WebGPU device without raised limits
/// binds 8 storage buffers per shader stage, the output being one of them.
pub const MAX_INPUTS: usize = 7;
/// Steps a fused kernel may have (keeps generated kernels and their
/// parameter blocks small).
pub const MAX_STEPS: usize = 32;

/// What one step computes (the elementwise kernel specs, without their views).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusedOp {
    /// `row(x, params)`; args `[x]`.
    Unary {
        #[serde(with = "super::serial::by_name")]
        row: &'static UnaryKernel,
        params: [Scalar; 2],
    },
    /// `row(a, b)`; args `[a, b]`.
    Binary {
        #[serde(with = "super::serial::by_name")]
        row: &'static BinaryKernel,
    },
    /// A comparison row, a bool mask; args `[a, b]`.
    Compare {
        #[serde(with = "super::serial::by_name")]
        row: &'static CompareKernel,
    },
    /// `c ? a : b`; args `[c, a, b]`.
    Where,
    /// A conversion to `to` (as `KernelSpec::Cast`); args `[x]`.
    Cast { to: DType },
    /// The value itself (a `contiguous()` copy inside a chain); args `[x]`.
    Copy,
}

impl FusedOp {
    /// How many operands the step reads.
    pub fn arity(&self) -> usize {
        match self {
            FusedOp::Unary { .. } | FusedOp::Cast { .. } | FusedOp::Copy => 1,
            FusedOp::Binary { .. } | FusedOp::Compare { .. } => 2,
            FusedOp::Where => 3,
        }
    }

    /// The step's scalars (a unary row's two params).
    pub fn scalars(&self) -> &[Scalar] {
        match self {
            FusedOp::Unary { params, .. } => params,
            _ => &[],
        }
    }

    /// The step's scalars, to set (`KernelSpec::set_scalar`).
    pub fn scalars_mut(&mut self) -> &mut [Scalar] {
        match self {
            FusedOp::Unary { params, .. } => params,
            _ => &mut [],
        }
    }

    /// The step's name (`relu`, `add`, `lt`, `where`, `cast_f32`, `copy`).
    pub fn name(&self) -> String {
        match self {
            FusedOp::Unary { row, .. } => row.name.into(),
            FusedOp::Binary { row } => row.name.into(),
            FusedOp::Compare { row } => row.name.into(),
            FusedOp::Where => "where".into(),
            FusedOp::Cast { to } => format!("cast_{}", to.name()),
            FusedOp::Copy => "copy".into(),
        }
    }
}

/// What a step reads: an input view or an earlier step's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operand {
    Input(usize),
    Step(usize),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Input(k) => write!(f, "x{k}"),
            Operand::Step(j) => write!(f, "t{j}"),
        }
    }
}

/// One step: `op` over `args`, giving a value of `dtype`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FusedStep {
    pub op: FusedOp,
    pub args: Vec<Operand>,
    pub dtype: DType,
}

/// The fused kernel: the dtypes of its input views (in the order the views
/// are passed) and its steps in order; the output is the last step's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FusedElementwise {
    pub inputs: Vec<DType>,
    pub steps: Vec<FusedStep>,
}

impl FusedElementwise {
    /// `fused:mul_scalar+add+relu`.
    pub fn name(&self) -> String {
        let steps: Vec<String> = self.steps.iter().map(|s| s.op.name()).collect();
        format!("fused:{}", steps.join("+"))
    }

    /// The output's dtype (the last step's).
    pub fn dtype(&self) -> Option<DType> {
        self.steps.last().map(|s| s.dtype)
    }

    /// Checks that the program is well formed for `inputs` (their dtypes):
    /// every operand exists and comes before its reader, each step reads
    /// dtypes its kernel takes and gives the dtype it says. A backend runs
    /// only a checked program, so a malformed spec is an error, not a panic.
    pub fn check(&self, inputs: &[DType]) -> Result<(), String> {
        if inputs != self.inputs.as_slice() {
            return Err(format!("expects inputs of dtypes {:?}, got {inputs:?}", self.inputs));
        }
        if self.steps.is_empty() {
            return Err("has no steps".into());
        }
        for (j, step) in self.steps.iter().enumerate() {
            if step.args.len() != step.op.arity() {
                return Err(format!(
                    "step {j} ({}) takes {} operands, got {}",
                    step.op.name(),
                    step.op.arity(),
                    step.args.len()
                ));
            }
            let mut dts = Vec::with_capacity(step.args.len());
            for a in &step.args {
                dts.push(match *a {
                    Operand::Input(k) if k < self.inputs.len() => self.inputs[k],
                    Operand::Step(i) if i < j => self.steps[i].dtype,
                    _ => return Err(format!("step {j} reads {a}, which does not exist before it")),
                });
            }
            let float = |d: DType| d.is_float();
            let gives = match (&step.op, dts.as_slice()) {
                (FusedOp::Unary { .. }, [x]) if float(*x) => Some(*x),
                (FusedOp::Binary { .. }, [a, b]) if float(*a) && a == b => Some(*a),
                (FusedOp::Compare { .. }, [a, b]) if a == b => Some(DType::Bool),
                (FusedOp::Where, [DType::Bool, a, b]) if a == b => Some(*a),
                (FusedOp::Cast { to }, [_]) => Some(*to),
                (FusedOp::Copy, [x]) => Some(*x),
                _ => None,
            };
            if gives != Some(step.dtype) {
                return Err(format!("step {j} ({}) over {dts:?} cannot give {}", step.op.name(), step.dtype.name()));
            }
        }
        Ok(())
    }
}

/// The body, for the program's text form:
/// `{ t0 = mul_scalar(x0; 2, 0); t1 = add(t0, x1); t2 = relu(t1) }`.
impl fmt::Display for FusedElementwise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{ ")?;
        for (j, step) in self.steps.iter().enumerate() {
            if j > 0 {
                write!(f, "; ")?;
            }
            let args: Vec<String> = step.args.iter().map(|a| a.to_string()).collect();
            write!(f, "t{j} = {}({}", step.op.name(), args.join(", "))?;
            if let FusedOp::Unary { params: [p0, p1], .. } = &step.op {
                write!(f, "; {}, {}", p0.0, p1.0)?;
            }
            write!(f, ")")?;
        }
        write!(f, " }}")
    }
}

/// A matmul or a reduction whose result goes through an elementwise tail
/// before it is stored (`program::fuse_epilogues` makes these from a
/// product's bias add and activation, a reduction's scaling): the result
/// never round-trips through memory, and it is one kernel, not two.
///
/// The kernel's inputs are the head's, then the tail's inputs from its
/// second on: the tail's input 0 is the head's result (the output's shape,
/// read element by element). The tail gives the head's dtype, so the head's
/// kernel stores what it always stores, only after the tail's steps.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Epilogue {
    /// `KernelSpec::Matmul` or `KernelSpec::Reduce`.
    pub head: super::KernelSpec,
    pub tail: FusedElementwise,
}

impl Epilogue {
    /// `fused:matmul+add+relu`, `fused:reduce:Sum+neg+mul_scalar`.
    pub fn name(&self) -> String {
        let steps: Vec<String> = self.tail.steps.iter().map(|s| s.op.name()).collect();
        format!("fused:{}+{}", self.head.name(), steps.join("+"))
    }

    /// How many inputs the kernel reads: the head's and the tail's extras.
    pub fn arity(&self) -> usize {
        self.head.arity() + self.tail.inputs.len().saturating_sub(1)
    }

    /// Checks the pairing: a matmul or reduction head, a tail whose input 0
    /// is the head's dtype `head` and whose result has it too, over `extras`
    /// (the dtypes of the other inputs).
    pub fn check(&self, head: DType, extras: &[DType]) -> Result<(), String> {
        use super::KernelSpec;
        if !matches!(self.head, KernelSpec::Matmul { .. } | KernelSpec::Reduce { .. }) {
            return Err(format!("has a {} head (only matmuls and reductions take epilogues)", self.head.name()));
        }
        let mut all = vec![head];
        all.extend_from_slice(extras);
        self.tail.check(&all)?;
        if self.tail.dtype() != Some(head) {
            return Err(format!("gives {:?} from a {} head", self.tail.dtype(), head.name()));
        }
        Ok(())
    }
}

/// `{ x0 = matmul(a0, a1); t0 = add(x0, x1); t1 = relu(t0; 0, 0) }`: the
/// head's inputs are `a0, a1`, the tail's extras `x1, x2, ...`.
impl fmt::Display for Epilogue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = (0..self.head.arity()).map(|k| format!("a{k}")).collect();
        let tail = self.tail.to_string();
        let body = tail.strip_prefix("{ ").unwrap_or(&tail);
        write!(f, "{{ x0 = {}({}); {body}", self.head.name(), args.join(", "))
    }
}
