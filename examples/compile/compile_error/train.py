"""A small model the program compiles itself, on a torch whose Inductor generates C++ that
g++ rejects for `neg` (sitecustomize.py beside this file injects the tutorial's bug into
every process started with this folder on PYTHONPATH). The first call of the compiled model
raises Inductor's C++ compile error, under python as under torchlint.

    cd examples/compile/compile_error
    PYTHONPATH=. torchlint run train.py --minify

torchlint reports TL709 at that call with the compiler's first `error:` line, the stage
(C++ compile, in Inductor), and the graph shrunk to the op whose code does not compile
(`aten.neg`, at the line of `forward` it came from), as repro.py: run alone, it fails with
the same compiler error.
"""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.floor = nn.Parameter(torch.randn(1, 32))
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.maximum(h, torch.neg(self.floor))  # Inductor's (injected) bug: neg's C++ does not compile
        return self.fc2(torch.tanh(h) * 2)


torch.manual_seed(0)
model = Gate()
compiled = torch.compile(model)
x = torch.randn(64, 16)
print("output", compiled(x).shape)
