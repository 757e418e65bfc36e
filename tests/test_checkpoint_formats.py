"""The project-phase join of `torchlint.semantic.checkpoint_formats`: which writers a load's
keys name, through chains of saving helpers, and which of them are trusted to store CPU
tensors. (What the facts hold for real code is tested through TL301's rule cases.)"""

from __future__ import annotations

from torchlint.semantic.checkpoint_formats import format_writers, stores_cpu_tensors

TRAINER_KEYS = ["args", "model", "optimizer"]


def facts(**kinds):
    """A `facts_of` over (file, fact) pairs given per kind."""
    return lambda kind: kinds.get(kind, [])


def call(callee, keys=TRAINER_KEYS, **extra):
    return ("trainer.py", {"callee": callee, "arg": 0, "keys": keys, "tensors": True, "cpu": False, "moved": True, **extra})


def test_a_call_reaches_torch_save_through_two_helpers():
    project = facts(
        save_helper=[("io.py", {"function": "_save", "param": 0})],
        save_forward=[("io.py", {"function": "persistent_save", "param": 0, "callee": "_save", "arg": 0})],
        format_call=[call("persistent_save")],
    )
    assert format_writers(["args", "model"], project) == [call("persistent_save")]


def test_a_call_of_a_function_that_saves_nothing_is_no_writer():
    project = facts(
        save_helper=[("io.py", {"function": "_save", "param": 0})],
        save_forward=[("io.py", {"function": "persistent_save", "param": 1, "callee": "_save", "arg": 0})],
        format_call=[call("persistent_save"), call("log_save")],
    )
    assert format_writers(["args", "model"], project) == []  # param 0 of persistent_save is not the one saved


def test_every_key_read_must_be_a_key_of_the_writer():
    save = ("export.py", {"keys": ["classes", "weights"], "tensors": True, "cpu": True})
    project = facts(save=[save, ("train.py", {"keys": None, "tensors": True, "cpu": False})])
    assert format_writers(["classes", "weights"], project) == [save]
    assert format_writers(["classes", "epoch"], project) == []


def test_a_writer_that_never_speaks_of_devices_is_trusted_unless_its_file_loads_unmapped():
    plain = {"keys": TRAINER_KEYS, "tensors": True, "cpu": True, "moved": False}
    assert stores_cpu_tensors("convert.py", plain, files_loading_unmapped=set())
    assert not stores_cpu_tensors("convert.py", plain, files_loading_unmapped={"convert.py"})
    moved = dict(plain, cpu=False, moved=True)
    assert stores_cpu_tensors("convert.py", moved, files_loading_unmapped={"convert.py"})
    assert not stores_cpu_tensors("train.py", dict(plain, cpu=False), files_loading_unmapped=set())
