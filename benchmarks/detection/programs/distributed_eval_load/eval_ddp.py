import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.hub import download_url_to_file

WEIGHTS_URL = "https://example.org/weights/resnet_tiny.pth"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", required=True)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    model = nn.Sequential(nn.Linear(512, 1000)).cuda(rank)
    state = torch.load(args.weights)  # expect: TL301 -- every rank restores the storages onto the GPU they were saved from (cuda:0)
    model.load_state_dict(state)
    if not os.path.exists("backbone.pth"):
        download_url_to_file(WEIGHTS_URL, "backbone.pth")
    backbone = torch.load("backbone.pth")  # expect: TL301 -- downloaded third-party checkpoint, saved on unknown devices
    print(rank, len(backbone))
    model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    with torch.no_grad():
        x = torch.randn(64, 512, device=f"cuda:{rank}")
        preds = model(x).argmax(1)
    dist.all_reduce(preds)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
