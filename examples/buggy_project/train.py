"""Trains models.Classifier on random data; every bug here is one torchlint reports."""

import torch
import torch.nn.functional as F
from torch import nn

from models import Classifier


def train(steps: int = 3, device: str = "cpu") -> Classifier:
    model = Classifier().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 32, device=device)
        y = torch.randint(0, 10, (8,), device=device)
        out = model(x)
        loss = criterion(out, y)  # softmax output from Classifier.forward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), "classifier.pt")
    return model


def evaluate(model: Classifier, x, y) -> float:
    with torch.no_grad():
        logits = model.head(model.body(x))
        probs = logits.softmax(dim=1)
        return F.nll_loss(probs, y).item()  # NLLLoss wants log-probabilities


def resume(path: str) -> Classifier:
    model = Classifier()
    model.load_state_dict(torch.load(path))  # fails on a CPU machine if saved on a GPU; unpickles anything
    return model


if __name__ == "__main__":
    train(device="cuda" if torch.cuda.is_available() else "cpu")
