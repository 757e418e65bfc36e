"""Qualified names through the import-alias table."""

from __future__ import annotations

import libcst as cst
import pytest

from torchlint.static.context import FileContext
from torchlint.static.names import AliasTable
from torchlint.static.walker import Dispatcher


class Collect:
    """Records ctx.qualname of every call's function, in source order."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.names = []

    def visit_Call(self, node):
        self.names.append(self.ctx.qualname(node.func))


def call_names(source: str) -> list[str | None]:
    module = cst.parse_module(source)
    ctx = FileContext("a.py", source, module, [])
    collector = Collect(ctx)
    Dispatcher([collector], lambda *a: None, ancestors=ctx.ancestors).walk(module)
    return collector.names


@pytest.mark.parametrize(
    "source,expected",
    [
        ("import torch\ntorch.load(p)", "torch.load"),
        ("import torch as T\nT.load(p)", "torch.load"),
        ("from torch import load as tl\ntl(p)", "torch.load"),
        ("from torch import load\nload(p)", "torch.load"),
        ("import torch.nn.functional as F\nF.softmax(x)", "torch.nn.functional.softmax"),
        ("from torch.nn import functional\nfunctional.softmax(x)", "torch.nn.functional.softmax"),
        ("from torch.nn import functional as F\nF.softmax(x)", "torch.nn.functional.softmax"),
        ("import torch.nn\ntorch.nn.Softmax(1)", "torch.nn.Softmax"),
        ("from torch import nn\nnn.CrossEntropyLoss()", "torch.nn.CrossEntropyLoss"),
        ("try:\n    import torch\nexcept ImportError:\n    pass\ntorch.load(p)", "torch.load"),
        ("def f():\n    import torch\n    return torch.load(p)", "torch.load"),
    ],
)
def test_aliases_resolve(source, expected):
    assert call_names(source)[-1] == expected


@pytest.mark.parametrize(
    "source",
    [
        "load(p)",  # never imported
        "def load(p): ...\nload(p)",
        "from torch import load\ndef load(p): ...\nload(p)",  # two bindings: ambiguous
        "from torch import load\nload = my_loader\nload(p)",
        "import torch\ndef f(torch):\n    return torch.load(p)",  # parameter shadows
        "import torch\ndef f():\n    torch = get()\n    return torch.load(p)",  # local assignment shadows
        "from .torch import load\nload(p)",  # relative import: the project's own module
        "import numpy as torch\nimport torch\ntorch.load(p)",  # two imports bind the name differently
        "from torch import range as r\nr(3)\nfrom torch import *\nstar(1)",  # odd imports never crash
    ],
)
def test_names_that_are_not_torch(source):
    names = call_names(source)
    assert names[-1] in (None,) or not names[-1].startswith("torch.load"), names


def test_odd_import_resolves_and_never_crashes():
    assert call_names("from torch import range as r\nr(3)") == ["torch.range"]
    assert call_names("import torch.nn.functional\ntorch.nn.functional.relu(x)") == ["torch.nn.functional.relu"]


@pytest.mark.parametrize(
    "binding",
    [
        "def f(torch):",
        "def f(a, torch=None):",
        "def f(*, torch):",
        "def f(**torch):",
        "def f():\n    torch = 1",
        "def f():\n    for torch in xs: pass",
        "def f():\n    with x as torch: pass",
        "def f():\n    (torch := 3)",
        "def f():\n    a, torch = 1, 2",
        "def f():\n    def torch(): pass",
        "def f():\n    class torch: pass",
    ],
)
def test_every_kind_of_local_binding_is_seen(binding):
    """The textual shortcut may only skip the scope scan when no binding is possible."""
    source = f"import torch\n{binding}\n    torch.load(p)\n"
    assert call_names(source)[-1] is None


def test_shortcut_keeps_resolution_when_nothing_rebinds():
    source = "import torch\ndef f(x):\n    y = x == torch.ones(1)\n    return torch.load(p)\n"
    assert call_names(source)[-1] == "torch.load"


def test_statement_level_bindings_match_the_full_walk_without_walrus():
    import libcst as cst

    from torchlint.static.names import local_bindings

    source = '''
def f(a, *args, b=1, **kw):
    x = y = 1
    (p, [q, *r]) = a
    s: int = 2
    t += 1
    for i, (j, k) in a:
        with open(a) as fh, open(b) as (g, h):
            pass
    try:
        u = 1
    except ValueError as err:
        v = 2
    else:
        w = 3
    finally:
        z = 4
    if a:
        m1 = 1
    elif b:
        m2 = 2
    else:
        m3 = 3
    while a:
        n1 = 1
    else:
        n2 = 2
    def inner(c):
        hidden = 1
    class K:
        attr = 1
    import os as alias
'''
    function = cst.parse_module(source).body[0]
    full = local_bindings(function)
    assert local_bindings(function, walrus=False) == full
    assert {"x", "y", "p", "q", "r", "s", "t", "i", "j", "k", "fh", "g", "h", "u", "err", "v", "w", "z",
            "m1", "m2", "m3", "n1", "n2", "inner", "K", "a", "args", "b", "kw"} == full
    assert "hidden" not in full and "attr" not in full and "alias" not in full


def test_star_import_binds_conventional_torch_names_the_file_leaves_unbound():
    table = AliasTable(cst.parse_module("from common import *\nfrom torch import nn as tnn\nF = 3\nx = torch.zeros(1)\n"))
    assert table.resolve("torch.zeros") == "torch.zeros"
    assert table.resolve("Variable") == "torch.autograd.Variable"
    assert table.resolve("F.relu") is None  # bound by the file itself
    assert table.resolve("tnn.Linear") == "torch.nn.Linear"


def test_no_star_import_no_conventional_names():
    table = AliasTable(cst.parse_module("x = torch.zeros(1)\n"))
    assert table.resolve("torch.zeros") is None
