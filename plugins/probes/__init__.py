"""Built-in runtime probes, registered through the ``torchlint`` entry point like any plugin.

This module must stay importable without torch: the static ``torchlint check`` loads every
plugin. The probe modules (which import torch) are imported only when ``torchlint_probes`` is
called, which happens in the child process of ``torchlint run``.
"""

from __future__ import annotations

import importlib

from torchlint.pluginmanager import hookimpl

PROBE_MODULES = ("device", "loss", "autograd", "checkpoint", "torch_warnings", "errors", "gradient_flow", "shapes", "syncs", "compile", "profile", "distributed")


@hookimpl
def torchlint_probes() -> list[type]:
    classes = []
    for name in PROBE_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        classes.append(module.PROBE)
    return classes


@hookimpl
def torchlint_rules() -> list[type]:
    # The TL7xx codes that only running can produce: listed by `torchlint rules`, documented
    # by `torchlint rule TL701`, never matched by the static engine.
    from torchlint.runtime.rules import RUNTIME_RULES

    return list(RUNTIME_RULES.values())
