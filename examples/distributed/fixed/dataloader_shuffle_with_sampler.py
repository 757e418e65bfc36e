"""A DataLoader that leaves shuffling to its DistributedSampler: the fixed twin of
buggy/dataloader_shuffle_with_sampler.py (TL802).

Run: torchrun --nproc-per-node 2 dataloader_shuffle_with_sampler.py
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main() -> None:
    dist.init_process_group("gloo")
    dataset = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)  # the sampler shuffles
    batches = sum(1 for _ in loader)
    print(f"rank {dist.get_rank()}: {batches} batches")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
