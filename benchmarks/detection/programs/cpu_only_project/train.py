import argparse
import os

import torch

from model import PositionalMLP

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--steps", type=int, default=500)
args = parser.parse_args()

torch.set_num_threads(4)
model = PositionalMLP(12, 16)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
if args.resume and os.path.exists(args.resume):
    ckpt = torch.load(args.resume)  # safe: TL301 -- this project never places a tensor on CUDA, so no checkpoint holds CUDA storages
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])

for step in range(args.steps):
    x = torch.randn(32, 12, 16)
    y = x.sum(dim=-1)
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "ckpt.pt")
