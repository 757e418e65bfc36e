"""Run the commands a Markdown document shows and compare their output with the document.

A document shows a command in a fenced ``console`` block: a ``$ command`` line followed by
the output it prints (stdout and stderr together, as a terminal shows them). Every command
of a document runs, in order, with ``bash`` in one scratch folder that starts as a copy of
the repository's ``examples/`` (so ``--fix`` or a written baseline changes the copy, and a
later block sees the change, as it would in the reader's session). Each ``$`` line runs in
its own shell from the scratch folder's root, so ``cd x && ...`` affects that line only.

An HTML comment right above a fence steers the test without showing in the rendered page:

- ``<!-- docs-test: file PATH -->`` above any fenced block: write the block to PATH in the
  scratch folder before the commands after it run (the plugin guide's example files);
- ``<!-- docs-test: skip REASON -->`` above a ``console`` block: do not run it (say why).

Comparison: ``...`` in the shown output stands for any text, as in doctest: a line of its own
for any number of lines (timings-heavy tables, tracebacks), inside a line for the rest of a
long message; durations (``10.14 s``, ``0.155 ms``) and the scratch folder's path
are normalised on both sides (an absolute path into the scratch folder reads `.../`), and trailing spaces and blank lines are ignored.

Warm runs: where torch is installed, a page's `torchlint` commands are forked by a warm server
started for that page, with the page's interpreter and environment (``warm_command``: a
`torchlint` first on the page's PATH that hands each command line to it, or runs the real one
where the server would start it differently). The server starts after the page's last
`pip install`, so what the page installs is what its commands see. ``TORCHLINT_TEST_COLD=1``
runs every command as a fresh process instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import warm_command  # tests/warm_command.py

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose console blocks the docs test runs. docs/rules/ is generated and shows no commands.
DOCUMENTS = ("README.md", "docs/user-guide.md", "docs/plugins.md", "examples/compile/README.md", "examples/runtime/README.md")
#: Run by a test file of their own (the compile page takes as long as the other four together).
PAGES_RUN_APART = ("examples/compile/README.md",)

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<kind>\w+)\s*(?P<arg>.*?)\s*-->\s*$")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:e[-+]?\d+)? ?(?:s|ms|us|µs)\b")
ELLIPSIS = "..."


@dataclass
class Command:
    line: str  # the command, without "$ "
    expected: str  # the output the document shows
    doc_line: int  # 1-based line of the "$" in the document


@dataclass
class Step:
    """One fenced block, in document order: files to write or commands to run."""

    doc_line: int
    commands: list[Command] = field(default_factory=list)
    file: tuple[str, str] | None = None  # (path, content)
    skip: str | None = None


def steps(text: str) -> list[Step]:
    out = []
    for match in _FENCE.finditer(text):
        start_line = text.count("\n", 0, match.start()) + 1
        preceding = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(preceding)
        info = match.group("info").strip().split()
        body = _dedent(match.group("body"), len(match.group("indent")))
        step = Step(doc_line=start_line)
        if directive and directive["kind"] == "file":
            step.file = (directive["arg"], body)
        elif info and info[0] == "console":
            if directive and directive["kind"] == "skip":
                step.skip = directive["arg"] or "marked skip"
            step.commands = _commands(body, start_line)
        else:
            continue
        out.append(step)
    return out


def _dedent(body: str, indent: int) -> str:
    if not indent:
        return body
    return "".join(line[indent:] if line[:indent].isspace() else line for line in body.splitlines(keepends=True))


def _commands(body: str, fence_line: int) -> list[Command]:
    commands: list[Command] = []
    for offset, line in enumerate(body.splitlines()):
        if line.startswith("$ "):
            commands.append(Command(line[2:], "", fence_line + 1 + offset))
        elif commands:
            commands[-1].expected += line + "\n"
    return commands


def commands_in(text: str) -> list[str]:
    """Every command a document shows in a console block (run or skipped)."""
    return [c.line for step in steps(text) for c in step.commands]


def normalise(output: str, scratch: Path) -> str:
    # An absolute path into the scratch folder reads as the reader's own: `.../examples/x.py`.
    output = output.replace(f"{scratch}/", ".../").replace(str(scratch), "...")
    output = _DURATION.sub("<time>", output)
    lines = [line.rstrip() for line in output.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def matches(expected: str, actual: str) -> bool:
    """A line that is only `...` stands for any number of whole lines (none too); `...` inside a
    line for any text within that line."""
    pattern = []
    for line in expected.split("\n"):
        if line.strip() == ELLIPSIS:
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append("[^\n]*?".join(re.escape(piece) for piece in line.split(ELLIPSIS)) + r"\n")
    return re.fullmatch("".join(pattern), actual + "\n") is not None


def make_scratch(path: Path) -> Path:
    shutil.copytree(ROOT / "examples", path / "examples", ignore=shutil.ignore_patterns("out", ".torchlint_cache", "__pycache__", "*.pt"))
    return path


def throwaway_venv(path: Path) -> Path:
    """A virtual environment of its own (so a page's `pip install` changes only it) that also
    sees this one's packages (torchlint, torch, libcst), with a `torchlint` command. Returns
    its bin folder."""
    import site

    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=300)
    own = next(path.glob("lib/python*/site-packages"))
    # addsitedir, not a bare path: it also reads this environment's .pth files (the editable
    # torchlint install is one). Appended, so what the page installs comes first.
    parents = "; ".join(f"site.addsitedir({p!r})" for p in site.getsitepackages())
    (own / "_parent_environment.pth").write_text(f"import site; {parents}\n")
    command = path / "bin" / "torchlint"
    command.write_text(f"#!{path / 'bin' / 'python'}\nimport sys\nfrom torchlint.cli import main\nsys.exit(main())\n")
    command.chmod(0o755)
    return path / "bin"


def environment(home: Path, bin_dir: Path | None = None, inductor_cache: Path | None = None) -> dict[str, str]:
    """The page's environment: a HOME of its own; ``inductor_cache``: Inductor's cache folder
    (the compile probe's default is in HOME, which would make every page compile cold)."""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir or Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("VIRTUAL_ENV", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # stderr and stdout interleave as on a terminal
    env["HOME"] = str(home)
    env.pop("TORCHLINT_CACHE_DIR", None)
    if inductor_cache is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache)
    return env


def shared_inductor_cache(config=None) -> Path:
    """An Inductor cache kept across pages and test sessions: the one the runtime tests keep
    (``tests/runtime/conftest.py::inductor_cache``), in pytest's cache or, without it, in the
    temporary folder. Kernels are keyed by their source, so a kept one is the kernel a cold
    compile would build; a page's readers see the same output, only sooner."""
    cache_provider = getattr(config, "cache", None)
    if cache_provider is not None:
        return Path(cache_provider.mkdir("torchlint-inductor"))
    cache = Path(tempfile.gettempdir()) / "torchlint-inductor-cache"
    cache.mkdir(exist_ok=True)
    return cache


@dataclass
class Mismatch:
    command: Command
    expected: str
    actual: str
    raw: str = ""  # what the command printed, only the scratch folder's path normalised

    def __str__(self) -> str:
        return (
            f"line {self.command.doc_line}: $ {self.command.line}\n"
            f"--- the document shows\n{self.expected}\n--- the command printed\n{self.actual}\n"
        )


def run_named_page(name: str, tmp: Path, *, runtime: bool = True, inductor_cache: Path | None = None) -> list[Mismatch]:
    """``run_page`` of the repository's page ``name`` (a path from the repository's root)."""
    text = (ROOT / name).read_text()
    assert commands_in(text), f"{name} shows no command"
    return run_page(text, tmp, runtime=runtime, inductor_cache=inductor_cache)


def run_page(text: str, tmp: Path, *, runtime: bool = True, warm: bool | None = None,
             inductor_cache: Path | None = None) -> list[Mismatch]:
    """Run a page in a fresh scratch folder under ``tmp``; a page that installs something
    (`$ pip install`) runs in a throwaway virtual environment. ``warm``: fork its `torchlint`
    commands from a warm server (by default where torch is there and TORCHLINT_TEST_COLD is not
    set)."""
    scratch = make_scratch(tmp / "work")
    installs = any(command.startswith("pip install") for command in commands_in(text))
    bin_dir = throwaway_venv(tmp / "venv") if installs else None
    if warm is None:
        warm = runtime and not os.environ.get("TORCHLINT_TEST_COLD")
    return run_document(text, scratch, runtime=runtime, bin_dir=bin_dir, warm=warm, inductor_cache=inductor_cache)


def run_document(text: str, scratch: Path, *, timeout: float = 300, runtime: bool = True, bin_dir: Path | None = None,
                 warm: bool = False, inductor_cache: Path | None = None) -> list[Mismatch]:
    """Run every command of ``text`` in ``scratch``; the ones whose output differs from the
    document. ``runtime=False`` leaves out ``torchlint run`` commands (no torch installed)."""
    env = environment(scratch.parent, bin_dir, inductor_cache)
    with contextlib.ExitStack() as stack:
        warm_up = warm_server_starter(scratch.parent, env, stack) if warm else None
        # What a page installs must be installed before the server imports the plugins.
        last_install = max((i for i, line in enumerate(commands_in(text)) if line.startswith("pip install")), default=-1)
        failures: list[Mismatch] = []
        position = -1  # of the command in commands_in(text)
        for step in steps(text):
            if step.file is not None:
                target = scratch / step.file[0]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(step.file[1])
                continue
            for command in step.commands:
                position += 1
                if step.skip or (not runtime and "torchlint run" in command.line):
                    continue
                if warm_up is not None and position > last_install and "torchlint" in command.line:
                    warm_up()
                output = _run_command(command.line, scratch, env, timeout)
                expected = normalise(command.expected, scratch)
                actual = normalise(output, scratch)
                if not matches(expected, actual):
                    raw = "\n".join(line.rstrip() for line in output.replace(f"{scratch}/", ".../").splitlines()).rstrip("\n")
                    failures.append(Mismatch(command, expected, actual, raw))
    return failures


def _run_command(line: str, scratch: Path, env: dict[str, str], timeout: float) -> str:
    """What ``bash -c line`` prints (stdout and stderr together). A command past ``timeout``
    is killed with its whole process group, so that nothing it started keeps the pipe open."""
    with subprocess.Popen(["bash", "-c", line], cwd=scratch, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except BaseException:  # the timeout, or the test interrupted: its own session needs ending too
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
            raise
    return output


def warm_server_starter(home: Path, env: dict[str, str], stack: contextlib.ExitStack):
    """Put a `torchlint` that forwards to a warm server first on ``env``'s PATH and return the
    function that starts the server (once; until then the command runs the real `torchlint`).
    None where the page's `torchlint` is not a Python console script a server can run."""
    real = shutil.which("torchlint", path=env["PATH"])
    python = _interpreter_of(real) if real else None
    if python is None:
        return None
    folder = home / "warm-bin"
    folder.mkdir()
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    # Where the server's socket will be linked once it listens; short, as a socket's path must be.
    link_folder = tempfile.mkdtemp(prefix="torchlint-docs-")
    stack.callback(shutil.rmtree, link_folder, ignore_errors=True)
    address = os.path.join(link_folder, "server")
    warm_command.write(str(folder), address, real, sys.executable)
    started = []

    def start() -> None:
        if started:
            return
        from torchlint.runtime.parent.warm_server import WarmServer

        server = WarmServer(python=python, env=_as_a_shell_passes_it(env, home))
        stack.callback(server.close)
        started.append(server)
        if server.ready:
            os.symlink(server.address, address)

    return start


def _as_a_shell_passes_it(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """``env`` as a command bash starts sees it (bash drops PS1 and sets SHLVL, Python sets
    LC_CTYPE where the locale is C): what the server must start with for the page's commands
    to start the same."""
    show = "import json, os; print(json.dumps(dict(os.environ)))"
    shown = subprocess.run(["bash", "-c", 'exec "$0" -SE -c "$1"', sys.executable, show], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=60, check=True)
    return json.loads(shown.stdout)


def _interpreter_of(script: str) -> str | None:
    """The interpreter a console script's `#!` line names, where it names only one."""
    with open(script, "rb") as stream:
        first = stream.readline(4096)
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if len(words) == 1 and os.path.isabs(words[0]) else None


def main(argv: list[str]) -> int:
    """`python tests/doc_console.py DOC.md [--fill]`: run the document's commands and print
    each one whose output differs from the document. `--fill` writes the real output under
    every command the document shows no output for (to write a new example from a real run;
    cut what varies with `...` afterwards)."""
    doc = Path(argv[0])
    text = doc.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        mismatches = run_page(text, Path(tmp), inductor_cache=shared_inductor_cache())
    for mismatch in mismatches:
        print(mismatch)
    if "--fill" in argv:
        lines = text.splitlines(keepends=True)
        for mismatch in sorted(mismatches, key=lambda m: -m.command.doc_line):
            if not mismatch.command.expected.strip() and mismatch.raw:
                lines.insert(mismatch.command.doc_line, mismatch.raw + "\n")
        doc.write_text("".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
