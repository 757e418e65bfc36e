"""Reading many parameters or gradients at once, cheaply: one fused kernel per device.

Probes that compare a model's parameters before and after an optimizer step, or weigh its
gradients, must not show up in a profile of the step: they read all tensors of a device in
one call, and compare a prefix of each tensor, not the whole of it.
"""

from __future__ import annotations

from typing import Any

import torch


def norms(tensors: list[torch.Tensor]) -> list[float]:
    """The 2-norm of each tensor (NaN for a meta or sparse one), one fused kernel per device:
    an all-zero gradient has a norm of exactly 0."""
    result = [float("nan")] * len(tensors)
    for indices in by_device(tensors).values():
        found = torch._foreach_norm([tensors[i].detach() for i in indices])
        for index, value in zip(indices, torch.stack([n.double() for n in found]).tolist()):
            result[index] = value
    return result


#: Elements of each parameter compared before and after a step: an update moves every element
#: its gradient pushes, so a prefix tells, at no memory cost.
PREFIX = 256


def by_device(tensors: list[torch.Tensor]) -> dict[Any, list[int]]:
    """The indices of `tensors` by device, meta and sparse ones left out (no values to read)."""
    groups: dict[Any, list[int]] = {}
    for index, tensor in enumerate(tensors):
        if not (tensor.is_meta or tensor.is_sparse):
            groups.setdefault(tensor.device, []).append(index)
    return groups


def prefixes(tensors: list[torch.Tensor]) -> tuple[torch.Tensor, list[int]]:
    """The first PREFIX elements of each tensor, in one copied tensor, and their lengths."""
    parts = [t.detach().reshape(-1)[:PREFIX] for t in tensors]
    return torch.cat([part.double() for part in parts]).clone(), [part.numel() for part in parts]


def kept(before: tuple[torch.Tensor, list[int]], after: tuple[torch.Tensor, list[int]], grads: tuple[torch.Tensor, list[int]]) -> list[bool]:
    """Per parameter: its gradient pushed some element of the prefix, and none of those moved.
    A parameter whose gradient is zero on its whole prefix cannot be judged (False)."""
    (old, lengths), (new, _), (grad, _) = before, after, grads
    segment = torch.repeat_interleave(torch.arange(len(lengths), device=old.device), torch.tensor(lengths, device=old.device))
    pushed = (grad != 0).double()
    moved = ((new != old) & (grad != 0)).double()
    pushed_count = torch.zeros(len(lengths), dtype=torch.float64, device=old.device).index_add_(0, segment, pushed)
    moved_count = torch.zeros(len(lengths), dtype=torch.float64, device=old.device).index_add_(0, segment, moved)
    return [p > 0 and m == 0 for p, m in zip(pushed_count.tolist(), moved_count.tolist())]
