"""Infinities written on purpose, which the probe must leave alone: a tiny attention model
with a causal mask of -inf, a padding mask written with `masked_fill(..., float("-inf"))`,
an additive mask made as `log` of a 0/1 mask, `torch.finfo(dtype).min` in a float16 score
table, a best loss that starts at +inf, and a batch that is all padding (its softmax rows are
all -inf, so NaN) skipped because its loss is not finite."""

import math

import torch
import torch.nn.functional as F
from torch import nn

T, D = 6, 8


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, 4)
        self.register_buffer("causal", torch.full((T, T), float("-inf")).triu(1))

    def forward(self, x, padding):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D) + self.causal
        scores = scores.masked_fill(padding[:, None, :], float("-inf"))
        return self.out(F.softmax(scores, dim=-1) @ v)


torch.manual_seed(0)
model = Attention()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
best = torch.tensor(float("inf"))

for step in range(3):
    x = torch.randn(4, T, D)
    padding = torch.zeros(4, T, dtype=torch.bool)
    padding[:2, 4:] = True
    if step == 1:
        padding[:] = True  # an empty batch from the loader
    targets = torch.randint(0, 4, (4, T))
    keep = (~padding).float()
    additive = torch.log(keep)  # 0 where kept, -inf where padded
    logits = model(x, padding) + 0.0 * additive.clamp_min(-1.0)[..., None]
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    loss = (loss * keep.flatten()).sum() / keep.sum()
    if not torch.isfinite(loss):
        print(f"step {step}: skipped (loss {loss.item()})")
        continue  # a bad batch is skipped, not trained on
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    best = torch.minimum(best, loss.detach())
    half_scores = torch.randn(T, T).half().masked_fill(padding[0], torch.finfo(torch.float16).min) - 100.0
    print(f"step {step}: loss {loss.item():.4f}, best {best.item():.4f}, masked {int(torch.isinf(half_scores).sum())}")
