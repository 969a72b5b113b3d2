//! The layering rule of ARCHITECTURE.md, checked on the source: the backends
//! (`src/backend/`) and the kernel descriptions (`src/kernel/`) sit below
//! tensors. They may use the core types (shape, dtype, device, error,
//! random, kernel) and each other, never `tensor`, `autograd`, `ops`,
//! `dispatch`, `nn`, `optim`, `io`, `testing` or `web`: a backend that
//! reached up would tie every new backend to the whole crate again.
//!
//! And the other way: code above the backends reaches a backend only through
//! the storage-level interface (`backend::{run, run_into, create, check,
//! room, upload, download, ...}`), never into one backend's module or its
//! buffer variant, so adding a backend touches its own folder, `backend/`
//! and `device.rs`, and nothing that matches on buffer variants elsewhere.

use std::path::{Path, PathBuf};

const ABOVE: &[&str] = &["tensor", "autograd", "ops", "dispatch", "nn", "optim", "io", "testing", "web"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `crate::<module>` paths in code (comments skipped) that name a module above the backends.
fn upward_uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for m in ABOVE {
            let needle = format!("crate::{m}");
            let hit = code.match_indices(&needle).any(|(i, _)| {
                let next = code[i + needle.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if hit {
                found.push((n + 1, line.trim().to_string()));
            }
        }
    }
    found
}

#[test]
fn backends_and_kernels_import_nothing_above_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root.join("backend"), &mut files);
    rust_files(&root.join("kernel"), &mut files);
    assert!(files.len() > 20, "found the backend sources ({} files)", files.len());
    let mut bad = Vec::new();
    for f in &files {
        for (line, code) in upward_uses(&std::fs::read_to_string(f).unwrap()) {
            bad.push(format!("{}:{line}: {code}", f.strip_prefix(&root).unwrap().display()));
        }
    }
    assert!(bad.is_empty(), "backend code reaches above the backends:\n{}", bad.join("\n"));
}

#[test]
fn the_check_sees_an_upward_use() {
    assert_eq!(upward_uses("use crate::tensor::Tensor;").len(), 1);
    assert_eq!(upward_uses("    let t = crate::ops::registry();").len(), 1);
    assert!(upward_uses("use crate::shape::Layout; // not crate::tensor").is_empty());
    assert!(upward_uses("use crate::tensors_like_name;").is_empty());
}

/// Names of one backend's internals: its module (`backend::gpu::...`, also
/// inside a `use crate::backend::{..}` list), its buffer variant, its buffer
/// accessor.
const BACKEND_SPECIFIC: &[&str] = &["backend::gpu", "Buffer::Gpu", ".as_gpu("];

/// Files above the backends allowed to name the GPU backend: the `Device`
/// that wraps it, and the web runtime that opens it (a software adapter).
const MAY_NAME_THE_GPU: &[&str] = &["device.rs", "web/runtime.rs"];

/// Known reaches not yet behind the interface, each with its reason (the
/// test fails when one disappears, so this list cannot go stale).
const KNOWN: &[(&str, &str)] = &[];

/// Lines of code (comments skipped, `#[cfg(test)]` modules and everything
/// after them left out) that name a backend's internals.
fn backend_specific_uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_use_list = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        let listed = in_use_list || code.contains("crate::backend::{");
        let hit = BACKEND_SPECIFIC.iter().any(|p| code.contains(p))
            || (listed && code.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "gpu"));
        if hit {
            found.push((n + 1, line.trim().to_string()));
        }
        if code.contains("crate::backend::{") {
            in_use_list = !code.contains('}');
        } else if in_use_list && code.contains('}') {
            in_use_list = false;
        }
    }
    found
}

#[test]
fn code_above_the_backends_names_no_backend_internals() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut bad = Vec::new();
    let mut known_seen = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("backend/") || MAY_NAME_THE_GPU.contains(&rel.as_str()) {
            continue;
        }
        let uses = backend_specific_uses(&std::fs::read_to_string(f).unwrap());
        if uses.is_empty() {
            continue;
        }
        if KNOWN.iter().any(|(k, _)| *k == rel) {
            known_seen.push(rel);
            continue;
        }
        bad.extend(uses.into_iter().map(|(line, code)| format!("{rel}:{line}: {code}")));
    }
    assert!(files.len() > 100, "found the sources ({} files)", files.len());
    assert!(bad.is_empty(), "code above the backends names a backend's internals:\n{}", bad.join("\n"));
    for (k, why) in KNOWN {
        assert!(
            known_seen.iter().any(|s| s == k),
            "{k} no longer reaches the GPU backend ({why}): remove it from KNOWN"
        );
    }
}

#[test]
fn the_check_sees_a_backend_specific_use() {
    assert_eq!(backend_specific_uses("    let Buffer::Gpu(b) = &*g else {").len(), 1);
    assert_eq!(backend_specific_uses("use crate::backend::gpu::checks::Effect;").len(), 1);
    assert_eq!(backend_specific_uses("use crate::backend::{self, gpu, View};").len(), 1);
    assert_eq!(backend_specific_uses("use crate::backend::{\n    self,\n    gpu::checks,\n};").len(), 1);
    assert_eq!(backend_specific_uses("if let Some(b) = g.as_gpu() {").len(), 1);
    assert!(backend_specific_uses("use crate::backend::{self, View}; // not backend::gpu").is_empty());
    assert!(backend_specific_uses("let on_gpu = x.device().is_gpu();").is_empty());
    assert!(backend_specific_uses("#[cfg(test)]\nmod tests {\n    use crate::backend::gpu::GpuBuffer;\n}").is_empty());
}
