import torch
import torch.nn.functional as F


def stable_softmax(logits):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=1, keepdim=True)


def fit(W, b, X, y, lr=0.5, epochs=100):
    for _ in range(epochs):
        logits = X @ W + b
        e = logits.exp()
        p = e / e.sum(1, keepdim=True)
        loss = F.cross_entropy(p, y)  # expect: TL101 -- p is a softmax written out by hand
        loss.backward()
        with torch.no_grad():
            W -= lr * W.grad
            b -= lr * b.grad
            W.grad.zero_()
            b.grad.zero_()
    return W, b


def fit_nll(W, X, y, lr=0.5):
    probs = stable_softmax(X @ W)
    loss = F.nll_loss(probs, y)  # expect: TL102 -- stable_softmax returns probabilities, not log-probabilities
    loss.backward()
    return loss


def fit_nll_inline(W, X, y):
    scores = (X @ W).exp()
    probs = scores / scores.sum(dim=-1, keepdim=True)
    return F.nll_loss(probs, y)  # expect: TL102 -- hand-written softmax fed to nll_loss


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(256, 20, device=device)
    y = torch.randint(0, 4, (256,), device=device)
    W = torch.zeros(20, 4, device=device, requires_grad=True)
    b = torch.zeros(4, device=device, requires_grad=True)
    fit(W, b, X, y)
    fit_nll(W, X, y)
