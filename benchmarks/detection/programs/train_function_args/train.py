import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from models import ConvNet


def train_one_epoch(model, loader, loss_fn, optimizer, device):
    model.train()
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        optimizer.zero_grad()
        output = model(images)
        loss = loss_fn(output, targets)  # expect: TL101 -- the only caller passes ConvNet (softmax output) and nn.CrossEntropyLoss
        loss.backward()
        optimizer.step()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = TensorDataset(torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,)))
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = ConvNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(3):
        train_one_epoch(model, loader, criterion, optimizer, device)


if __name__ == "__main__":
    main()
