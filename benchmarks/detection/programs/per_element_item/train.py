"""Accuracy counted element by element inside the training loop, and once per step."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def train(steps=5):
    model = nn.Linear(6, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    correct, seen, history = 0, 0, []
    for _ in range(steps):
        x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        hits = logits.argmax(1) == y
        for i in range(len(hits)):
            correct += hits[i].item()  # expect: TL407 -- one device sync per sample
        seen += len(hits)
        history.append(loss.detach())
        print(hits.sum().item())  # safe: TL407 -- one sync per step
    losses = [h.item() for h in history]  # safe: TL407 -- after training, once
    return correct / seen, losses


if __name__ == "__main__":
    print(train())
