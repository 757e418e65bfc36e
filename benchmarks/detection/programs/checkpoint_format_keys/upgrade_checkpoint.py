"""Rename the classifier's layer in a checkpoint written by an older trainer."""
import sys

import torch


def upgrade(state: dict) -> dict:
    state["model"]["head.weight"] = state["model"].pop("weight")
    state["model"]["head.bias"] = state["model"].pop("bias")
    state["args"].arch = "linear_head"
    return state


if __name__ == "__main__":
    state = torch.load(sys.argv[1], weights_only=False)  # safe: TL301 -- args/model are the trainer's keys; it saves after move_to_cpu
    torch.save(upgrade(state), sys.argv[2])
