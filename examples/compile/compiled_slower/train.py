"""A model whose refinement loop checks for convergence with `.item()` at every iteration:
a graph break in a hot loop. Compiled, each iteration is a small graph of its own, entered
through Dynamo's guards, and its fused kernel is no faster than ATen's on a tensor this small:
`torchlint run --compile --profile` names the function and lines that got slower (TL724).

    torchlint run examples/compile/compiled_slower/train.py --compile --profile --report out/
"""

import torch
from torch import nn


def refine_step(h):
    h = h - 0.1 * torch.tanh(h)
    if h.abs().max().item() < 1e-6:  # converged? a graph break, every iteration
        return torch.zeros_like(h)
    return h


class Refiner(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.proj = nn.Linear(16, width)
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        h = self.proj(x)
        for _ in range(8):
            h = refine_step(h)
        return self.head(h)


def build():
    return Refiner(), (torch.randn(16, 16),)


def main() -> None:
    torch.manual_seed(0)
    model = Refiner()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        x, y = torch.randn(16, 16), torch.randint(0, 4, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
