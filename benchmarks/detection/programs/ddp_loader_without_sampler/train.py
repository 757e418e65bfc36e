"""DDP training on one CPU process (gloo), with the loaders written three ways."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def data():
    return TensorDataset(torch.randn(32, 4), torch.randn(32, 1))


def train_every_rank_everything(epochs=1):
    model = DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(data(), batch_size=8, shuffle=True)  # expect: TL808 -- every rank iterates the whole dataset
    val_loader = DataLoader(data(), batch_size=8)  # safe: TL808 -- evaluation on every rank is slow, not wrong
    for _ in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    return len(val_loader)


def train_sharded(epochs=1):
    model = DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = data()
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=8, sampler=sampler)  # safe: TL808 -- a DistributedSampler
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    train_every_rank_everything()
    train_sharded()
    dist.destroy_process_group()
