"""Data parallel by hand: gradients are averaged across ranks, but the seed depends on the
rank, so each rank starts from (and keeps) a different model."""
import torch
import torch.distributed as dist
from torch import nn


def average_gradients(model):
    world = dist.get_world_size()
    for param in model.parameters():
        dist.all_reduce(param.grad)
        param.grad /= world


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)  # a different initialisation on every rank
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, 4)
    target = torch.randn(8, 2)
    for _ in range(2):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(data), target).backward()
        average_gradients(model)
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
