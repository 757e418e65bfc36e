"""A third party's probe package, installed: its own runtime-only rule, command-line option
and report section reach the text, JSON and HTML reports, at the user's line, and
`--disable-probe` switches it off like a built-in probe."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import torchlint_run

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

PLUGIN = '''"""acme-health: wide Linear layers (ACME901), with a threshold option and a report section."""
import html
from pathlib import Path

from torchlint import hookimpl
from torchlint.runtime.rules import RuntimeRule
from torchlint.runtime.report.sections import RunSection


class WideLayer(RuntimeRule):
    """
    ## What it does
    Reports a Linear layer with more outputs than `--acme-max-outputs` (1,000).
    """

    code = "ACME901"
    name = "wide-layer"
    summary = "A Linear layer wider than the limit ran"


@hookimpl
def torchlint_rules():
    return [WideLayer]


@hookimpl
def torchlint_run_options():
    import click

    return [click.Option(["--acme-max-outputs"], type=int, default=1000, show_default=True,
                         help="Widest Linear layer that is not reported.")]


@hookimpl
def torchlint_run_section(name, result, cwd):
    if name != "acme-wide-layer":
        return None
    widths = ", ".join(str(width) for width in result["widths"])
    return RunSection(title="acme", text=[f"acme: Linear widths seen: {widths}"],
                      html=f"<section><h2>Linear widths</h2><p>{html.escape(widths)}</p></section>",
                      cards=(("widest Linear", str(max(result["widths"])), "acme"),))


@hookimpl
def torchlint_probes():
    from acme_health_probe import WideLayerProbe

    return [WideLayerProbe]
'''

PROBE = '''"""The probe of acme-health (imports torch)."""
import torch.nn.functional as F

from torchlint.runtime.child.probing import Probe


class WideLayerProbe(Probe):
    name = "acme-wide-layer"
    runtime_code = "ACME901"

    def install(self):
        self.limit = self.ctx.options.get("acme_max_outputs", 1000)
        self.widths = []

    def watches(self, func):
        return func is F.linear

    def before(self, func, args, kwargs):
        width = (args[1] if len(args) > 1 else kwargs["weight"]).shape[0]
        self.widths.append(width)
        if width > self.limit:
            self.ctx.evidence(self, code=None, at=self.ctx.site(), message=f"a Linear layer with {width} outputs ran")

    def after_run(self):
        self.ctx.publish(self, {"widths": sorted(set(self.widths))})
'''

PYPROJECT = '''[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-health"
version = "0.1.0"

[project.entry-points.torchlint]
acme-health = "acme_health"

[tool.setuptools]
py-modules = ["acme_health", "acme_health_probe"]
'''

TRAIN = """import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 2048), nn.Linear(2048, 8))
out = model(torch.randn(2, 4))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The package installed into a folder of its own, put on the path as site-packages would be."""
    root = tmp_path_factory.mktemp("thirdparty")
    package = root / "acme-health"
    package.mkdir()
    (package / "pyproject.toml").write_text(PYPROJECT)
    (package / "acme_health.py").write_text(PLUGIN)
    (package / "acme_health_probe.py").write_text(PROBE)
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(package)], check=True, capture_output=True, timeout=180)
    work = root / "work"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    return work, {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_the_finding_and_the_section_reach_json_and_html(project):
    work, env = project
    run = torchlint_run("train.py", "--device", "cpu", "--output-format", "json", "--report", "out", cwd=work, env=env, timeout=180)
    (finding,) = run.findings("runtime only")
    assert (finding["code"], finding["name"], finding["filename"], finding["location"]["row"]) == ("ACME901", "wide-layer", "train.py", 5)
    assert finding["message"] == "a Linear layer with 2048 outputs ran"
    assert run.report["acme-wide-layer"] == {"widths": [8, 2048]}
    html = (work / "out" / "report.html").read_text()
    assert "ACME901" in html and "a Linear layer with 2048 outputs ran" in html
    assert "<h2>Linear widths</h2><p>8, 2048</p>" in html and "widest Linear" in html


def test_the_option_reaches_the_probe_and_the_section_the_text_report(project):
    work, env = project
    help_text = torchlint_run("--help", cwd=work, env=env, timeout=60).stdout
    assert "--acme-max-outputs" in help_text and "Widest Linear layer that is not reported." in help_text
    run = torchlint_run("train.py", "--device", "cpu", "--acme-max-outputs", "100", cwd=work, env=env, timeout=180)
    assert "train.py:5:1: ACME901 [runtime only] a Linear layer with 2048 outputs ran" in run.stderr
    assert "acme: Linear widths seen: 8, 2048" in run.stderr
    quiet = torchlint_run("train.py", "--device", "cpu", "--acme-max-outputs", "4096", cwd=work, env=env, timeout=180)
    assert "ACME901" not in quiet.stderr and "acme: Linear widths seen: 8, 2048" in quiet.stderr


def test_disable_probe_switches_it_off_and_names_the_probes_when_misspelt(project):
    work, env = project
    off = torchlint_run("train.py", "--device", "cpu", "--disable-probe", "acme-wide-layer", cwd=work, env=env, timeout=180)
    assert "ACME901" not in off.stderr and "acme:" not in off.stderr and off.returncode == 0
    typo = torchlint_run("train.py", "--device", "cpu", "--disable-probe", "acme-wide", cwd=work, env=env, timeout=180)
    assert typo.returncode == 2
    assert "--disable-probe: no probe named acme-wide (the probes: acme-wide-layer, autocast, autograd," in typo.stderr


def test_a_plugin_the_configuration_names_adds_its_option_when_run_from_another_folder(tmp_path):
    """`plugins = [...]` in the project's pyproject.toml: the run reads the configuration found
    from the target's folder, and so do the options it accepts (or `--config`'s file)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchlint]\nplugins = ["acme_health"]\n')
    (project / "acme_health.py").write_text(PLUGIN)
    (project / "acme_health_probe.py").write_text(PROBE)
    (project / "train.py").write_text(TRAIN)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = torchlint_run(str(project / "train.py"), "--device", "cpu", "--acme-max-outputs", "100", cwd=tmp_path, timeout=180)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "ACME901 [runtime only] a Linear layer with 2048 outputs ran" in run.stderr
    named = torchlint_run("--config", str(project / "pyproject.toml"), str(project / "train.py"), "--device", "cpu",
                          "--acme-max-outputs", "4096", cwd=elsewhere, timeout=180)
    assert named.returncode == 0 and "acme: Linear widths seen: 8, 2048" in named.stderr, named.stderr[-3000:]
