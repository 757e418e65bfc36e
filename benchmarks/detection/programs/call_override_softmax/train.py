import torch
import torch.nn as nn


class LinearProbe:
    """A plain callable (not nn.Module) probe on frozen features."""

    def __init__(self, dim, classes, device):
        self.weight = torch.zeros(dim, classes, device=device, requires_grad=True)
        self.bias = torch.zeros(classes, device=device, requires_grad=True)

    def parameters(self):
        return [self.weight, self.bias]

    def __call__(self, feats):
        return torch.softmax(feats @ self.weight + self.bias, dim=-1)


class ProbHead(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def __call__(self, feats):
        return self.fc(feats).softmax(-1)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    probe = LinearProbe(512, 100, device)
    head = ProbHead(512, 100).to(device)
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(probe.parameters() + list(head.parameters()), lr=0.1)
    for _ in range(10):
        feats = torch.randn(128, 512, device=device)
        target = torch.randint(0, 100, (128,), device=device)
        loss = criterion(probe(feats), target)  # expect: TL101 -- LinearProbe.__call__ returns softmax
        loss = loss + criterion(head(feats), target)  # expect: TL101 -- ProbHead overrides __call__ and returns softmax
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
