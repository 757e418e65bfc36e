import torch
import torch.nn as nn


def sgd_step(model, lr):
    for name, p in model.named_parameters():
        if p.grad is not None:
            p -= lr * p.grad  # expect: TL103 -- p is a parameter (a leaf requiring grad) and no_grad is missing


def fit_linear(X, y, epochs=100, lr=0.01):
    w = torch.randn(X.shape[1], 1, requires_grad=True)  # safe: TL201 -- this program never places anything on CUDA
    b = torch.zeros(1, requires_grad=True)  # safe: TL201 -- this program never places anything on CUDA
    params = [w, b]
    for _ in range(epochs):
        loss = ((X @ w + b - y) ** 2).mean()
        loss.backward()
        for p in params:
            p -= lr * p.grad  # expect: TL103 -- its .grad is read: a leaf that requires grad, outside no_grad
            p.grad = None
    return w, b


def sgd_step_ok(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad  # safe: TL103 -- inside torch.no_grad()


if __name__ == "__main__":
    model = nn.Linear(4, 1)
    model(torch.randn(8, 4)).sum().backward()
    sgd_step_ok(model, 0.1)
    sgd_step(model, 0.1)
    fit_linear(torch.randn(32, 3), torch.randn(32, 1))
