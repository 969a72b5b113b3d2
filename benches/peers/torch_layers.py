"""The peer side of examples/layer_steps.rs: the same layers in PyTorch on
the cpu, forward and backward of sum(output), printing the median ms per
call after 2 warm-up calls. Not part of `npm test` (PyTorch from PyPI).

    python benches/peers/torch_layers.py lstm 10
    python benches/peers/torch_layers.py convt 10
    python benches/peers/torch_layers.py sort 10     # 2^20 floats, values and indices
"""
import sys
import time

import torch
from torch import nn


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "lstm"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.manual_seed(0)
    if what == "sort":
        x = torch.randn(1 << 20)
        report(what, lambda: torch.sort(x), calls, "sort")
        return
    if what == "lstm":
        layer, shape = nn.LSTM(256, 256), (64, 32, 256)
    elif what == "convt":
        layer, shape = nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1), (64, 128, 16, 16)
    else:
        raise SystemExit(f"unknown benchmark {what!r}: lstm, convt or sort")
    x = torch.randn(*shape, requires_grad=True)

    def call():
        layer.zero_grad()
        x.grad = None
        out = layer(x)
        (out[0] if isinstance(out, tuple) else out).sum().backward()

    report(what, call, calls, "forward+backward")


def report(what, call, calls, per):
    """Prints the median ms of `calls` calls of `call`, after 2 warm-up calls."""
    for _ in range(2):
        call()
    ms = []
    for _ in range(calls):
        t = time.perf_counter()
        call()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    print(f"{what} torch {torch.__version__} (cpu, {torch.get_num_threads()} threads): "
          f"{ms[calls // 2]:.3f} ms per {per} (median of {calls})")


main()
