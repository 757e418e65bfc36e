"""Every rank reduces a tensor of the same shape: the sum and the count of its items."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    items = list(range(5))[rank::world]
    stats = torch.tensor([float(sum(items)), float(len(items))])
    dist.all_reduce(stats)  # float32[2] everywhere
    if rank == 0:
        print(f"mean {stats[0].item() / stats[1].item():.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
