"""BatchNorm converted to SyncBatchNorm before the DDP wrap: the fixed twin of
buggy/batchnorm_without_sync.py (TL805). (SyncBatchNorm needs an accelerator to run.)

Run: torchrun --nproc-per-node 2 batchnorm_without_sync.py
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.head = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def main() -> None:
    dist.init_process_group("gloo")
    model = DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(Net()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
