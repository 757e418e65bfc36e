from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule

from torchlint.semantic.program_facts import is_script, is_test_path

from ._loops import cuda_guarded, is_gpu_per_process_program

#: `torch.cuda` functions that raise on a machine without CUDA, checked against a CPU build of
#: torch 2.13. Many others are deliberately harmless there and are NOT listed: empty_cache,
#: manual_seed(_all), seed, device_count, is_available, memory_allocated/reserved (and max_),
#: memory_stats, is_bf16_supported, get_rng_state_all, set_rng_state_all, amp.*.
RAISING = frozenset(
    {
        "synchronize", "current_device", "set_device", "get_device_name", "get_device_properties",
        "get_device_capability", "current_stream", "default_stream", "Stream", "Event", "init",
        "get_rng_state", "set_rng_state", "ipc_collect", "mem_get_info", "set_per_process_memory_fraction",
        "CUDAGraph", "graph", "graph_pool_handle", "current_blas_handle", "cudart", "set_sync_debug_mode",
        "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
        "reset_accumulated_memory_stats", "memory_summary", "caching_allocator_alloc", "device",
        "nvtx.range_push", "nvtx.range_pop", "nvtx.range", "nvtx.mark", "memory._record_memory_history",
        "memory._snapshot", "memory._dump_snapshot", "utilization",
    }
)


#: The one-GPU-per-process setup of DDP/FSDP programs: GPU-only by design there.
_PROCESS_PINNING = frozenset({"set_device", "current_device"})


class UnguardedCudaCall(Rule):
    """
    ## What it does
    Flags `torch.cuda` calls that raise on a machine without CUDA — `synchronize()`,
    `current_device()`, `set_device(...)`, `get_device_name()`, `Event(...)`, `Stream()`,
    `reset_peak_memory_stats()`, `memory_summary()`, `nvtx.range_push(...)` and the like —
    when nothing shows they only run with CUDA present.

    Only code that runs as a program is checked: entry scripts (a `__main__` guard, a
    command-line parser) and module-level statements. Inside a library function the guard
    usually sits with the caller, which dispatches on the device, so those are left alone.

    A call counts as guarded under a condition that mentions CUDA, a GPU, a device,
    distributed training or a rank (`if torch.cuda.is_available():`, `if args.cuda:`,
    `if device.type == "cuda":`, `x if use_gpu else y`, `cuda_ok and ...`), after an early
    `return`/`raise`/`skip` on such a condition, inside a `try` with handlers, inside a
    function or class whose name or decorator mentions CUDA or a GPU, and in test files.
    `set_device`/`current_device` in files that use NCCL, DDP, FSDP or `init_process_group`
    are the one-GPU-per-process setup of a program that is GPU-only by design, and are left
    alone too.
    Calls that are harmless without CUDA are never flagged (verified on a CPU build):
    `empty_cache()`, `manual_seed(...)`, `manual_seed_all(...)`, `device_count()`,
    `memory_allocated()`, `max_memory_allocated()`, `memory_reserved()`, `is_bf16_supported()`.


    Off by default: on 17 big public libraries and frameworks with their test suites,
    judged by reviewers who did not write the rule, 1 of 25 sampled findings were right (81
    in all); the wrong ones were programs that only ever run on CUDA (NCCL process groups,
    `set_device`, streams and events, CUDA-only options), where a guard only moves the
    crash, and guards through a module-level flag. `--extend-select TL204` turns it on.
    ## Why is this bad?
    These calls raise `AssertionError: Torch not compiled with CUDA enabled` (or a
    `RuntimeError`) on a CPU-only machine, a Mac, or a CI runner, usually deep in a timing or
    logging line that has nothing to do with the computation. One guard keeps the code
    portable.

    ## Example
    ```python
    start = time.time()
    out = model(x)
    torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    start = time.time()
    out = model(x)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    ```
    """

    code = "TL204"
    name = "unguarded-cuda-call"
    summary = "`torch.cuda` call that raises without CUDA, with no availability guard"
    default_enabled = False
    triggers = ("cuda",)
    cases = [
        Bad(
            """
            import argparse
            import time
            import torch

            def timed(model, x):
                start = time.time()
                out = model(x)
                torch.cuda.synchronize()  # error
                return out, time.time() - start
            """
        ),
        Bad(
            """
            import torch
            from torch import cuda

            torch.cuda.reset_peak_memory_stats()  # error
            print(cuda.get_device_name())  # error
            for step in range(10):
                start = torch.cuda.Event(enable_timing=True)  # error

            def report():
                print(cuda.get_device_name())
            """,
            note="module-level statements run as a program; a library function is left to its callers",
        ),
        Good(
            """
            import torch

            def timed(model, x, device):
                out = model(x)
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                peak = torch.cuda.max_memory_allocated() if args.cuda else 0
                return out
            """,
            note="conditions about CUDA or the device",
        ),
        Good(
            """
            import torch

            def setup(local_rank):
                if not torch.cuda.is_available():
                    return "cpu"
                torch.cuda.set_device(local_rank)
                return torch.cuda.current_device()

            def tidy():
                torch.cuda.empty_cache()
                torch.cuda.manual_seed_all(0)
                n = torch.cuda.device_count()
                used = torch.cuda.memory_allocated()
            """,
            note="an early return, and calls that are harmless without CUDA",
        ),
        Good(
            """
            import torch

            def _cuda_sync():
                torch.cuda.synchronize()

            @requires_gpu
            def bench():
                torch.cuda.synchronize()

            def name():
                try:
                    return torch.cuda.get_device_name()
                except (AssertionError, RuntimeError):
                    return "cpu"
            """,
            note="CUDA-named functions, GPU-only decorators, handled failures",
        ),
        Good(
            """
            import os
            import torch
            from torch.distributed import init_process_group

            def ddp_setup():
                torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
                init_process_group(backend="nccl")
            """,
            note="one GPU per process in an NCCL program",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._script = is_script(ctx.path, ctx.text)

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.qualname(node.func)
        if qualname is None or not qualname.startswith("torch.cuda."):
            return
        member = qualname[len("torch.cuda."):]
        if member not in RAISING:
            return
        if member == "set_device" and _is_negative_literal(node):
            return  # set_device(-1) is a documented no-op
        if member in _PROCESS_PINNING and is_gpu_per_process_program(self.ctx.text):
            return
        if is_test_path(self.ctx.path) or cuda_guarded(self.ctx.ancestors, node):
            return
        if self.ctx.enclosing_function() is not None and not self._script:
            return  # a library function: its callers decide on which device it runs
        self.report(
            node,
            f"`torch.cuda.{member}(...)` raises on a machine without CUDA; guard it with "
            "`if torch.cuda.is_available():` (or the device's type)",
        )


def _is_negative_literal(call: cst.Call) -> bool:
    return bool(call.args) and type(call.args[0].value) is cst.UnaryOperation
