"""Training-loop and device-hygiene rules (TL203-TL205, TL601-TL608): behaviour beyond the
rules' own Bad/Good cases."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.pluginmanager import collect_rules, make_plugin_manager
from torchlint.testing import check_sources

RULES = collect_rules(make_plugin_manager())


def findings(code: str, select: str, path: str = "lib.py"):
    result = check_sources({path: textwrap.dedent(code).lstrip("\n")}, select=[select])
    return [f for f in result.findings if f.code == select]


def lines(code: str, select: str, path: str = "lib.py") -> list[int]:
    return sorted(f.location.line for f in findings(code, select, path))


@pytest.mark.parametrize(
    "code,enabled",
    [("TL203", False), ("TL204", False), ("TL205", False), ("TL601", True), ("TL602", True),
     ("TL603", False), ("TL604", False), ("TL605", True), ("TL606", False), ("TL607", False), ("TL608", False), ("TL609", False), ("TL610", False)],
)
def test_default_enablement_matches_the_precision_measured_on_the_corpora(code, enabled):
    assert RULES[code].default_enabled is enabled


def test_hard_coded_cuda_is_a_library_concern_only():
    code = """
        import torch

        def build():
            return torch.zeros(3, device="cuda")
        """
    assert lines(code, "TL203") == [4]
    assert lines(code + 'if __name__ == "__main__":\n    build()\n', "TL203") == []
    assert lines(code, "TL203", path="tests/test_build.py") == []


def test_unguarded_cuda_call_checks_scripts_but_not_library_functions():
    library = """
        import torch

        def sync():
            torch.cuda.synchronize()
        """
    assert lines(library, "TL204") == []
    assert lines("import argparse\n" + textwrap.dedent(library).lstrip("\n"), "TL204") == [5]


def test_unguarded_cuda_call_accepts_an_else_branch_and_an_assert():
    code = """
        import argparse
        import torch

        def timed(model, x):
            if not torch.cuda.is_available():
                out = model(x)
            else:
                torch.cuda.synchronize()
            assert torch.cuda.is_available(), "needs a GPU"
            torch.cuda.synchronize()
        """
    assert lines(code, "TL204") == []


def test_unguarded_cuda_call_names_the_function_and_the_guard():
    (finding,) = findings("import torch\nprint(torch.cuda.current_device())\n", "TL204")
    assert "`torch.cuda.current_device(...)` raises" in finding.message
    assert "torch.cuda.is_available()" in finding.message


def test_benchmark_and_determinism_in_separate_elif_branches_are_exclusive():
    code = """
        import torch

        if mode == "fast":
            torch.backends.cudnn.benchmark = True
        elif mode == "repro":
            torch.use_deterministic_algorithms(True)
        """
    assert lines(code, "TL608") == []
    assert lines(code.replace('elif mode == "repro":', "if seed:"), "TL608") == [4]


def test_loss_accumulation_reset_inside_an_if_still_keeps_graphs_between_resets():
    code = """
        def train(model, loader, criterion, optimizer):
            running = 0
            for i, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running += loss
                if i % 100 == 99:
                    print(running / 100)
                    running = 0
        """
    (finding,) = findings(code, "TL601")
    assert finding.location.line == 8
    assert "loss.item()" in finding.message


def test_loss_detached_before_accumulation_is_not_reported():
    code = """
        def train(model, loader, criterion):
            total = 0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                loss = loss.detach()
                total += loss
        """
    assert lines(code, "TL601") == []


def test_step_without_zero_grad_clearing_only_in_an_outer_loop_is_accepted_when_no_inner_backward():
    code = """
        def train(model, batches, optimizers):
            for x in batches:
                for opt in optimizers:
                    opt.zero_grad()
                model(x).sum().backward()
                for opt in optimizers:
                    opt.step()
        """
    assert lines(code, "TL602") == []


def test_legacy_cuda_constructor_gets_no_fix_and_mentions_the_device():
    (finding,) = findings("import torch\nx = torch.cuda.LongTensor([1, 2])\n", "TL609")
    assert finding.fix is None
    assert "device=" in finding.message


def test_legacy_constructor_fix_keeps_a_multiline_call_valid():
    result = check_sources({"lib.py": "import torch\nx = torch.LongTensor(\n    [1, 2],\n)\n"}, select=["TL609"])
    (finding,) = result.findings
    edit = finding.fix.edits[0]
    assert edit.content.startswith("torch.tensor(")
    assert "dtype=torch.int64" in edit.content
    compile(edit.content, "<fix>", "eval")


def test_pdb_on_one_line_with_its_import_is_reported_once():
    assert lines("def f():\n    import pdb; pdb.set_trace()\n", "TL605") == [2]


def test_eval_functions_in_test_classes_are_unit_tests():
    code = """
        import torch

        class TestModel:
            def test_forward(self):
                with torch.no_grad():
                    self.model(x)
        """
    assert lines(code, "TL603") == []


def test_unguarded_cuda_call_follows_a_flag_set_under_a_cuda_check():
    code = """
        import argparse
        import torch

        def run(args):
            need_sync = False
            for arg in args:
                if arg.is_cuda:
                    need_sync = True
            if need_sync:
                torch.cuda.synchronize()
            if args:
                torch.cuda.synchronize()
        """
    assert lines(code, "TL204") == [12]


def test_step_of_an_optimizer_built_in_the_loop_is_a_one_off():
    code = """
        import torch

        def check(model, n):
            for _ in range(n):
                model(x).sum().backward()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                opt.step()
        """
    assert lines(code, "TL602") == []


def test_loss_accumulation_in_a_test_module_is_left_to_the_test():
    """Tests keep a few steps' losses to compare two runs; the same loop in library code is reported."""
    code = """
        def run(model, loader, criterion, optimizer):
            losses = []
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss)
            return losses
        """
    assert lines(code, "TL601") == [8]
    assert lines(code, "TL601", path="tests/test_parity.py") == []
    assert lines(code, "TL601", path="pkg/testing/helpers.py") == []
