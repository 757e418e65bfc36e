import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.fc = nn.Linear(8 * 26 * 26, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def sanity_check(model, batch_size):
    dummy = torch.zeros(batch_size, 1, 28, 28)  # expect: TL201 -- the model handed in was moved to the device by main()
    with torch.no_grad():
        return model(dummy).shape


def train(model, device, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        images = torch.randn(32, 1, 28, 28, device=device)
        labels = torch.randint(0, 10, (32,), device=device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = ConvNet().to(device)
    print(sanity_check(model, 4))
    train(model, device, args.steps)


if __name__ == "__main__":
    main()
