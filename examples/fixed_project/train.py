"""The fixed twin of buggy_project/train.py."""

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
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), "classifier.pt")
    return model


def evaluate(model: Classifier, x, y) -> float:
    with torch.no_grad():
        log_probs = model(x).log_softmax(dim=1)
        accuracy = (log_probs.argmax(1) == y).float().mean()
        return F.nll_loss(log_probs, y).item() + 0 * accuracy.item()


def resume(path: str) -> Classifier:
    model = Classifier()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


if __name__ == "__main__":
    train(device="cuda" if torch.cuda.is_available() else "cpu")
