"""A collective under `if rank == 0:`: rank 1 never joins it, so the ranks' collectives pair up
wrongly and rank 0 waits forever at the next one."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    loss = torch.tensor([1.0 + rank])
    if rank == 0:
        dist.all_reduce(loss)  # only rank 0 gets here
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"loss {loss.item():.1f}, total {total.item():.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
