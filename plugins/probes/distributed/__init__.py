"""Distributed probe: what each rank of `torchlint run --nproc-per-node N` does that the other ranks must agree with. Installed only in a run with several ranks.

The plugin: the probe's rules with their docs, and the probe class, imported only in the
child of `torchlint run` (this module must not import torch: `torchlint check` loads it).
"""

from __future__ import annotations

from torchlint.findings import Severity
from torchlint.pluginmanager import hookimpl
from torchlint.probe import RuntimeRule


class CollectiveDivergence(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when the ranks stop calling the same
    collectives in the same order: a collective (or barrier) that only some ranks call, such
    as one inside `if rank == 0:`, or two ranks calling different collectives at the same
    point. Every rank records each `torch.distributed` collective it calls (the operation,
    tensor shapes and dtypes, process group and user line) outside the process group, so the
    first divergence is reported, naming the user line and the ranks on each side, seconds
    after the first rank starts to wait and long before the collective's own timeout.

    ## Why is this bad?
    A collective waits for every rank of its group. When one rank skips it, the others wait
    until the backend's timeout (30 minutes by default, 10 for NCCL) and then die with a
    message that names neither line; or two different collectives pair up and exchange the
    wrong data without any error.

    ## Example
    ```python
    if dist.get_rank() == 0:
        dist.all_reduce(loss)     # rank 1 never gets here
    dist.barrier()
    ```

    ## Use instead
    ```python
    dist.all_reduce(loss)         # every rank takes part
    if dist.get_rank() == 0:
        print(loss.item())
    dist.barrier()
    ```
    """

    code = "TL719"
    name = "collective-divergence"
    summary = "The ranks did not call the same collectives in the same order"


class CollectiveShapeMismatch(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when the ranks call the same collective at
    the same point with tensors of different shapes or dtypes, or with a different source or
    destination rank: each side is named with its ranks, its shapes and its user line.

    ## Why is this bad?
    Depending on the backend the job hangs, aborts in C++ code, or silently reduces
    misaligned memory. A batch whose size depends on the rank (the last, shorter batch of a
    split that is not even) is the usual cause.

    ## Example
    ```python
    stats = torch.zeros(len(local_items))   # a different length on each rank
    dist.all_reduce(stats)
    ```

    ## Use instead
    ```python
    stats = torch.zeros(num_classes)        # the same shape everywhere
    dist.all_reduce(stats)
    ```
    """

    code = "TL720"
    name = "collective-shape-mismatch"
    summary = "The ranks called a collective with different shapes, dtypes or roots"


class ParametersDifferAcrossRanks(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when, after an optimizer step, a
    parameter or buffer of the model holds different values on different ranks. Each rank
    sends a cheap digest of every parameter and buffer (its sum and a position-weighted sum)
    out of band after steps 1, 2, 4, 8 and so on; the report names the first step after which
    tensors differ, the tensors, and the ranks on each side. Tensors meant to differ are left
    out: parameters sharded across ranks (a DTensor with a `Shard` placement), and buffers
    that DDP re-broadcasts from rank 0 before each forward (`broadcast_buffers`, its
    default).

    ## Why is this bad?
    Data-parallel training assumes every rank holds the same model. Parameters that differ
    after a step mean the model was initialised differently on each rank (a seed set from
    the rank, weights loaded on one rank only) and nothing synchronised it, or gradients were
    not averaged: the ranks train different models. Ranks that agree at first and drift
    apart later had an update applied on some ranks only (gradient clipping, or a weight
    change, under a rank condition) or lost data in a copy between ranks. Buffers that differ
    are usually BatchNorm statistics computed from each rank's own batch (no `SyncBatchNorm`,
    and `broadcast_buffers=False`).

    ## Example
    ```python
    torch.manual_seed(rank)        # a different initialisation on every rank
    model = Net()
    for x, y in loader:
        loss_fn(model(x), y).backward()
        average_gradients(model)   # the gradients are averaged, the weights never were
        optimizer.step()
    ```

    ## Use instead
    ```python
    torch.manual_seed(0)           # the same initialisation everywhere
    model = DDP(Net())             # (DDP also broadcasts rank 0's weights at construction)
    ```
    """

    code = "TL721"
    name = "parameters-differ-across-ranks"
    summary = "Model parameters or buffers held different values on different ranks after a step"


class SamplerSameIndicesAcrossRanks(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when a `DistributedSampler` gives every
    rank the same indices: it was built with `num_replicas=1`, or with a fixed `rank=`, so
    each rank trains on the whole dataset instead of its share.

    ## Why is this bad?
    Every rank computes the same gradients: N GPUs do the work of one, an epoch takes N times
    as many samples as intended, and nothing fails.

    ## Example
    ```python
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)   # world size and rank from the process group
    ```
    """

    code = "TL722"
    name = "sampler-same-indices-across-ranks"
    summary = "A DistributedSampler gave every rank the same indices"


class FindUnusedParametersUnneeded(RuntimeRule):
    """
    ## What it does
    Reported by `torchlint run --nproc-per-node N` when a model wrapped in
    `DistributedDataParallel(..., find_unused_parameters=True)` gave a gradient to every
    parameter in every optimizer step the run made (up to the first three): the flag was
    not needed. It confirms the static finding TL807 (`ddp-find-unused-parameters`) when that
    rule reports the same line.

    ## Why is this bad?
    With the flag, DDP walks the autograd graph after every forward pass to find parameters
    that will get no gradient: extra time in every step, for nothing when there are none.

    ## Example
    ```python
    model = DDP(Net(), find_unused_parameters=True)   # every parameter is used
    ```

    ## Use instead
    ```python
    model = DDP(Net())
    ```
    """

    code = "TL723"
    name = "find-unused-parameters-unneeded"
    summary = "DDP's find_unused_parameters=True was not needed: every parameter got a gradient"
    severity = Severity.WARNING


#: By code: the parent's rank comparison (``torchlint.runtime.distributed.report``) reports TL719-TL722 itself.
RULES = {rule.code: rule for rule in (CollectiveDivergence, CollectiveShapeMismatch, ParametersDifferAcrossRanks,
                                      SamplerSameIndicesAcrossRanks, FindUnusedParametersUnneeded)}


@hookimpl
def torchlint_rules() -> list[type]:
    return list(RULES.values())


@hookimpl
def torchlint_probes() -> list[type]:
    from torchlint.plugins.probes.distributed.probe import PROBE

    return [PROBE]
