"""Recording every `torch.distributed` collective a rank calls; child process only.

The functions scripts call (``dist.all_reduce``, ``dist.barrier``...) are replaced in the
``torch.distributed`` namespace by wrappers that send a ``collective`` event before the call
(operation, fingerprint, process group, index in that group's sequence, user line) and a
``collective-done`` event after it. The fingerprint holds what must agree across ranks for
that operation: tensor shapes and dtypes, the reduce op, the root rank, list lengths, and
leaves out what may differ (``gather``'s list exists on the root only, ``all_to_all_single``'s
splits, the pickled size of an object). torch's own internal calls go through
``distributed_c10d``'s module globals and are not recorded: an ``all_gather_object`` is one
collective, not the three it is made of.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable

import torch

#: Per operation: the arguments whose value must be the same on every rank. ``#name``: only
#: the length of a list (its items may differ: all_to_all's chunks, pickled objects).
AGREED_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("tensor", "op"),
    "reduce": ("tensor", "dst", "group_dst", "op"),
    "broadcast": ("tensor", "src", "group_src"),
    "all_gather": ("tensor", "tensor_list"),
    "all_gather_into_tensor": ("output_tensor", "input_tensor"),
    "reduce_scatter": ("output", "input_list", "op"),
    "reduce_scatter_tensor": ("output", "input", "op"),
    "gather": ("tensor", "dst", "group_dst"),
    "scatter": ("tensor", "src", "group_src"),
    "all_to_all": ("#output_tensor_list", "#input_tensor_list"),
    "all_to_all_single": (),
    "barrier": (),
    "all_gather_object": ("#object_list",),
    "broadcast_object_list": ("#object_list", "src", "group_src"),
    "gather_object": ("dst", "group_dst"),
    "scatter_object_list": ("src", "group_src"),
}


def describe(value: Any) -> Any:
    """A JSON-able description of one argument: ``float32[4, 3]`` for a tensor."""
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunction():  # no probe or device mode sees our own look
            return f"{str(value.dtype).replace('torch.', '')}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        first = describe(value[0]) if value and isinstance(value[0], torch.Tensor) else None
        return f"{len(value)} x {first}" if first else f"list of {len(value)}"
    if isinstance(value, (int, float, str, bool)):
        return value
    return str(value)


#: Collectives whose ranks send each other pieces of different sizes: what rank r receives
#: from rank j must be what rank j sends to rank r (compared in the parent, ``distributed.divergence``).
EXCHANGES = ("all_to_all", "all_to_all_single")


def exchange(op: str, arguments: dict[str, Any]) -> list[list[int]] | None:
    """[elements sent to each rank, elements received from each rank] of one all-to-all, or
    None when they cannot be read (the world size is unknown here: an even split is left to
    the parent as ``-1``)."""
    with torch._C.DisableTorchFunction():
        if op == "all_to_all":
            outputs, inputs = arguments.get("output_tensor_list"), arguments.get("input_tensor_list")
            if not isinstance(outputs, (list, tuple)) or not isinstance(inputs, (list, tuple)):
                return None
            return [[int(t.numel()) for t in inputs], [int(t.numel()) for t in outputs]]
        output, input_ = arguments.get("output"), arguments.get("input")
        if not isinstance(output, torch.Tensor) or not isinstance(input_, torch.Tensor) or not input_.dim() or not output.dim():
            return None
        sent = _pieces(input_, arguments.get("input_split_sizes"))
        received = _pieces(output, arguments.get("output_split_sizes"))
        return [sent, received] if sent is not None and received is not None else None


def _pieces(tensor: torch.Tensor, splits: Any) -> list[int] | None:
    """Elements of each rank's piece of ``tensor``: rows of its first dimension times a row."""
    row = int(tensor.numel() // tensor.shape[0]) if tensor.shape[0] else 0
    if splits is None or len(splits) == 0:
        return [-1, int(tensor.shape[0]) * row]  # an even split: [-1, total]
    try:
        return [int(split) * row for split in splits]
    except (TypeError, ValueError):
        return None


def fingerprint(op: str, arguments: dict[str, Any]) -> list[list]:
    agreed = []
    for name in AGREED_ARGUMENTS.get(op, ()):
        length_only = name.startswith("#")
        name = name.lstrip("#")
        if arguments.get(name) is None:
            continue
        value = arguments[name]
        agreed.append([name, len(value) if length_only and hasattr(value, "__len__") else describe(value)])
    return agreed


class CollectiveRecorder:
    """Installs the wrappers; ``emit(event, **fields)`` sends, ``site()`` names the user line."""

    def __init__(self, emit: Callable[..., None], site: Callable[[Any], Any], source: Callable[[Any], str]) -> None:
        self.emit = emit
        self.site = site
        self.source = source
        self.counts: dict[str, int] = {}
        self._local = threading.local()
        self._replaced: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        import torch.distributed as dist

        for op in AGREED_ARGUMENTS:
            original = getattr(dist, op, None)
            if callable(original):
                self._replaced.append((dist, op, original))
                setattr(dist, op, self._wrap(op, original))

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._replaced):
            setattr(owner, name, original)
        self._replaced = []

    def _wrap(self, op: str, original: Callable) -> Callable:
        try:
            signature = inspect.signature(original)
        except (TypeError, ValueError):
            signature = None

        @functools.wraps(original)
        def collective(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._local, "inside", False):
                return original(*args, **kwargs)
            entry = self._enter(op, signature, args, kwargs)
            self._local.inside = True
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                if entry is not None:
                    self.emit("collective-done", group=entry[0], index=entry[1], error=type(exc).__name__)
                raise
            finally:
                self._local.inside = False
            if entry is not None:
                self.emit("collective-done", group=entry[0], index=entry[1])
            return result

        return collective

    def _enter(self, op: str, signature: Any, args: tuple, kwargs: dict) -> tuple[str, int] | None:
        """Send the ``collective`` event; (group, index), or None when this rank is not in
        the group (the call does nothing) or the call cannot be described."""
        try:
            arguments = dict(signature.bind(*args, **kwargs).arguments) if signature else dict(kwargs)
            group = _group_name(arguments.get("group"))
            if group is None:
                return None
            index = self.counts.get(group, 0)
            self.counts[group] = index + 1
            site = self.site(None)
            fields = {"exchange": exchange(op, arguments)} if op in EXCHANGES else {}
            self.emit("collective", op=op, group=group, index=index, fingerprint=fingerprint(op, arguments),
                      at=[site.path, site.line] if site else None, source=self.source(site), **fields)
            return group, index
        except Exception:
            return None  # a call we cannot read is left to the process group


def _group_name(group: Any) -> str | None:
    """``world`` for the default group; ``ranks 0,2`` for a subgroup; None when this rank
    is not a member."""
    import torch.distributed as dist

    if group is None or group is getattr(dist.GroupMember, "WORLD", None):
        return "world"
    try:
        ranks = dist.get_process_group_ranks(group)
    except Exception:
        return "group " + str(id(group))
    if dist.get_rank() not in ranks:
        return None
    return "ranks " + ",".join(str(rank) for rank in ranks)
