# fixed twin: every rank clips, only rank 0 prints
# ranks: 2
# Gradients are averaged across ranks, then clipped on rank 0 only (the clipping sits in the
# block that logs): rank 0 takes smaller steps than rank 1 and the replicas drift apart.
import torch
import torch.distributed as dist
from torch import nn


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    x, y = torch.randn(32, 8), torch.randn(32, 1) * 10
    for step in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        if rank == 0:
            print(f"step {step} loss {loss.item():.3f} grad norm {norm:.3f}")
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
