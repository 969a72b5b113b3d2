//! The readable text form of a program (like a jaxpr or Paddle's Program):
//!
//! ```text
//! program(%0: f32[4, 3] input 0) {
//!   %1: f32[3, 2] captured
//!   %2: f32[4, 2] = matmul(%0, %1)            # matmul
//!   %3: f32[4, 2] = unary:relu(%2)            # relu
//!   binary:sub(%1, %5) -> %1                  # sub_ (in place)
//!   $step = ($step + 1)                       # SGD step (host)
//!   %6: f32[3, 2] = unary:mul_scalar(%5) [p0 = $lr]  # mul_scalar
//!   return %3
//! }
//! ```
//!
//! Host cells (`$name`) are listed with their values at print time; a
//! kernel scalar a run computes from them prints as `[p<at> = expr]`.
//! An operand prints as its slot when it reads the whole buffer row-major,
//! else with its view: `%2[3, 4; strides 1, 3; +0]`. A fused kernel prints
//! its steps on the next line, over its operands (`x0`, `x1`, ...) and the
//! earlier steps (`t0`, ...), with each unary step's two scalars:
//!
//! ```text
//!   %4: f32[4, 2] = fused:add+relu(%2, %1)  # fused
//!       { t0 = add(x0, x1); t1 = relu(t0; 0, 0) }
//! ```

use super::{Arg, Bind, Instr, Program, Source, Value};
use crate::kernel::KernelSpec;
use std::fmt;

fn dims(d: &[usize]) -> String {
    d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

fn value_type(v: &Value, shape: &[usize]) -> String {
    format!("{}[{}]", v.dtype.name(), dims(shape))
}

impl Program {
    fn arg(&self, a: &Arg) -> String {
        let whole = a.layout.offset == 0
            && a.layout.is_contiguous()
            && a.layout.shape.iter().product::<usize>() == self.values[a.value].len;
        if whole {
            format!("%{}", a.value)
        } else {
            format!(
                "%{}[{}; strides {}; +{}]",
                a.value,
                dims(&a.layout.shape),
                a.layout.strides.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
                a.layout.offset
            )
        }
    }
    fn args(&self, args: &[Arg]) -> String {
        args.iter().map(|a| self.arg(a)).collect::<Vec<_>>().join(", ")
    }
}

fn binds(b: &[Bind]) -> String {
    if b.is_empty() {
        return String::new();
    }
    format!(" [{}]", b.iter().map(|b| format!("p{} = {}", b.at, b.expr)).collect::<Vec<_>>().join(", "))
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inputs: Vec<String> = self
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v.source {
                Source::Input(k) => Some(format!("%{i}: {} input {k}", value_type(v, &[v.len]))),
                _ => None,
            })
            .collect();
        writeln!(f, "program({}) {{", inputs.join(", "))?;
        for (i, v) in self.values.iter().enumerate() {
            if let Source::Captured(s) = &v.source {
                writeln!(f, "  %{i}: {} captured on {}", value_type(v, &[v.len]), s.device())?;
            }
        }
        for c in self.cells() {
            writeln!(f, "  ${}: host = {}", c.name(), c.get())?;
        }
        for instr in &self.instrs {
            let line = match instr {
                Instr::Run { op, spec, binds: b, inputs, out, shape } => {
                    let t = value_type(&self.values[*out], shape);
                    let line = format!("%{out}: {t} = {}({}){}  # {op}", spec.name(), self.args(inputs), binds(b));
                    match spec {
                        // The fused steps on the next line, over x0, x1, ... (the operands).
                        KernelSpec::Fused(body) => format!("{line}\n      {body}"),
                        // The head over a0, a1 (its operands), then the steps over x1, x2, ...
                        KernelSpec::Epilogue(body) => format!("{line}\n      {body}"),
                        _ => line,
                    }
                }
                Instr::Create { op, spec, binds: b, out, shape } => {
                    let t = value_type(&self.values[*out], shape);
                    format!("%{out}: {t} = {}(){}  # {op}", spec.name(), binds(b))
                }
                Instr::Into { op, spec, binds: b, inputs, targets } => {
                    let (ins, outs) = (self.args(inputs), self.args(targets));
                    format!("{}({ins}){} -> {outs}  # {op} (in place)", spec.name(), binds(b))
                }
                Instr::Check { spec, index } => format!("{}({})", spec.name(), self.arg(index)),
                Instr::Host { op, cell, expr } => format!("${} = {expr}  # {op} (host)", cell.name()),
            };
            writeln!(f, "  {line}")?;
        }
        writeln!(f, "  return {}", self.args(&self.outputs))?;
        write!(f, "}}")
    }
}
