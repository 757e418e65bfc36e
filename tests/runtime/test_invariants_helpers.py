"""Helpers of the invariants probe, without a run: what they do to the program's objects."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")


def test_looking_for_optimizers_among_all_objects_reads_no_deprecated_attribute():
    # The probe's end-of-run search for optimizers goes through gc.get_objects(); isinstance()
    # reads `__class__`, which torch.distributed.reduce_op answers with a FutureWarning that
    # appeared in every program's output, at the probe's own line.
    from torchlint.plugins.probes.invariants.optimizers import _is_optimizer

    if not hasattr(torch.distributed, "reduce_op"):
        pytest.skip("this torch has no deprecated torch.distributed.reduce_op")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _is_optimizer(torch.distributed.reduce_op) is False
        assert _is_optimizer(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)) is True


def test_a_generator_is_named_by_its_public_name():
    # numpy 2 defines Generator in numpy.random._generator; the message named that module.
    import random

    from torchlint.plugins.probes.invariants.workers import _public_name

    numpy = pytest.importorskip("numpy")
    assert _public_name(type(numpy.random.default_rng(0))) == "numpy.random.Generator"
    assert _public_name(type(numpy.random.RandomState(0))) == "numpy.random.RandomState"
    assert _public_name(random.Random) == "random.Random"
    assert _public_name(torch.Generator) == "torch.Generator"
