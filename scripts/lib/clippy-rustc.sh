#!/bin/sh
# rustc with Clippy's lints as errors, for cargo's RUSTC_WORKSPACE_WRAPPER
# (cargo runs it for skiff's own crates only, as `cargo clippy` does with
# clippy-driver). scripts/test.sh builds the Rust tests with it, so one
# compilation lints every target (what `cargo clippy --all-targets -- -D
# warnings` checks) and builds the test binaries; a separate `cargo clippy`
# type-checked skiff and every dependency a second time (about 75 s of a
# clean CI run). The published wasm is never built through it: clippy-driver
# turns MIR optimisations off.
exec clippy-driver "$@" -D warnings
