"""Every rank calls the collective, one rank prints: the fixed twin of
buggy/collective_under_rank_condition.py (TL803).

Run: torchrun --nproc-per-node 2 collective_under_rank_condition.py
"""

from datetime import timedelta

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    loss = torch.tensor(float(dist.get_rank() + 1))
    dist.all_reduce(loss)  # every rank joins the collective
    if dist.get_rank() == 0:
        print(f"mean loss {loss.item() / dist.get_world_size():.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
