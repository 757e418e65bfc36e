"""A binary classifier whose model ends in a sigmoid, trained with the fused loss."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, x):
        return self.body(x).squeeze(1)


class LogitHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc(x).squeeze(1)


def train(steps=20):
    model = Detector()
    head = LogitHead()
    criterion = nn.BCEWithLogitsLoss()
    calibration = nn.BCELoss()
    optimizer = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 16)
        y = (x[:, 0] > 0).float()
        loss = criterion(model(x), y)  # expect: TL109 -- Detector.forward ends in nn.Sigmoid; the fused loss applies it again
        logits = head(x)
        probs = torch.sigmoid(logits)
        loss = loss + F.binary_cross_entropy_with_logits(probs, y)  # expect: TL109 -- sigmoid output into the fused functional loss
        loss = loss + criterion(logits, y)  # safe: TL109 -- logits, as the fused loss wants
        teacher = F.binary_cross_entropy_with_logits(logits, probs.detach())  # safe: TL109 -- sigmoid output as the target is right
        loss = loss + teacher + 0.0 * calibration(probs, y).detach()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    print(train())
