"""Per-rank statistics whose length depends on the rank's share of the data: the ranks
all_reduce tensors of different shapes."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    items = list(range(5))[rank::world]  # 3 items on rank 0, 2 on rank 1
    per_item = torch.tensor([float(i) for i in items])
    dist.all_reduce(per_item)  # float32[3] on rank 0, float32[2] on rank 1
    if rank == 0:
        print(per_item)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
