"""The child half of `torchlint run`: ``python -m torchlint.runtime.child.main``, started by
``runtime.parent.supervisor`` with the spec in the environment.

Imports torch, selects the device mode, installs the probes, runs the target as ``__main__``
(or calls its entry), and records one ``outcome`` event. Events go to the parent through
``runtime.channel``; what the target prints goes where `torchlint run`'s own stdout and stderr
go, and torchlint's dumps through ``runtime.side_channel``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from torchlint.runtime.channel import ChannelWriter
from torchlint.runtime.events import EventWriter

EXIT_OK, EXIT_USAGE, EXIT_SETUP = 0, 2, 3
RANK_LINGER_S = 2.0  # under watchdog.PARENT_GRACE_S, after which `torchlint run` kills every rank


class EntryError(Exception):
    """`file.py:entry` does not name a usable function (a usage error)."""


class Progress:
    def __init__(self, quiet: bool, rank: int | None = None) -> None:
        self.quiet = quiet
        self.label = "torchlint" if rank is None else f"torchlint (rank {rank})"

    def __call__(self, message: str) -> None:
        if not self.quiet:
            stream = sys.__stderr__
            if stream is not None:
                try:
                    stream.write(f"{self.label}: {message}\n")
                    stream.flush()
                except (OSError, ValueError):
                    # The program closed its stderr (os.close(2)): our lines go unsaid, and
                    # the run, its evidence and its report go on.
                    self.quiet = True


def main() -> int:
    from torchlint.runtime.lifetime import die_with_parent
    from torchlint.runtime.child_env import ENV_PARENT, SPEC_ENV

    # Never outlive the supervisor; the target does not see our settings.
    parent = os.environ.pop(ENV_PARENT, None)
    if os.environ.get("TORCHELASTIC_RUN_ID"):
        parent = None  # a rank: its parent is torch's launcher, whose death ends it as well
    if not die_with_parent(signal.SIGKILL, int(parent) if parent else None):
        return EXIT_SETUP
    spec = json.loads(os.environ.pop(SPEC_ENV))
    from torchlint.runtime.distributed.rank import ranked
    from torchlint.runtime.side_channel import ChildSide

    side = ChildSide(spec.get("side"))
    _dump_crashes_to(side.dump_file)
    # One of several ranks (--nproc-per-node): every event names its rank.
    events = ranked(ChannelWriter(spec["channel"]), spec.get("options") or {})
    watchdog = _start_watchdog(spec, events, side.dump_file)
    if hasattr(events, "rank"):
        watchdog.linger = RANK_LINGER_S  # the other ranks report where they were too
    progress = Progress(spec.get("quiet", False), getattr(events, "rank", None))
    try:
        import torch
    except ImportError as exc:
        events.emit("error", kind="setup", message=(
            f"torch cannot be imported by {sys.executable} ({exc}); install torch into this environment (`pip install torch`, or the README's install with the runtime extra)"))
        return EXIT_SETUP

    from torchlint.pluginmanager import make_plugin_manager
    from torchlint.runtime.devices import modes as devices
    from torchlint.runtime.devices.errors import DeviceUnavailable

    pm = make_plugin_manager(tuple(spec.get("plugins", ())), Path(spec["project_root"]) if spec.get("project_root") else None)
    pm.register(devices, name="torchlint-device-modes")
    mode = pm.hook.torchlint_select_device(requested=spec["device"])
    if mode is None:
        events.emit("error", kind="usage", message=f"unknown --device {spec['device']!r} (built in: {', '.join(devices.BUILTIN_MODES)})")
        return EXIT_USAGE
    try:
        mode.check()
    except DeviceUnavailable as exc:
        events.emit("error", kind="usage", message=str(exc))
        return EXIT_USAGE
    try:
        return _run_under_probes(spec, events, progress, pm, mode, torch, watchdog, side)
    except Exception as exc:  # torchlint's own failure, not the target's (that one is caught inside)
        events.emit("error", kind="internal", message=f"torchlint's child process failed: {type(exc).__name__}: {exc}",
                    traceback=traceback.format_exc()[-8000:])
        traceback.print_exc()
        return EXIT_SETUP


def _chosen_probes(classes: list[type], options: dict) -> list[type]:
    """The probes this run wants, in their order: an optional probe (compile, profile) says
    from the options whether it is wanted, and `--disable-probe NAME` switches any off."""
    disabled = set(options.get("disabled_probes") or ())
    unknown = disabled - {cls.name for cls in classes}
    if unknown:
        names = ", ".join(sorted(cls.name for cls in classes))
        raise EntryError(f"--disable-probe: no probe named {', '.join(sorted(unknown))} (the probes: {names})")
    chosen = [cls for cls in classes if cls.name not in disabled and getattr(cls, "wanted", lambda options: True)(options)]
    return sorted(chosen, key=lambda cls: (getattr(cls, "order", 50), cls.name))


def _dump_crashes_to(dump_file: Any) -> None:
    """faulthandler's stacks on a fatal signal go to torchlint (the report shows them), not to
    the program's stderr, where python prints none; a user who asked for them
    (PYTHONFAULTHANDLER, -X faulthandler) gets them where python puts them."""
    import faulthandler

    if dump_file is None or faulthandler.is_enabled():
        return
    with contextlib.suppress(Exception):
        faulthandler.enable(file=dump_file, all_threads=True)


def _start_watchdog(spec: dict, events: EventWriter, dump_file: Any = None) -> Any:
    """Before anything else: the deadline counts torchlint's own work too."""
    from torchlint.runtime.child.watchdog import Watchdog

    timeout = float(spec.get("timeout") or 300.0)
    deadline = spec.get("deadline")
    now = time.monotonic()
    if not isinstance(deadline, (int, float)) or not now - 60 < deadline <= now + timeout:
        deadline = now + timeout  # a clock not shared with the parent: count from here
    watchdog = Watchdog(float(deadline), events, dump_file)
    watchdog.start()
    return watchdog


def _run_under_probes(spec: dict, events: EventWriter, progress: Progress, pm: Any, mode: Any, torch: Any,
                      watchdog: Any, side: Any) -> int:
    from torchlint.runtime.compile.regions import CompiledRegions, Ownership
    from torchlint.runtime.devices.errors import SimulationLimit
    from torchlint.runtime.distributed.rank import rank_setup
    from torchlint.runtime.frames import default_classifier, own_dirs
    from torchlint.runtime.child.probing import ProbeContext, ProbeDispatch, WarningDispatch
    from torchlint.runtime.child.processes import ProcessWatch
    from torchlint.runtime.child.user_warnings import UserWarnings
    from torchlint.runtime.child.steps import StepCounter, StepLimitReached

    ctx = ProbeContext(events, default_classifier(), mode, progress)
    watchdog.frames = ctx.frames
    ctx.options = dict(spec.get("options") or {})  # --compile, --profile, --report (see RunSpec.options)
    ctx.deadline = watchdog.deadline  # time.monotonic() of --timeout: a probe's own work after the run fits before it
    ctx.watch_steps = ctx.options.get("watch_steps")  # None: every step
    try:
        probe_classes = _chosen_probes([cls for group in pm.hook.torchlint_probes() for cls in (group or ())], ctx.options)
    except EntryError as exc:
        events.emit("error", kind="usage", message=str(exc))
        return EXIT_USAGE
    probes = [cls(ctx) for cls in probe_classes]
    owned = Ownership(own_dirs())
    for cls in probe_classes:
        source = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if source:
            ctx.frames.treat_as_internal(source)
            owned.add_file(source)
    # What torch.compile returns runs with the probes out of Dynamo's sight (compiled_regions).
    ctx.compiled_regions = CompiledRegions(ctx.frames, owned, lambda mode: isinstance(mode, ProbeDispatch))
    events.emit(
        "start",
        torch=torch.__version__,
        device=mode.name,
        pid=os.getpid(),
        probes=[{"name": p.name, "confirms": list(p.confirms), "runtime_code": p.runtime_code} for p in probes],
    )

    def on_progress(kind: str, steps: int, forwards: int) -> None:
        events.emit("progress", optimizer_steps=steps, forward_calls=forwards)
        limit = f"/{counter.limit}" if counter.limit else ""
        progress(f"step {steps}{limit}" if kind == "step" else f"forward call {forwards}{limit} (no optimizer yet)")

    dispatch: list[Any] = []  # the ProbeDispatch, once entered: it hears of every step

    def on_step(steps: int) -> None:
        for each in dispatch:
            each.advance(steps)

    counter = StepCounter(spec.get("steps"), on_progress, on_step)
    ctx.compiled_regions.listeners.append(counter.before_compiled_call)
    ctx.compiled_regions.after.append(counter.after_compiled_call)
    watchdog.counter = counter
    _silence_threads_once_stopped(counter, ctx)
    progress(f"running {Path(spec['script']).name} on {mode.name} under probes: {', '.join(p.name for p in probes) or 'none'}")
    side.opened(watchdog.deadline)  # the parent's progress line comes next, then the program
    started = time.monotonic()
    outcome: dict[str, Any]
    with contextlib.ExitStack() as stack:
        ctx.compiled_regions.install()
        stack.callback(ctx.compiled_regions.uninstall)
        installed = []
        for probe in probes:
            try:
                probe.install()
                installed.append(probe)
            except Exception as exc:
                ctx.probe_crashed(probe, "install", exc)
        stack.callback(_uninstall, installed, ctx)
        counter.install()
        stack.callback(counter.uninstall)
        getattr(mode, "configure", lambda options: None)(ctx.options)
        stack.enter_context(mode.active())
        stack.enter_context(rank_setup(ctx.options, mode.name, watchdog.deadline, events))
        stack.enter_context(_noting_os_exit(events, ctx))
        shown = UserWarnings(ctx.frames, own_dirs(), os.path.dirname(torch.__file__), WarningDispatch(installed, ctx))
        shown.install()
        stack.callback(shown.uninstall)
        started_processes = ProcessWatch(ctx.frames, os.path.dirname(torch.__file__))
        started_processes.install()
        stack.callback(started_processes.uninstall)
        # Entered last, so it sees each call first (with the device the user asked for),
        # before the device mode rewrites it.
        dispatch.append(stack.enter_context(ProbeDispatch(installed, ctx)))
        watchdog.phase = "target"
        try:
            if spec.get("entry"):
                _run_entry(Path(spec["script"]), spec["entry"], mode, torch)
            else:
                _run_script(Path(spec["script"]), sys.argv[1:])
            outcome = {"status": "completed"}
        except StepLimitReached as exc:
            outcome = {"status": "steps-reached", "detail": f"stopped after {exc}"}
        except SimulationLimit as exc:
            site = ctx.frames.user_site(_innermost_frame(exc))
            outcome = {"status": "stopped", "detail": str(exc), "op": exc.op, "at": [site.path, site.line] if site else None}
        except EntryError as exc:
            events.emit("error", kind="usage", message=str(exc))
            return EXIT_USAGE
        except SystemExit as exc:
            code = exc.code
            if code is None or code == 0:
                outcome = {"status": "completed", "detail": "sys.exit(0)"}
            else:
                if not isinstance(code, int):
                    print(code, file=sys.stderr)
                outcome = {"status": "exited", "exit_code": code if isinstance(code, int) else 1}
        except BaseException as exc:  # the target's own error, KeyboardInterrupt included
            _print_user_traceback(exc, ctx)
            for probe in installed:
                if probe.switched_off:
                    continue
                try:
                    probe.raised(exc)
                except Exception as error:
                    ctx.switch_off(probe, "raised", error)
            outcome = {"status": "raised", "exception": _describe(exc, ctx, mode)}
    outcome.update(counter.as_dict(), seconds=round(time.monotonic() - started, 3))
    if dispatch and dispatch[0].watched_steps is not None:
        outcome["watched_steps"] = dispatch[0].watched_steps
    processes = started_processes.summary()
    if processes:
        outcome["processes"] = processes
    outcome.update(getattr(mode, "outcome_data", dict)())
    watchdog.phase = "after-run"
    _report_imports(events, ctx)
    events.emit("outcome", **outcome)
    steps, forwards = counter.optimizer_steps, counter.forward_calls
    progress(f"{outcome['status']} after {steps} optimizer step{'s' * (steps != 1)}, {forwards} forward call{'s' * (forwards != 1)}")
    _after_run(installed, ctx)
    watchdog.phase = "exiting"
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if counter.stopped and any(thread.is_alive() for thread in threading.enumerate() if thread is not threading.main_thread()):
        # --steps stops the whole target: its other threads must not keep the process alive
        # (a non-daemon one would, until the timeout) nor run on into interpreter shutdown.
        os._exit(EXIT_OK)
    return EXIT_OK


def _report_imports(events: EventWriter, ctx: Any) -> None:
    """The user's files the program imported: the report covers them (``runtime.parent.scope``)."""
    from torchlint.runtime.child.imported_files import imported_files

    try:
        events.emit("imported", files=imported_files(ctx.frames))
    except Exception:
        pass  # the static closure still covers the target


def _silence_threads_once_stopped(counter: Any, ctx: Any) -> None:
    """Once --steps has stopped the target, what its other threads raise is noise of our making
    (they run on while probes are removed), not the program's output. For the child's whole
    life: the threads run on after the target's main thread has stopped. What they raise
    before is printed as Python would, without torchlint's frames."""
    from torchlint.runtime.child.steps import StepLimitReached

    original = threading.excepthook

    def hook(args: Any) -> None:
        if counter.stopped or issubclass(args.exc_type, StepLimitReached):
            return
        if args.exc_value is None or sys.stderr is None:
            original(args)
            return
        try:
            name = args.thread.name if args.thread is not None else threading.get_ident()
            text = _user_traceback(args.exc_value, ctx)
        except Exception:
            original(args)
            return
        print(f"Exception in thread {name}:", file=sys.stderr)
        sys.stderr.write(text)
        sys.stderr.flush()

    threading.excepthook = hook


@contextlib.contextmanager
def _noting_os_exit(events: EventWriter, ctx: Any) -> Any:
    """``os._exit`` ends the process before the outcome event: note where the target called it,
    so that the report says how the program left instead of only that it did."""
    real_exit = os._exit
    owner = os.getpid()

    def noting_exit(status: int) -> None:
        if os.getpid() == owner:  # a forked worker's os._exit is how it normally ends
            with contextlib.suppress(Exception):
                site = ctx.frames.user_site(sys._getframe(1))
                events.emit("os-exit", code=status, at=[site.path, site.line] if site else None)
        real_exit(status)

    os._exit = noting_exit
    try:
        yield
    finally:
        os._exit = real_exit


def _after_run(probes: list, ctx: Any) -> None:
    """Work a probe does once the target has finished and every probe is uninstalled (the
    compile probe's backend ladder, the profile probe's trace analysis). The outcome is
    already recorded, so a failure or a timeout here cannot hide how the target ended."""
    for probe in probes:
        after_run = getattr(probe, "after_run", None)
        if after_run is None:
            continue
        try:
            after_run()
        except Exception as exc:
            ctx.probe_crashed(probe, "after_run", exc)


def _uninstall(probes: list, ctx: Any) -> None:
    for probe in reversed(probes):
        try:
            probe.uninstall()
        except Exception as exc:
            ctx.probe_crashed(probe, "uninstall", exc)


def _run_script(script: Path, args: list[str]) -> None:
    import runpy

    # As `python train.py` would: argv[0] is the script, sys.path[0] its folder.
    sys.argv = [str(script), *args]
    sys.path[0] = str(script.parent)
    if script.suffix.lower() == ".ipynb":
        from torchlint.runtime.child.notebook_run import run_notebook

        run_notebook(script)
        return
    runpy.run_path(str(script), run_name="__main__")


def _run_entry(script: Path, entry: str, mode: Any, torch: Any) -> None:
    """Import the file as a module, call ``entry()`` -> (model, example_inputs), then run one
    forward and one backward pass."""
    import importlib.util

    sys.argv = [str(script)]
    sys.path[0] = str(script.parent)
    module_spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[script.stem] = module
    module_spec.loader.exec_module(module)
    function = getattr(module, entry, None)
    if not callable(function):
        defined = sorted(name for name, value in vars(module).items() if callable(value) and not name.startswith("_")
                         and getattr(value, "__module__", None) == script.stem)
        hint = f" (it defines: {', '.join(defined)})" if defined else ""
        raise EntryError(f"{script.name} has no function {entry!r}{hint}")
    built = function()
    if not (isinstance(built, (tuple, list)) and len(built) == 2 and isinstance(built[0], torch.nn.Module)):
        raise EntryError(f"{script.name}:{entry}() must return (model, example_inputs), got {type(built).__name__}")
    model, inputs = built
    if mode.target_device:
        model = model.to(mode.target_device)
        inputs = _move(inputs, mode.target_device, torch)
    if isinstance(inputs, dict):
        output = model(**inputs)
    elif isinstance(inputs, (tuple, list)):
        output = model(*inputs)
    else:
        output = model(inputs)
    tensor = _first_differentiable(output, torch)
    if tensor is not None:
        tensor.float().sum().backward()


def _move(value: Any, device: str, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_move(v, device, torch) for v in value)
    if isinstance(value, dict):
        return {k: _move(v, device, torch) for k, v in value.items()}
    return value


def _first_differentiable(value: Any, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value if value.requires_grad else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    for item in items:
        found = _first_differentiable(item, torch)
        if found is not None:
            return found
    return None


def _user_traceback(exc: BaseException, ctx: Any) -> str:
    """The traceback `python train.py` would print: from the target's first frame on, and
    without torchlint's frames (its modes and probes sit between the user's code and torch)."""
    from torchlint.runtime.frames import format_user_exception, own_dirs

    return format_user_exception(exc, ctx.frames, tuple(own_dirs()))


def _print_user_traceback(exc: BaseException, ctx: Any) -> None:
    """Python's traceback, then what torchlint knows of it on a line of its own."""
    try:
        sys.stderr.write(_user_traceback(exc, ctx))
        note = getattr(exc, "__torchlint_note__", None)
        if isinstance(note, str) and note:
            sys.stderr.write(f"torchlint: {note}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # the program closed or replaced its stderr; python would print nothing there either


def _innermost_frame(exc: BaseException) -> Any:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


def _describe(exc: BaseException, ctx: Any, mode: Any) -> dict[str, Any]:
    from torchlint.runtime.compile.check import compiler_error
    from torchlint.runtime.frames import USER

    site = None
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        found = ctx.frames.user_site(frame)
        if found is not None and ctx.frames.verdict(frame.f_code.co_filename) == USER:
            site = found
            break
    text = _user_traceback(exc, ctx)
    message = str(exc)
    compiler = compiler_error(message)
    if compiler:  # Inductor's CppCompileError holds all of g++'s output: its first error says it
        message = f"{message.strip().splitlines()[0]}: {compiler}"
    return {
        "type": type(exc).__name__,
        "message": mode.explain(message),
        "at": [site.path, site.line] if site else None,
        "traceback": mode.explain(text[-8000:]),
        "explained_by": getattr(exc, "__torchlint_explained__", None),
    }


if __name__ == "__main__":
    sys.exit(main())
