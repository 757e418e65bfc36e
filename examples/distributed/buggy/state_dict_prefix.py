"""A checkpoint saved from the DDP wrapper (`module.` keys) loaded into the bare model
(TL806): `load_state_dict` raises "Missing key(s) ... Unexpected key(s)".

Run: torchrun --nproc-per-node 2 state_dict_prefix.py
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CHECKPOINT = "/tmp/torchlint-example-ddp.pt"


def train() -> None:
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), CHECKPOINT)
    dist.barrier()


def evaluate() -> float:
    model = torch.nn.Linear(8, 1)
    model.load_state_dict(torch.load(CHECKPOINT, map_location="cpu", weights_only=True))  # bug: TL806
    with torch.no_grad():
        return model(torch.ones(1, 8)).item()


def main() -> None:
    dist.init_process_group("gloo")
    train()
    print(f"rank {dist.get_rank()}: {evaluate():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
