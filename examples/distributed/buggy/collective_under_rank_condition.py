"""A collective that only rank 0 calls (TL803): `all_reduce` waits for the other ranks,
which never call it. In a real job they go on to the next collective and everything hangs
until the process-group timeout (30 seconds here); in this short one they exit, and rank 0
fails with "Connection closed by peer".

Run: torchrun --nproc-per-node 2 collective_under_rank_condition.py
"""

from datetime import timedelta

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    loss = torch.tensor(float(dist.get_rank() + 1))
    if dist.get_rank() == 0:
        dist.all_reduce(loss)  # bug: TL803
        print(f"mean loss {loss.item() / dist.get_world_size():.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
