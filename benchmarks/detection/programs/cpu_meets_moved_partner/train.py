import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def smooth_targets(y, num_classes, eps):
    return torch.full((y.size(0), num_classes), eps / num_classes, device=y.device)


def train_epoch(model, loader, optimizer, device, num_classes=10):
    model.train()
    for x, y in loader:
        x = x.to(device)
        y = y.cuda()
        keep = torch.ones(x.size(0), 1)  # expect: TL201 -- multiplied with model(x), which is on the device
        out = model(x) * keep
        one_hot = torch.zeros(y.size(0), num_classes).scatter_(1, y.unsqueeze(1), 1.0)  # expect: TL201 -- scatter_ with CUDA y into a CPU tensor
        soft = smooth_targets(y, num_classes, 0.1) + 0.9 * one_hot
        loss = torch.sum(-soft * F.log_softmax(out, dim=1), dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    device = torch.device("cuda")
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    loader = DataLoader(TensorDataset(torch.randn(200, 20), torch.randint(0, 10, (200,))), batch_size=20)
    train_epoch(model, loader, torch.optim.Adam(model.parameters()), device)
