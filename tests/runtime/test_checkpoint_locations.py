"""Reading storage locations from checkpoints without unpickling them."""

from __future__ import annotations

import io
import pickle
import sys
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torchlint.runtime.checkpoint_locations import storage_locations  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "runtime" / "checkpoint"))
from make_cuda_checkpoint import make_model, save_as_if_on_cuda  # noqa: E402


def locations(path: Path):
    with open(path, "rb") as stream:
        return storage_locations(stream)


def test_cuda_saved_fixture_made_on_a_cpu_machine(tmp_path):
    path = tmp_path / "gpu.pt"
    save_as_if_on_cuda(make_model().state_dict(), path)
    assert locations(path) == {"cuda:0": 4}
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(path, weights_only=True)


def test_cpu_checkpoint_and_shared_storages(tmp_path):
    path = tmp_path / "cpu.pt"
    weight = torch.randn(4, 4)
    torch.save({"a": weight, "view": weight[1], "other": torch.zeros(2), "step": 3}, path)
    assert locations(path) == {"cpu": 2}  # the view shares the first storage


def test_legacy_format(tmp_path):
    path = tmp_path / "legacy.pt"
    from unittest import mock

    with mock.patch.object(torch.serialization, "location_tag", lambda storage: "cuda:1"):
        torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    assert locations(path) == {"cuda:1": 1}


def test_not_a_checkpoint(tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(b"definitely not a pickle")
    assert locations(path) is None


def test_a_hostile_pickle_is_read_not_run(tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"payload": Exploit()}, protocol=2))
    buffer.seek(0)
    assert storage_locations(buffer) == {}
    assert not marker.exists()
