import torch
import torch.nn as nn

class GatedLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.sigmoid(self.proj(x))

class TanhLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.tanh(self.proj(x))

class NormLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(self.proj(x))

class ClosureStack(nn.Module):
    """Runs its blocks through a nested helper, as recurrent and scan-style code does."""

    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([GatedLayer(dim) for _ in range(depth)])

    def forward(self, x):
        def run(i, h):
            return self.blocks[i](h)

        h = x
        for i in range(len(self.blocks)):
            h = run(i, h)
            h += 1.0  # expect: TL103 -- the block's sigmoid output, which sigmoid's backward needs
        return h

class LoopStack(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.layers = nn.ModuleList([TanhLayer(dim) for _ in range(depth)])

    def forward(self, x):
        def step(h):
            for i in range(len(self.layers)):
                h = self.layers[i](h)
                h.mul_(2.0)  # expect: TL103 -- the indexed block's tanh output, which tanh's backward needs
            return h

        return step(x)

class SafeStack(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([NormLayer(dim) for _ in range(depth)])

    def forward(self, x):
        def run(i, h):
            return self.blocks[i](h)

        h = x
        for i in range(len(self.blocks)):
            h = run(i, h)
            h += 1.0  # safe: TL103 -- LayerNorm's output is not saved for backward: writing it is fine
        return h

if __name__ == "__main__":
    for cls in (ClosureStack, LoopStack, SafeStack):
        try:
            cls()(torch.randn(4, 8)).sum().backward()
            print(cls.__name__, "ran")
        except RuntimeError as error:
            print(cls.__name__, "raised:", str(error)[:90])
