"""The correct program of PyTorch's "Inductor CPU backend debugging and profiling" tutorial:
it compiles a function itself. It runs the same with and without torchlint.

    python examples/compile/tutorial/uint8.py
    torchlint run examples/compile/tutorial/uint8.py [--compile]
"""

import torch


def foo1(x1, x2):
    a = torch.neg(x1)
    b = torch.maximum(x2, a)
    y = torch.cat([b], dim=1)
    return y


torch.manual_seed(0)
x1 = torch.randint(256, (1, 8), dtype=torch.uint8)
x2 = torch.randint(256, (8390, 8), dtype=torch.uint8)
compiled_foo1 = torch.compile(foo1)
result = compiled_foo1(x1, x2)
print("uint8:", result.shape, int(result.sum()), torch.equal(result, foo1(x1, x2)))
