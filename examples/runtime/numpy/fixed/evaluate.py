"""Accuracy computed with NumPy on the labels: copied to the host first."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
model.eval()
correct = 0
with torch.no_grad():
    for x, y in loader:
        x = x.to(device)
        y = y.to(device)
        predicted = model(x).argmax(1).cpu().numpy()
        correct += int((predicted == y.cpu().numpy()).sum())
print(f"accuracy {correct / len(data):.2f}")
