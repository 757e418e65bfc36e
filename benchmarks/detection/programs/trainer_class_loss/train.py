import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from models import TabularNet


class Trainer:
    def __init__(self, model, criterion, optimizer, device):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.device = device

    def train_epoch(self, loader):
        self.model.train()
        running = 0.0
        for features, labels in loader:
            features, labels = features.to(self.device), labels.to(self.device)
            scores = self.model(features)
            loss = self.criterion(scores, labels)  # expect: TL101 -- TabularNet.forward returns softmax and Trainer gets CrossEntropyLoss in __init__
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            running += loss.item()
        return running / len(loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = TensorDataset(torch.randn(512, 20), torch.randint(0, 3, (512,)))
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = TabularNet(20, 64, 3).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    trainer = Trainer(model, nn.CrossEntropyLoss(), optimizer, device)
    for epoch in range(args.epochs):
        print(f"epoch {epoch}: loss {trainer.train_epoch(loader):.4f}")


if __name__ == "__main__":
    main()
