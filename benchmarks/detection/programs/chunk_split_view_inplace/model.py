import torch
import torch.nn as nn


class GLU(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        b.sigmoid_()  # expect: TL103 -- in-place on a chunk() output, a multi-output view
        return a * b


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads
        self.scale = (dim // heads) ** -0.5

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q *= self.scale  # expect: TL103 -- in-place on a split() output view
        att = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return att @ v


class SafeAttention(SelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q * self.scale
        att = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        out = att @ v
        out += x  # safe: TL103 -- matmul output is not saved, and `out` is not a view
        return out


if __name__ == "__main__":
    for m in (GLU(8), SelfAttention(8), SafeAttention(8)):
        m(torch.randn(2, 3, 8)).sum().backward()
