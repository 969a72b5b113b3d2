//! The stable serialised form of a program: a JSON document (format
//! "skiff.program", version 1) of its slots, host cells, instructions and
//! outputs. Captured storages are named, not written: the caller stores
//! them (`jit::save` puts them in the same safetensors file as tensors of
//! those names) and hands them back when reading. Devices are not written
//! either: a program is read onto the device the caller names. Reading
//! checks the document (`Program::validate`) before anything can run it.

use super::{Arg, Bind, Expr, HostRef, Instr, Program, Source, Value, ValueId};
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{intern, with_rows, KernelSpec, RowTable, Scalar};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

const FORMAT: &str = "skiff.program";
const VERSION: u32 = 1;
const OP: &str = "load program";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SourceDoc {
    Input(usize),
    /// The name the caller stores the buffer under.
    Captured(String),
    Computed,
}

#[derive(Serialize, Deserialize)]
struct ValueDoc {
    dtype: DType,
    len: usize,
    source: SourceDoc,
}

#[derive(Serialize, Deserialize)]
struct CellDoc {
    name: String,
    value: Scalar,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ExprDoc {
    Const(Scalar),
    Cell(usize),
    Add(Box<ExprDoc>, Box<ExprDoc>),
    Sub(Box<ExprDoc>, Box<ExprDoc>),
    Mul(Box<ExprDoc>, Box<ExprDoc>),
    Div(Box<ExprDoc>, Box<ExprDoc>),
    Pow(Box<ExprDoc>, Box<ExprDoc>),
    Sqrt(Box<ExprDoc>),
}

#[derive(Serialize, Deserialize)]
struct BindDoc {
    at: usize,
    expr: ExprDoc,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum InstrDoc {
    Run { op: String, spec: KernelSpec, binds: Vec<BindDoc>, inputs: Vec<Arg>, out: ValueId, shape: Vec<usize> },
    Create { op: String, spec: KernelSpec, binds: Vec<BindDoc>, out: ValueId, shape: Vec<usize> },
    Into { op: String, spec: KernelSpec, binds: Vec<BindDoc>, inputs: Vec<Arg>, targets: Vec<Arg> },
    Check { spec: KernelSpec, index: Arg },
    Host { op: String, cell: usize, expr: ExprDoc },
}

/// A program as written: see the module docs.
#[derive(Serialize, Deserialize)]
pub struct ProgramDoc {
    format: String,
    version: u32,
    values: Vec<ValueDoc>,
    cells: Vec<CellDoc>,
    instrs: Vec<InstrDoc>,
    outputs: Vec<Arg>,
}

fn expr_doc(e: &Expr, cells: &[HostRef]) -> ExprDoc {
    let b = |e: &Arc<Expr>| Box::new(expr_doc(e, cells));
    match e {
        Expr::Const(c) => ExprDoc::Const(*c),
        Expr::Cell(c) => ExprDoc::Cell(cells.iter().position(|k| k == c).expect("Program::cells lists every cell")),
        Expr::Add(x, y) => ExprDoc::Add(b(x), b(y)),
        Expr::Sub(x, y) => ExprDoc::Sub(b(x), b(y)),
        Expr::Mul(x, y) => ExprDoc::Mul(b(x), b(y)),
        Expr::Div(x, y) => ExprDoc::Div(b(x), b(y)),
        Expr::Pow(x, y) => ExprDoc::Pow(b(x), b(y)),
        Expr::Sqrt(x) => ExprDoc::Sqrt(b(x)),
    }
}

fn expr_of(e: ExprDoc, cells: &[HostRef]) -> Result<Arc<Expr>> {
    let two = |x: Box<ExprDoc>, y: Box<ExprDoc>| -> Result<(Arc<Expr>, Arc<Expr>)> {
        Ok((expr_of(*x, cells)?, expr_of(*y, cells)?))
    };
    Ok(Arc::new(match e {
        ExprDoc::Const(c) => Expr::Const(c),
        ExprDoc::Cell(k) => {
            Expr::Cell(cells.get(k).cloned().ok_or_else(|| Error::value(OP, format!("host cell {k} does not exist")))?)
        }
        ExprDoc::Add(x, y) => two(x, y).map(|(x, y)| Expr::Add(x, y))?,
        ExprDoc::Sub(x, y) => two(x, y).map(|(x, y)| Expr::Sub(x, y))?,
        ExprDoc::Mul(x, y) => two(x, y).map(|(x, y)| Expr::Mul(x, y))?,
        ExprDoc::Div(x, y) => two(x, y).map(|(x, y)| Expr::Div(x, y))?,
        ExprDoc::Pow(x, y) => two(x, y).map(|(x, y)| Expr::Pow(x, y))?,
        ExprDoc::Sqrt(x) => Expr::Sqrt(expr_of(*x, cells)?),
    }))
}

impl Program {
    /// The program as JSON; `name` names each captured slot (whose buffer the
    /// caller stores under that name).
    pub fn to_json(&self, name: &dyn Fn(ValueId) -> String) -> Result<String> {
        let device = self.values.first().map(|v| v.device.clone());
        if self.values.iter().any(|v| Some(&v.device) != device.as_ref()) {
            return Err(Error::value("save", "a program over several devices cannot be saved"));
        }
        let cells = self.cells();
        let binds = |b: &[Bind]| b.iter().map(|b| BindDoc { at: b.at, expr: expr_doc(&b.expr, &cells) }).collect();
        let doc = ProgramDoc {
            format: FORMAT.into(),
            version: VERSION,
            values: self
                .values
                .iter()
                .enumerate()
                .map(|(id, v)| ValueDoc {
                    dtype: v.dtype,
                    len: v.len,
                    source: match v.source {
                        Source::Input(k) => SourceDoc::Input(k),
                        Source::Captured(_) => SourceDoc::Captured(name(id)),
                        Source::Computed => SourceDoc::Computed,
                    },
                })
                .collect(),
            cells: cells.iter().map(|c| CellDoc { name: c.name().into(), value: Scalar(c.get()) }).collect(),
            instrs: self
                .instrs
                .iter()
                .map(|i| match i {
                    Instr::Run { op, spec, binds: b, inputs, out, shape } => InstrDoc::Run {
                        op: op.to_string(),
                        spec: spec.clone(),
                        binds: binds(b),
                        inputs: inputs.clone(),
                        out: *out,
                        shape: shape.to_vec(),
                    },
                    Instr::Create { op, spec, binds: b, out, shape } => InstrDoc::Create {
                        op: op.to_string(),
                        spec: spec.clone(),
                        binds: binds(b),
                        out: *out,
                        shape: shape.to_vec(),
                    },
                    Instr::Into { op, spec, binds: b, inputs, targets } => InstrDoc::Into {
                        op: op.to_string(),
                        spec: spec.clone(),
                        binds: binds(b),
                        inputs: inputs.clone(),
                        targets: targets.clone(),
                    },
                    Instr::Check { spec, index } => InstrDoc::Check { spec: spec.clone(), index: index.clone() },
                    Instr::Host { op, cell, expr } => InstrDoc::Host {
                        op: op.to_string(),
                        cell: cells.iter().position(|c| c == cell).expect("Program::cells lists every cell"),
                        expr: expr_doc(expr, &cells),
                    },
                })
                .collect(),
            outputs: self.outputs.clone(),
        };
        serde_json::to_string(&doc).map_err(|e| Error::value("save", format!("the program does not serialise: {e}")))
    }

    /// Reads a program written by `to_json` onto `device`: `rows` resolves the
    /// elementwise rows it names, `captured` gives the buffer stored under a
    /// captured slot's name. The result is checked (`validate`): a document
    /// that no capture could have made is an error, never a program.
    pub fn from_json(
        json: &str,
        rows: RowTable,
        device: &Device,
        captured: &mut dyn FnMut(&str, DType, usize) -> Result<Storage>,
    ) -> Result<Program> {
        let doc: ProgramDoc = with_rows(rows, || serde_json::from_str(json))
            .map_err(|e| Error::value(OP, format!("not a skiff program: {e}")))?;
        if doc.format != FORMAT || doc.version != VERSION {
            return Err(Error::value(
                OP,
                format!("format {:?} version {} is not {FORMAT:?} version {VERSION}", doc.format, doc.version),
            ));
        }
        let cells: Vec<HostRef> = doc.cells.iter().map(|c| HostRef::new(c.name.clone(), c.value.0)).collect();
        let mut values = Vec::with_capacity(doc.values.len());
        for v in doc.values {
            let source = match v.source {
                SourceDoc::Input(k) => Source::Input(k),
                SourceDoc::Captured(name) => Source::Captured(captured(&name, v.dtype, v.len)?),
                SourceDoc::Computed => Source::Computed,
            };
            values.push(Value { dtype: v.dtype, device: device.clone(), len: v.len, source });
        }
        let binds = |b: Vec<BindDoc>| -> Result<Vec<Bind>> {
            b.into_iter().map(|b| Ok(Bind { at: b.at, expr: expr_of(b.expr, &cells)? })).collect()
        };
        let mut instrs = Vec::with_capacity(doc.instrs.len());
        for i in doc.instrs {
            instrs.push(match i {
                InstrDoc::Run { op, spec, binds: b, inputs, out, shape } => {
                    Instr::Run { op: intern(&op), spec, binds: binds(b)?, inputs, out, shape: shape.into() }
                }
                InstrDoc::Create { op, spec, binds: b, out, shape } => {
                    Instr::Create { op: intern(&op), spec, binds: binds(b)?, out, shape: shape.into() }
                }
                InstrDoc::Into { op, spec, binds: b, inputs, targets } => {
                    Instr::Into { op: intern(&op), spec, binds: binds(b)?, inputs, targets }
                }
                InstrDoc::Check { spec, index } => Instr::Check { spec, index },
                InstrDoc::Host { op, cell, expr } => Instr::Host {
                    op: intern(&op),
                    cell: cells
                        .get(cell)
                        .cloned()
                        .ok_or_else(|| Error::value(OP, format!("host cell {cell} does not exist")))?,
                    expr: expr_of(expr, &cells)?,
                },
            });
        }
        let program = Program { values, instrs, outputs: doc.outputs };
        program.validate()?;
        Ok(program)
    }
}
