#!/usr/bin/env bash
# Everything `npm test` checks, in order of how fast it fails. Each step prints
# its own summary (cargo test prints one 'test result:' line per test binary).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# Installs what is missing on the Rust side (wasm32 target, clippy, rustfmt,
# wasm-bindgen-cli) and says what to run for the system packages.
# shellcheck source=lib/toolchain.sh
. scripts/lib/toolchain.sh
step "toolchain (scripts/lib/toolchain.sh)"
ensure_test_toolchain
echo "rustc $(rustc --version | cut -d' ' -f2), node $(node --version), $(wasm-bindgen --version), chromium: $(chromium_path)"

step "node scripts/check-docs.mjs (every relative link and #anchor of the Markdown docs)"
node scripts/check-docs.mjs
step "npm run data (MNIST digits as IDX files under data/, for the data tests)"
npm run data
# One build for every Rust test: the feature `distributed` (skiff::distributed,
# linking Open MPI) is on, so its tests (tests/distributed/, which start
# `mpirun -np 2` on themselves), examples and doc tests run with the rest.
step "cargo test --all-targets --features distributed (unit, integration by area, examples and benches in test mode; MPI with 2 ranks on loopback)"
# The browser suites run an example natively (tests/browser/lib/native-model.mjs)
# with these features, so it reuses this build.
export SKIFF_CARGO_FEATURES=distributed
# Each GPU test leaves a marker under target/tmp/gpu-tests/{ran,skipped}/
# (tests/common/mod.rs): counted below, so a run without an adapter says so.
gpu_marks="${CARGO_TARGET_DIR:-target}/tmp/gpu-tests"
rm -rf "$gpu_marks"
cargo test --all-targets --features distributed
count() { find "$gpu_marks/$1" -type f 2>/dev/null | wc -l; }
printf '\nGPU tests: %d ran, %d skipped (no adapter)\n' "$(count ran)" "$(count skipped)"
# --all-targets leaves out doc tests: the crate docs carry compiled examples.
step "cargo test --doc --features distributed"
cargo test --doc --features distributed
step "cargo clippy --all-targets --features distributed -- -D warnings, and the library with the default features"
cargo clippy --all-targets --features distributed -- -D warnings
cargo clippy --lib -- -D warnings
step "cargo fmt --check"
cargo fmt --check
step "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps --features distributed (the API docs build without warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --features distributed
step "cargo clippy --lib --no-default-features -- -D warnings (the cpu-only build)"
cargo clippy --lib --no-default-features -- -D warnings
# The npm package: the wasm32 builds with the `web` bindings, then everything
# that runs them (Node, headless Chromium with WebGPU and without, Vite, tsc).
step "cargo clippy --lib --target wasm32-unknown-unknown --features web -- -D warnings (the published bindings)"
cargo clippy --lib --target wasm32-unknown-unknown --features web -- -D warnings
step "cargo clippy --lib --target wasm32-unknown-unknown --features web-testing -- -D warnings (with the test exports)"
cargo clippy --lib --target wasm32-unknown-unknown --features web-testing -- -D warnings
# Two wasm builds: the suites load the test build (feature web-testing: the
# testing.* exports) from pkg-test/; the consumer projects and the type tests
# use pkg/, the published one. The published build comes last, so the
# prepack of `npm publish --dry-run` below finds it compiled.
step "npm run build:test (wasm32 with the test exports + wasm-bindgen into pkg-test/)"
npm run build:test
step "npm run build (wasm32 + wasm-bindgen into pkg/: the published package)"
npm run build
# The JS API reference: web/index.d.ts imports the types of pkg/ (npm run build).
step "npx typedoc (the npm package's API reference into target/typedoc/, warnings as errors)"
npx typedoc
step "node --test tests/browser/ (Node, Chromium on WebGPU and on the cpu fallback, consumer projects, tsc)"
node --test --test-concurrency=1 tests/browser/
# A release is one command away: both registries accept the packages as they are.
step "cargo publish --dry-run (packs skiff-ml and builds it from the .crate)"
# The build from the .crate proves only that the package compiles: at the dev
# profile's opt-level 1 the crate itself took two minutes to build there,
# unoptimised it takes seconds.
CARGO_PROFILE_DEV_OPT_LEVEL=0 cargo publish --dry-run --allow-dirty
step "npm publish --dry-run (prepack rebuilds pkg/; lists the tarball)"
npm publish --dry-run

printf '\nAll checks passed.\n'
