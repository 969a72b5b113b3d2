//! `Display` and `Debug`: shape, dtype, device and values (abbreviated when large).

use super::Tensor;
use crate::dtype::DType;
use std::fmt;

const MAX_FULL: usize = 1000;
const EDGE: usize = 3;

fn fmt_value(v: f64, dtype: DType) -> String {
    match dtype {
        DType::Bool => (if v != 0.0 { "true" } else { "false" }).to_string(),
        DType::I32 => format!("{}", v as i64),
        _ => format!("{v:.4}"),
    }
}

fn write_dim(out: &mut String, vals: &[f64], shape: &[usize], dtype: DType, abbreviate: bool, indent: usize) {
    if shape.is_empty() {
        out.push_str(&fmt_value(vals[0], dtype));
        return;
    }
    let n = shape[0];
    let inner: usize = shape[1..].iter().product();
    let idx: Vec<Option<usize>> = if abbreviate && n > 2 * EDGE {
        (0..EDGE).map(Some).chain(std::iter::once(None)).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    for (k, i) in idx.iter().enumerate() {
        if k > 0 {
            out.push(',');
            if shape.len() > 1 {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 1));
            } else {
                out.push(' ');
            }
        }
        match i {
            Some(i) => write_dim(out, &vals[i * inner..(i + 1) * inner], &shape[1..], dtype, abbreviate, indent + 1),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut body = String::new();
        match self.to_f64_vec() {
            Ok(vals) => write_dim(&mut body, &vals, self.shape(), self.dtype(), vals.len() > MAX_FULL, 7),
            Err(e) => body = format!("<values unavailable: {e}>"),
        }
        write!(f, "tensor({body}, shape={:?}, dtype={}, device={}", self.shape(), self.dtype(), self.device())?;
        if let Some(name) = self.grad_fn_name() {
            write!(f, ", grad_fn={name}")?;
        } else if self.requires_grad() {
            write!(f, ", requires_grad=true")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
