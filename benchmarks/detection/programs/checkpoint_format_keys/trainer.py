"""Train a small classifier on the GPU, checkpointing the whole training state."""
import argparse

import torch
import torch.nn as nn

import checkpoint_io
from utils import move_to_cpu


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.model = nn.Linear(16, 4).cuda()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=args.lr)

    def step(self) -> float:
        x = torch.randn(32, 16, device="cuda")
        loss = self.model(x).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def state_dict(self) -> dict:
        state = {"args": self.args, "model": self.model.state_dict()}
        state["optimizer"] = self.optimizer.state_dict()
        return state

    def save_checkpoint(self, filename: str) -> None:
        # A checkpoint must load on any machine: every tensor goes to the CPU first.
        state = move_to_cpu(self.state_dict())
        checkpoint_io.persistent_save(state, filename)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--save", default="checkpoint_last.pt")
    args = parser.parse_args()
    trainer = Trainer(args)
    for _ in range(args.steps):
        trainer.step()
    trainer.save_checkpoint(args.save)
