import argparse
import os

import torch
import torch.nn as nn


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model, optimizer):
    ckpt = torch.load(path)  # expect: TL301 -- resumes a checkpoint written by an earlier run, possibly on another machine
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return ckpt["epoch"] + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    parser.add_argument("--pretrained", default="")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(100, 100), nn.ReLU(), nn.Linear(100, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    start = 0
    if args.pretrained:
        model.load_state_dict(torch.load(args.pretrained), strict=False)  # expect: TL301 -- third-party pretrained weights
    if args.resume and os.path.isfile(args.resume):
        start = load_checkpoint(args.resume, model, optimizer)
    for epoch in range(start, args.epochs):
        x = torch.randn(64, 100, device=device)
        loss = model(x).logsumexp(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        save_checkpoint("last.pt", model, optimizer, epoch)


if __name__ == "__main__":
    main()
