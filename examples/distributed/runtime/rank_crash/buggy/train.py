"""Rank 1 fails while reading its shard; rank 0 goes on to the barrier and would wait there
until the backend's timeout."""
import torch
import torch.distributed as dist

SHARDS = {0: [1.0, 2.0]}  # rank 1's shard is missing


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    shard = torch.tensor(SHARDS[rank])  # KeyError on rank 1
    dist.barrier()
    dist.all_reduce(shard)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
