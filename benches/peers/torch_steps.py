"""The peer side of examples/steps.rs: N Adam training steps of the same MLP
(784-256-128-10) or CNN (conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3, ReLU,
max-pool 2, linear 400->10) at batch 64, in PyTorch, printing the ms per
step. Not part of `npm test` (PyTorch comes from PyPI, see benches/README.md).

    python benches/peers/torch_steps.py mlp 400          # on the cpu
    python benches/peers/torch_steps.py cnn 400 cuda     # on an NVIDIA GPU

Two more modes, the peers of benches/gpu.rs on a real GPU
(benches/gpu_device.sh):

    python benches/peers/torch_steps.py matmul 4096 cuda  # f32 product, TF32 off: TFLOP/s
    python benches/peers/torch_steps.py op 2000 cuda      # per-op cost of a tiny add: us
"""
import sys
import time

import torch
from torch import nn


def model(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)), (64, 784)
    return (
        nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(400, 10),
        ),
        (64, 1, 28, 28),
    )


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(device, f, reps):
    """Seconds per call of f, after three calls to warm up."""
    for _ in range(3):
        f()
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        f()
    sync(device)
    return (time.perf_counter() - start) / reps


def matmul(n, device):
    # Plain f32 on the CUDA cores, like skiff's kernel: no TF32 tensor cores.
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    s = timed(device, lambda: a @ b, 20)
    print(f"matmul {n}^3 f32 torch ({device}): {2 * n**3 / s / 1e12:.2f} TFLOP/s, {s * 1e3:.3f} ms")


def per_op(reps, device):
    x = torch.ones(16, device=device)
    s = timed(device, lambda: x.add_(1.0), reps)
    print(f"per-op torch ({device}): {s * 1e6:.2f} us per add of 16 elements")


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    device = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")
    torch.manual_seed(0)
    if name == "matmul":
        return matmul(steps, device)
    if name == "op":
        return per_op(steps, device)
    net, shape = model(name)
    net = net.to(device)
    opt = torch.optim.Adam(net.parameters())
    x, y = torch.randn(shape, device=device), torch.randint(0, 10, (64,), device=device)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    ms = timed(device, step, steps) * 1e3
    suffix = "" if device.type == "cpu" else f" ({device})"
    print(f"{name} torch{suffix}: {ms:.3f} ms/step, loss {step().item()}")


if __name__ == "__main__":
    main()
