# fixed twin: the broadcast writes into the parameters
# ranks: 2
# Data parallel by hand. After step 3 rank 0 rescales the weights and shares them, but the
# broadcast writes into a copy: rank 1 keeps its own weights and the ranks drift apart.
import torch
import torch.distributed as dist
from torch import nn


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(1 + rank)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for step in range(8):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
        if step == 2:
            with torch.no_grad():
                if rank == 0:
                    for p in model.parameters():
                        p.mul_(0.5)
                for p in model.parameters():
                    dist.broadcast(p.data, src=0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
