import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbeddingNet(nn.Module):
    """Returns (embedding, class probabilities) so the embedding can be used for retrieval."""

    def __init__(self, dim=64, classes=20):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, dim))
        self.classifier = nn.Linear(dim, classes)

    def forward(self, x):
        emb = F.normalize(self.backbone(x), dim=1)
        probs = self.classifier(emb).softmax(dim=1)
        return emb, probs


def train(net, steps, device):
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    for _ in range(steps):
        x = torch.randn(32, 128, device=device)
        y = torch.randint(0, 20, (32,), device=device)
        _, probs = net(x)
        loss = F.cross_entropy(probs, y)  # expect: TL101 -- second element of EmbeddingNet's tuple is softmax
        emb, logits_or_probs = net(x)
        aux = F.cross_entropy(logits_or_probs, y)  # expect: TL101 -- same tuple element under a misleading name
        opt.zero_grad()
        (loss + aux).backward()
        opt.step()


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train(EmbeddingNet().to(dev), 100, dev)
