//! The layering rule of ARCHITECTURE.md, checked on the source: the backends
//! (`src/backend/`) and the kernel descriptions (`src/kernel/`) sit below
//! tensors. They may use the core types (shape, dtype, device, error,
//! random, kernel) and each other, never `tensor`, `autograd`, `ops`,
//! `dispatch`, `nn`, `optim`, `io`, `testing` or `web`: a backend that
//! reached up would tie every new backend to the whole crate again.

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
