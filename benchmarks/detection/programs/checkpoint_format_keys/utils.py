"""Helpers shared by the trainer and the tools."""
import torch


def move_to_cpu(sample):
    """`sample` with every tensor in it (through dicts, lists and tuples) copied to the CPU."""
    if torch.is_tensor(sample):
        return sample.cpu()
    if isinstance(sample, dict):
        return {key: move_to_cpu(value) for key, value in sample.items()}
    if isinstance(sample, (list, tuple)):
        return type(sample)(move_to_cpu(value) for value in sample)
    return sample
