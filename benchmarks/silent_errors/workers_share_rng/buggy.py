# expect: TL750
# The dataset adds noise from a generator it holds; with two workers each worker copies the
# generator and both draw the same noise.
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n=64):
        self.x = np.random.default_rng(1).normal(size=(n, 8)).astype("float32")
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        noise = self.rng.normal(scale=0.1, size=8).astype("float32")
        return torch.from_numpy(self.x[i] + noise), torch.tensor(float(i % 2))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Noisy(), batch_size=16, num_workers=2)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.4f}")
