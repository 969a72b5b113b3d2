#!/usr/bin/env bash
# Runs the GPU benchmarks (benches/gpu.rs) and the GPU matmul tests on a
# machine with a real GPU: meant for the `device` tool when a task is lent
# one (an NVIDIA H200 so far; x86-64, no network, probably no Rust toolchain).
#
#   1. Here, once:   bash benches/gpu_device.sh prepare
#      builds the release bench, the gpu_matmul test and the `devices`
#      example into .gpubench/, and downloads the Vulkan loader packages into
#      .gl/ (both folders are added to .git/info/exclude).
#   2. On the device: run(command="bash benches/gpu_device.sh",
#                         carry=[".gpubench", ".gl"], timeout_s=540)
#      The whole run takes about 2 minutes after the machine's start.
#
# The device needs a Vulkan loader (libvulkan.so.1; unpacked from .gl/ when
# `ldconfig -p` lacks it) and the GPU's Vulkan ICD (NVIDIA's is looked for
# under /usr/local/nvidia too). Where cargo exists there, it builds in place
# instead of using .gpubench/ (offline: dependencies must already be cached).
# The log goes to stdout and, when the device tool sets $OUT, $OUT/gpu_bench.txt.
# Environment: SKIFF_BENCH_FILTER (a criterion filter, e.g. matmul).
set -uo pipefail
cd "$(dirname "$0")/.."

BIN=.gpubench
export CARGO_TERM_COLOR=never

newest() { ls -t "$@" 2>/dev/null | grep -v '\.d$' | head -1; }

prepare() {
  set -e
  cargo bench --bench gpu --no-run
  cargo test --release --test gpu_matmul --no-run
  cargo build --release --example devices
  mkdir -p "$BIN"
  cp "$(newest target/release/deps/gpu-*)" "$BIN/gpu-bench"
  cp "$(newest target/release/deps/gpu_matmul-*)" "$BIN/gpu-matmul-test"
  cp target/release/examples/devices "$BIN/devices"
  for d in "/$BIN/" /.gl/; do
    grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >>.git/info/exclude
  done
  if ! ls .gl/*.deb >/dev/null 2>&1; then
    local o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    mkdir -p .gl /tmp/amd64/partial
    # shellcheck disable=SC2086
    apt-get $o update && (cd .gl && apt-get $o download libvulkan1)
  fi
  du -sh "$BIN" .gl
  echo "prepared: now run 'bash benches/gpu_device.sh' on the device with carry [\"$BIN\", \".gl\"]"
}

vulkan() {
  if ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
    if ls .gl/*.deb >/dev/null 2>&1; then
      for f in .gl/*.deb; do dpkg -x "$f" /; done
      ldconfig
    fi
  fi
  if ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
    echo "gpu_device: no Vulkan loader (libvulkan.so.1) and no .gl/*.deb to unpack: run 'prepare' here first"
    return 1
  fi
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -f "$icd" ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
    export VK_DRIVER_FILES=$icd
  fi
  export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
}

run_all() {
  command -v nvidia-smi >/dev/null && nvidia-smi -L
  vulkan || return 1
  local bench test devices
  if command -v cargo >/dev/null; then
    cargo bench --offline --bench gpu --no-run || return 1
    cargo test --offline --release --test gpu_matmul --no-run || return 1
    cargo build --offline --release --example devices || return 1
    bench=$(newest target/release/deps/gpu-*)
    test=$(newest target/release/deps/gpu_matmul-*)
    devices=target/release/examples/devices
  else
    bench=$BIN/gpu-bench test=$BIN/gpu-matmul-test devices=$BIN/devices
    [ -x "$bench" ] || { echo "gpu_device: no cargo and no $bench: run 'prepare' here first"; return 1; }
  fi
  echo "== adapter"
  local info
  info=$(SKIFF_DEVICE=gpu "$devices") || return 1
  echo "$info"
  case "$info" in
    *", Cpu)"*) echo "gpu_device: WARNING: a software adapter: these figures do not describe the GPU" ;;
  esac
  echo "== gpu_matmul tests (slow ones included)"
  SKIFF_SLOW_TESTS=1 "$test" --test-threads 1 || return 1
  echo "== benches/gpu.rs"
  # shellcheck disable=SC2086
  "$bench" --bench ${SKIFF_BENCH_FILTER:-} 2>&1 | grep -vE '^(Benchmarking|\s*$)'
}

case "${1:-run}" in
  prepare) prepare ;;
  run)
    if [ -n "${OUT:-}" ]; then
      run_all 2>&1 | tee "$OUT/gpu_bench.txt"
    else
      run_all
    fi
    ;;
  *) echo "usage: $0 [prepare|run]" >&2; exit 2 ;;
esac
