#!/usr/bin/env bash
# Runs the GPU benchmarks (benches/gpu.rs) and the GPU matmul tests on a
# machine with a real GPU: meant for the `device` tool when a task is lent
# one (an NVIDIA H200 so far; x86-64, no network, probably no Rust toolchain).
#
#   1. Here, once:   bash benches/gpu_device.sh prepare
#      builds the release benches (gpu, train, jit), the GPU backend tests and
#      the `devices` example into .gpubench/ (stripped: about 54 MB, under
#      the tool's 64 MiB), and downloads the Vulkan loader and libglvnd
#      packages into .gl/ (both folders are added to .git/info/exclude).
#   2. On the device: run(command="bash benches/gpu_device.sh",
#                         carry=[".gpubench", ".gl"], timeout_s=540)
#      The whole run takes about 5 minutes after the machine's start: the
#      GPU matmul tests, benches/gpu.rs (the matmul's variants side by side
#      too), PyTorch's products and steps on the same GPU where the image has
#      it, benches/train.rs and benches/jit.rs.
#      `bash benches/gpu_device.sh variants` runs only the tiled matmul's
#      test and its variants (about 3 minutes), for trying a kernel change.
#
# The device needs a Vulkan loader (libvulkan.so.1) and libglvnd (both
# unpacked from .gl/) and the GPU's Vulkan ICD (NVIDIA's is looked for
# under /usr/local/nvidia too). Where cargo exists there, it builds in place
# instead of using .gpubench/ (offline: dependencies must already be cached).
# The log goes to stdout and, when the device tool sets $OUT, $OUT/gpu_bench.txt.
# Environment: SKIFF_BENCH_FILTER (a criterion filter, e.g. matmul).
set -uo pipefail
cd "$(dirname "$0")/.."

BIN=.gpubench
# The Vulkan loader and the GL vendor-neutral libraries NVIDIA's Vulkan ICD
# links against (the device tool's README lists the same).
GL_PACKAGES="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
export CARGO_TERM_COLOR=never

newest() { ls -t "$@" 2>/dev/null | grep -v '\.d$' | head -1; }

prepare() {
  set -e
  cargo bench --bench gpu --bench train --bench jit --no-run
  cargo test --release --test gpu_backend --no-run
  cargo build --release --example devices
  mkdir -p "$BIN"
  cp "$(newest target/release/deps/gpu-*)" "$BIN/gpu-bench"
  cp "$(newest target/release/deps/train-*)" "$BIN/train-bench"
  cp "$(newest target/release/deps/jit-*)" "$BIN/jit-bench"
  cp "$(newest target/release/deps/gpu_backend-*)" "$BIN/gpu-backend-test"
  cp target/release/examples/devices "$BIN/devices"
  strip "$BIN"/*  # the carried tree must stay under the device tool's 64 MiB
  for d in "/$BIN/" /.gl/; do
    grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >>.git/info/exclude
  done
  if ! ls .gl/libglvnd0_*.deb >/dev/null 2>&1; then
    local o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    mkdir -p .gl /tmp/amd64/partial
    # shellcheck disable=SC2086
    apt-get $o update && (cd .gl && apt-get $o download $GL_PACKAGES)
  fi
  du -sh "$BIN" .gl
  echo "prepared: now run 'bash benches/gpu_device.sh' on the device with carry [\"$BIN\", \".gl\"]"
}

vulkan() {
  # Always unpack: the H200 image has a Vulkan loader, but NVIDIA's ICD
  # (libGLX_nvidia) did not load there without libglvnd's libraries
  # ("vulkan drivers/libraries could not be loaded", 2026-12-04).
  if ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
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
  local bench train jit test devices
  if command -v cargo >/dev/null; then
    cargo bench --offline --bench gpu --bench train --bench jit --no-run || return 1
    cargo test --offline --release --test gpu_backend --no-run || return 1
    cargo build --offline --release --example devices || return 1
    bench=$(newest target/release/deps/gpu-*)
    train=$(newest target/release/deps/train-*)
    jit=$(newest target/release/deps/jit-*)
    test=$(newest target/release/deps/gpu_backend-*)
    devices=target/release/examples/devices
  else
    bench=$BIN/gpu-bench train=$BIN/train-bench jit=$BIN/jit-bench devices=$BIN/devices
    test=$BIN/gpu-backend-test
    [ -x "$bench" ] || { echo "gpu_device: no cargo and no $bench: run 'prepare' here first"; return 1; }
  fi
  echo "== adapter"
  local info
  info=$(SKIFF_DEVICE=gpu "$devices") || return 1
  echo "$info"
  case "$info" in
    *", Cpu)"*) echo "gpu_device: WARNING: a software adapter: these figures do not describe the GPU" ;;
  esac
  echo "== the GPU matmul tests (tests/gpu_backend/matmul*.rs)"
  "$test" matmul --test-threads 1 || return 1
  export SKIFF_BENCH_FULL=1
  echo "== benches/gpu.rs"
  # shellcheck disable=SC2086
  "$bench" --bench ${SKIFF_BENCH_FILTER:-} 2>&1 | grep -vE '^(Benchmarking|\s*$)'
  [ -n "${SKIFF_BENCH_FILTER:-}" ] && return 0
  matmul_variants "$bench" '1024|4096'
  torch_peer
  echo "== benches/train.rs (Adam steps, cpu and GPU)"
  "$train" --bench 2>&1 | grep -vE '^(Benchmarking|\s*$)'
  echo "== benches/jit.rs (eager and compiled steps)"
  "$jit" --bench 2>&1 | grep -vE '^(Benchmarking|\s*$)'
}

# The tiled matmul's variants side by side at the sizes in $2 (a regex):
# an aligned B staged as vec4s (the default) or not (SKIFF_GPU_MATMUL_VEC4=0),
# and wgpu's shader runtime checks left out (the default) or kept
# (SKIFF_GPU_MATMUL_CHECKS=on).
matmul_variants() {
  local bench=$1 sizes=$2 v
  for v in "1 off" "0 off" "1 on" "0 on"; do
    set -- $v
    echo "== matmul with SKIFF_GPU_MATMUL_VEC4=$1 SKIFF_GPU_MATMUL_CHECKS=$2"
    SKIFF_GPU_MATMUL_VEC4=$1 SKIFF_GPU_MATMUL_CHECKS=$2 "$bench" --bench "gpu_matmul_f32/($sizes)" 2>&1 | grep -E '^gpu matmul'
  done
}

# PyTorch on the same GPU, where the device's image has it (the H200's
# does): f32 products with TF32 off, the per-op cost, and the MLP and CNN
# Adam steps (benches/peers/torch_steps.py).
torch_peer() {
  local py=${SKIFF_TORCH_PYTHON:-python3}
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || {
    echo "== no PyTorch with CUDA here: no peer"
    return 0
  }
  echo "== PyTorch $("$py" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())') (peer)"
  for n in 1024 2048 4096; do "$py" benches/peers/torch_steps.py matmul "$n" cuda; done
  "$py" benches/peers/torch_steps.py op 5000 cuda
  for net in mlp cnn; do "$py" benches/peers/torch_steps.py "$net" 500 cuda; done
}

case "${1:-run}" in
  prepare) prepare ;;
  variants)
    # Only the adapter, the tiled matmul's test and its variants (about 3
    # minutes): for trying a kernel change on a device.
    {
      export SKIFF_BENCH_FULL=1
      vulkan && SKIFF_DEVICE=gpu "$BIN/devices" && "$BIN/gpu-backend-test" matmul_tiled &&
        matmul_variants "$BIN/gpu-bench" '1024|2048|4096'
    } 2>&1 | tee "${OUT:-/tmp}/gpu_variants.txt"
    ;;
  run)
    if [ -n "${OUT:-}" ]; then
      run_all 2>&1 | tee "$OUT/gpu_bench.txt"
    else
      run_all
    fi
    ;;
  *) echo "usage: $0 [prepare|run|variants]" >&2; exit 2 ;;
esac
