"""A dropout model validated after every epoch, written twice."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_model():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2))


def data(n=8):
    return [(torch.randn(16, 10), torch.randint(0, 2, (16,))) for _ in range(n)]


def fit_forgetting_train(epochs=3):
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters())
    train_data, val_data = data(), data(2)
    model.train()
    for epoch in range(epochs):
        for x, y in train_data:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()  # expect: TL611 -- epochs 2 and 3 then train without dropout
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_data)
        print(epoch, correct)


def fit(epochs=3):
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters())
    train_data, val_data = data(), data(2)
    for epoch in range(epochs):
        model.train()
        for x, y in train_data:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()  # safe: TL611 -- train() at the top of every epoch
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_data)
        print(epoch, correct)
        if epoch == epochs - 1:
            model.eval()  # safe: TL611 -- the last epoch: no training follows
            torch.save(model.state_dict(), "/tmp/eval_mode_across_epochs.pt")


if __name__ == "__main__":
    fit_forgetting_train()
    fit()
