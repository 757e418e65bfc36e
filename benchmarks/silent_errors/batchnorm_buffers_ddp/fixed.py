# fixed twin: DDP re-broadcasts the buffers (its default)
# ranks: 2
# DDP over a model with BatchNorm, with buffer broadcasting turned off and no SyncBatchNorm:
# each rank keeps running statistics of its own batches, and evaluation differs by rank.
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(1 + rank)
    x, y = torch.randn(32, 8) * (1 + rank), torch.randn(32, 1)
    for step in range(4):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
