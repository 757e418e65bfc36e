"""TL106, TL107, TL108, TL202, TL401, TL402, TL405: behaviour beyond the rules' own cases."""

from __future__ import annotations

import textwrap

from torchlint.testing import check_sources


def findings(code: str, select: str, files: dict[str, str] | None = None):
    sources = files or {"train.py": textwrap.dedent(code).lstrip("\n")}
    result = check_sources({k: textwrap.dedent(v).lstrip("\n") for k, v in sources.items()}, select=[select])
    return [f for f in result.findings if f.code == select]


def test_sigmoid_bce_message_names_source_and_fused_loss():
    (finding,) = findings(
        """
        import torch
        from torch import nn

        def step(z, y):
            p = torch.sigmoid(z)
            return nn.BCELoss()(p, y)
        """,
        "TL106",
    )
    assert finding.location.line == 6
    assert "`torch.sigmoid(...)` at line 5" in finding.message
    assert "`BCEWithLogitsLoss`" in finding.message


def test_sigmoid_bce_cross_file_message_says_sigmoid_not_softmax():
    (finding,) = findings(
        "",
        "TL106",
        files={
            "models.py": """
                import torch
                from torch import nn

                class Head(nn.Module):
                    def forward(self, x):
                        return torch.sigmoid(x)
            """,
            "train.py": """
                import torch.nn.functional as F
                from models import Head

                loss = F.binary_cross_entropy(Head()(feats), y)
            """,
        },
    )
    assert "`Head.forward` returns sigmoid output" in finding.message
    assert "softmax" not in finding.message
    assert "binary_cross_entropy_with_logits" in finding.message


def test_softmax_into_bce_is_not_tl106():
    assert not findings(
        """
        import torch.nn.functional as F

        def f(logits, y):
            return F.binary_cross_entropy(F.softmax(logits, dim=1)[:, 1], y)
        """,
        "TL106",
    )


def test_log_of_softmax_variable_is_reported_without_fix():
    (finding,) = findings(
        """
        import torch
        import torch.nn.functional as F

        def f(x):
            p = F.softmax(x, dim=1)
            return torch.log(p)
        """,
        "TL107",
    )
    assert finding.fix is None
    assert "line 5" in finding.message and "log_softmax" in finding.message


def test_log_of_softmax_direct_form_has_a_safe_fix():
    (finding,) = findings("import torch\ny = torch.log(torch.softmax(x, -1))\n", "TL107")
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert finding.fix.edits[0].content == "torch.log_softmax(x, -1)"


def test_log_of_softmax_is_not_log_of_sigmoid_or_module_log():
    assert not findings(
        """
        import torch

        def f(self, x):
            self.log("loss", x)
            return torch.log(torch.sigmoid(x)), x.softmax(torch.float).log()
        """,
        "TL107",
    )


def test_float_index_target_message_explains_the_error():
    (finding,) = findings(
        """
        import torch
        import torch.nn.functional as F

        y = torch.randint(0, 10, (8,))
        loss = F.cross_entropy(logits, y.float())
        """,
        "TL108",
    )
    assert finding.location.line == 5 and finding.location.column == 32  # the target argument
    assert "`torch.randint(...)`" in finding.message and "`.float()`" in finding.message
    assert "expected target dtype to be Long" in finding.message


def test_loss_name_rebound_by_a_walrus_is_no_longer_a_loss():
    # The names holding a loss are read from assignment statements; a `:=` deep inside an
    # expression re-binds one too.
    code = """
    import torch
    from torch import nn

    criterion = nn.CrossEntropyLoss()
    print(len([NAME := nn.L1Loss()]))

    def f(out):
        idx = out.argmax(1)
        return criterion(out, idx.float())
    """
    assert [f.location.line for f in findings(code.replace("NAME", "other"), "TL108")] == [9]
    assert not findings(code.replace("NAME", "criterion"), "TL108")


def test_float_index_target_needs_a_loss_that_takes_indices():
    assert not findings(
        """
        import torch
        from torch import nn

        def f(out, logits, criterion):
            idx = logits.argmax(1)
            return criterion(out, idx.float()), nn.L1Loss()(out, idx.float())
        """,
        "TL108",
    )


def test_argmax_keepdim_is_not_indices():
    assert not findings(
        "import torch.nn.functional as F\nl = F.cross_entropy(x, x.argmax(1, keepdim=True).float())\n",
        "TL108",
    )


def test_numpy_message_names_both_reasons():
    (finding,) = findings(
        """
        import torch

        def f(device):
            w = torch.zeros(3, requires_grad=True).to(device)
            return w.numpy()
        """,
        "TL202",
    )
    assert "`.to(device)` at line 4" in finding.message and "`.cpu()`" in finding.message
    assert "`requires_grad=True` at line 4" in finding.message and "`.detach()`" in finding.message


def test_numpy_after_requires_grad_false_or_cpu_is_fine():
    assert not findings(
        """
        import torch
        from torch import nn

        def f(x):
            p = nn.Parameter(torch.zeros(3), requires_grad=False)
            q = torch.zeros(3).requires_grad_(False)
            r = x.cuda().cpu()
            return p.numpy(), q.numpy(), r.numpy()
        """,
        "TL202",
    )


def test_log1p_and_expm1_fixes_keep_layout_and_are_safe():
    (log,) = findings("import torch\ny = torch.log((1 + x))\n", "TL401")
    assert log.fix.applicability == "safe"
    assert log.fix.edits[0].content == "torch.log1p(x)"
    (exp,) = findings("import torch\ny = 2 * (torch.exp(a + b) - 1)\n", "TL402")
    assert exp.fix.edits[0].content == "torch.expm1(a + b)"


def test_log1p_without_any_torch_alias_is_reported_unfixed():
    (finding,) = findings("from torch import log\ny = log(1 + x)\n", "TL401")
    assert finding.fix is None


def test_dataloader_rule_is_off_by_default_and_skips_kwargs():
    from torchlint.pluginmanager import collect_rules, make_plugin_manager

    rule = collect_rules(make_plugin_manager())["TL405"]
    assert rule.default_enabled is False
    assert not findings(
        "import torch\ndef f(ds, **kw):\n    return torch.utils.data.DataLoader(ds, 4, **kw)\n", "TL405"
    )
    assert len(findings("import torch\nl = torch.utils.data.DataLoader(ds, 4, True, None, None)\n", "TL405")) == 1
