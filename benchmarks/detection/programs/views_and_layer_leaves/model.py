import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 2)
        self.head.bias.requires_grad = False

    def rows(self, x):
        first = self.proj(x).unbind(0)[0]
        first.mul_(2)  # expect: TL103 -- unbind() returns several views of a tensor that requires grad
        return first

    def gates(self, x):
        a, b, c = torch.split(self.proj(x), x.shape[-1], dim=-1)
        a[a < 0] = 0.0  # expect: TL103 -- index assignment into a torch.split() piece
        return a * b * c

    def sections(self, x):
        a, b, c = self.proj(x).tensor_split(3, dim=-1)
        b.sigmoid_()  # safe: TL103 -- tensor_split builds single views; in-place is allowed
        q, k, v = self.proj(x).chunk(3, dim=-1)
        q = q.contiguous()
        q *= 0.5  # safe: TL103 -- a last-dim chunk is not contiguous: contiguous() copied it
        mask = torch.ones_like(x)
        keep, drop = mask.chunk(2, dim=0)
        drop.zero_()  # safe: TL103 -- the mask does not require grad
        return (a + b + c + q + k + v) * mask

    def reset_head(self):
        self.head.bias.zero_()  # safe: TL103 -- this bias was frozen with requires_grad = False
        self.proj.bias.zero_()  # expect: TL103 -- a Linear's bias is a leaf that requires grad; no no_grad here

    def forward(self, x):
        return self.head(self.sections(x)[..., : x.shape[-1]])


if __name__ == "__main__":
    model = Mixer(4)
    x = torch.randn(3, 4)
    model(x).sum().backward()  # the safe lines run
    for step in (model.rows, model.gates, lambda x: model.reset_head()):
        try:
            step(x)
            print("ran", step)
        except RuntimeError as error:
            print("raised:", str(error).splitlines()[0][:90])
