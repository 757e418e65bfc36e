"""Precision fixes found by reading real findings: one finding per bare `torch.load` (TL301 +
TL302), TL302's wording, TL607 narrowed to the ambiguous call (the rest is TL609), TL202's
host moves, and TL401/TL402 leaving whole numbers alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchlint.config import Config
from torchlint.fix.apply import apply_fixes
from torchlint.testing import check_sources


def findings(source: str, select: list[str], target: str | None = None):
    config = Config(root=Path.cwd(), target_torch=target)
    return check_sources({"lib.py": textwrap.dedent(source).lstrip("\n")}, select=select, config=config).findings


def fixed(source: str, finding) -> str:
    return apply_fixes(source, [finding.fix]).text


# -- TL301 and TL303, the two parts of one check: each load is one of theirs -----------------

def test_each_load_is_reported_by_one_part_of_the_map_location_check():
    lines = ["import torch  # trained on cuda", "state = torch.load(a, weights_only=True)",
             "triples = torch.load(b, weights_only=True)"]
    alone = findings("\n".join(lines) + "\n", ["TL301", "TL303"])
    assert sorted((f.code, f.location.line) for f in alone) == [("TL303", 2), ("TL303", 3)]
    choosing = lines + ["device = 'cuda' if torch.cuda.is_available() else 'cpu'"]
    both = findings("\n".join(choosing) + "\n", ["TL301", "TL303"])
    assert sorted((f.code, f.location.line) for f in both) == [("TL301", 2), ("TL303", 3)]
    assert [f.code for f in findings("\n".join(choosing) + "\n", ["TL301"])] == ["TL301"]


# -- TL301 + TL302: one finding per call ----------------------------------------------------

BARE = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load(path)\n"


def test_a_bare_load_is_one_finding_naming_both_keywords():
    (finding,) = findings(BARE, ["TL301", "TL302"])
    assert finding.code == "TL301"
    assert "map_location" in finding.message and "weights_only" in finding.message
    assert finding.fix.applicability == "unsafe"
    assert fixed(BARE, finding) == "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n" 'state = torch.load(path, map_location="cpu", weights_only=True)\n'


@pytest.mark.parametrize("select", [["TL301"], ["TL302"]])
def test_each_rule_alone_still_reports_a_bare_load(select):
    (finding,) = findings(BARE, select)
    assert finding.code == select[0]
    if select == ["TL301"]:
        assert "weights_only" not in finding.message  # TL302 is off: not this run's concern


def test_the_second_rule_reports_what_the_first_leaves():
    source = """
        import torch
        from torch.utils.data import Dataset

        a = torch.load(path, map_location="cpu")

        class Cache(Dataset):
            def load(self):
                return torch.load(self.path)
        """
    found = sorted((f.location.line, f.code) for f in findings(source, ["TL301", "TL302"]))
    # line 4 has map_location; TL301 exempts a Dataset's own cache, so TL302 keeps line 8
    assert found == [(4, "TL302"), (8, "TL302")]


def test_target_torch_decides_whether_the_finding_mentions_weights_only():
    (finding,) = findings(BARE, ["TL301", "TL302"], target="2.6")
    assert finding.code == "TL301" and "weights_only" not in finding.message
    (finding,) = findings(BARE, ["TL301", "TL302"], target="2.4")
    assert "weights_only" in finding.message and "before torch 2.6" not in finding.message


def test_a_safe_map_location_fix_is_not_made_unsafe_by_weights_only():
    source = "import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n"
    (finding,) = findings(source, ["TL301", "TL302"])
    assert "weights_only" in finding.message
    assert finding.fix.applicability == "safe"
    assert "weights_only" not in finding.fix.edits[0].content
    # once applied, TL302 offers its own (unsafe) fix
    (again,) = findings(fixed(source, finding), ["TL301", "TL302"])
    assert again.code == "TL302" and again.fix is not None


def test_no_weights_only_fix_next_to_a_pickle_module():
    source = "import pickle, torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nx = torch.load(path, pickle_module=pickle)\n"
    (finding,) = findings(source, ["TL301", "TL302"])
    assert "weights_only" in finding.message
    assert "weights_only" not in finding.fix.edits[0].content


def test_weights_only_message_describes_the_allowlist_not_tensors_only():
    (finding,) = findings("import torch\nx = torch.load(p, map_location='cpu')\n", ["TL302"])
    assert "non-tensor" not in finding.message
    assert "allowlist" in finding.message and "argparse.Namespace" in finding.message


# -- TL607 / TL609 ---------------------------------------------------------------------------

CONSTRUCTORS = """
    import numpy as np
    import torch

    def build(values, array, n_in, n_out, tokens):
        n = len(tokens)
        a = torch.Tensor(n)
        b = torch.FloatTensor(n_out)
        c = torch.Tensor(values)
        d = torch.FloatTensor([1, 2])
        e = torch.Tensor(np.asarray(array))
        f = torch.Tensor(n_out, n_in)
        return a, b, c, d, e, f
    """


def test_only_the_ambiguous_single_count_is_on_by_default():
    default = findings(CONSTRUCTORS, ["TL607"])
    assert sorted(f.location.line for f in default) == [6, 7]
    style = findings(CONSTRUCTORS, ["TL609"])
    assert sorted(f.location.line for f in style) == [8, 9, 10, 11]


def test_no_fix_turns_numpy_data_into_torch_tensor():
    source = "import numpy as np\nimport torch\nx = torch.Tensor(np.zeros(3))\ny = torch.FloatTensor(arr)\n"
    assert all(f.fix is None for f in findings(source, ["TL607", "TL609"]))


def test_a_count_fix_allocates_exactly_what_the_legacy_call_did():
    source = "import torch\n\ndef f(x):\n    return torch.LongTensor(x.shape[0])\n"
    (finding,) = findings(source, ["TL607"])
    assert fixed(source, finding).endswith("return torch.empty(x.shape[0], dtype=torch.int64, device=\"cpu\")\n")
    assert finding.fix.applicability == "safe"  # the legacy call is a CPU tensor whatever the default device


# -- TL202 -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "expression",
    [
        "x.to(self._cpu_device).numpy()",
        "x.to(cpu_device).numpy()",
        'x.to(torch.device("cpu")).numpy()',
        'x.to("cpu", non_blocking=True).numpy()',
        'x.to("cpu:0").numpy()',
        "x.detach().cpu().numpy()",
        "x.cpu().detach().numpy()",
        "x.data.cpu().numpy()",
    ],
)
def test_a_move_to_the_host_is_not_flagged(expression):
    source = f"import torch\n\ndef f(self, x, device, cpu_device):\n    x = x.to(device)\n    return {expression}\n"
    assert findings(source, ["TL202"]) == []


def test_a_device_named_like_the_gpu_is_still_flagged():
    source = "import torch\n\ndef f(x, gpu_device):\n    return x.to(gpu_device).numpy()\n"
    assert len(findings(source, ["TL202"])) == 1


# -- TL401 / TL402 ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "operand,flagged",
    [
        ("torch.tensor(len(xs))", False),
        ("n_steps", False),
        ("self.num_updates", False),
        ("torch.tensor(round(seconds))", False),
        ("torch.tensor(int(v))", False),
        ("torch.tensor(math.ceil(v))", False),
        ("torch.tensor(x.numel())", False),
        ("torch.tensor(x.size(0) // 2)", False),
        ("torch.tensor(x.shape[-1])", False),
        ("(pred == y).sum()", False),
        ("x.long().float()", False),
        ("counted", False),  # a local bound to torch.bincount(...)
        ("x", True),
        ("x / n_steps", True),
        ("torch.tensor(round(seconds, 2))", True),
        ("x.mean()", True),
        ("x.shape", True),  # not an int: the rule does not pretend to know
    ],
)
def test_whole_numbers_lose_nothing_in_log1p_and_expm1(operand, flagged):
    source = f"""
        import math
        import torch

        def f(self, x, xs, n_steps, seconds, v, pred, y):
            counted = torch.bincount(y)
            a = torch.log(1 + {operand})
            b = torch.exp({operand}) - 1
            return a, b
        """
    lines = sorted((f.code, f.location.line) for f in findings(source, ["TL401", "TL402"]))
    assert lines == ([("TL401", 6), ("TL402", 7)] if flagged else [])


def test_a_name_bound_to_a_count_only_in_a_branch_is_not_trusted_after_it():
    source = """
        import torch

        def f(x, flag):
            r = x
            if flag:
                r = torch.tensor(len(x))
            return torch.log(1 + r)
        """
    assert [f.location.line for f in findings(source, ["TL401"])] == [7]


@pytest.mark.parametrize("name", ["bond_length", "time_step", "x_len"])
def test_names_that_may_hold_fractions_are_not_taken_for_counts(name):
    source = f"import torch\n\ndef f({name}):\n    return torch.log(1 + {name})\n"
    assert len(findings(source, ["TL401"])) == 1


@pytest.mark.parametrize("argument,reported", [("size", False), ("img_size", False), ("kernel_size", False),
                                               ("hidden_size", True), ("num_classes", True), ("self.in_features", True)])
def test_a_size_name_that_may_hold_a_list_is_not_the_ambiguous_count(argument, reported):
    source = f"import torch\n\ndef f(self, size, img_size, kernel_size, hidden_size, num_classes):\n    return torch.Tensor({argument})\n"
    assert len(findings(source, ["TL607"])) == int(reported)


@pytest.mark.parametrize("arange,flagged", [("torch.arange(w, dtype=torch.float32)", False), ("torch.arange(2, w)", False),
                                            ("torch.arange(0.5, w)", True), ("torch.arange(0, w, 0.1)", True)])
def test_arange_counts_in_whole_steps_from_a_whole_start(arange, flagged):
    source = f"import torch\n\ndef f(w):\n    c = {arange}\n    return torch.log(1 + (c - c.mean()).abs()), torch.log(1 + (c[:, None] - c[None, :]).abs())\n"
    assert [f.location.line for f in findings(source, ["TL401"])] == ([5, 5] if flagged else [5])


def test_speech_durations_are_frame_counts_in_log1p():
    source = """
        import torch

        def duration_loss(sample, log_dur_out, half):
            dur = sample["durations"].float()
            dur = dur.half() if half else dur
            log_dur = torch.log(dur + 1)
            return log_dur, torch.log(1 + log_dur_out)
        """
    assert [f.location.line for f in findings(source, ["TL401"])] == [7]  # log_dur_out: a fraction


@pytest.mark.parametrize(
    "statements,flagged",
    [
        ("d = torch.exp(y) - 1\n    d = d.round()", False),
        ("d = torch.exp(y) - 1\n    d = torch.round(d)", False),
        ("d = torch.round((torch.exp(y) - 1) * k).long()", False),
        ("d = torch.clamp(torch.round(torch.exp(y) - 1).long(), min=0)", False),
        ("d = (torch.exp(y) - 1).long()", False),
        ("d = torch.exp(y) - 1\n    e = d.round()", True),  # d itself is kept unrounded
        ("d = torch.exp(y) - 1\n    print(d)\n    d = d.round()", True),
        ("d = torch.round(k(torch.exp(y) - 1))", True),
        ("d = (torch.exp(y) - 1).round(decimals=3)", True),
    ],
)
def test_expm1_rounded_at_once_is_left_alone(statements, flagged):
    source = f"import torch\n\ndef f(y, k):\n    {statements}\n    return d\n"
    assert len(findings(source, ["TL402"])) == int(flagged)


def test_where_tl301_gives_way_to_the_project_tl302_still_reports_the_unpickling_risk():
    # A project that never names an accelerator: TL301 drops its finding in the project
    # phase, so the one finding left for the bare load is TL302's.
    cpu_only = findings("import torch\nstate = torch.load(path)\n", ["TL301", "TL302"])
    assert [f.code for f in cpu_only] == ["TL302"]
    on_cuda = findings("import torch; DEVICE = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nstate = torch.load(path)\n", ["TL301", "TL302"])
    assert [f.code for f in on_cuda] == ["TL301"]


def test_a_star_imported_bare_load_is_one_finding_naming_both_keywords():
    source = "from torch import *\nDEVICE = 'cuda' if cuda.is_available() else 'cpu'\nstate = load(path)\n"
    (finding,) = findings(source, ["TL301", "TL302"])
    assert finding.code == "TL301" and "weights_only" in finding.message
    (alone,) = findings(source, ["TL302"])
    assert alone.code == "TL302" and alone.location.line == 3


def test_tl302_stands_beside_a_tl303_that_torchlint_run_only_proves(tmp_path):
    # `torchlint run` checks TL303 (off by default) only to report what the run proves: TL302
    # must not give way to a finding that will not be shown.
    from torchlint.session import open_session
    from torchlint.static.engine import StaticEngine

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "old"\ndependencies = ["torch>=2.1"]\n')
    script = tmp_path / "resume.py"
    script.write_text("import torch  # trained on cuda\nstate = torch.load('ckpt.pt')\n")
    session = open_session(None, tmp_path, tmp_path)
    codes = {"TL301", "TL302", "TL303"}

    def found(proving: frozenset) -> list[str]:
        engine = StaticEngine(session.config, session.pm, session.rules, codes)
        engine.proving = proving
        return sorted(f.code for f in engine.check_paths([script], cwd=tmp_path, project_context=False).findings)

    assert found(frozenset()) == ["TL303"]  # checked: one finding naming both keywords
    assert found(frozenset({"TL303"})) == ["TL302", "TL303"]  # run: TL302 reported, TL303 to prove
