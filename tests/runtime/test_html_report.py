"""report.html: self-contained (nothing fetched), with its charts, checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from torchlint.findings import Evidence, Finding, Location, Severity
from torchlint.pluginmanager import make_plugin_manager
from torchlint.runtime.report.html_page import write_report_dir
from torchlint.runtime.merge.matching import Outcome
from torchlint.runtime.report.sections import sections_of

RESULTS = {
    "compile": {
        "backend": "aot_eager", "ladder": ["eager", "aot_eager"], "model": "GatedMLP", "inputs": "(Tensor[16, 16] float32)",
        "rungs": [{"backend": "eager", "stage": "Dynamo", "status": "ok", "first_call_s": 0.4},
                  {"backend": "aot_eager", "stage": "AOTAutograd", "status": "failed", "error": "BackendCompilerFailed",
                   "message": "ValueError: <no kernel> & friends", "at": ["/nowhere/model.py", 9]}],
        "graph_breaks": [{"path": "/nowhere/model.py", "line": 7, "reason": "Data-dependent branching", "hints": ["Use torch.cond"],
                          "ref": "GB0170", "count": 2, "explanation": ""}],
        "recompilations": [{"path": "/nowhere/model.py", "line": 5, "function": "forward", "count": 1,
                            "reasons": ["tensor 'x' size mismatch at index 0. expected 16, actual 8"]}],
        "accuracy": {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "rtol": 1e-4, "atol": 1e-5, "dtype": "float32", "backend": "eager"},
        "speed": {"backend": "eager", "eager_ms": 1.5, "compiled_ms": 0.9, "speedup": 1.67, "compile_s": 0.8, "calls": [5, 5],
                  "breakeven_calls": 1334, "mode": "forward, no_grad"},
        "failure": {"stage": "AOTAutograd"},
    },
    "profile": {
        "steps": 2, "profiled_steps": 2, "warmup": 1, "step_unit": "optimizer step", "step_ms": 12.0,
        "split_ms": {"forward": 4.0, "backward": 6.0, "optimizer": 1.5, "other": 0.5},
        "lines": [{"name": "models.py:24", "path": "/nowhere/models.py", "line": 24, "function": "forward",
                   "source": "dist = torch.cdist(z, self.prototypes)", "forward_ms": 3.0, "backward_ms": 4.0, "total_ms": 7.0,
                   "calls_per_step": 1, "ops": ["aten::cdist"], "shapes": ["cdist([64, 256], [2048, 256])"]},
                  {"name": "models.py:12", "path": "/nowhere/models.py", "line": 12, "function": "forward",
                   "source": "return self.norm(x) <script>alert(1)</script>", "forward_ms": 1.0, "backward_ms": 2.0,
                   "total_ms": 3.0, "calls_per_step": 3, "ops": ["aten::linear"], "shapes": []}],
        "modules": [{"path": "encoder.layers.3.attn", "forward_ms": 1.0, "self_forward_ms": 1.0, "backward_ms": 2.0, "total_ms": 3.0,
                     "calls_per_step": 1}],
        "ops": [{"name": "aten::mm", "self_ms": 2.0, "total_ms": 2.0, "calls_per_step": 2, "shapes": "([64, 256], [256, 2048])"}],
        "flops": {"forward_total": 3_000_000, "modules": [{"path": "encoder", "flops": 2_000_000, "ops": ["mm"]}], "note": "forward"},
        "trace": "/nowhere/out/trace.json",
    },
}


def _findings(source: Path) -> list[Finding]:
    return [
        Finding(code="TL712", name="hot-spot", message="hot spot: this line takes 70% of the time", path=str(source),
                location=Location(2, 1, 2, 1), severity=Severity.INFO, evidence=(Evidence("runtime only", "hot", {}),)),
        Finding(code="TL708", name="graph-break", message="graph break (2x): Data-dependent branching [GB0170]", path=str(source),
                location=Location(3, 1, 3, 1), severity=Severity.WARNING,
                evidence=(Evidence("runtime only", "gb", {"hints": ["first", "second hint"]}),)),
    ]


def _page(tmp_path: Path) -> Path:
    source = tmp_path / "model.py"
    source.write_text("import torch\nz = torch.cdist(a, b)\nif z.sum() > 0:\n    pass\n")
    outcome = Outcome("completed", "completed after 3 optimizer steps and 3 forward calls", 3, 3, 4.2)
    # The compile and profile sections come from the two probes' plugins, as in a run.
    sections = sections_of(make_plugin_manager(), RESULTS, tmp_path)
    return write_report_dir(tmp_path / "out", findings=_findings(source), outcome=outcome, header="torchlint run train.py --device cpu",
                            results=RESULTS, sections=sections, target={"path": str(source), "entry": None, "device": "cpu"}, cwd=tmp_path)


def test_the_report_is_self_contained_and_escapes_user_text(tmp_path):
    page = _page(tmp_path)
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "the report must not fetch anything"
    assert "<link" not in text and "<script" not in text and "@import" not in text
    assert "&lt;script&gt;" in text  # the source line, escaped (and clipped in the chart label)
    assert text.count("<svg") >= 5  # split, lines, modules, FLOPs, speed
    for expected in ("GB0170", "encoder.layers.3.attn", "AOTAutograd", "1.67×", "z = torch.cdist(a, b)", "second hint"):
        assert expected in text, expected
    assert (page.parent / "findings.json").exists()


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium)")
def test_the_report_renders_in_headless_chromium(tmp_path):
    page = _page(tmp_path)
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
        capture_output=True, timeout=90,
    )
    data = shot.read_bytes()
    assert _png_size(data) == (1280, 2000)
    # Drawn, not blank: a white or empty page compresses to a few kilobytes.
    assert len(data) > 40_000
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile2'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=90,
    ).stdout
    assert "encoder.layers.3.attn" in dom and dom.count("<rect") >= 10
