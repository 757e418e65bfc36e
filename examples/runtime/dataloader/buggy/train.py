"""Training on samples read from slow storage, one at a time, in the main process.

Each sample takes about 10 ms to arrive (a network file system, an image decoder): with the
default `num_workers=0` the training loop waits for every batch before it can step.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def read_sample(index: int) -> tuple[torch.Tensor, int]:
    time.sleep(0.01)  # reading and decoding one sample
    features = torch.randn(512, generator=torch.Generator().manual_seed(index))
    return features, int(features[0] > 0)


class SlowStorage(Dataset):
    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return read_sample(index)


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(SlowStorage(64), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for features, labels in loader:
            loss = nn.functional.cross_entropy(model(features), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")
