"""Does the project use an accelerator at all? Rules whose bugs only exist on one (a tensor
left on the CPU, a checkpoint saved on a GPU) leave a project alone whose checked files
never name one. The words are looked up by the engine in every checked file's bytes
(`Rule.project_tokens`), whether or not the rule ran on the file."""

from __future__ import annotations

ACCELERATOR_TOKENS = ("cuda", "accelerator", "xla", "xpu", '"mps"', "'mps'")


def project_uses_accelerator(project, path: str) -> bool:
    """Does any checked file of `path`'s project name an accelerator?"""
    return any(project.files_mentioning(token, near=path) for token in ACCELERATOR_TOKENS)
