"""Stands for a torch whose Inductor has the bug PyTorch's tutorial "Inductor CPU backend
debugging and profiling" injects into torch/_inductor/codegen/cpp.py: the C++ code generated
for `neg` computes `2 * x`. It compiles, and the compiled model computes something else.

Python imports this file at start-up when its folder is on PYTHONPATH, so every process of
the run has the bug, as with an edited torch: the program, and the processes in which
torchlint minifies the graph and runs the minified script alone. It patches the code
generator only when Inductor loads it (a plain `import torch` stays as fast as ever).
"""

import importlib.abc
import importlib.machinery
import sys


def inject(cpp):
    import torch._inductor.config

    cpp.CppOverrides.neg = staticmethod(lambda x: f"decltype({x})(2 * {x})")
    cpp.CppVecOverrides.neg = staticmethod(lambda x: f"({x} * decltype({x})(2))")
    # Inductor's graph cache keys on torch's sources, not on patches: a graph compiled
    # before (without the bug) would hide it.
    torch._inductor.config.fx_graph_cache = False


class PatchWhenImported(importlib.abc.MetaPathFinder):
    name = "torch._inductor.codegen.cpp"

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            inject(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, PatchWhenImported())
