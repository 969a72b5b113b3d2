//! The matmul kernels' fixed WGSL, kept under `shaders/`, and the helpers
//! that turn it into sources: `section` picks a piece of a template file,
//! `fill` puts in what the generators compute, and `Widen` reads f16
//! elements as f32.

use crate::dtype::DType;
use crate::kernel::wgsl_text::wgsl_file;

/// The tiled kernel, whole (`{ELEM}`, `{WG}`, `{TK}` and `{STAGE}` filled by
/// `tiled::body`).
pub const TILED: &str = wgsl_file!(include_str!("../../../../shaders/matmul.wgsl"));
/// The blocked kernel's sections (`blocked.rs`).
pub const BLOCKED: &str = wgsl_file!(include_str!("../../../../shaders/matmul_blocked.wgsl"));
/// The batch offsets both kernels start from (`batch_offsets`).
pub const BATCH: &str = wgsl_file!(include_str!("../../../../shaders/matmul_batch.wgsl"));
/// The pieces the tiled kernel's variants swap in (`tiled.rs`).
pub const TILED_VARIANTS: &str = wgsl_file!(include_str!("../../../../shaders/matmul_tiled_variants.wgsl"));

/// Section `name` of a template file: the lines after its `// == name` line
/// up to the next such line, blank lines at either end left out (the text
/// before the first section is a note for readers, never emitted).
pub fn section(file: &'static str, name: &str) -> &'static str {
    let marker = format!("\n// == {name}\n");
    let start = file.find(&marker).unwrap_or_else(|| panic!("no section '{name}' in the template")) + marker.len();
    let rest = &file[start..];
    let text = &rest[..rest.find("\n// == ").map_or(rest.len(), |end| end + 1)];
    let text = text.trim_start_matches('\n');
    let body = text.trim_end_matches('\n');
    &text[..(body.len() + 1).min(text.len())]
}

/// `template` with each placeholder, an upper-case name in braces (`{TM}`),
/// replaced by its value in `values`. A placeholder alone on its line
/// stands for whole lines: that line (and its line end) becomes the value,
/// which is empty or ends with a line end itself. Every placeholder must
/// have a value (a typo in a name is a panic, not a kernel with `{TM}` in
/// it); values are not searched for placeholders again.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let value = |name: &str| values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let mut out = String::with_capacity(template.len());
    for line in template.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        if let Some(name) = placeholder(bare).filter(|name| name.len() + 2 == bare.len()) {
            let v = value(name).unwrap_or_else(|| panic!("no value for the template's {{{name}}}"));
            assert!(v.is_empty() || v.ends_with('\n'), "{{...}} alone on a line takes whole lines, got {v:?}");
            out.push_str(v);
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            match placeholder(&rest[open..]) {
                Some(name) => {
                    out.push_str(value(name).unwrap_or_else(|| panic!("no value for the template's {{{name}}}")));
                    rest = &rest[open + name.len() + 2..];
                }
                None => {
                    out.push('{');
                    rest = &rest[open + 1..];
                }
            }
        }
        out.push_str(rest);
    }
    out
}

/// The name of the placeholder `text` starts with, if it starts with one.
fn placeholder(text: &str) -> Option<&str> {
    let name = text.strip_prefix('{')?.split('}').next()?;
    let is_name = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    (is_name && text.len() > name.len() + 1).then_some(name)
}

/// How the kernels' loads reach f32: as they are (f32 operands) or
/// converted (f16; exact). f32 sources stay free of identity conversions.
#[derive(Clone, Copy)]
pub struct Widen(pub DType);

impl Widen {
    /// A scalar load as an f32 expression.
    pub fn scalar(self, load: &str) -> String {
        if self.0 == DType::F16 {
            format!("f32({load})")
        } else {
            load.to_string()
        }
    }

    /// A vec4 load as a `vec4<f32>` expression.
    pub fn vec4(self, load: &str) -> String {
        if self.0 == DType::F16 {
            format!("vec4<f32>({load})")
        } else {
            load.to_string()
        }
    }
}
