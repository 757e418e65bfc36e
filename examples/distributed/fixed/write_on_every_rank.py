"""A checkpoint written by rank 0 alone: the fixed twin of buggy/write_on_every_rank.py (TL804).

Run: torchrun --nproc-per-node 2 write_on_every_rank.py
"""

import os
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    path = os.path.join(tempfile.gettempdir(), "torchlint-example-checkpoint.pt")
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), path)  # one writer
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
