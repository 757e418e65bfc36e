"""Hostile input: files built to crash, hang or exhaust the checker, and names built to forge
report lines. Each case is one clear TL000 (or a correctly escaped line) and the run goes on.

Anything that could kill the interpreter (libcst segfaults on deep nesting) runs in a
subprocess with a timeout, so a regression fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BUGGY = b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load('ckpt.pt', weights_only=True)\n"
TIMEOUT = 120


def check_json_subprocess(cwd: Path, *args: str, timeout: float = TIMEOUT) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "json", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
    )
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr.decode(errors="replace")[-2000:])
    return proc.returncode, {(d["filename"], d["code"]): d for d in json.loads(proc.stdout)}


def check_json(tmp_path, monkeypatch, *args):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", *args], catch_exceptions=False)
    return result.exit_code, {(d["filename"], d["code"]): d for d in json.loads(result.output)}


# -- 1. nesting deeper than libcst's native parser survives --------------------------------
DEEP = {
    "parens.py": "x = " + "(" * 1500 + "1" + ")" * 1500 + "\n",
    "lists.py": "x = " + "[" * 10_000 + "]" * 10_000 + "\n",
    "minus.py": "x = " + "-" * 10_000 + "1\n",
    "lambdas.py": "f = " + "lambda: " * 4000 + "1\n",
    "ors.py": "x = " + " or ".join(["t"] * 10_000) + "\n",
}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_too_deep_nesting_is_one_finding_not_a_segfault(tmp_path, jobs):
    for name, body in DEEP.items():
        (tmp_path / name).write_text(BUGGY.decode() + body)  # a rule wants it: libcst would parse it
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json_subprocess(tmp_path, "--select", "TL301,TL000,TL001", "--jobs", jobs, ".")
    assert code == 1
    assert set(found) == {*((name, "TL000") for name in DEEP), ("good.py", "TL301")}
    for name in DEEP:
        message = found[(name, "TL000")]["message"]
        assert "nest" in message and "1:1" not in message, message
    # The gate names where the nesting is, not 1:1.
    assert found[("minus.py", "TL000")]["location"]["row"] == 3
    assert found[("ors.py", "TL000")]["location"]["row"] == 3


def test_syntax_newer_than_the_running_python_is_still_checked(tmp_path, monkeypatch):
    """`def f[T]()` is 3.12 syntax: under 3.11 `ast` refuses it, libcst parses it. The file
    was checked before the ast gate existed and still is (torch ships such a file)."""
    (tmp_path / "new.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\ndef f[T](p):\n    return torch.load(p, weights_only=True)\n")
    _, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("new.py", "TL301")}


def test_deep_nesting_is_refused_even_when_python_refuses_the_syntax(tmp_path):
    deep = "(" * 1500 + "1" + ")" * 1500
    (tmp_path / "new.py").write_text(f"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\ndef f[T](p):\n    return torch.load(p, weights_only=True)\nx = {deep}\n")
    _, found = check_json_subprocess(tmp_path, ".")
    assert set(found) == {("new.py", "TL000")}


def test_nesting_depth_bound_counts_what_libcst_nests():
    import ast

    from torchlint.static.nesting import nesting_depth

    assert nesting_depth(ast.parse("x = 1")) < 10
    assert nesting_depth(ast.parse("x = " + " or ".join(["t"] * 500))) >= 500
    assert nesting_depth(ast.parse("x = [a " + "for a in b " * 300 + "]")) >= 300
    assert nesting_depth(ast.parse("import " + ".".join(["a"] * 400))) >= 400
    assert nesting_depth(ast.parse("x = " + "-" * 600 + "1")) >= 600


# The cheap bound that lets libcst parse without `ast` first: whatever could crash or stall
# libcst is "not proven" (and goes through `ast`), whatever the disguise.
UNPROVEN = {
    **{name: body for name, body in DEEP.items()},
    "string_ors": "x = " + 'or'.join(['"t"'] * 10_000) + "\n",
    "number_ors": "x = " + "1or ".join(["1"] * 10_000) + "\n",
    "adjacent_strings": "x = (" + " ".join(["b'a'"] * 10_000) + ")\n",
    "ors_over_lines": "x = (\n" + " or\n".join(["t"] * 10_000) + "\n)\n",
    "continued_ors": "x = t" + " or \\\n t" * 10_000 + "\n",
    "attribute_chain": "x = t" + ".x" * 2_000 + "\n",
    "elifs": "if x:\n  pass\n" + "elif x:\n  pass\n" * 600,
    "f_string_field": 'x = f"{' + "a+" * 5_000 + 'a}"\n',
    "f_string_nested_quotes": 'x = f"{d["k"]}"\n',
}


@pytest.mark.parametrize("name", sorted(UNPROVEN))
def test_cheap_nesting_bound_never_vouches_for_what_libcst_cannot_survive(name):
    from torchlint.static.nesting import within_libcst_bounds

    assert not within_libcst_bounds("import torch\n" + UNPROVEN[name])


def test_cheap_nesting_bound_vouches_for_ordinary_code():
    """Every source file of torchlint itself (strings, f-strings, long tables included)."""
    from torchlint.static.nesting import within_libcst_bounds

    root = Path(__file__).resolve().parents[1]
    sources = [*root.joinpath("torchlint").rglob("*.py"), *root.joinpath("plugins").rglob("*.py")]
    assert len(sources) > 50
    unproven = [str(path) for path in sources if not within_libcst_bounds(path.read_text(encoding="utf-8"))]
    assert unproven == []


def test_syntax_errors_found_by_libcst_alone_carry_pythons_message(tmp_path, monkeypatch):
    """A file libcst parses without `ast` first still reports CPython's wording and place."""
    (tmp_path / "t.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(p)\ndef f(:\n    pass\n")
    _, found = check_json(tmp_path, monkeypatch, ".")
    assert found[("t.py", "TL000")]["message"].startswith("syntax error: invalid syntax")
    assert found[("t.py", "TL000")]["location"]["row"] == 3


def test_worker_killed_by_a_signal_costs_only_its_file(tmp_path):
    """A rule that kills its process (as a native crash would) on one file: that file is one
    TL000, every other file is still checked, and the run ends (a plain Pool would hang)."""
    plugin = tmp_path / "killer_plugin.py"
    plugin.write_text(
        "import os, signal\n"
        "from torchlint.pluginmanager import hookimpl\n"
        "from torchlint.rule import Rule\n"
        "class Killer(Rule):\n"
        "    code = 'XX900'\n"
        "    name = 'killer'\n"
        "    summary = 'dies on a marked file'\n"
        "    triggers = ('KILL_ME',)\n"
        "    def visit_Module(self, node):\n"
        "        os.kill(os.getpid(), signal.SIGSEGV)\n"
        "@hookimpl\n"
        "def torchlint_rules():\n"
        "    return [Killer]\n"
    )
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\nplugins = ['killer_plugin']\n")
    src = tmp_path / "src"
    src.mkdir()
    padding = "".join(f"y{i} = torch.zeros({i})\n" for i in range(400))  # enough to plan two workers
    for i in range(6):
        (src / f"ok{i}.py").write_text(BUGGY.decode() + padding)
    (src / "bad.py").write_text("import torch  # KILL_ME\n" + padding)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "json", "--jobs", "2",
         "--select", "TL301,TL000,XX900", "src"],
        cwd=tmp_path, capture_output=True, timeout=TIMEOUT, env=env,
    )
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")[-2000:]
    found = {(d["filename"], d["code"]): d for d in json.loads(proc.stdout)}
    assert set(found) == {("src/bad.py", "TL000"), *((f"src/ok{i}.py", "TL301") for i in range(6))}
    assert "died" in found[("src/bad.py", "TL000")]["message"]


def test_long_chains_stay_fast(tmp_path, monkeypatch):
    """A 10k-term `+` chain and a 10k `.cuda()` chain: past the nesting bound, so a quick TL000.
    Just under the bound, a chain with a finding per link is checked in one pass per statement."""
    (tmp_path / "plus.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = " + " + ".join(["t"] * 10_000) + "\n")
    (tmp_path / "cuda.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = t" + ".cuda()" * 10_000 + "\n")
    start = time.perf_counter()
    _, found = check_json(tmp_path, monkeypatch, "--select", "TL000,TL001,TL203", ".")
    assert set(found) == {("plus.py", "TL000"), ("cuda.py", "TL000")}
    assert time.perf_counter() - start < 30


def test_findings_on_one_statement_generate_its_code_once(tmp_path, monkeypatch):
    from torchlint.static import positions

    calls = []
    real = positions.Positions._track

    def counting(self, statement, nodes):
        calls.append(statement)
        return real(self, statement, nodes)

    monkeypatch.setattr(positions.Positions, "_track", counting)
    (tmp_path / "chain.py").write_text("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = t" + ".cuda()" * 200 + "\n")
    _, found = check_json(tmp_path, monkeypatch, "--select", "TL203", ".")
    assert found, "the .cuda() chain should be reported"
    assert len(calls) <= 2


# -- 2. FIFOs, devices, huge files -----------------------------------------------------------
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@needs_fifo
@pytest.mark.parametrize("named", [False, True])
def test_fifo_named_like_a_module_does_not_block(tmp_path, named):
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json_subprocess(tmp_path, *(["x.py", "good.py"] if named else ["."]), timeout=60)
    assert set(found) == {("x.py", "TL000"), ("good.py", "TL301")}
    assert "not a regular file" in found[("x.py", "TL000")]["message"]


@needs_fifo
@pytest.mark.parametrize("fmt", ["sarif", "gitlab", "full"])
def test_fifo_does_not_block_formats_that_read_source_lines(tmp_path, fmt):
    os.mkfifo(tmp_path / "x.py")
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", fmt, "."],
        cwd=tmp_path, capture_output=True, timeout=60,
    )
    assert proc.returncode == 1 and b"x.py" in proc.stdout


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_symlink_to_a_device_is_not_read(tmp_path):
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json_subprocess(tmp_path, ".", timeout=60)
    assert set(found) == {("zero.py", "TL000"), ("good.py", "TL301")}
    assert "not a regular file" in found[("zero.py", "TL000")]["message"]


def test_file_over_the_size_cap_is_one_finding(tmp_path, monkeypatch):
    from torchlint.static import source

    monkeypatch.setattr(source, "MAX_FILE_BYTES", 1000)
    (tmp_path / "big.py").write_bytes(BUGGY + b"#" * 2000 + b"\n")
    (tmp_path / "good.py").write_bytes(BUGGY)
    _, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("big.py", "TL000"), ("good.py", "TL301")}
    assert "larger than" in found[("big.py", "TL000")]["message"]


# -- 3. byte-only codecs -----------------------------------------------------------------------
@pytest.mark.parametrize("codec", ["rot13", "hex", "zlib", "base64"])
def test_byte_only_codec_cookie_is_one_finding(tmp_path, monkeypatch, codec):
    (tmp_path / "enc.py").write_bytes(f"# coding: {codec}\n".encode() + BUGGY)
    (tmp_path / "good.py").write_bytes(BUGGY)
    _, found = check_json(tmp_path, monkeypatch, ".")
    assert set(found) == {("enc.py", "TL000"), ("good.py", "TL301")}
    assert "is not a text encoding" in found[("enc.py", "TL000")]["message"]


# -- 4. a symlink loop named on the command line ---------------------------------------------
def test_symlink_loop_named_on_the_command_line(tmp_path, monkeypatch):
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "good.py").write_bytes(BUGGY)
    code, found = check_json(tmp_path, monkeypatch, "loop.py", "good.py")
    assert code == 1
    assert set(found) == {("loop.py", "TL000"), ("good.py", "TL301")}
    assert "loop" in found[("loop.py", "TL000")]["message"]


# -- 5. control characters in file names -----------------------------------------------------
HOSTILE_NAME = "a\n::error file=forged.py::owned\x1b[31m\u2028\t.py"


@pytest.mark.parametrize("fmt", ["full", "concise", "pylint", "github", "junit"])
def test_control_characters_in_paths_are_escaped(tmp_path, monkeypatch, fmt):
    try:
        (tmp_path / HOSTILE_NAME).write_bytes(BUGGY.replace(b", weights_only=True", b""))
    except OSError:
        pytest.skip("the file system refuses such names")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-q", "--output-format", fmt, "."], catch_exceptions=False)
    out = result.output
    assert "\x1b" not in out and "\u2028" not in out and "\t" not in out
    assert "\\n::error file=forged.py" in out or "%0A%3A%3Aerror file=forged.py" in out
    for line in out.splitlines():
        assert not line.startswith("::error file=forged.py")
    if fmt == "junit":
        from xml.etree import ElementTree as ET

        ET.fromstring(out.split("\n", 1)[1])  # still well-formed XML


def test_escape_helper():
    from torchlint.plugins.formats.escape import escape_control

    assert escape_control("a\nb\r\tc\x1b\x7f\x85\u2028\u2029d") == "a\\nb\\r\\tc\\x1b\\x7f\\x85\\u2028\\u2029d"
    assert escape_control("plain/é.py") == "plain/é.py"


# -- 6. tokenizer errors at their real position ----------------------------------------------
@pytest.mark.parametrize(
    "body,line",
    [
        ("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = 1\ns = '''never\nclosed\n", 3),
        ("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nif x:\n        y = 1\n    z = 2\n", 4),
        ("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = 1\ny = 2 + \\", 3),
    ],
)
def test_tokenizer_errors_are_reported_where_they_are(tmp_path, monkeypatch, body, line):
    (tmp_path / "t.py").write_text(body)
    _, found = check_json(tmp_path, monkeypatch, ".")
    assert found[("t.py", "TL000")]["location"]["row"] == line


# -- found by the fuzzer (benchmarks/fuzz.py) ------------------------------------------------
def test_fix_after_a_lone_carriage_return_edits_the_right_text(tmp_path, monkeypatch):
    path = tmp_path / "c.py"
    path.write_bytes(b"import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nimport torch.nn as nn\n#\rloss = nn.CrossEntropyLoss()(torch.softmax(out, -1), target)\n")
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(main, ["check", "--no-cache", "-q", "--select", "TL101", "--fix", "--unsafe-fixes", "c.py"])
    assert b"softmax" not in path.read_bytes()
