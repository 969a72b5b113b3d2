"""The peer side of examples/steps.rs: N Adam training steps of the same MLP
(784-256-128-10) or CNN (conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3, ReLU,
max-pool 2, linear 400->10) at batch 64, in PyTorch on the cpu, printing the
ms per step. Not part of `npm test` (PyTorch comes from PyPI, see
benches/README.md).

    python benches/peers/torch_steps.py mlp 400
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


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    torch.manual_seed(0)
    net, shape = model(name)
    opt = torch.optim.Adam(net.parameters())
    x, y = torch.randn(shape), torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    ms = (time.perf_counter() - start) * 1e3 / steps
    print(f"{name} torch: {ms:.3f} ms/step, loss {loss.item()}")


if __name__ == "__main__":
    main()
