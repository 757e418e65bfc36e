import torch
import torch.nn.functional as F


def log_softmax(logits):
    return logits - logits.logsumexp(dim=1, keepdim=True)


def step(W, X, y):
    logits = X @ W
    e = logits.exp()
    p = e / e.sum(1, keepdim=True)
    a = F.nll_loss(p.log(), y)  # safe: TL102 -- the log of a hand-written softmax is log-probabilities
    b = F.nll_loss(log_softmax(logits), y)  # safe: TL102 -- log-softmax written by hand
    c = F.cross_entropy(logits, y)  # safe: TL101 -- raw logits
    acc = (p.argmax(1) == y).float().mean()
    return a + b + c, acc


if __name__ == "__main__":
    W = torch.zeros(20, 4, requires_grad=True)
    loss, acc = step(W, torch.randn(64, 20), torch.randint(0, 4, (64,)))
    loss.backward()
