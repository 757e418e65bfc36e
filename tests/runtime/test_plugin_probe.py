"""A third party's probe with its own runtime-only rule, loaded from the project's
configuration (`plugins = [...]`): its finding reaches the text, JSON and HTML reports, at
the user's line (not the plugin's, although the plugin sits in the project)."""

from __future__ import annotations

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

PLUGIN = '''
from torchlint import hookimpl
from torchlint.runtime.rules import RuntimeRule


class WideLayer(RuntimeRule):
    """
    ## What it does
    Reports a Linear layer with more than 1,000 outputs.
    """

    code = "ACME901"
    name = "wide-layer"
    summary = "A Linear layer with more than 1,000 outputs ran"


@hookimpl
def torchlint_rules():
    return [WideLayer]


@hookimpl
def torchlint_probes():
    import torch.nn.functional as F
    from torchlint.runtime.probing import Probe

    class WideLayerProbe(Probe):
        name = "acme-wide-layer"
        runtime_code = "ACME901"

        def watches(self, func):
            return func is F.linear

        def before(self, func, args, kwargs):
            weight = args[1] if len(args) > 1 else kwargs["weight"]
            if weight.shape[0] > 1000:
                self.ctx.evidence(self, code=None, at=self.ctx.site(), message=f"a Linear layer with {weight.shape[0]} outputs ran")

    return [WideLayerProbe]
'''

TRAIN = """import torch
from torch import nn

model = nn.Linear(4, 2048)
out = model(torch.randn(2, 4))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("thirdparty")
    (root / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["acme_health"]\n')
    (root / "acme_health.py").write_text(PLUGIN)
    (root / "train.py").write_text(TRAIN)
    return root


def test_the_finding_reaches_json_and_html(project):
    run = torchlint_run("train.py", "--device", "cpu", "--output-format", "json", "--report", "out", cwd=project, timeout=180)
    (finding,) = run.findings("runtime only")
    assert (finding["code"], finding["name"], finding["filename"], finding["location"]["row"]) == ("ACME901", "wide-layer", "train.py", 5)
    assert finding["message"] == "a Linear layer with 2048 outputs ran"
    html = "".join(path.read_text() for path in (project / "out").glob("*.html"))
    assert "ACME901" in html and "a Linear layer with 2048 outputs ran" in html


def test_the_finding_reaches_the_text_report(project):
    run = torchlint_run("train.py", "--device", "cpu", cwd=project, timeout=180)
    assert "train.py:5:1: ACME901 [runtime only] a Linear layer with 2048 outputs ran" in run.stdout
