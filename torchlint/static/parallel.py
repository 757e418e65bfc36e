"""Check many files in worker processes; the result is identical to a single process.

Workers are forked where the platform allows it, so they inherit the already-configured
engine (plugins loaded, rules selected) instead of rebuilding it. Results come back as
plain JSON-able dicts.

A worker killed by a signal (a native crash in the parser or a plugin) must not hang the run
or lose the other files: `concurrent.futures` notices the dead worker (BrokenProcessPool)
where `multiprocessing.Pool.map` waits forever. The files left unfinished are then checked
again, each in a fresh worker of its own, so only the file that kills its worker is lost.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchlint.static.engine import FileResult, StaticEngine

#: With spawned workers (no fork), each one re-imports and re-configures everything (~0.5 s):
#: below this many files per worker that costs more than it saves.
MIN_FILES_PER_SPAWNED_WORKER = 4
#: A forked worker costs ~8 ms; libcst parses and the rules check about 400 bytes a
#: millisecond. Below this many bytes to parse per worker, one process is as fast.
MIN_BYTES_PER_FORKED_WORKER = 16_000

_engine: StaticEngine | None = None


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _check_in_worker(item: tuple[str, bytes]) -> dict:
    assert _engine is not None
    path, data = item
    return _engine.check_bytes(path, data).to_json()


def _init_spawned_worker(config, enabled) -> None:
    quieter_gc()
    global _engine
    from torchlint.pluginmanager import make_plugin_manager, rule_registry
    from torchlint.static.engine import StaticEngine

    pm = make_plugin_manager(config.plugins, config.root)
    pm.hook.torchlint_configure(config=config)
    _engine = StaticEngine(config, pm, rule_registry(pm), set(enabled))


def plan_jobs(engine: StaticEngine, items: list[tuple[str, bytes]], jobs: int, fork: bool) -> int:
    """How many worker processes are worth starting for `items` (1: check in this process).

    Forked workers are cheap, so even the five files of a pre-commit run are split when
    there is enough to parse; files that no rule wants (most of a big tree, sometimes) are
    not counted, since they are never parsed."""
    if jobs <= 1 or len(items) < 2:
        return 1
    if not fork:
        return max(1, min(jobs, len(items) // MIN_FILES_PER_SPAWNED_WORKER))
    to_parse = [len(data) for _, data in items if engine.may_parse(data)]
    return max(1, min(jobs, len(to_parse), sum(to_parse) // MIN_BYTES_PER_FORKED_WORKER))


def _executor(engine: StaticEngine, jobs: int, fork: bool):
    from concurrent.futures import ProcessPoolExecutor

    if fork:
        return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"))
    return ProcessPoolExecutor(
        jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_spawned_worker,
        initargs=(engine.config, sorted(engine.enabled)),
    )


def _run_pool(engine: StaticEngine, items: list[tuple[str, bytes]], order: list[int], jobs: int, fork: bool) -> dict[int, dict]:
    """Outputs of the files that finished; a dead worker ends the round early."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    outputs: dict[int, dict] = {}
    with _executor(engine, jobs, fork) as pool:
        futures = {pool.submit(_check_in_worker, items[i]): i for i in order}
        try:
            for future in as_completed(futures):
                outputs[futures[future]] = future.result()
        except BrokenProcessPool:
            for future, index in futures.items():  # keep what finished before the crash
                if future.done() and not future.cancelled() and future.exception() is None:
                    outputs[index] = future.result()
    return outputs


#: Allocations between young-generation collections while checking (CPython's default: 700).
#: A file's syntax tree is hundreds of thousands of short-lived objects, and the rules keep
#: per-file state alive, so at the default every parse re-scans that state many times over:
#: 17 % of a cold run on timm, for the same peak memory.
GC_THRESHOLD = (50_000, 20, 100)


def quieter_gc() -> None:
    gc.set_threshold(*GC_THRESHOLD)


def run_checks(engine: StaticEngine, items: list[tuple[str, bytes]], jobs: int) -> list[FileResult]:
    from torchlint.static.engine import FileResult
    from torchlint.static.engine_rules import FileNotChecked, engine_finding

    quieter_gc()  # forked workers inherit it; spawned ones call it in their initializer
    fork = "fork" in multiprocessing.get_all_start_methods()
    jobs = plan_jobs(engine, items, jobs, fork)
    if jobs <= 1:
        return [engine.check_bytes(path, data) for path, data in items]
    global _engine
    if fork:
        # Import libcst once here, so every forked worker starts with it (~0.2 s each otherwise).
        from torchlint.lazy import load

        load("libcst")
        _engine = engine
    # Biggest files first so one huge file does not finish last on an otherwise idle pool.
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))
    try:
        outputs = _run_pool(engine, items, order, jobs, fork)
        for index in [i for i in order if i not in outputs]:
            alone = _run_pool(engine, items, [index], 1, fork)
            if index in alone:
                outputs[index] = alone[index]
            else:
                path = items[index][0]
                message = "the checking process died on this file (a crash in the parser or a plugin); it was skipped"
                outputs[index] = FileResult(path, [engine_finding(FileNotChecked, path, message)]).to_json()
    finally:
        _engine = None
    return [FileResult.from_json(items[index][0], outputs[index]) for index in range(len(items))]
