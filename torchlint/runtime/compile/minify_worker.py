"""The minifier's own process: ``python -m torchlint.runtime.compile.minify_worker SPEC.json``.

Started by the compile probe (``runtime.compile.minify``) with a timeout and killed on expiry,
so a minifier that loops or a compiler that hangs never holds up the run. It reads the graph
Inductor failed on (an aten graph written as torch's own repro module, its real inputs in a
content store beside it), then:

1. compiles it once with the debug dump on (what ``TORCH_COMPILE_DEBUG=1`` writes:
   ``fx_graph_runnable.py``, ``output_code.py``) and checks the failure shows in a fresh
   process at all: a failure that needs the program's own state (a monkeypatch) does not;
2. shrinks it with ``torch._functorch.fx_minifier.minifier`` and a predicate that accepts
   only the SAME kind of failure (the same first compiler error line; or an accuracy drift,
   where a compile error does not count: the minifier is known to trade one for the other);
3. writes the smallest failing graph as a script that runs alone (``repro_script``).

Progress goes to stderr; the result is ``result.json`` in the spec's folder, rewritten after
each step so a worker killed on timeout still leaves what it had.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import torch.fx as fx

from torchlint.runtime.compile.repro_script import compiler_error_line, outputs_differ, standalone_main



def load_graph(path: str, store: str) -> tuple[fx.GraphModule, list[Any]]:
    """The repro module and its real inputs; retraced to an FX graph the way torch's
    ``run_repro`` does (make_fx, real tensors)."""
    from torch._dynamo.debug_utils import InputReader
    from torch.fx.experimental.proxy_tensor import make_fx

    namespace: dict[str, Any] = {"__name__": "torchlint_minify_graph", "__file__": path}
    with open(path, encoding="utf-8") as source:
        exec(compile(source.read(), path, "exec"), namespace)  # our own file, written by the probe
    reader = InputReader(save_dir=store)
    namespace["load_args"](reader)
    args = reader.args
    gm = make_fx(namespace["mod"], tracing_mode="real")(*args)
    return gm, args


def label_origins(gm: fx.GraphModule, origins: list[dict]) -> None:
    """The user line of each op, from the graph the probe captured (whose nodes carried
    Dynamo's stack traces): matched by position, op by op, and only while the ops agree."""
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    for node, origin in zip(ops, origins):
        if origin.get("op") != str(node.target):
            break
        node.meta["torchlint_origin"] = origin


def compile_and_run(gm: fx.GraphModule, args: list[Any]) -> Any:
    from torch._inductor.compile_fx import compile_fx_inner

    compiled = compile_fx_inner(gm, list(args))
    return compiled(list(args))


class Predicate:
    """Does this (smaller) graph fail the way the original did?"""

    def __init__(self, kind: str, error_line: str | None, error_type: str | None) -> None:
        self.kind = kind
        self.error_line = error_line
        self.error_type = error_type
        self.queries = 0
        self.other_failures: list[str] = []

    def __call__(self, gm: fx.GraphModule, args: list[Any]) -> bool:
        self.queries += 1
        try:
            expected = gm(*args)
        except Exception:
            return False  # a graph that does not even run eagerly is no repro
        try:
            actual = compile_and_run(gm, args)
        except Exception as exc:
            if self.kind == "compile" and self.same_error(exc):
                return True
            self.note(f"{type(exc).__name__}: {compiler_error_line(str(exc)) or str(exc).strip()[:200]}")
            return False
        if self.kind == "accuracy":
            return outputs_differ(expected, actual) is not None
        return False

    def same_error(self, exc: BaseException) -> bool:
        line = compiler_error_line(str(exc))
        if self.error_line:
            return line == self.error_line
        # No compiler output to compare: the same exception type, here or wrapped (InductorError).
        return bool(self.error_type) and (type(exc).__name__ == self.error_type or self.error_type in str(exc)[:500])

    def note(self, failure: str) -> None:
        if failure not in self.other_failures and len(self.other_failures) < 5:
            self.other_failures.append(failure)


def debug_dump(gm: fx.GraphModule, args: list[Any], folder: str, predicate: Predicate) -> tuple[bool, dict[str, str]]:
    """Compile the whole failing graph once with Inductor's debug trace on: whether it fails
    here as it did in the program, and the dump's files that say most."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"trace.enabled": True, "trace.debug_dir": folder}):
        fails = predicate(gm, args)
    files: dict[str, str] = {}
    for root, _dirs, names in os.walk(folder):
        for name in ("fx_graph_runnable.py", "output_code.py"):
            if name in names and name not in files:
                files[name] = os.path.join(root, name)
    return fails, files


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    folder = os.path.dirname(os.path.abspath(spec_path))
    result: dict[str, Any] = {"status": "started"}

    def save(**update: Any) -> None:
        result.update(update)
        with open(os.path.join(folder, "result.json.tmp"), "w", encoding="utf-8") as out:
            json.dump(result, out)
        os.replace(os.path.join(folder, "result.json.tmp"), os.path.join(folder, "result.json"))

    started = time.monotonic()
    predicate = Predicate(spec["kind"], spec.get("error_line"), spec.get("error_type"))
    # The first graph-break piece that fails on its own is the one to shrink.
    failing = None
    for index, graph in enumerate(spec["graphs"]):
        gm, args = load_graph(graph["graph"], graph["store"])
        label_origins(gm, graph.get("origins", []))
        fails, files = debug_dump(gm, args, os.path.join(folder, "debug", f"graph_{index}"), predicate)
        save(status="checked", graph=graph["graph"], nodes_before=len(gm.graph.nodes), ops_before=_count_ops(gm), debug_files=files)
        if fails:
            failing = (gm, args)
            break
    if failing is None:
        save(status="not_reproduced", other_failures=predicate.other_failures, seconds=round(time.monotonic() - started, 2))
        return 0
    gm, args = failing

    from torch._functorch.fx_minifier import minifier

    save(status="minifying")
    minified, minified_args = minifier(gm, args, module_fails=predicate, dump_state=lambda *a: None, skip_sanity=True)
    script = os.path.join(folder, "repro.py")
    write_script(minified, minified_args, script, spec)
    save(status="minified", script=script, nodes_after=len(minified.graph.nodes), ops_after=_count_ops(minified),
         ops=[_op(node) for node in minified.graph.nodes if node.op == "call_function"], queries=predicate.queries,
         other_failures=predicate.other_failures, seconds=round(time.monotonic() - started, 2))
    return 0


def write_script(gm: fx.GraphModule, args: list[Any], path: str, spec: dict) -> None:
    """torch's repro module (graph + `load_args` from a content store beside it) and a main
    that compiles it with Inductor and says whether it fails the same way."""
    from torch._dynamo.repro.after_aot import generate_compiler_repro_string

    store = os.path.join(os.path.dirname(path), "repro_inputs")
    module = generate_compiler_repro_string(gm, args, save_dir=store)
    origins = [f"#   {_op(n)['op']}  <- {_op(n)['at'][0]}:{_op(n)['at'][1]}  {_op(n)['code']}"
               for n in gm.graph.nodes if n.op == "call_function" and n.meta.get("torchlint_origin", {}).get("at")]
    header = (f"# Minified by torchlint from the graph Inductor failed on ({spec['kind']} failure).\n"
              f"# Run it alone: python {os.path.basename(path)}  (exit 1 and the failure when it reproduces)\n"
              + ("# Ops and the user lines they came from:\n" + "\n".join(origins) + "\n" if origins else ""))
    main = standalone_main(spec["kind"])
    with open(path, "w", encoding="utf-8") as out:
        out.write(header + module + "\n" + main)


def _count_ops(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function")


def _op(node: fx.Node) -> dict[str, Any]:
    origin = node.meta.get("torchlint_origin") or {}
    return {"op": str(node.target), "at": origin.get("at"), "code": origin.get("code", "")}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
