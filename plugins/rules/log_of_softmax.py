from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, NodeFix
from torchlint.rule import Bad, Good

from ._loss_input import LossCall, LossInputRule

LOG_FUNCTIONS = frozenset({"torch.log"})
#: softmax spelling -> its log_softmax twin (same parameters: input, dim, dtype).
LOG_TWINS = {
    "torch.nn.functional.softmax": "log_softmax",
    "torch.softmax": "log_softmax",
    "torch.special.softmax": "log_softmax",
}


class LogOfSoftmax(LossInputRule):
    """
    ## What it does
    Flags the natural logarithm of softmax output: `torch.log(F.softmax(x, dim))`,
    `x.softmax(dim).log()`, and `torch.log(p)` / `p.log()` where `p` holds softmax output
    (from `F.softmax`, `torch.softmax`, `x.softmax(dim)`, an `nn.Softmax` module, or a model
    whose `forward` returns softmax output on every path). The probabilities are followed
    through local variables and through view/reshape/indexing/`.float()`/`.detach()`-like
    operations, exactly as TL101 follows them.

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 2 of 6 sampled findings were right (6 in all); the
    wrong ones took the log of a softmax that cannot reach zero (mixed with a uniform
    distribution, scores in a small range in float32) or sat under `no_grad` in a custom
    autograd function. `--extend-select TL107` turns it on.

    ## Why is this bad?
    softmax underflows to exactly `0` for logits about 104 below the row's maximum in float32
    (much sooner in float16), and `log(0)` is `-inf`; the gradient through it is NaN and
    poisons every parameter. `log_softmax` computes `x - logsumexp(x)` and stays finite:
    for logits `[0, 200]`, `torch.log(F.softmax(x, 1))` is `[-inf, 0]` with gradient
    `[nan, nan]`, while `F.log_softmax(x, 1)` is `[-200, 0]` with gradient `[1, -1]`. It is
    also one kernel instead of two.

    `torch.log(p + eps)` and `p.clamp(min=eps).log()` are deliberate guards and are not flagged.

    ## Example
    ```python
    log_probs = torch.log(F.softmax(logits, dim=-1))
    ```

    ## Use instead
    ```python
    log_probs = F.log_softmax(logits, dim=-1)
    ```

    ## Fix safety
    The fix rewrites only the direct forms (`torch.log(F.softmax(x, d))` ->
    `F.log_softmax(x, d)`, `x.softmax(d).log()` -> `x.log_softmax(d)`; `torch.softmax` and
    `torch.special.softmax` likewise) and is safe: both sides take the same arguments and
    compute the same function, except that entries which were `-inf` (with NaN gradients)
    become finite. A variable holding probabilities is reported without a fix: the
    probabilities may be needed elsewhere.
    """

    code = "TL107"
    name = "log-of-softmax"
    summary = "`log(softmax(x))` gives -inf and NaN gradients where softmax underflows; use `log_softmax`"
    default_enabled = False
    triggers = ("softmax", "Softmax")
    fix_safety = SAFE

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        return (
            f"{loss_label} of softmax output ({where}) is -inf wherever softmax underflows to 0, "
            "with NaN gradients: use `log_softmax`"
        )

    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def policy_loss(logits, actions, adv):
                log_p = torch.log(F.softmax(logits, dim=-1))  # error
                log_q = logits.softmax(-1).log()  # error
                log_r = torch.log(torch.softmax(logits, 1, dtype=torch.float32))  # error
                return -(log_p + log_q + log_r).gather(1, actions) * adv
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            def policy_loss(logits, actions, adv):
                log_p = F.log_softmax(logits, dim=-1)  # error
                log_q = logits.log_softmax(-1)  # error
                log_r = torch.log_softmax(logits, 1, dtype=torch.float32)  # error
                return -(log_p + log_q + log_r).gather(1, actions) * adv
            """,
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 3)
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, x):
                    return self.softmax(self.fc(x))

            def nll(x, y):
                model = Net()
                probs = model(x)
                logp = model(x).log()  # error
                return torch.nn.functional.nll_loss(torch.log(probs.view(-1, 3)), y)  # error
            """,
            note="a model whose forward returns softmax",
        ),
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def kl(student, teacher):
                p = F.softmax(student, dim=1)
                q = F.softmax(teacher, dim=1)
                return (q * (torch.log(q[:, :]) - p.float().log())).sum()  # error
            """,
            note="variables, through indexing and .float(): reported, not fixed",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(x, eps=1e-8):
                p = F.softmax(x, dim=1)
                a = torch.log(p + eps)
                b = p.clamp(min=eps).log()
                c = F.log_softmax(x, dim=1)
                return a, b, c
            """,
            note="guarded logs and log_softmax itself",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(x, training):
                out = x
                if not training:
                    out = F.softmax(x, dim=1)
                return torch.log(out)
            """,
            note="softmax only in a branch that does not enclose the use",
        ),
        Good(
            """
            import torch
            import logging
            import math

            logger = logging.getLogger(__name__)

            def f(x, p):
                logger.log(logging.INFO, "x")
                y = torch.sigmoid(x)
                return torch.log(y), math.log(p), torch.log2(F.softmax(x, 1))
            """,
            note="logger.log, sigmoid, math.log; log2 is not the natural log",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def f(x):
                p = F.softmax(x, dim=1)
                p = p * mask
                return torch.log(p)
            """,
            note="re-assigned with something else",
        ),
    ]

    loss_kind = "log"

    def loss_calls(self) -> list[LossCall]:
        return self.calls  # logarithms, not losses: the base class resolves and reports them

    def visit_Call(self, node: cst.Call) -> None:
        subject, label = self._log_subject(node)
        if subject is None:
            return
        fix = self._direct_fix(node, subject)
        if fix is not None:
            self.report(node, self.message(label, f"from `{self._softmax_text(subject)}(...)`"), fix=fix)
            return
        value = self.model.value(subject)
        if value is not None:
            # Logarithms, not losses: the base class resolves and reports them in finish().
            self.calls.append(LossCall(node, None, label, value))

    def _log_subject(self, node: cst.Call) -> tuple[cst.BaseExpression | None, str]:
        """The tensor whose logarithm `node` takes: `torch.log(t)` or `t.log()`."""
        if self.ctx.qualname(node.func) in LOG_FUNCTIONS:
            if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
                return node.args[0].value, "`torch.log`"
            return None, ""
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "log" and not node.args:
            if self.ctx.qualname(func.value) is None:  # not `some_module.log()`
                return func.value, "`.log()`"
        return None, ""

    def _softmax_text(self, call: cst.Call) -> str:
        return self.ctx.module.code_for_node(call.func)

    def _direct_fix(self, node: cst.Call, subject: cst.BaseExpression) -> NodeFix | None:
        """`torch.log(F.softmax(...))` -> `F.log_softmax(...)`; `x.softmax(d).log()` -> `x.log_softmax(d)`."""
        if type(subject) is not cst.Call or subject.lpar or type(subject.func) is not cst.Attribute:
            return None
        qualname = self.ctx.qualname(subject.func)
        if qualname in LOG_TWINS:
            pass
        elif qualname is None and subject.func.attr.value == "softmax":
            if not self.model.is_tensor_method(subject, "softmax"):
                return None
        else:
            return None
        new = subject.with_changes(func=subject.func.with_changes(attr=cst.Name("log_softmax")))
        return NodeFix("Replace with `log_softmax`", SAFE, ((node, new),))

