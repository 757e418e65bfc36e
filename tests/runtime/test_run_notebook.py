"""`torchlint run notebook.ipynb`: the code cells run in order as one script, magics
skipped, and static findings, their evidence and runtime-only findings name cells."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/notebook_fixtures.py

from conftest import torchlint_run  # noqa: E402
from notebook_fixtures import TUTORIAL, code, markdown, notebook, write_notebook  # noqa: E402


def test_a_notebook_runs_cell_after_cell_and_findings_map_to_cells(tmp_path):
    document = json.loads(json.dumps(TUTORIAL))
    document["cells"].append(code("%%bash\nexit 1", 5))
    document["cells"].append(code("display(loss.item())\nprint('finished')", 6))
    write_notebook(tmp_path / "tutorial.ipynb", document)
    result = torchlint_run("tutorial.ipynb", "--output-format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.report["outcome"]["status"] == "completed", result.report["outcome"]
    [finding] = result.findings("confirmed")
    assert (finding["code"], finding["cell"], finding["location"]) == ("TL101", 5, {"row": 1, "column": 8})
    detail = finding["evidence"][0]["detail"]
    assert "tutorial.ipynb:cell 5:1" in detail and "tutorial.ipynb:cell 3:7" in detail, detail
    assert "finished" in result.stderr  # the last cell ran; `display` (IPython's) printed before it


def test_an_error_in_a_cell_is_reported_at_that_cell(tmp_path):
    cells = [markdown("setup"), code("import torch\n!echo skipped", 1), code("x = torch.ones(2)\ny = torch.ones(3)\nz = x + y", 2)]
    write_notebook(tmp_path / "crash.ipynb", notebook(*cells))
    result = torchlint_run("crash.ipynb", "--output-format", "json", cwd=tmp_path)
    assert result.report["outcome"]["status"] == "raised"
    assert "at crash.ipynb:cell 3:3 " in result.report["outcome"]["summary"]  # not the joined line (6)
    crashes = [f for f in result.findings() if f.get("cell") is not None]
    assert crashes and all(f["cell"] == 3 for f in crashes), result.report["findings"]
    assert any(f["location"]["row"] == 3 for f in crashes), result.report["findings"]


def test_the_report_sections_name_cells_too(tmp_path):
    # The findings named cells, but the input-pipeline and memory sections printed the
    # joined line (`cats_and_dogs.ipynb:119`), which no cell shows.
    cells = [
        markdown("a loader"),
        code("import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset", 1),
        code("data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))\nloader = DataLoader(data, batch_size=4)", 2),
        code("model = nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "for x, y in loader:\n    loss = nn.functional.mse_loss(model(x), y)\n"
             "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()", 3),
    ]
    write_notebook(tmp_path / "loader.ipynb", notebook(*cells))
    result = torchlint_run("loader.ipynb", "--timeout", "120", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "loader.ipynb:cell 3:2  num_workers=0" in result.stderr, result.stderr


def test_where_maps_a_notebook_line_to_its_cell(tmp_path):
    from torchlint.runtime.report.sections import where

    cells = [code("import torch", 1), code("x = 1\ny = 2", 2)]
    write_notebook(tmp_path / "nb.ipynb", notebook(*cells))
    assert where(str(tmp_path / "nb.ipynb"), 3, tmp_path) == "nb.ipynb:cell 2:1"
    assert where("train.py", 7, tmp_path) == "train.py:7"
