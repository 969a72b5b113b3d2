//! User-written kernels as data (`skiff::custom` builds them): a WGSL
//! function computing one output element, a host function computing the
//! same values for the cpu backend, and a shape rule. Registered kernels are
//! kept by name for the life of the process, so a captured or saved program
//! names its custom kernels the way it names table rows and finds them again
//! on loading.
//!
//! On a GPU the kernel is `shaders/prelude.wgsl`, the inputs' bindings,
//! `shaders/custom.wgsl`, the user's source and a `main` calling its
//! `compute(i)` once per output element. Its params block: `m[0]` output
//! elements, `m[1]` the output's rank, `m[2..10]` its dims, input k's
//! `[rank, 8 dims]` at `10 + 9k`, then the op's scalars as f32. Inputs reach
//! the kernel contiguous (the dispatcher copies strided views first).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::wgsl_text::wgsl_file;
use std::fmt;
use std::sync::{Arc, Mutex};

const PRELUDE: &str = wgsl_file!(include_str!("../../shaders/prelude.wgsl"));
const HELPERS: &str = wgsl_file!(include_str!("../../shaders/custom.wgsl"));

/// The u32 words a kernel's params block holds (`backend::gpu::runtime::PARAM_BYTES / 4`).
const PARAM_WORDS: usize = 64;
/// Dims per operand the params block holds.
pub const CUSTOM_MAX_RANK: usize = 8;
/// Inputs a custom kernel may take.
pub const CUSTOM_MAX_INPUTS: usize = 6;

/// One input of a custom kernel's host function: its elements in row-major
/// order, widened to f64 (f64 tensors as they are), and its shape.
#[derive(Clone, Debug)]
pub struct CpuInput {
    pub data: Vec<f64>,
    pub shape: Vec<usize>,
}

/// What a custom kernel's host function gets: its inputs, the call's
/// scalars, and the output's shape (from the shape rule). It returns the
/// output's elements in row-major order, rounded to the output's dtype after.
pub struct CpuCall<'a> {
    pub inputs: &'a [CpuInput],
    pub scalars: &'a [f64],
    pub out_shape: &'a [usize],
}

impl CpuCall<'_> {
    /// Elements of the output.
    pub fn numel(&self) -> usize {
        self.out_shape.iter().product()
    }

    /// The element of input `k` that output element `i` reads when the input
    /// broadcasts to the output's shape: the host twin of WGSL's `bcast(k, i)`.
    pub fn bcast(&self, k: usize, i: usize) -> usize {
        let shape = &self.inputs[k].shape;
        let (r, rk) = (self.out_shape.len(), shape.len());
        let (mut rem, mut at, mut stride) = (i, 0, 1);
        for d in (0..r).rev() {
            let c = rem % self.out_shape[d];
            rem /= self.out_shape[d];
            if d + rk >= r {
                let s = shape[d + rk - r];
                if s != 1 {
                    at += c * stride;
                }
                stride *= s;
            }
        }
        at
    }
}

/// The host implementation: the output's elements, or a message for the error.
pub type CpuFn = dyn Fn(&CpuCall) -> std::result::Result<Vec<f64>, String> + Send + Sync;
/// The output's shape from the inputs' shapes, or a message for the error.
pub type ShapeFn = dyn Fn(&[&[usize]]) -> std::result::Result<Vec<usize>, String> + Send + Sync;

/// A registered user kernel. Equal names are one kernel: the registry
/// refuses a second kernel under a name it holds.
pub struct CustomKernel {
    /// The op's name (interned: errors and recorded programs name it).
    pub name: &'static str,
    /// How many tensors it reads.
    pub inputs: usize,
    /// How many f64 scalars each call passes (f32 on a GPU).
    pub scalars: usize,
    /// The user's WGSL: at least `fn compute(i: u32) -> f32`.
    pub wgsl: String,
    pub cpu: Box<CpuFn>,
    /// None: the inputs' shapes broadcast (an elementwise op).
    pub shape: Option<Box<ShapeFn>>,
}

impl fmt::Debug for CustomKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomKernel({}, {} inputs, {} scalars)", self.name, self.inputs, self.scalars)
    }
}
impl PartialEq for CustomKernel {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for CustomKernel {}
impl std::hash::Hash for CustomKernel {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}

impl CustomKernel {
    /// Checks what can be checked without compiling: the name, the counts
    /// (the params block holds 64 words), and that the source defines
    /// `compute` and declares no bindings of its own.
    pub fn check(&self) -> Result<()> {
        let op = self.name;
        let fail = |m: String| Err(Error::value(op, format!("custom op '{op}': {m}")));
        if op.is_empty() || !op.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
            return fail("a name is letters, digits, '_', '.' and '-', and not empty".into());
        }
        if self.inputs == 0 || self.inputs > CUSTOM_MAX_INPUTS {
            return fail(format!("takes 1 to {CUSTOM_MAX_INPUTS} inputs, got {}", self.inputs));
        }
        let room = PARAM_WORDS - 10 - 9 * self.inputs;
        if self.scalars > room {
            return fail(format!("with {} inputs takes at most {room} scalars, got {}", self.inputs, self.scalars));
        }
        if self.wgsl.contains("@group") || self.wgsl.contains("@binding") {
            return fail("the WGSL declares bindings: custom kernels read their inputs as X0, X1, ... and return each output element from compute(i)".into());
        }
        if !self.wgsl.contains("fn compute") {
            return fail("the WGSL must define fn compute(i: u32) -> f32, the value of output element i".into());
        }
        Ok(())
    }

    /// The dtype and shape of a call's output over inputs of `dtypes` and
    /// `shapes` with `scalars` numbers, or an error naming the op and what
    /// it was given: as many inputs and scalars as registered, all of one
    /// float dtype, at most 8 dims each, and a shape the rule accepts.
    pub fn output(&self, dtypes: &[DType], shapes: &[&[usize]], scalars: usize) -> Result<(DType, Vec<usize>)> {
        let op = self.name;
        if dtypes.len() != self.inputs {
            let m = format!("custom op '{op}' takes {} inputs, got {}", self.inputs, dtypes.len());
            return Err(Error::value(op, m));
        }
        if scalars != self.scalars {
            return Err(Error::value(op, format!("custom op '{op}' takes {} scalars, got {scalars}", self.scalars)));
        }
        let first = dtypes[0];
        if let Some((k, d)) = dtypes.iter().enumerate().find(|(_, d)| !d.is_float() || **d != first) {
            let all: Vec<String> = dtypes.iter().map(|d| d.to_string()).collect();
            let m = format!(
                "custom op '{op}' takes float tensors of one dtype, got {d} at input {k} (inputs: {})",
                all.join(", ")
            );
            return Err(Error::dtype(op, m));
        }
        let shape = match &self.shape {
            Some(rule) => rule(shapes)
                .map_err(|m| Error::shape(op, format!("custom op '{op}': {m} (input shapes {shapes:?})")))?,
            None => {
                let mut all: Vec<usize> = Vec::new();
                for s in shapes {
                    all = crate::shape::broadcast_shapes(op, &all, s)?.to_vec();
                }
                all
            }
        };
        if let Some(s) = shapes.iter().copied().chain([shape.as_slice()]).find(|s| s.len() > CUSTOM_MAX_RANK) {
            let m = format!("custom op '{op}': custom kernels take at most {CUSTOM_MAX_RANK} dims, got shape {s:?}");
            return Err(Error::shape(op, m));
        }
        Ok((first, shape))
    }

    /// The whole kernel source a GPU compiles.
    pub fn source(&self) -> String {
        let mut s = self.preamble();
        s.push_str(&self.wgsl);
        s.push_str(
            "
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    OUT[i] = compute(i);
}
",
        );
        s
    }

    /// Everything before the user's source.
    fn preamble(&self) -> String {
        let mut s = format!("{PRELUDE}\nconst INPUTS: u32 = {}u;\n", self.inputs);
        for k in 0..self.inputs {
            s.push_str(&format!("@group(0) @binding({}) var<storage, read> X{k}: array<f32>;\n", k + 1));
        }
        s.push_str(&format!("@group(0) @binding({}) var<storage, read_write> OUT: array<f32>;\n", self.inputs + 1));
        s.push_str(HELPERS);
        s.push_str("\n// ---- the op's own source\n");
        s
    }

    /// The line (1-based) of the whole source where the user's line 1 is.
    pub fn first_line(&self) -> usize {
        self.preamble().lines().count() + 1
    }

    /// A compiler's message at `line` (1-based, of the whole source) and
    /// `column`, in the user's terms: the line of their source and its text.
    pub fn compile_error(&self, line: Option<(usize, usize)>, message: &str) -> Error {
        let op = self.name;
        let first = self.first_line();
        let user_lines: Vec<&str> = self.wgsl.lines().collect();
        let at = match line {
            Some((l, col)) if l >= first && l - first < user_lines.len() => {
                let n = l - first + 1;
                format!("\n  at line {n}, column {col} of its WGSL:\n  {n} | {}", user_lines[n - 1])
            }
            Some((l, _)) => format!(
                " (line {l} of the kernel skiff wraps it in: its main stores compute(i), so compute must be fn compute(i: u32) -> f32)"
            ),
            None => String::new(),
        };
        Error::value(op, format!("custom op '{op}': its WGSL does not compile: {}{at}", message.trim()))
    }

    /// Parses and validates the whole source with naga (what wgpu does
    /// natively): errors point at the user's lines.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn validate(&self) -> Result<()> {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        let src = self.source();
        let module = naga::front::wgsl::parse_str(&src).map_err(|e| {
            let at = e.location(&src).map(|l| (l.line_number as usize, l.line_position as usize));
            self.compile_error(at, e.message())
        })?;
        let compute = module.functions.iter().find(|(_, f)| f.name.as_deref() == Some("compute"));
        let returns_f32 = compute.is_some_and(|(_, f)| {
            f.result
                .as_ref()
                .is_some_and(|r| matches!(module.types[r.ty].inner, naga::TypeInner::Scalar(naga::Scalar::F32)))
                && f.arguments.len() == 1
        });
        if !returns_f32 {
            return Err(self.compile_error(None, "compute must be fn compute(i: u32) -> f32"));
        }
        Validator::new(ValidationFlags::all(), Capabilities::default()).validate(&module).map_err(|e| {
            let at = e.location(&src).map(|l| (l.line_number as usize, l.line_position as usize));
            // The error and the spans' labels (what naga's report prints).
            let mut msg = e.as_inner().to_string();
            let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e.as_inner());
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            self.compile_error(at, &msg)
        })?;
        Ok(())
    }

    /// The params block of a call over inputs of `shapes` to `out_shape`
    /// with `scalars` (rank and count were checked by the dispatcher).
    pub fn params(&self, shapes: &[&[usize]], out_shape: &[usize], scalars: &[f64]) -> Vec<u32> {
        let mut m = vec![0u32; 10 + 9 * shapes.len()];
        m[0] = out_shape.iter().product::<usize>() as u32;
        m[1] = out_shape.len() as u32;
        for (d, &s) in out_shape.iter().enumerate() {
            m[2 + d] = s as u32;
        }
        for (k, shape) in shapes.iter().enumerate() {
            m[10 + 9 * k] = shape.len() as u32;
            for (d, &s) in shape.iter().enumerate() {
                m[11 + 9 * k + d] = s as u32;
            }
        }
        m.extend(scalars.iter().map(|&v| (v as f32).to_bits()));
        m
    }
}

/// Every registered kernel, by name.
static REGISTERED: Mutex<Vec<Arc<CustomKernel>>> = Mutex::new(Vec::new());

fn registered() -> std::sync::MutexGuard<'static, Vec<Arc<CustomKernel>>> {
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds `kernel` to the registry; an error when its name is taken.
pub fn register(kernel: CustomKernel) -> Result<Arc<CustomKernel>> {
    let mut all = registered();
    if all.iter().any(|k| k.name == kernel.name) {
        let op = kernel.name;
        return Err(Error::value(op, format!("custom op '{op}' is already registered: each op needs its own name")));
    }
    let k = Arc::new(kernel);
    all.push(k.clone());
    Ok(k)
}

/// The registered kernel named `name`.
pub fn find(name: &str) -> Option<Arc<CustomKernel>> {
    registered().iter().find(|k| k.name == name).cloned()
}

/// Forgets `name` (a kernel the browser's compiler refused at registration,
/// before anything ran it).
pub fn unregister(name: &str) {
    registered().retain(|k| k.name != name);
}

/// serde `with` module for a spec's kernel: written as its name, found in
/// the registry on reading.
pub(crate) mod by_name {
    use super::*;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(k: &Arc<CustomKernel>, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(k.name)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Arc<CustomKernel>, D::Error> {
        let name = String::deserialize(d)?;
        find(&name).ok_or_else(|| {
            D::Error::custom(format!(
                "the program uses custom op {name:?}, which is not registered: register it before loading"
            ))
        })
    }
}
