"""The same samples, read and decoded once when the dataset is built and then served from
memory: a batch is ready in microseconds, so the main process can serve it
(`num_workers=0`, said explicitly; its `# noqa` tells the opt-in TL405 why). Data too big
for memory would take workers: `num_workers=4, persistent_workers=True` (`pin_memory=True` on a GPU).
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def read_sample(index: int) -> tuple[torch.Tensor, int]:
    time.sleep(0.01)  # reading and decoding one sample
    features = torch.randn(512, generator=torch.Generator().manual_seed(index))
    return features, int(features[0] > 0)


class DecodedOnce(Dataset):
    def __init__(self, size: int) -> None:
        self.samples = [read_sample(index) for index in range(size)]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.samples[index]


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(DecodedOnce(64), batch_size=16, shuffle=True, num_workers=0)  # noqa: TL405 -- served from memory
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for features, labels in loader:
            loss = nn.functional.cross_entropy(model(features), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")
