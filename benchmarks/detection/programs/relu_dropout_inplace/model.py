import torch
import torch.nn as nn


def make_mlp(d_in, d_hidden, d_out, p=0.3):
    return nn.Sequential(
        nn.Linear(d_in, d_hidden),
        nn.ReLU(),
        nn.Dropout(p, inplace=True),  # expect: TL103 -- overwrites the ReLU output that ReLU's backward reads
        nn.Linear(d_hidden, d_out),
    )


def make_bn_mlp(d_in, d_hidden, d_out, p=0.3):
    return nn.Sequential(
        nn.Linear(d_in, d_hidden),
        nn.BatchNorm1d(d_hidden),
        nn.Dropout(p, inplace=True),  # safe: TL103 -- BatchNorm's output is not saved for backward
        nn.ReLU(inplace=True),
        nn.Linear(d_hidden, d_out),
    )


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.Sigmoid(),
                                 nn.Dropout(0.1, inplace=True),  # expect: TL103 -- in-place dropout on sigmoid output
                                 nn.Linear(64, 4))

    def forward(self, x):
        return self.mlp(x)


if __name__ == "__main__":
    for net, d in ((make_mlp(32, 64, 4), 32), (make_bn_mlp(32, 64, 4), 32), (Head(), 32)):
        net.train()
        net(torch.randn(8, d)).sum().backward()
