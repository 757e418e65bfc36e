"""An imbalanced classifier: class weights and a label mask made once, on the CPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(device, epochs=2):
    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = nn.Linear(10, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    class_weights = torch.tensor([1.0, 2.0, 4.0])
    smoothing = torch.full((3,), 0.1, device=device)
    ema = torch.zeros(3)
    for epoch in range(epochs):
        epoch_weights = class_weights.to(device)  # safe: TL406 -- once per epoch, not per step
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)  # safe: TL406 -- a new batch every step
            weights = class_weights.to(device)  # expect: TL406 -- the same CPU tensor copied every step
            allowed = torch.tensor([0, 1, 2]).to(device)  # expect: TL406 -- a constant rebuilt and copied every step
            logits = model(x)[:, allowed]
            loss = F.cross_entropy(logits, y, weight=weights * epoch_weights) + smoothing.to(device).sum()  # safe: TL406 -- made on the device already: .to returns it
            ema.mul_(0.9).add_(torch.bincount(y.cpu(), minlength=3))
            prior = ema.to(device)  # safe: TL406 -- edited in place every step, so the copy is needed
            loss = loss + 0.0 * prior.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return loss.item()


if __name__ == "__main__":
    print(train(torch.device("cpu")))
