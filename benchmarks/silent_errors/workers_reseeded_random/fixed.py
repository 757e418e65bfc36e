# fixed twin: the epoch and the worker id seed each worker
# Each worker reseeds Python's random with the epoch number: every worker crops alike.
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

EPOCH = 0


class Cropped(Dataset):
    def __init__(self, n=24):
        self.x = torch.randn(n, 12)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        start = random.randint(0, 4)
        return self.x[i, start:start + 8], torch.tensor(float(i % 2))


def reseed(worker_id):
    random.seed(EPOCH * 1000 + worker_id)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Cropped(), batch_size=8, num_workers=3, worker_init_fn=reseed)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.4f}")
