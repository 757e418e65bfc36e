# fixed twin: each worker seeds numpy from its own seed
# worker_init_fn reseeds numpy with the same seed in every worker: the workers' augmentations
# repeat each other.
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset):
    def __init__(self, n=24):
        self.x = torch.randn(n, 8)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        noise = torch.from_numpy(np.random.normal(scale=0.1, size=8).astype("float32"))
        return self.x[i] + noise, torch.tensor(float(i % 2))


def seed_worker(worker_id):
    np.random.seed(torch.utils.data.get_worker_info().seed % 2**32)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Augmented(), batch_size=8, num_workers=2, worker_init_fn=seed_worker)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.4f}")
