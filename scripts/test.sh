#!/usr/bin/env bash
# Everything `npm test` checks, in order of how fast it fails. Each step prints
# its own summary (cargo test prints one 'test result:' line per test binary).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "npm run data (MNIST digits as IDX files under data/, for the data tests)"
npm run data
step "cargo test --all-targets (unit, integration, examples and benches in test mode)"
# Each GPU test leaves a marker under target/tmp/gpu-tests/{ran,skipped}/
# (tests/common/mod.rs): counted below, so a run without an adapter says so.
gpu_marks="${CARGO_TARGET_DIR:-target}/tmp/gpu-tests"
rm -rf "$gpu_marks"
cargo test --all-targets
count() { find "$gpu_marks/$1" -type f 2>/dev/null | wc -l; }
printf '\nGPU tests: %d ran, %d skipped (no adapter)\n' "$(count ran)" "$(count skipped)"
# --all-targets leaves out doc tests: the crate docs carry a compiled example.
step "cargo test --doc"
cargo test --doc
step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings
step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --lib --no-default-features -- -D warnings (the cpu-only build)"
cargo clippy --lib --no-default-features -- -D warnings
# The npm package: the wasm32 build with the `web` bindings, then everything
# that runs it (Node, headless Chromium with WebGPU and without, Vite, tsc).
step "cargo clippy --lib --target wasm32-unknown-unknown --features web -- -D warnings"
cargo clippy --lib --target wasm32-unknown-unknown --features web -- -D warnings
step "npm run build (wasm32 + wasm-bindgen into pkg/)"
npm run build
step "node --test tests/browser/ (Node, Chromium on WebGPU and on the cpu fallback, Vite, tsc)"
node --test --test-concurrency=1 tests/browser/

printf '\nAll checks passed.\n'
