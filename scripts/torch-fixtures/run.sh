#!/usr/bin/env bash
# Regenerates tests/fixtures/torch/layers48.safetensors with PyTorch, the
# independent truth the Rust tests compare against. Developers run it by hand
# when an entry changes; CI never runs it, it only reads the checked-in file.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV="${SKIFF_TORCH_VENV:-$HOME/.cache/skiff-torch-venv}"
# Pinned so a regeneration changes numbers only when we bump these on purpose.
# Last run with CPython 3.11.7: torch 2.15.0+cu132, numpy 2.4.6, safetensors 0.8.0.
TORCH=2.15.0 NUMPY=2.4.6 SAFETENSORS=0.8.0

# Only PyPI is reachable, and its Linux x86_64 torch is the CUDA build. The
# CPU-only wheels live on PyTorch's own index, which we can't reach. Installing
# torch with --no-deps plus its pure-Python deps does NOT work: libtorch_cuda.so
# links cuBLAS/cuDNN/NCCL/..., and `import torch` fails with "libcublasLt.so.*[0-9]
# not found". So we take the full install (about 2.9 GB downloaded, 5.4 GB venv,
# under 2 min on a fast link). It runs fine without a GPU: all math is on the CPU.
# The venv stays outside the repo so the tree and `git status` stay clean.
if ! "$VENV/bin/python" - 2>/dev/null <<PY
import torch, numpy, safetensors
assert torch.__version__.split("+")[0] == "$TORCH"
assert numpy.__version__ == "$NUMPY" and safetensors.__version__ == "$SAFETENSORS"
PY
then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install "torch==$TORCH" "numpy==$NUMPY" "safetensors==$SAFETENSORS"
fi

"$VENV/bin/python" scripts/torch-fixtures/layers48.py tests/fixtures/torch/layers48.safetensors
