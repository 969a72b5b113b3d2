//! PyTorch's printed form of a layer tree (`print(model)`): `Name(extra)`
//! for a leaf, the extra lines and then `(child): repr` indented by two
//! spaces for a layer with children. Also the Python spellings the
//! `extra_repr`s use (`1e-05`, `True`, `(2, 2)`, `(3,)`), shared with the JS
//! bindings' reprs of losses and optimizers.

use super::Layer;
use std::fmt;

/// PyTorch's `Module.__repr__` over `type_name`, `extra_repr` and `children`.
pub(super) fn render(layer: &dyn Layer) -> String {
    let extra = layer.extra_repr();
    let extra_lines: Vec<&str> = if extra.is_empty() { Vec::new() } else { extra.split('\n').collect() };
    let child_lines: Vec<String> =
        layer.children().into_iter().map(|(name, child)| format!("({name}): {}", indent(&child.repr()))).collect();
    let mut s = format!("{}(", layer.type_name());
    if extra_lines.len() == 1 && child_lines.is_empty() {
        s.push_str(extra_lines[0]);
    } else if !extra_lines.is_empty() || !child_lines.is_empty() {
        let lines: Vec<&str> = extra_lines.into_iter().chain(child_lines.iter().map(String::as_str)).collect();
        s.push_str("\n  ");
        s.push_str(&lines.join("\n  "));
        s.push('\n');
    }
    s.push(')');
    s
}

/// PyTorch's `_addindent(s, 2)`: every line but the first indented by two spaces.
fn indent(s: &str) -> String {
    s.replace('\n', "\n  ")
}

/// `println!("{model}")` prints what PyTorch's `print(model)` does.
impl fmt::Display for dyn Layer + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}

/// The last path segment of a Rust type name, without generics
/// (`my_crate::blocks::Residual<f32>` -> `Residual`): `Layer::type_name`'s default.
pub(super) fn short_type_name(full: &'static str) -> &'static str {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Python's spelling of a float (`1e-05`, `0.1`, `1.0`).
pub fn py_float(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e16) {
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else if x.is_finite() && x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Python's spelling of a bool.
pub fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A pair as the tuple PyTorch prints: `(2, 3)`.
pub fn py_pair(p: [usize; 2]) -> String {
    format!("({}, {})", p[0], p[1])
}

/// A shape as a Python tuple: `(3,)`, `(2, 3)`.
pub fn py_tuple(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_spellings() {
        assert_eq!([py_float(1e-5), py_float(0.1), py_float(1.0), py_float(0.0)], ["1e-05", "0.1", "1.0", "0.0"]);
        assert_eq!([py_float(2.5e16), py_float(-3e-7)], ["2.5e+16", "-3e-07"]);
        assert_eq!([py_tuple(&[3]), py_tuple(&[2, 3]), py_pair([1, 2])], ["(3,)", "(2, 3)", "(1, 2)"]);
    }

    #[test]
    fn short_names() {
        assert_eq!(short_type_name("a::b::Residual<f32, x::Y>"), "Residual");
        assert_eq!(short_type_name("Plain"), "Plain");
    }
}
