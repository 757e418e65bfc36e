"""The checkpoint probe gives TL302 (`torch.load` without `weights_only`) a status from the load
itself: what torch's default did with the file under the torch that ran it."""

from __future__ import annotations

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

# The files come from elsewhere (written by the test below): loads of files the program saves
# itself, with its own tensors, are trusted round trips that TL302 leaves alone.
PROGRAM = """
    import pickle

    import torch

    state = torch.load("weights.pt", map_location="cpu")
    try:
        config = torch.load("config.pt", map_location="cpu")
    except pickle.UnpicklingError:
        config = torch.load("config.pt", map_location="cpu", weights_only=False)
    legacy = torch.load("weights.pt", map_location="cpu", pickle_module=pickle)
    print(state["weight"].sum().item(), config.lr, legacy["weight"].sum().item())
"""
PLAIN, REFUSED, PICKLE_MODULE = 5, 7, 10


def test_a_load_without_weights_only_is_judged_by_what_the_default_did(write, tmp_path):
    import argparse

    import torch

    torch.save({"weight": torch.ones(2)}, tmp_path / "weights.pt")
    torch.save(argparse.Namespace(lr=0.1), tmp_path / "config.pt")
    write("train.py", PROGRAM)
    write("requirements.txt", "torch>=2.1\n")  # the project runs on torch before 2.6 too: TL302 applies
    run = torchlint_run("train.py", "--output-format", "json", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    found = {f["location"]["row"]: f for f in run.findings() if f["code"] == "TL302"}
    assert set(found) == {PLAIN, REFUSED, PICKLE_MODULE}, run.stdout
    plain, refused, legacy = found[PLAIN], found[REFUSED], found[PICKLE_MODULE]
    # torch 2.13 loads tensors with weights_only=True by default: nothing unsafe happened here
    assert plain["status"] == "not reproduced"
    assert "weights.pt loaded under torch 2." in plain["evidence"][0]["detail"]
    # the default refused the Namespace; the program caught it and went on
    assert refused["status"] == "confirmed"
    assert "config.pt failed under torch 2." in refused["evidence"][0]["detail"]
    assert "Weights only load failed" in refused["evidence"][0]["detail"]
    # a pickle_module means weights_only=False: the file was unpickled
    assert legacy["status"] == "confirmed" and "with weights_only=False" in legacy["evidence"][0]["detail"]
    assert not run.findings("runtime only")
