import torch
import torch.nn as nn


class MaskedMLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.masks = [torch.ones(b, a) for a, b in zip(sizes[:-1], sizes[1:])]

    def apply_masks(self):
        for i in range(len(self.layers)):
            self.layers[i].weight.mul_(self.masks[i])  # expect: TL103 -- a layer's weight is a leaf requiring grad; no no_grad here

    def apply_masks_safely(self):
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                layer.weight.mul_(self.masks[i])  # safe: TL103 -- inside torch.no_grad()

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x)) if i < len(self.layers) - 1 else layer(x)
        return x


if __name__ == "__main__":
    model = MaskedMLP([10, 20, 2])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(4, 10)).sum().backward()
        opt.step()
        model.apply_masks_safely()
    model.apply_masks()
