"""TL607/TL609's safe fixes compute what the legacy call computed, wherever torch's defaults point.

Legacy constructors ignore the default device: `torch.FloatTensor(2, 3)` is a CPU tensor
under `with torch.device("meta"):` and after `torch.set_default_device(...)`, while
`torch.empty` and `torch.tensor` follow it. Each original call and its fixed text are run
under those defaults (and a changed default dtype); a fix marked safe must give the same
device, dtype and shape in every one.
"""

from __future__ import annotations

import contextlib

import pytest

from torchlint.fix.apply import apply_fixes
from torchlint.static.lines import python_lines
from torchlint.testing import check_sources

torch = pytest.importorskip("torch")

CALLS = [
    "torch.FloatTensor(2, 3)",
    "torch.LongTensor(4)",
    "torch.DoubleTensor()",
    "torch.FloatTensor([1, 2])",
    "torch.IntTensor((1, 2))",
    "torch.BoolTensor(2, 2)",
    "torch.Tensor(2, 3)",
    "torch.Tensor(5)",
    "torch.Tensor()",
    "torch.ByteTensor(2, 3, device='cpu')",
]


@contextlib.contextmanager
def default_device(device):
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(None)


@contextlib.contextmanager
def default_dtype(dtype):
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


DEFAULTS = {
    "plain": contextlib.nullcontext,
    "with torch.device('meta')": lambda: torch.device("meta"),
    "set_default_device('meta')": lambda: default_device("meta"),
    "set_default_dtype(float64)": lambda: default_dtype(torch.float64),
}


def fixed_calls() -> list[tuple[str, str, str]]:
    """(original call, fixed call, applicability) for each fix TL607 and TL609 offer."""
    text = "import torch\n" + "".join(f"x{i} = {call}\n" for i, call in enumerate(CALLS))
    found = check_sources({"m.py": text}, select=["TL607", "TL609"]).findings
    out = []
    for finding in found:
        if finding.fix is None:
            continue
        after = python_lines(apply_fixes(text, [finding.fix]).text)[finding.location.line - 1]
        out.append((CALLS[finding.location.line - 2], after.partition(" = ")[2], finding.fix.applicability))
    return out


def made(expression: str, defaults: str):
    with DEFAULTS[defaults]():
        tensor = eval(expression, {"torch": torch})
    return tensor.device.type, tensor.dtype, tuple(tensor.shape)


def test_there_are_fixes_to_check():
    fixed = {original for original, _, _ in fixed_calls()}
    assert {"torch.FloatTensor(2, 3)", "torch.Tensor(2, 3)", "torch.FloatTensor([1, 2])", "torch.Tensor()"} <= fixed


@pytest.mark.parametrize("defaults", DEFAULTS)
def test_a_safe_fix_makes_the_same_tensor_under_any_default(defaults):
    for original, fixed, applicability in fixed_calls():
        if applicability == "safe":
            assert made(fixed, defaults) == made(original, defaults), (original, fixed)


def test_a_fix_that_follows_the_default_device_is_unsafe():
    moved = [
        (original, fixed) for original, fixed, applicability in fixed_calls()
        if made(fixed, "set_default_device('meta')") != made(original, "set_default_device('meta')")
    ]
    assert moved, "some fix changes the device (torch.Tensor -> torch.empty)"
    assert all(applicability == "unsafe" for original, _, applicability in fixed_calls() if original in dict(moved))
