"""A DDP script written for GPUs (NCCL, one device per local rank, device_ids): under
`torchlint run --device fake-cuda --nproc-per-node 2` it runs on a CPU-only machine, each rank
on its simulated cuda:<local_rank>, with NCCL run as gloo."""
import os
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = DDP(nn.Linear(4, 2).to(device), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4, device=device)
    for _ in range(2):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    t = torch.ones(2, device=device)
    dist.all_reduce(t)
    print(dist.get_rank(), t.device, t)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
