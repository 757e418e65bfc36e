"""The static list of torch.Tensor's public names matches the installed torch: a method it
lacks would hide device meetings (torchlint.semantic.devices skips non-tensor methods)."""

from __future__ import annotations

import pytest

from torchlint.semantic.tensor_methods import TENSOR_ATTRIBUTE_NAMES


def test_every_public_tensor_attribute_is_listed():
    torch = pytest.importorskip("torch")
    public = {name for name in dir(torch.Tensor) if not name.startswith("_")}
    assert public <= TENSOR_ATTRIBUTE_NAMES, sorted(public - TENSOR_ATTRIBUTE_NAMES)


def test_model_methods_are_not_tensor_methods():
    assert {"inference", "generate", "predict", "encode_image", "forward"}.isdisjoint(TENSOR_ATTRIBUTE_NAMES)
    assert {"masked_fill", "matmul", "add", "index_add_", "cumsum"} <= TENSOR_ATTRIBUTE_NAMES
