from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import calls_method, function_disables_grad, is_backward_call, is_eval_function, under_grad_off

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

    Also flagged without `model.eval()`: the loop of an evaluation function, and a loop over
    a validation loader anywhere (`for x, y in val_loader:` inside `train()`), when it calls
    a model (`model(x)`, `self.net(x)`, `self(x)`) and never back-propagates.

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
    triggers = ("eval", "val", "test", "predict", "inference")
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
        Bad(
            """
            def validate(model, loader):
                for x, y in loader:
                    out = model(x)  # error

            def train(model, loader, val_loader, criterion, optimizer):
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                for x, y in enumerate(val_loader):
                    out = model(x)  # error
            """,
            note="an evaluation loop without model.eval(): named so, or iterating a validation loader",
        ),
        Good(
            """
            import torch

            def train(model, loader, val_loader, criterion, optimizer, stats):
                for x, y in val_loader:
                    stats.update(x)
                with torch.no_grad():
                    for x, y in val_loader:
                        out = model(x)
                for x, y in val_loader:
                    criterion(model(x), y).backward()
                    optimizer.step()
            """,
            note="no model call, a loop under no_grad, and a loop that trains on the validation data",
        ),
        Good(
            """
            def eval_linear(model, head, train_loader, val_loader, optimizer, epochs):
                for epoch in range(epochs):
                    train(model, head, optimizer, train_loader)
                    stats = validate_network(val_loader, model, head)
            """,
            note="an evaluation protocol whose loop trains in a helper (DINO's linear evaluation)",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[tuple[cst.FunctionDef, cst.Call]] = []
        self._called_without_grad: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self.ctx.ancestors[-2] if len(self.ctx.ancestors) >= 2 else None
        if not is_eval_function(node, owner if type(owner) is cst.ClassDef else None, self.ctx.path):
            return
        evaluated = {dotted_name(call.func.value) for call in calls_method(node, "eval") if not call.args}
        evaluated.discard(None)
        if not evaluated or function_disables_grad(node) or _wants_grad(node):
            return
        model_call = _first_call_of(node, evaluated)
        if model_call is not None:
            self._candidates.append((node, model_call))

    def visit_For(self, node: cst.For) -> None:
        """A loop that evaluates without saying `model.eval()`: it iterates a validation
        loader (`for x, y in val_loader:`), or it is the loop of an evaluation function;
        it calls a model and never back-propagates."""
        function = self.ctx.enclosing_function()
        if function is None or under_grad_off(self.ctx.ancestors) or function_disables_grad(function):
            return
        if any(call is not None and function is f for f, call in self._candidates):
            return  # already reported through its model.eval()
        if is_eval_function(function, self._owner(function), self.ctx.path):
            if _wants_grad(function) or _loop_has_backward(node):
                return  # `eval_linear` trains a linear head in its epoch loop
        elif not _is_validation_iterable(node.iter) or _loop_has_backward(node):
            return  # a training function may evaluate in one loop: only that loop counts
        call = _first_model_call(node)
        if call is not None:
            self._candidates.append((function, call))

    def _owner(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        ancestors = self.ctx.ancestors
        for index in range(len(ancestors) - 1, 0, -1):
            if ancestors[index] is function:
                return ancestors[index - 1] if type(ancestors[index - 1]) is cst.ClassDef else None
        return None

    def visit_Call(self, node: cst.Call) -> None:
        callee = (dotted_name(node.func) or "").rpartition(".")[2]
        if callee and under_grad_off(self.ctx.ancestors):
            self._called_without_grad.add(callee)

    def finish(self) -> None:
        reported = set()
        for function, call in self._candidates:
            if function.name.value in self._called_without_grad or id(call) in reported:
                continue
            reported.add(id(call))
            self.report(
                call,
                f"`{function.name.value}` runs the model for evaluation without `torch.no_grad()`/`inference_mode()`: "
                "autograd still records every forward pass and keeps its activations",
            )


def _wants_grad(function: cst.FunctionDef) -> bool:
    for node in iter_nodes(function.body):
        if type(node) is cst.Call and is_backward_call(node):
            return True
        if type(node) is cst.Attribute and node.attr.value in _WANTS_GRAD:
            return True
        if type(node) is cst.Name and node.value in ("enable_grad", "requires_grad"):
            return True
    return False


def _first_call_of(function: cst.FunctionDef, models: set[str]) -> cst.Call | None:
    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef)):
        if type(node) is cst.Call and dotted_name(node.func) in models:
            return node
    return None


#: `val_loader`, `valid_dl`, `test_dataloader`, `self.eval_loader`: what evaluation iterates.
_VALIDATION_ITERABLE = re.compile(r"^(val|valid|validation|test|eval|dev)_?(loader|dataloader|data_loader|dl|iter|batches)$")
#: Callees that are models: `model(x)`, `self.net(x)`, `encoder(x)`, `self(x)` (Lightning).
_MODEL_CALLEE = re.compile(
    r"^(?!(validate|evaluate|eval|test|train|run|build|create|make|get|load|init|setup)_)(\w+_)?"
    r"(model|net|network|classifier|encoder|decoder)$|^self$"
)
#: A loop that calls these trains (in a helper): `train(model, optimizer, ...)`, `fit_epoch(...)`.
_TRAINING_CALLEE = re.compile(r"^(train|fit)(_|$)|_(train|fit)$|^step$")


def _is_validation_iterable(expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.Call and dotted_name(expr.func) in ("enumerate", "tqdm", "tqdm.tqdm") and expr.args:
        expr = expr.args[0].value
    name = dotted_name(expr)
    return name is not None and _VALIDATION_ITERABLE.match(name.rpartition(".")[2].lower()) is not None


def _loop_has_backward(loop: cst.For) -> bool:
    """The loop trains: a backward pass, or a call of a training helper or an optimizer step."""
    for node in iter_nodes(loop.body):
        if type(node) is cst.Call:
            if is_backward_call(node):
                return True
            callee = (dotted_name(node.func) or "").rpartition(".")[2].lower()
            if _TRAINING_CALLEE.search(callee):
                return True
    return False


def _first_model_call(loop: cst.For) -> cst.Call | None:
    for node in iter_nodes(loop.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node) is cst.Call:
            callee = dotted_name(node.func)
            if callee is not None and _MODEL_CALLEE.search(callee.rpartition(".")[2].lower()):
                return node
    return None
