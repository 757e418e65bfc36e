"""A small model the program compiles itself, on a torch whose Inductor computes `neg` as
`2 * x` (sitecustomize.py beside this file injects the tutorial's bug into every process
started with this folder on PYTHONPATH). Nothing raises: the compiled model just computes
something else.

    cd examples/compile/accuracy_drift
    PYTHONPATH=. torchlint run train.py --minify

torchlint reports TL710 at the program's call of the compiled model, shrinks the graph
Inductor compiled to the one op that drifts (`aten.neg`, at the line of `forward` it came
from) and writes it as repro.py, which fails the same way when run alone.
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
        h = torch.maximum(h, torch.neg(self.floor))  # Inductor's (injected) bug: neg computes 2 * x
        return self.fc2(torch.tanh(h) * 2)


torch.manual_seed(0)
model = Gate()
compiled = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 4)
for step in range(2):
    loss = nn.functional.mse_loss(compiled(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
