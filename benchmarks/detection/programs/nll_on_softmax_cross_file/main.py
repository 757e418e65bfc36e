import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from model import Net


def train(args, model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)  # expect: TL102 -- Net.forward (model.py) returns softmax, not log_softmax
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"epoch {epoch} [{batch_idx}] loss={loss.item():.6f}")


def test(model, device, loader):
    model.eval()
    criterion = nn.NLLLoss(reduction="sum")
    total = 0.0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            total += criterion(model(data), target).item()  # expect: TL102 -- same softmax model, evaluation loss
    return total / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = TensorDataset(torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,)))
    loader = DataLoader(data, batch_size=16)
    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, loader, optimizer, epoch)
        print(test(model, device, loader))


if __name__ == "__main__":
    main()
