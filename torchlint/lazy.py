"""Defer executing a heavy module until one of its attributes is first used.

libcst's import takes ~0.2 s, more than the rest of a pre-commit run. Rule modules import it
at the top but only touch it inside their visitors, so when no file needs parsing (nothing
passes the prefilter, or every result comes from the cache) libcst is never executed.

importlib.util.LazyLoader does not help on Python 3.11: the import system reads
`module.__spec__` on every later `import libcst`, which executes the module at once. This
proxy keeps a real `__spec__ = None` until it loads, so re-imports do not trigger it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class _LazyModule(types.ModuleType):
    def __getattr__(self, attribute: str):
        return getattr(self._load(), attribute)

    def _load(self) -> types.ModuleType:
        real = self.__dict__.get("_lazy_real")
        if real is None:
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = importlib.import_module(name)
            self.__dict__.update(real.__dict__)
            self.__dict__["_lazy_real"] = real
        return real


def lazy_import(name: str) -> types.ModuleType | None:
    """Put a lazily-executed `name` into sys.modules (no-op if it is already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        return None
    module = _LazyModule(name)
    sys.modules[name] = module
    return module


def load(name: str) -> types.ModuleType:
    """Execute a lazily imported module now (e.g. before forking workers that all need it)."""
    module = sys.modules.get(name)
    if isinstance(module, _LazyModule):
        return module._load()
    return importlib.import_module(name)


def is_loaded(name: str) -> bool:
    module = sys.modules.get(name)
    return module is not None and (not isinstance(module, _LazyModule) or "_lazy_real" in module.__dict__)


def file_of(module: types.ModuleType) -> object:
    """The module's ``__file__`` (None when it has none), read from its namespace:
    ``getattr`` on a module not yet loaded here would execute it."""
    return getattr(module, "__dict__", {}).get("__file__")
