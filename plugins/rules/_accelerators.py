"""Does the project use an accelerator at all? Rules whose bugs only exist on one (a tensor
left on the CPU, a checkpoint saved on a GPU) leave a project alone whose checked files
never name one. The words are looked up by the engine in every checked file's bytes
(`Rule.project_tokens`), whether or not the rule ran on the file."""

from __future__ import annotations

import re

import libcst as cst

ACCELERATOR_TOKENS = ("cuda", "accelerator", "xla", "xpu", '"mps"', "'mps'")


def project_uses_accelerator(project, path: str) -> bool:
    """Does any checked file of `path`'s project name an accelerator?"""
    return any(project.files_mentioning(token, near=path) for token in ACCELERATOR_TOKENS)


#: A file that names any of these has a way to run without an accelerator, or runs on
#: several (where a checkpoint's device index matters): it is not CUDA-only by construction.
_CPU_OR_MULTI_DEVICE = re.compile(
    r"""is_available|device_count|["']cpu["']|\bmps\b|xla|xpu|accelerator|local_rank|LOCAL_RANK|set_device"""
    r"|init_process_group|DistributedDataParallel|DataParallel|\bdevice_ids\b"
)
#: An `if` or conditional expression whose test speaks of the device chooses one.
_DEVICE_CHOICE = re.compile(r"cuda|gpu|device", re.I)


def cuda_only_script(ctx) -> bool:
    """The file is a script (it has a `__main__` block, or statements at module level that
    place things on the GPU) that runs on one CUDA device or not at all: it moves things with
    `.cuda()` or names a `"cuda"`/`"cuda:0"` device, never conditionally, and names no CPU
    fallback, no other accelerator and no second device. A `torch.load` there runs where a
    GPU is, as the run that saved the file did. (A library module's functions are called from
    code this file does not show, which may run anywhere.)"""
    text = ctx.text
    if "cuda" not in text or _CPU_OR_MULTI_DEVICE.search(text):
        return False
    if "__main__" not in text and not any(
        "cuda" in ctx.module.code_for_node(statement)
        for statement in ctx.module.body
        if not isinstance(statement, (cst.FunctionDef, cst.ClassDef))
    ):
        return False
    from torchlint.static.walker import iter_nodes

    module = ctx.module
    placed = False
    for node in iter_nodes(module):
        kind = type(node)
        if kind is cst.If or kind is cst.IfExp:
            if _DEVICE_CHOICE.search(module.code_for_node(node.test)):
                return False  # `if args.cuda:` / `"cuda" if use_gpu else ...`: a CPU path exists
        elif kind is cst.Param or (kind is cst.Arg and node.keyword is not None and node.keyword.value == "default"):
            default = node.default if kind is cst.Param else node.value
            if type(default) is cst.SimpleString and "cuda" in default.value:
                return False  # `device="cuda"` as a default: the caller or the command line may choose
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "cuda":
            placed = True
        elif kind is cst.SimpleString and node.value.strip("'\"rbuRBU").startswith("cuda"):
            placed = True
    return placed
