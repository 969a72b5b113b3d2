#!/usr/bin/env bash
# `npm run build`: compiles skiff for wasm32 with the `web` feature and runs
# wasm-bindgen, writing the package's generated half to pkg/ (git-ignored):
#   skiff.js, skiff.d.ts, skiff_bg.wasm   the wasm-bindgen output
#   skiff_relaxed_bg.wasm                 the same module built with relaxed
#                                         SIMD (fused multiply-add in the
#                                         GEMM); the entry points load it
#                                         where the engine validates it
#   *.wasm.base64.js                      each .wasm inlined, for web/dev.js
#   node.cjs                              web/node.js bundled for require()
# Installs what is missing first (scripts/lib/toolchain.sh): the wasm32 target
# and wasm-bindgen-cli. SKIFF_WASM_PROFILE=dev gives a fast unoptimised build.
#
# `--test` (`npm run build:test`): the test build, with the cargo feature
# `web-testing` (the `testing.*` and bench exports the browser suites and
# `npm run bench:browser` call), into pkg-test/. The suites load that build;
# pkg/, the published package, never carries those exports.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/toolchain.sh
. scripts/lib/toolchain.sh
ensure_wasm_toolchain

profile="${SKIFF_WASM_PROFILE:-wasm}"
features=web
default_out=pkg
# The published .wasm leaves out its name section (every function's name, for
# stack traces: bytes every user would download and few would read);
# the test build and dev builds keep it, so a trap in the suites names its function.
names=--remove-name-section
case "${1:-}" in
  --test) features=web,web-testing default_out=pkg-test names= ;;
  "") ;;
  *) echo "build: unknown argument $1 (expected nothing or --test)" >&2; exit 2 ;;
esac
if [ "$profile" = dev ]; then names=; fi
out="${SKIFF_PKG_DIR:-$default_out}"
dir="$profile"
[ "$profile" = dev ] && dir=debug
wasm="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$dir/skiff.wasm"
[ -f "$wasm" ] || echo "build: compiling skiff for wasm32 ($profile profile); the first build takes a few minutes"
# cdylib only here, so native builds do not link a shared library they never use.
# Not --quiet: cargo's progress is what a first `npm start` shows while it waits.
# Switching features recompiles skiff (the cdylib's file name carries no hash),
# so npm test builds the test package first and the published one last.
build() {
  cargo rustc --lib --profile "$profile" --target wasm32-unknown-unknown --features "$features" --crate-type cdylib
}
# The relaxed-SIMD build, in a target folder of its own: RUSTFLAGS (which
# replace .cargo/config.toml's) would otherwise rebuild every crate each time.
relaxed_target="${CARGO_TARGET_DIR:-target}/relaxed-simd"
relaxed_wasm="$relaxed_target/wasm32-unknown-unknown/$dir/skiff.wasm"
# Both builds at once: with fat LTO and one codegen unit, the optimisation
# of skiff's crate and the link are one thread each, so two builds side by
# side take the time of one on two cores (52 + 52 s one after the other
# against about 55 s side by side, after a change to skiff alone).
build &
baseline=$!
relaxed=0
# The inliner's threshold is .cargo/config.toml's (why: there).
CARGO_TARGET_DIR="$relaxed_target" RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd -C llvm-args=-inline-threshold=5" build || relaxed=$?
wait "$baseline"
[ "$relaxed" = 0 ] || exit "$relaxed"
rm -rf "$out"
# --weak-refs: wasm-bindgen registers every Tensor handle with a
# FinalizationRegistry, the safety net that frees forgotten tensors.
bindgen() { wasm-bindgen --target web --weak-refs $names --out-dir "$1" --out-name skiff "$2"; }
bindgen "$out" "$wasm"
relaxed_out=$(mktemp -d)
trap 'rm -rf "$relaxed_out"' EXIT
bindgen "$relaxed_out" "$relaxed_wasm"
# One glue serves both modules: the builds differ in instructions only.
if ! cmp -s "$out/skiff.js" "$relaxed_out/skiff.js"; then
  echo "build: the relaxed-SIMD build's JS glue differs from the baseline's; one skiff.js cannot load both" >&2
  exit 1
fi
cp "$relaxed_out/skiff_bg.wasm" "$out/skiff_relaxed_bg.wasm"
node scripts/lib/package-extras.mjs "$out"
for name in skiff_bg skiff_relaxed_bg; do
  bytes=$(wc -c <"$out/$name.wasm")
  gz=$(gzip -9 -c "$out/$name.wasm" | wc -c)
  echo "build: $out/$name.wasm (features $features) $((bytes / 1024)) KiB, $((gz / 1024)) KiB gzipped"
done
