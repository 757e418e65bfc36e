import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def test(model, device):
    model.load_state_dict(torch.load("best.pt"))  # safe: TL301 -- train() saved it in this process just before calling test()
    model.eval()
    with torch.no_grad():
        x = torch.randn(64, 1, 28, 28, device=device)
        print(model(x).argmax(1))


def train(model, device, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    best = float("inf")
    for epoch in range(epochs):
        x = torch.randn(64, 1, 28, 28, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < best:
            best = loss.item()
            torch.save(model.state_dict(), "best.pt")
    test(model, device)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train(Net().to(device), device, args.epochs)
