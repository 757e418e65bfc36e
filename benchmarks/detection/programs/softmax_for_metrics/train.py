import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def evaluate(model, loader, device):
    model.eval()
    correct, seen = 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            probs = F.softmax(model(x), dim=1)
            correct += (probs.argmax(1) == y).sum().item()
            seen += y.numel()
    return correct / seen


def train_epoch(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)  # safe: TL101 -- logits; the softmax below is only for accuracy
        probs = logits.softmax(dim=1)
        acc = (probs.argmax(1) == y).float().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return acc.item()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
    loader = DataLoader(TensorDataset(torch.randn(300, 10), torch.randint(0, 3, (300,))), batch_size=30)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(5):
        train_epoch(model, loader, opt, device)
    print(evaluate(model, loader, device))
