"""Attributes a probe replaces for the length of a run, and puts back.

A probe that wraps a torch function (``F.dropout``, ``torch.nn.init.normal_``) or a method
(``DataLoader.__iter__``) records the original here and restores every one, last replaced
first, in ``uninstall``: a wrapper of a wrapper comes off in order.
"""

from __future__ import annotations

from typing import Any, Callable


class Patches:
    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> bool:
        """Set ``owner.name`` to ``make(original)``. On a class, only an attribute the class
        defines itself is replaced (a subclass's override of an inherited method stays the
        subclass's own); False when there is nothing to replace."""
        original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            return False
        self._saved.append((owner, name, original))
        setattr(owner, name, make(original))
        return True

    def restore(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved = []
