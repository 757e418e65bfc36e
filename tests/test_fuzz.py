"""Generated and mutated sources never crash `check` and fix idempotently (bounded: a few
dozen examples here; benchmarks/fuzz.py runs the same harness for minutes)."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from fuzzing import Figures, check_one, make_engine, mutate  # noqa: E402


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def engine(fuzz_dir):
    return make_engine(fuzz_dir)


@settings(
    max_examples=25,
    deadline=10_000,  # ms per example: a slow check is a finding too, but CI machines are busy
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    derandomize=True,
    database=None,
)
@given(source=hypothesmith.from_grammar(), rnd=st.randoms(use_true_random=False))
def test_generated_sources_check_and_fix_cleanly(engine, fuzz_dir, source, rnd):
    figures = Figures()
    check_one(engine, fuzz_dir, mutate(source, rnd), figures)
    assert not figures.crashes, figures.crashes[0][1]
    assert not figures.fix_failures, figures.fix_failures[0][1]


def test_mutator_splices_torch_code():
    import random

    from fuzzing import HEADER

    text = mutate("def f(x):\n    return x\n", random.Random(3))
    assert text.startswith(HEADER) and len(text) > len(HEADER)
