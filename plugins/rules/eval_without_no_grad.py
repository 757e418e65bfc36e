from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import calls_method, function_disables_grad, is_eval_function, is_backward_call, under_grad_off

#: Signs that an evaluation function wants gradients (saliency maps, adversarial examples).
_WANTS_GRAD = ("requires_grad", "requires_grad_", "enable_grad", "grad")


class EvalWithoutNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation function — named `evaluate`, `validate...`, `eval_...`, `test`,
    `predict...`, `inference...` — that puts a model in eval mode (`model.eval()`) and then
    calls that model, with no `torch.no_grad()` / `torch.inference_mode()` anywhere: not in the
    function, not as its decorator, and not around a call of it in the same file.

    Functions that want gradients (a `backward()`, `torch.autograd.grad`, `requires_grad`,
    `enable_grad`: saliency maps, adversarial examples) are left alone. Off by default: a
    caller in another file may wrap the call in `no_grad()`.

    ## Why is this bad?
    `model.eval()` changes dropout and batch-norm behaviour; it does not stop autograd. Every
    forward pass still records a graph and keeps its activations until the outputs are
    released, so evaluation uses several times the memory (and more time) it needs, and
    outputs kept for metrics keep their graphs alive.

    ## Example
    ```python
    def evaluate(model, loader):
        model.eval()
        return [model(x).argmax(1) for x, _ in loader]
    ```

    ## Use instead
    ```python
    @torch.inference_mode()
    def evaluate(model, loader):
        model.eval()
        return [model(x).argmax(1) for x, _ in loader]
    ```
    """

    code = "TL604"
    name = "eval-without-no-grad"
    summary = "evaluation function calls the model in eval mode without `no_grad`/`inference_mode`"
    triggers = ("eval()",)
    default_enabled = False
    cases = [
        Bad(
            """
            def evaluate(model, loader):
                model.eval()
                preds = []
                for x, _ in loader:
                    preds.append(model(x).argmax(1))  # error
                return preds
            """
        ),
        Bad(
            """
            class Trainer:
                def validate(self):
                    self.model.eval()
                    return [self.model(x) for x in self.val_loader]  # error
            """
        ),
        Good(
            """
            import torch

            @torch.no_grad()
            def evaluate(model, loader):
                model.eval()
                return [model(x) for x in loader]

            def test(model, loader):
                model.eval()
                with torch.inference_mode():
                    return [model(x) for x in loader]
            """
        ),
        Good(
            """
            import torch

            def validate(model, loader):
                model.eval()
                return [model(x) for x in loader]

            def main():
                with torch.no_grad():
                    validate(model, loader)
            """,
            note="the caller in this file disables gradients",
        ),
        Good(
            """
            def evaluate_saliency(model, x):
                model.eval()
                x.requires_grad_(True)
                model(x).max().backward()
                return x.grad
            """,
            note="an evaluation that needs gradients",
        ),
        Good(
            """
            def train(model, loader):
                model.eval()
                return [model(x) for x in loader]
            """,
            note="not named like evaluation",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[tuple[cst.FunctionDef, cst.Call]] = []
        self._called_without_grad: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self.ctx.ancestors[-2] if len(self.ctx.ancestors) >= 2 else None
        if not is_eval_function(node, owner if isinstance(owner, cst.ClassDef) else None, self.ctx.path):
            return
        evaluated = {dotted_name(call.func.value) for call in calls_method(node, "eval") if not call.args}
        evaluated.discard(None)
        if not evaluated or function_disables_grad(node) or _wants_grad(node):
            return
        model_call = _first_call_of(node, evaluated)
        if model_call is not None:
            self._candidates.append((node, model_call))

    def visit_Call(self, node: cst.Call) -> None:
        callee = (dotted_name(node.func) or "").rpartition(".")[2]
        if callee and under_grad_off(self.ctx.ancestors):
            self._called_without_grad.add(callee)

    def finish(self) -> None:
        for function, call in self._candidates:
            if function.name.value in self._called_without_grad:
                continue
            self.report(
                call,
                f"`{function.name.value}` runs the model in eval mode without `torch.no_grad()`/`inference_mode()`: "
                "autograd still records every forward pass and keeps its activations",
            )


def _wants_grad(function: cst.FunctionDef) -> bool:
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Call) and is_backward_call(node):
            return True
        if isinstance(node, cst.Attribute) and node.attr.value in _WANTS_GRAD:
            return True
        if isinstance(node, cst.Name) and node.value in ("enable_grad", "requires_grad"):
            return True
    return False


def _first_call_of(function: cst.FunctionDef, models: set[str]) -> cst.Call | None:
    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, cst.Call) and dotted_name(node.func) in models:
            return node
    return None
