from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name

from torchlint.semantic.program_facts import is_test_path

from ._loops import names_in

#: Debuggers whose `set_trace()` stops the program for a human at the keyboard.
_DEBUGGER_MODULES = ("pdb", "ipdb", "pudb", "pdbpp", "IPython.core.debugger", "web_pdb", "remote_pdb")
_TRACE_FUNCTIONS = frozenset(f"{module}.set_trace" for module in _DEBUGGER_MODULES) | {"IPython.embed"}
_ANOMALY_SWITCH = frozenset({"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"})
_ANOMALY_CONTEXT = frozenset({"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"})


_DEBUG_TOOL_NAME = re.compile(r"debug|anomaly|breakpoint|pdb|check", re.IGNORECASE)


class DebuggerLeftIn(Rule):
    """
    ## What it does
    Flags `breakpoint()`, `pdb.set_trace()` (also `ipdb`, `pudb`, `IPython.embed()`) and
    autograd anomaly detection switched on unconditionally: `torch.autograd.set_detect_anomaly(True)`
    and `torch.autograd.detect_anomaly()` as a context manager or decorator.

    Calls under a condition that mentions debugging (`if args.debug:`), inside functions or
    classes named as debugging tools (`debug`, `anomaly`, `breakpoint`, `pdb`, `check`),
    `detect_anomaly(check_nan=False)` (a configured use, for its stack traces), anomaly switches given
    a variable (`set_detect_anomaly(cfg.detect_anomaly)`), and anomaly mode in test files (where
    it is what is being tested) are left alone.

    ## Why is this bad?
    A forgotten `breakpoint()` stops a training job, a CI run or a data-loader worker waiting
    on a terminal that nobody is watching; under a scheduler it simply hangs until killed.
    Anomaly detection records a stack trace for every autograd node and checks every backward
    output for NaN: measured at about 5.8x slower training, and it is easily left enabled
    after the bug it was added for is fixed.

    ## Example
    ```python
    torch.autograd.set_detect_anomaly(True)
    for x, y in loader:
        loss = criterion(model(x), y)
        breakpoint()
        loss.backward()
    ```

    ## Use instead
    ```python
    torch.autograd.set_detect_anomaly(args.detect_anomaly)  # off unless asked for
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
    ```
    """

    code = "TL605"
    name = "debugger-left-in"
    summary = "`breakpoint()`, `pdb.set_trace()` or anomaly detection left enabled"
    triggers = ("breakpoint", "set_trace", "anomaly", "IPython")
    cases = [
        Bad(
            """
            import torch

            def train_step(model, x, y):
                loss = model(x, y)
                breakpoint()  # error
                loss.backward()
            """
        ),
        Bad(
            """
            import torch
            import pdb, ipdb
            from torch.autograd import detect_anomaly

            torch.autograd.set_detect_anomaly(True)  # error

            def step(loss):
                import pdb; pdb.set_trace()  # error
                ipdb.set_trace()  # error
                with detect_anomaly():  # error
                    loss.backward()

            @torch.autograd.detect_anomaly()  # error
            def run():
                pass
            """,
            note="imports inside functions, context manager and decorator forms",
        ),
        Good(
            """
            import torch
            import pdb

            torch.autograd.set_detect_anomaly(False)
            torch.autograd.set_detect_anomaly(args.detect_anomaly)

            def step(loss, debug=False):
                if debug:
                    breakpoint()
                if args.pdb:
                    pdb.set_trace()
                loss.backward()
            """,
            note="switched off, driven by a flag, or under a debug condition",
        ),
        Good(
            files={
                "tests/test_autograd.py": """
                import torch

                def test_anomaly_mode_reports_nan():
                    with torch.autograd.detect_anomaly():
                        run()
                """
            },
            note="anomaly mode inside a test of anomaly mode",
        ),
        Good(
            """
            def breakpoint():
                print("checkpoint reached")

            breakpoint()
            tracer.set_trace(frame)
            import sys
            sys.breakpointhook = custom_hook
            """,
            note="a local breakpoint function, another object's set_trace",
        ),
        Good(
            """
            import torch

            def _breakpoint_for_debugging(*args):
                breakpoint()

            class DebugMode:
                def __enter__(self):
                    self.anomaly = torch.autograd.set_detect_anomaly(True, check_nan=False)

            def joint(fn, *args):
                with torch.autograd.detect_anomaly(check_nan=False):
                    return fn(*args)
            """,
            note="debugging tools by name, and anomaly mode configured for its stack traces",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        message = self._problem(node)
        # The ancestor scan last: "embed" triggers this rule on most model files
        # (patch_embed, pos_embed), where nearly no call is a debugger.
        if message is not None and not self._under_debug_condition():
            self.report(node, message)

    def _problem(self, node: cst.Call) -> str | None:
        if self._is_builtin_breakpoint(node):
            return "`breakpoint()` left in: the program stops and waits for a debugger nobody is attached to"
        qualname = self.ctx.qualname(node.func)
        if qualname in _TRACE_FUNCTIONS:
            return f"`{dotted_name(node.func)}()` left in: the program stops and waits at an interactive prompt"
        if qualname in _ANOMALY_SWITCH and _first_arg_is_true(node) and not is_test_path(self.ctx.path):
            return "anomaly detection switched on for the whole run: autograd gets ~5.8x slower; remove it or drive it by a flag"
        if (
            qualname in _ANOMALY_CONTEXT
            and self._used_as_context_or_decorator()
            and not any(arg.keyword is not None for arg in node.args)  # check_nan=... is a configured, deliberate use
            and not is_test_path(self.ctx.path)
        ):
            return "`detect_anomaly()` left enabled: autograd gets ~5.8x slower; remove it or drive it by a flag"
        return None

    def _is_builtin_breakpoint(self, node: cst.Call) -> bool:
        if not (type(node.func) is cst.Name and node.func.value == "breakpoint"):
            return False
        if re.search(r"\bdef\s+breakpoint\b|\bbreakpoint\s*=[^=]|import[^\n]*\bbreakpoint\b", self.ctx.text):
            return False
        function = self.ctx.enclosing_function()
        return function is None or "breakpoint" not in self.ctx.bindings_of(function)

    def _under_debug_condition(self) -> bool:
        """Under `if args.debug:`, or inside a function or class whose name says it is a
        debugging tool (`_breakpoint_for_c_dynamo`, `class DebugMode`, `numeric_check_...`)."""
        for ancestor in self.ctx.ancestors:
            if type(ancestor) in (cst.FunctionDef, cst.ClassDef) and _DEBUG_TOOL_NAME.search(ancestor.name.value):
                return True
            if type(ancestor) in (cst.If, cst.IfExp) and any(
                word in name for name in names_in(ancestor.test) for word in ("debug", "pdb", "breakpoint", "anomaly")
            ):
                return True
        return False

    def _used_as_context_or_decorator(self) -> bool:
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        return type(parent) in (cst.WithItem, cst.Decorator)


def _first_arg_is_true(call: cst.Call) -> bool:
    args = [arg for arg in call.args if arg.keyword is None or arg.keyword.value == "mode"]
    return bool(args) and type(args[0].value) is cst.Name and args[0].value.value == "True"
