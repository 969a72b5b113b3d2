#!/usr/bin/env bash
# `npm run build`: compiles skiff for wasm32 with the `web` feature and runs
# wasm-bindgen, writing the package's generated half to pkg/ (git-ignored).
# SKIFF_WASM_PROFILE=dev gives a fast unoptimised build for debugging.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${SKIFF_WASM_PROFILE:-wasm}"
out="${SKIFF_PKG_DIR:-pkg}"
want="0.2.130"
if ! wasm-bindgen --version 2>/dev/null | grep -q "$want"; then
  echo "build: wasm-bindgen-cli $want is required: cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi
# cdylib only here, so native builds do not link a shared library they never use.
cargo rustc --lib --quiet --profile "$profile" --target wasm32-unknown-unknown --features web --crate-type cdylib
dir="$profile"
[ "$profile" = dev ] && dir=debug
rm -rf "$out"
# --weak-refs: wasm-bindgen registers every Tensor handle with a
# FinalizationRegistry, the safety net that frees forgotten tensors.
wasm-bindgen --target web --weak-refs --out-dir "$out" --out-name skiff "target/wasm32-unknown-unknown/$dir/skiff.wasm"
bytes=$(wc -c <"$out/skiff_bg.wasm")
gz=$(gzip -9 -c "$out/skiff_bg.wasm" | wc -c)
echo "build: $out/skiff_bg.wasm $((bytes / 1024)) KiB, $((gz / 1024)) KiB gzipped"
