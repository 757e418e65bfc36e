import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in, n_cls):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 256), nn.ReLU(), nn.Linear(256, n_cls))

    def forward(self, x):
        return self.net(x)


class CalibratedMLP(nn.Module):
    def __init__(self, d_in, n_cls):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 256), nn.ReLU(), nn.Linear(256, n_cls))
        self.temperature = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return F.softmax(self.net(x) / self.temperature, dim=1)


def build(arch, d_in, n_cls):
    if arch == "mlp":
        return MLP(d_in, n_cls)
    elif arch == "calibrated":
        return CalibratedMLP(d_in, n_cls)
    raise ValueError(arch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=["mlp", "calibrated"], default="mlp")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.arch == "mlp":
        model = MLP(784, 10)
    elif args.arch == "calibrated":
        model = CalibratedMLP(784, 10)
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(50):
        x = torch.randn(64, 784, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        loss = F.cross_entropy(model(x), y)  # expect: TL101 -- the "calibrated" branch makes a model whose forward returns softmax
        opt.zero_grad()
        loss.backward()
        opt.step()
    other = build(args.arch, 784, 10).to(device)
    x = torch.randn(8, 784, device=device)
    print(nn.CrossEntropyLoss()(other(x), torch.zeros(8, dtype=torch.long, device=device)))  # expect: TL101 -- build() returns CalibratedMLP (softmax) on one path
