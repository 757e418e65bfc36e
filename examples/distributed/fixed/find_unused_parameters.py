"""DDP without `find_unused_parameters`: the fixed twin of buggy/find_unused_parameters.py
(TL807).

Run: torchrun --nproc-per-node 2 find_unused_parameters.py
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main(steps: int = 3) -> None:
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
