"""TL301's map_location fix is safe only where `load_state_dict` copies the loaded values into
the model's own tensors. With `assign=True` the module adopts the loaded tensors themselves,
so a CUDA model would end up with CPU parameters after plain `--fix`."""

from __future__ import annotations

import pytest

from torchlint.testing import check_sources


def applicability(call: str) -> str | None:
    source = f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\ndef resume(model, path, flag, kw):\n    {call}\n"
    (finding,) = [f for f in check_sources({"a.py": source}, select=["TL301"]).findings]
    return finding.fix.applicability if finding.fix is not None else None


@pytest.mark.parametrize(
    "call, expected",
    [
        ("model.load_state_dict(torch.load(path, weights_only=True))", "safe"),
        ('model.load_state_dict(torch.load(path, weights_only=True)["model"], strict=False)', "safe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), assign=False)", "safe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), True, False)", "safe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), assign=True)", "unsafe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), True, True)", "unsafe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), assign=flag)", "unsafe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), **kw)", "unsafe"),
        ("model.load_state_dict(torch.load(path, weights_only=True), *kw)", "unsafe"),
        ("state = torch.load(path, weights_only=True)", "unsafe"),
    ],
)
def test_the_fix_is_safe_only_when_load_state_dict_copies(call, expected):
    assert applicability(call) == expected


def test_assign_true_adopts_the_loaded_device():
    """Why: with assign=True the parameters become the loaded tensors, device included."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 2, device="meta")
    model.load_state_dict({k: torch.zeros_like(v, device="cpu") for k, v in model.state_dict().items()}, assign=True)
    assert model.weight.device.type == "cpu"
