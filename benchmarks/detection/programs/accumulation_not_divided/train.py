"""Two training functions with gradient accumulation: one sums, one averages."""

import torch
import torch.nn as nn


def batches(n):
    for _ in range(n):
        x = torch.randn(4, 8)
        yield x, x.sum(1, keepdim=True)


def train_summed(accum_steps=4):
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for i, (x, y) in enumerate(batches(16)):
        loss = criterion(model(x), y)
        loss.backward()  # expect: TL610 -- four mean losses summed: a 4x larger SGD step
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_averaged(accum_steps=4):
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for i, (x, y) in enumerate(batches(16)):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()  # safe: TL610 -- divided by the number of micro-batches
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_micro_batches(micro_steps=4, steps=4):
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    data = batches(micro_steps * steps)
    for _ in range(steps):
        for _ in range(micro_steps):
            x, y = next(data)
            criterion(model(x), y).backward()  # expect: TL610 -- an inner micro-batch loop, the step after it, no division
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def train_every_step(log_every=4):
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for i, (x, y) in enumerate(batches(16)):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()  # safe: TL610 -- gradients cleared every iteration: nothing accumulates
        if i % log_every == 0:
            optimizer.step()


if __name__ == "__main__":
    train_summed()
    train_averaged()
    train_micro_batches()
    train_every_step()
