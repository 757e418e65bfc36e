from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name

from ._loops import (
    calls_method,
    earlier_statements,
    function_disables_grad,
    is_eval_function,
    mentions_method_call,
)


class EvalWithoutEvalMode(Rule):
    """
    ## What it does
    Flags an evaluation function — named `evaluate`, `validate...`, `eval_...`, `test`,
    `predict...`, `inference...` — that disables gradients (`torch.no_grad()` /
    `inference_mode()`, so it is clearly running a model for evaluation) but never switches
    the model to evaluation mode: no `.eval()` and no `.train(False)` in the function, and no
    call of it in the same file that follows a `.eval()`.

    Off by default: the caller in another file may call `model.eval()` before calling it.

    ## Why is this bad?
    `no_grad()` only stops autograd recording. Dropout keeps dropping and BatchNorm keeps
    normalising with batch statistics (and updating its running averages with evaluation
    data) until the module is put in eval mode, so metrics are noisy, batch-size dependent
    and worse than the model really is — and the running statistics are polluted.

    ## Example
    ```python
    @torch.no_grad()
    def evaluate(model, loader):
        return sum(accuracy(model(x), y) for x, y in loader) / len(loader)
    ```

    ## Use instead
    ```python
    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        return sum(accuracy(model(x), y) for x, y in loader) / len(loader)
    ```
    """

    code = "TL603"
    name = "eval-without-eval-mode"
    summary = "evaluation function runs under `no_grad` but never calls `model.eval()`"
    triggers = ("no_grad", "inference_mode")
    default_enabled = False
    cases = [
        Bad(
            """
            import torch

            @torch.no_grad()
            def evaluate(model, loader):  # error
                correct = 0
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum().item()
                return correct
            """
        ),
        Bad(
            """
            import torch

            def validate_one_epoch(self, loader):  # error
                with torch.inference_mode():
                    return [self.model(x) for x in loader]
            """
        ),
        Good(
            """
            import torch

            def evaluate(model, loader):
                model.eval()
                with torch.no_grad():
                    return [model(x) for x in loader]

            def test(net, loader):
                net.train(False)
                with torch.no_grad():
                    return [net(x) for x in loader]
            """
        ),
        Good(
            """
            import torch

            @torch.no_grad()
            def validate(model, loader):
                return [model(x) for x in loader]

            def main(model, loader):
                model.eval()
                for epoch in range(3):
                    validate(model, loader)
            """,
            note="the caller in this file switches to eval mode first",
        ),
        Good(
            files={
                "test_model.py": """
                import torch

                def test_forward_shape():
                    with torch.no_grad():
                        assert model(x).shape == (2, 3)
                """
            },
            note="a unit test is not an evaluation loop",
        ),
        Good(
            """
            import torch

            def evaluation_metrics(preds, targets):
                return (preds == targets).float().mean()

            def predict_proba(logits):
                with torch.no_grad():
                    return logits.softmax(-1)
            """,
            note="functions that call no model object",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[cst.FunctionDef] = []
        self._called_after_eval: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not is_eval_function(node, _owner(self.ctx.ancestors), self.ctx.path):
            return
        if not function_disables_grad(node) or calls_method(node, "eval") or _sets_train_false(node):
            return
        if not _calls_a_model(node):
            return
        self._candidates.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        callee = (dotted_name(node.func) or "").rpartition(".")[2]
        if callee and any(mentions_method_call(s, "eval") for s in earlier_statements(self.ctx.ancestors)):
            self._called_after_eval.add(callee)

    def finish(self) -> None:
        for function in self._candidates:
            if function.name.value in self._called_after_eval:
                continue
            self.report(
                function.name,
                f"`{function.name.value}` evaluates under no_grad but never calls `model.eval()`: dropout and "
                "batch-norm stay in training mode (noisy metrics, polluted running statistics)",
            )


def _owner(ancestors) -> cst.ClassDef | None:
    return ancestors[-2] if len(ancestors) >= 2 and type(ancestors[-2]) is cst.ClassDef else None


def _sets_train_false(function: cst.FunctionDef) -> bool:
    return any(
        any(type(a.value) is cst.Name and a.value.value == "False" for a in call.args)
        for call in calls_method(function, "train")
    )


_MODEL_WORDS = ("model", "net", "module", "encoder", "decoder", "classifier", "backbone", "policy", "generator")


def _calls_a_model(function: cst.FunctionDef) -> bool:
    """Some call of an object named like a model: `model(x)`, `self.net(x)`, `model.generate(x)`."""
    from torchlint.static.walker import iter_nodes

    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node) is not cst.Call:
            continue
        name = (dotted_name(node.func) or "").lower()
        parts = name.split(".")
        if any(word in part for part in parts[-2:] for word in _MODEL_WORDS):
            return True
    return False
