#!/usr/bin/env python3
"""Compare torchlint with TorchFix (and parser floors) on one source tree.

Standard library only; nothing here imports torch (or libcst: the libcst
floor runs in a separate interpreter that has it).

For every tool the command runs as a subprocess of a small, fresh Python
wrapper process, which reports:

* wall time   -- time.perf_counter() around subprocess.run() of the tool
                 (the tool's own interpreter start-up is included, the
                 wrapper's is not);
* CPU time    -- user + sys of the tool and all of its waited-for
                 descendants, as the delta of
                 resource.getrusage(RUSAGE_CHILDREN) in that wrapper;
* peak RSS    -- ru_maxrss of RUSAGE_CHILDREN in that wrapper, i.e. the
                 peak resident set of the *largest single process* among
                 the tool and its descendants (not the sum over a process
                 tree: a tool with N worker processes can use up to N times
                 this).  Because each measurement has its own wrapper, an
                 earlier, bigger measurement cannot leak into this number.

On Linux the wrapper also makes itself a child subreaper, so processes
orphaned by the tool are re-parented to it and reaped (and counted) too.

Rows:
  torchlint  torchlint check --no-cache --exit-zero -q CORPUS
  torchfix   torchfix --select ALL CORPUS   (TorchFix exits 0 with findings;
             it only parses files containing the substring "torch" and by
             default uses one worker process per CPU core)
  libcst     libcst.parse_module over every .py file (the lower bound for
             any libcst-based linter, import of libcst included)
  ast        ast.parse over every .py file, for reference
  ruff       ruff check restricted to (almost) no rules: a Rust parse floor;
             skipped when ruff is not installed

Usage:
  python3 benchmarks/compare_torchfix.py /work/corpora/timm \
      --torchfix /work/venvs/torchfix/bin/torchfix --repeat 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

SKIP_DIRS = {".git", "__pycache__"}
# not anchored at line start: TorchFix's worker processes print findings
# into one shared stdout, and when it is a file their buffers can interleave
TORCHFIX_FINDING = re.compile(r"\.py:\d+:\d+: TOR\d{3}")
TORCHFIX_CHECKED = re.compile(r"Finished checking (\d+) files")

# ---------------------------------------------------------------------------
# Code run in child interpreters
# ---------------------------------------------------------------------------

# The measuring wrapper.  argv[1] is a JSON object: cmd, stdout, stderr,
# result (paths).  It writes one JSON object to `result`.
WRAPPER = r"""
import json, os, resource, subprocess, sys, time
spec = json.loads(sys.argv[1])
if sys.platform.startswith("linux"):
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(spec["stdout"], "wb") as fo, open(spec["stderr"], "wb") as fe:
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(spec["cmd"], stdout=fo, stderr=fe,
                                stdin=subprocess.DEVNULL, cwd=spec.get("cwd"))
    except OSError as e:
        json.dump({"error": "cannot start: %s" % e}, open(spec["result"], "w"))
        sys.exit(0)
    rc = proc.wait()
    wall = time.perf_counter() - t0
# reap orphans re-parented to us (subreaper), so their usage is counted
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
scale = 1.0 / 1024 if sys.platform == "darwin" else 1.0   # bytes vs KiB
json.dump({
    "rc": rc,
    "wall_s": wall,
    "user_s": r1.ru_utime - r0.ru_utime,
    "sys_s": r1.ru_stime - r0.ru_stime,
    "maxrss_kib": r1.ru_maxrss * scale,
}, open(spec["result"], "w"))
"""

# Shared by both parse floors: file discovery + decoding.  PARSER_SETUP and
# PARSE are filled in per floor.  Prints one JSON line on stdout.
FLOOR_TEMPLATE = r"""
import json, os, sys, time
t0 = time.perf_counter()
__SETUP__
t_setup = time.perf_counter() - t0
root = sys.argv[1]
skip = set(json.loads(sys.argv[2]))
paths = []
if os.path.isfile(root):
    paths = [root]
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in skip)
    paths.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
n_ok = 0
decode_errors = []
parse_errors = []
for path in paths:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        src = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        decode_errors.append("%s: %s" % (path, e))
        src = data.decode("utf-8-sig", errors="ignore")   # skip bad bytes, go on
    try:
        __PARSE__
        n_ok += 1
    except Exception as e:
        parse_errors.append("%s: %s: %s" % (path, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
print(json.dumps({
    "files": len(paths),
    "parsed_ok": n_ok,
    "decode_errors": decode_errors,
    "parse_errors": parse_errors,
    "setup_s": t_setup,
    "total_in_process_s": time.perf_counter() - t0,
    "version": VERSION,
}))
"""

LIBCST_SETUP = """
import libcst
try:
    from importlib.metadata import version as _v
    VERSION = "libcst " + _v("libcst")
except Exception:
    VERSION = "libcst ?"
VERSION += " (parser: %s)" % os.environ.get("LIBCST_PARSER_TYPE", "default")
"""
AST_SETUP = """
import ast
VERSION = "python " + sys.version.split()[0]
"""


def floor_code(setup: str, parse: str) -> str:
    return FLOOR_TEMPLATE.replace("__SETUP__", setup.strip()).replace("__PARSE__", parse)


LIBCST_FLOOR = floor_code(LIBCST_SETUP, "libcst.parse_module(src)")
AST_FLOOR = floor_code(AST_SETUP, "ast.parse(src, filename=path)")


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def resolve_exe(name_or_path: str | None) -> str | None:
    """Path of an executable given as a path or a name on PATH, else None."""
    if not name_or_path:
        return None
    if os.sep in name_or_path:
        p = os.path.abspath(os.path.expanduser(name_or_path))
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None
    return shutil.which(name_or_path)


def script_interpreter(exe: str | None) -> str | None:
    """The python interpreter named in a console script's shebang, if any."""
    if not exe:
        return None
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env" and len(parts) > 1:
        cand = shutil.which(parts[1])
    else:
        cand = parts[0]
    if cand and os.path.basename(cand).startswith("python") and os.path.isfile(cand):
        return cand
    return None


def real_python_with(python: str | None, module: str) -> str | None:
    """sys.executable of `python` if it can import `module`, else None.

    Asking the interpreter for sys.executable also looks through wrappers
    such as pyenv shims, whose start-up cost must not be timed."""
    if not python:
        return None
    try:
        r = subprocess.run([python, "-c", "import sys, %s; print(sys.executable)" % module],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        return None
    return lines[-1] if os.path.isfile(lines[-1]) else python


def tool_version(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "? (%s)" % e
    out = (r.stdout or r.stderr).strip().splitlines()
    return out[0] if out else "?"


def corpus_stats(root: str) -> dict[str, int]:
    """Counts *.py files/lines and pre-reads them (warms the page cache)."""
    files = lines = nbytes = torch_files = 0
    walk = [(os.path.dirname(root), [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
    for dirpath, dirnames, filenames in walk:
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for f in filenames:
            if f.endswith(".py"):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    data = fh.read()
                files += 1
                lines += data.count(b"\n")
                nbytes += len(data)
                torch_files += b"torch" in data
    return {"py_files": files, "lines": lines, "bytes": nbytes, "torch_files": torch_files}


def tail(path: str, n: int = 800) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", "replace").strip()


def measure(cmd: list[str], workdir: str, timeout: float) -> dict[str, Any]:
    """Run cmd once under a fresh wrapper; return metrics + captured output paths."""
    fd, out = tempfile.mkstemp(prefix="out-", dir=workdir)
    os.close(fd)
    fd, err = tempfile.mkstemp(prefix="err-", dir=workdir)
    os.close(fd)
    fd, res = tempfile.mkstemp(prefix="res-", suffix=".json", dir=workdir)
    os.close(fd)
    spec = {"cmd": cmd, "stdout": out, "stderr": err, "result": res}
    wrapper = subprocess.Popen(
        [sys.executable, "-S", "-c", WRAPPER, json.dumps(spec)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wrapper.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(wrapper.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wrapper.wait()
        return {"error": "timed out after %ss" % timeout, "stdout_path": out, "stderr_path": err}
    try:
        with open(res) as fh:
            result = json.load(fh)
    except (OSError, ValueError):
        result = {"error": "wrapper failed (rc %s)" % wrapper.returncode}
    result["stdout_path"] = out
    result["stderr_path"] = err
    return result


# ---------------------------------------------------------------------------
# Tool definitions
# ---------------------------------------------------------------------------


class Tool:
    def __init__(self, key: str, label: str, cmd: list[str] | None, skip: str | None = None,
                 info: dict[str, Any] | None = None, ok_rcs: tuple[int, ...] = (0,)):
        self.key = key
        self.label = label
        self.cmd = cmd
        self.skip = skip
        self.info = info or {}
        self.ok_rcs = ok_rcs
        self.runs: list[dict[str, Any]] = []
        self.error: str | None = None
        self.extra: dict[str, Any] = {}

    def median(self) -> dict[str, float] | None:
        good = [r for r in self.runs if "error" not in r]
        if not good:
            return None
        return {
            "wall_s": statistics.median(r["wall_s"] for r in good),
            "cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in good),
            "user_s": statistics.median(r["user_s"] for r in good),
            "sys_s": statistics.median(r["sys_s"] for r in good),
            "peak_rss_mb": statistics.median(r["maxrss_kib"] for r in good) / 1024.0,
        }


def ruff_parse_only_args(ruff: str, workdir: str) -> list[str]:
    """E999 (syntax error) where the ruff version still has it; newer ruff
    removed E999 and always reports syntax errors, so a trivial rule (E902,
    I/O error) gives the same parse-only run."""
    probe = os.path.join(workdir, "ruff_probe")
    os.makedirs(probe, exist_ok=True)
    with open(os.path.join(probe, "x.py"), "w") as fh:
        fh.write("x = 1\n")
    r = subprocess.run([ruff, "check", "--isolated", "--no-cache", "--exit-zero", "--select", "E999", probe],
                       capture_output=True, text=True)
    return ["--select", "E999"] if r.returncode == 0 else ["--select", "E902"]


def build_tools(args: argparse.Namespace, corpus: str, workdir: str) -> list[Tool]:
    tools: list[Tool] = []

    # 1. torchlint
    tl = resolve_exe(args.torchlint)
    if tl:
        tools.append(Tool("torchlint", "torchlint check",
                          [tl, "check", "--no-cache", "--exit-zero", "-q", corpus],
                          info={"exe": tl, "version": tool_version([tl, "--version"])}))
    else:
        tools.append(Tool("torchlint", "torchlint check", None, skip="skipped (not installed)"))

    # 2. torchfix (one row per requested -j)
    tf = resolve_exe(args.torchfix)
    sel = [] if args.torchfix_select == "default" else ["--select", args.torchfix_select]
    jobs_list: list[int | None] = [int(j) for j in args.torchfix_jobs.split(",")] if args.torchfix_jobs else [None]
    for jobs in jobs_list:
        jflag = [] if jobs is None else ["-j", str(jobs)]
        label = "torchfix " + " ".join(sel + jflag) if (sel or jflag) else "torchfix"
        if tf:
            tools.append(Tool("torchfix" if jobs is None else "torchfix-j%d" % jobs, label,
                              [tf] + sel + jflag + [corpus],
                              info={"exe": tf, "version": "TorchFix " + tool_version([tf, "--version"]),
                                    "jobs": jobs if jobs is not None else "default (= CPU cores)"},
                              ok_rcs=(0, 1)))   # 1 = some file failed to parse/transform
        else:
            tools.append(Tool("torchfix", label, None, skip="skipped (not installed)"))

    # 3. libcst floor: prefer torchlint's own interpreter (same libcst build)
    candidates = [args.libcst_python] if args.libcst_python else [
        script_interpreter(tl), sys.executable, script_interpreter(tf)]
    libcst_py = next((p for p in (real_python_with(c, "libcst") for c in candidates) if p), None)
    skip_dirs = json.dumps(sorted(SKIP_DIRS))
    if libcst_py:
        tools.append(Tool("libcst", "libcst.parse_module (floor)",
                          [libcst_py, "-c", LIBCST_FLOOR, corpus, skip_dirs],
                          info={"python": libcst_py}))
    else:
        tools.append(Tool("libcst", "libcst.parse_module (floor)", None,
                          skip="skipped (libcst not importable; use --libcst-python)"))

    # 4. ast floor (same interpreter as the libcst floor when there is one)
    ast_py = real_python_with(args.ast_python, "ast") if args.ast_python else (libcst_py or sys.executable)
    if not ast_py:
        raise SystemExit("cannot run --ast-python %s" % args.ast_python)
    tools.append(Tool("ast", "ast.parse (reference)", [ast_py, "-c", AST_FLOOR, corpus, skip_dirs],
                      info={"python": ast_py}))

    # 5. ruff: explicit path, else the running venv's bin dir, else PATH
    ruff = resolve_exe(args.ruff) if args.ruff else (
        resolve_exe(os.path.join(os.path.dirname(sys.executable), "ruff")) or shutil.which("ruff"))
    if ruff:
        sel_args = ruff_parse_only_args(ruff, workdir)
        t = Tool("ruff", "ruff check %s (Rust parse ref.)" % sel_args[1],
                 [ruff, "check", "--isolated", "--no-cache", "--exit-zero", "-q"] + sel_args + [corpus],
                 info={"exe": ruff, "version": tool_version([ruff, "--version"])})
        # untimed: how many files ruff picks up (it honours .gitignore and its default excludes)
        shown = subprocess.run([ruff, "check", "--isolated", "--no-cache", "--show-files", corpus],
                               capture_output=True, text=True)
        t.extra["files_checked"] = sum(1 for ln in shown.stdout.splitlines() if ln.strip().endswith(".py"))
        tools.append(t)
    else:
        tools.append(Tool("ruff", "ruff (Rust parse ref.)", None,
                          skip="skipped (not installed; pip install ruff in the venv running this script)"))

    if args.only:
        keep = set(args.only.split(","))
        tools = [t for t in tools if t.key in keep or t.key.split("-")[0] in keep]
    return tools


def postprocess(tool: Tool, run: dict[str, Any]) -> None:
    """Check exit codes, pull files/findings counts out of the output."""
    if "error" in run:
        return
    out = tail(run["stdout_path"], 10**9) if tool.key != "torchlint" else ""
    err = tail(run["stderr_path"], 4000)
    if run["rc"] not in tool.ok_rcs:
        run["error"] = "exit code %s: %s" % (run["rc"], err[-600:])
        return
    if tool.key.startswith("torchfix"):
        m = TORCHFIX_CHECKED.search(err)
        tool.extra["files_checked"] = int(m.group(1)) if m else None
        tool.extra["findings"] = len(TORCHFIX_FINDING.findall(out))
    elif tool.key in ("libcst", "ast"):
        try:
            summary = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            run["error"] = "floor script printed no summary: %s" % err[-600:]
            return
        tool.extra.update({
            "files_checked": summary["files"],
            "parse_errors": len(summary["parse_errors"]),
            "decode_errors": len(summary["decode_errors"]),
            "parse_error_examples": summary["parse_errors"][:5],
            "decode_error_examples": summary["decode_errors"][:5],
            "setup_s": summary["setup_s"],
        })
        tool.info["version"] = summary["version"]


def count_torchlint_findings(tool: Tool, corpus: str, timeout: float) -> None:
    """Untimed extra run with --output-format json, to sanity-check output."""
    cmd = [tool.cmd[0], "check", "--no-cache", "--exit-zero", "--output-format", "json", corpus]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        findings = json.loads(r.stdout or "[]")
        tool.extra["findings"] = len(findings)
        tool.extra["files_with_findings"] = len({f.get("filename") for f in findings})
    except Exception as e:  # noqa: BLE001 - report, never crash the benchmark
        tool.extra["findings"] = "? (%s)" % e


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def fmt(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else "%.*f" % (nd, x)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", help="directory (or file) to lint")
    ap.add_argument("--torchlint", default="torchlint", help="torchlint executable (default: torchlint on PATH)")
    ap.add_argument("--torchfix", default="torchfix", help="torchfix executable (default: torchfix on PATH)")
    ap.add_argument("--torchfix-select", default="ALL",
                    help="value for torchfix --select, or 'default' for TorchFix's default rule set (default: ALL)")
    ap.add_argument("--torchfix-jobs", default=None,
                    help="comma-separated -j values, one torchfix row each, e.g. '1,2' "
                         "(default: one row with TorchFix's default, one worker per CPU core)")
    ap.add_argument("--ruff", default=None, help="ruff executable (default: next to this interpreter, then PATH)")
    ap.add_argument("--libcst-python", default=None,
                    help="python with libcst for the libcst floor (default: torchlint's interpreter, "
                         "then this one, then torchfix's)")
    ap.add_argument("--ast-python", default=None, help="python for the ast floor (default: the libcst floor's)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool; the median is reported (default 1)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per single run (default 1800)")
    ap.add_argument("--only", default=None, help="comma-separated subset: torchlint,torchfix,libcst,ast,ruff")
    ap.add_argument("--count-findings", action="store_true",
                    help="one extra, untimed torchlint run with --output-format json to count findings")
    ap.add_argument("--keep-output", default=None, metavar="DIR",
                    help="keep every run's stdout/stderr as DIR/<tool>.run<N>.{stdout,stderr}")
    ap.add_argument("--json", dest="json_out", default=None, help="write all results to this JSON file")
    args = ap.parse_args(argv)

    corpus = os.path.abspath(args.corpus)
    if not os.path.exists(corpus):
        ap.error("no such corpus: %s" % corpus)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.keep_output:
        os.makedirs(args.keep_output, exist_ok=True)

    stats = corpus_stats(corpus)   # also warms the page cache for every tool
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load_before and load_before[0] > 0.5:
        print("warning: 1-minute load average is %.2f before starting; other processes will "
              "inflate wall (and to a lesser degree CPU) times" % load_before[0], file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="compare_torchfix-") as workdir:
        tools = build_tools(args, corpus, workdir)
        active = [t for t in tools if t.cmd]
        print("corpus %s: %d .py files, %d lines (%d contain 'torch'); repeat=%d; %d CPUs"
              % (corpus, stats["py_files"], stats["lines"], stats["torch_files"], args.repeat,
                 os.cpu_count() or 0), file=sys.stderr)
        for i in range(args.repeat):          # round-robin so drift hits all tools alike
            for t in active:
                if t.error:
                    continue
                print("  run %d/%d: %s ..." % (i + 1, args.repeat, t.label), file=sys.stderr, flush=True)
                run = measure(t.cmd, workdir, args.timeout)
                postprocess(t, run)
                for k in ("stdout_path", "stderr_path"):
                    p = run.pop(k, None)
                    if p and args.keep_output:
                        dest = os.path.join(args.keep_output, "%s.run%d.%s" % (t.key, i + 1, k.split("_")[0]))
                        shutil.move(p, dest)
                    elif p:
                        try:
                            os.unlink(p)
                        except OSError:
                            pass
                t.runs.append(run)
                if "error" in run:
                    t.error = run["error"]
        if args.count_findings:
            for t in active:
                if t.key == "torchlint" and not t.error:
                    count_torchlint_findings(t, corpus, args.timeout)

    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    base = next((t.median() for t in tools if t.key == "torchlint"), None)
    header = ("tool", "wall s", "CPU s", "peak RSS MB", "wall/torchlint", "CPU/torchlint", "notes")
    rows = []
    for t in tools:
        m = t.median()
        if t.skip:
            rows.append((t.label, "", "", "", "", "", t.skip))
            continue
        if m is None:
            rows.append((t.label, "", "", "", "", "", "error: %s" % (t.error or "?")[:200]))
            continue
        notes = []
        if "files_checked" in t.extra and t.extra["files_checked"] is not None:
            notes.append("%s files" % t.extra["files_checked"])
        if "findings" in t.extra:
            notes.append("%s findings" % t.extra["findings"])
        if t.extra.get("parse_errors"):
            notes.append("%d parse errors" % t.extra["parse_errors"])
        if t.extra.get("decode_errors"):
            notes.append("%d decode errors" % t.extra["decode_errors"])
        if "setup_s" in t.extra:
            notes.append("import %.2fs" % t.extra["setup_s"])
        rcs = sorted({r["rc"] for r in t.runs if "rc" in r and r["rc"] != 0})
        if rcs:
            notes.append("exit code %s" % ",".join(map(str, rcs)))
        if t.error:
            notes.append("later run failed: %s" % t.error[:100])
        rw = "%.2fx" % (m["wall_s"] / base["wall_s"]) if base and base["wall_s"] > 0 else "-"
        rc = "%.2fx" % (m["cpu_s"] / base["cpu_s"]) if base and base["cpu_s"] > 0 else "-"
        rows.append((t.label, fmt(m["wall_s"]), fmt(m["cpu_s"]), fmt(m["peak_rss_mb"], 1), rw, rc,
                     "; ".join(notes)))

    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(r: tuple) -> str:
        return "  ".join(str(c).ljust(w) if i in (0, 6) else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    print(line(header))
    print(line(tuple("-" * w for w in widths)))
    for r in rows:
        print(line(r))
    print("(ratios = tool / torchlint: above 1.00x means torchlint is faster; CPU = user+sys of the "
          "tool and its children; peak RSS = largest single process; median of %d run(s))" % args.repeat)
    if load_before and load_after:
        print("load average (1 min) before/after: %.2f / %.2f on %d CPUs"
              % (load_before[0], load_after[0], os.cpu_count() or 0))
    for t in tools:
        if t.info.get("version") or t.info.get("python"):
            print("  %-10s %s" % (t.key, ", ".join("%s=%s" % kv for kv in t.info.items())))

    if args.json_out:
        doc = {
            "corpus": corpus,
            "corpus_stats": stats,
            "repeat": args.repeat,
            "cpu_count": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "platform": platform.platform(),
            "driver_python": sys.version.split()[0],
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "results": [{
                "tool": t.key, "label": t.label, "cmd": t.cmd and [c if len(c) < 200 else "<inline script>"
                                                                  for c in t.cmd],
                "status": t.skip or ("error: " + t.error if t.error and t.median() is None else "ok"),
                "median": t.median(), "runs": t.runs, "info": t.info, "extra": t.extra,
            } for t in tools],
        }
        with open(args.json_out, "w") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
        print("wrote %s" % args.json_out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
