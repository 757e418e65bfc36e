"""Train a small style network on the accelerator; checkpoints are written from the CPU."""
import sys

import torch
import torch.nn as nn

from models import Critic, StyleNet

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")


def train(epochs: int, out: str) -> None:
    net = StyleNet().to(device)
    critic = Critic().to(device)
    opt = torch.optim.Adam(list(net.parameters()) + list(critic.parameters()), lr=1e-3)
    for epoch in range(epochs):
        x = torch.rand(4, 3, 32, 32, device=device)
        loss = nn.functional.mse_loss(net(x), x) + critic(net(x)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        net.eval().cpu()
        torch.save(net.state_dict(), f"{out}/style_{epoch}.pth")
        net.to(device).train()
    torch.save(critic.state_dict(), f"{out}/critic.pth")


if __name__ == "__main__":
    train(int(sys.argv[1]), sys.argv[2])
