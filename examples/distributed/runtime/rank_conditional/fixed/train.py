"""Every rank takes part in every collective; only the printing is rank 0's."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    loss = torch.tensor([1.0 + rank])
    dist.all_reduce(loss)  # every rank
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"loss {loss.item():.1f}, total {total.item():.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
