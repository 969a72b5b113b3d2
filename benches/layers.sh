#!/usr/bin/env bash
# skiff against PyTorch's cpu, in the same run on the same machine, for the
# layer benchmarks of examples/layer_steps.rs (LSTM, ConvTranspose2d): each
# side runs ROUNDS times, alternately, and the ratio skiff / PyTorch of each
# round's medians is printed. PyTorch comes from the venv that
# scripts/torch-fixtures/run.sh makes (SKIFF_TORCH_VENV). Not part of npm test.
#
#   bash benches/layers.sh [lstm|convt|sort ...] [--gpu]   # --gpu: skiff on the first adapter
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SKIFF_TORCH_VENV:-$HOME/.cache/skiff-torch-venv}"
ROUNDS="${ROUNDS:-3}" CALLS="${CALLS:-10}"
device=cpu
benches=()
for a in "$@"; do
  if [ "$a" = --gpu ]; then device=gpu; else benches+=("$a"); fi
done
[ ${#benches[@]} -gt 0 ] || benches=(lstm convt sort)
cargo build --release --example layer_steps
for b in "${benches[@]}"; do
  for r in $(seq "$ROUNDS"); do
    s=$(target/release/examples/layer_steps "$b" "$CALLS" "$device")
    t=$("$VENV/bin/python" benches/peers/torch_layers.py "$b" "$CALLS" 2>/dev/null)
    echo "$s"
    echo "$t"
    awk -v s="$s" -v t="$t" -v b="$b" -v r="$r" 'BEGIN {
      split(s, a, ": "); split(t, c, ": "); printf "%s round %d: skiff / torch = %.2f\n", b, r, a[2] / c[2] }'
  done
done
