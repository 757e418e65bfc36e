from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import is_backward_call, loop_nodes


class EvalInTrainingLoopWithoutTrain(Rule):
    """
    ## What it does
    Flags `model.eval()` inside a loop that also trains that model — the loop calls it and
    runs a backward pass, directly or in a nested loop — when nothing in the loop calls
    `model.train()` again. Typically an epoch loop that validates after each epoch and put
    `model.train()` only once, before the loop.

    Left alone: `model.eval()` on every iteration before any training in the loop (the whole
    run trains in eval mode on purpose, e.g. to keep batch-norm statistics frozen while
    fine-tuning); `.eval()` on something the loop does not call (`m.eval()` on batch-norm
    layers to freeze them), an evaluation that ends the loop (`break`/`return` after it), or
    one under `if epoch == last:`; loops whose training runs in a helper (it may call
    `train()` itself); and `.train()` anywhere in the loop, in any branch.

    ## Why is this bad?
    `eval()` switches dropout off and makes batch norm use (and stop updating) its running
    statistics. If training resumes without `train()`, every epoch after the first
    evaluation trains in eval mode: no dropout regularisation, frozen normalisation
    statistics. Nothing fails; the model just generalises worse, and the first epoch is
    the only one trained as intended.

    ## Example
    ```python
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad(); loss.backward(); optimizer.step()
        model.eval()
        validate(model, val_loader)
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad(); loss.backward(); optimizer.step()
        model.eval()
        validate(model, val_loader)
    ```
    """

    code = "TL611"
    name = "eval-in-training-loop-without-train"
    summary = "`model.eval()` in a training loop that never calls `model.train()` again: later epochs train in eval mode"
    triggers = ("eval()",)
    cases = [
        Bad(
            """
            import torch

            def fit(model, train_loader, val_loader, criterion, optimizer, epochs):
                model.train()
                for epoch in range(epochs):
                    for x, y in train_loader:
                        loss = criterion(model(x), y)
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                    model.eval()  # error
                    with torch.no_grad():
                        accuracy = sum((model(x).argmax(1) == y).sum() for x, y in val_loader)
            """
        ),
        Bad(
            """
            def fit(self, loader, steps):
                for step, (x, y) in enumerate(loader):
                    if step % 100 == 0:
                        self.net.eval()  # error
                        self.sample(self.net)
                    loss = self.criterion(self.net(x), y)
                    loss.backward()
                    self.opt.step()
            """,
            note="periodic evaluation inside the step loop",
        ),
        Good(
            """
            def fit(model, train_loader, val_loader, criterion, optimizer, epochs):
                for epoch in range(epochs):
                    model.train()
                    for x, y in train_loader:
                        loss = criterion(model(x), y)
                        loss.backward()
                        optimizer.step()
                    model.eval()
                    validate(model, val_loader)
            """,
            note="train() at the top of each epoch",
        ),
        Good(
            """
            import torch.nn as nn

            def fit(model, loader, criterion, optimizer, epochs):
                for epoch in range(epochs):
                    for m in model.modules():
                        if isinstance(m, nn.BatchNorm2d):
                            m.eval()
                    for x, y in loader:
                        criterion(model(x), y).backward()
                        optimizer.step()
                    if epoch == epochs - 1:
                        model.eval()
                        export(model)
            """,
            note="frozen batch-norm layers, and an evaluation in the last epoch only",
        ),
        Good(
            """
            import torch

            def fit(model, loader, criterion, optimizer, path):
                for i, (x, y) in enumerate(loader):
                    criterion(model(x), y).backward()
                    optimizer.step()
                    if i % 1000 == 0:
                        model.eval().cpu()
                        torch.save(model.state_dict(), path)
                        model.to("cuda").train()
            """,
            note="train() at the end of a call chain (pytorch/examples' fast_neural_style)",
        ),
        Good(
            """
            def finetune(model, loader, criterion, optimizer):
                for epoch in range(10):
                    model.eval()
                    for x, y in loader:
                        criterion(model(x), y).backward()
                        optimizer.step()
            """,
            note="eval mode set before the training of every epoch: frozen normalisation on purpose",
        ),
        Good(
            """
            def fit(model, loader, val_loader, epochs):
                for epoch in range(epochs):
                    train_one_epoch(model, loader)
                    model.eval()
                    evaluate(model, val_loader)
            """,
            note="training in a helper, which may call train() itself",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_For(self, node: cst.For) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def _check(self, loop: cst.For | cst.While) -> None:
        nodes = list(loop_nodes(loop))
        if not any(type(n) is cst.Call and is_backward_call(n) for n in nodes):
            return  # training, if any, happens in a helper
        called = {dotted_name(n.func) for n in nodes if type(n) is cst.Call}
        trained = {
            _receiver(n.func.value) for n in nodes
            if type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "train"
        }
        loop_variables = _loop_variables(loop)
        order = {id(n): index for index, n in enumerate(nodes)}
        first_backward = min(order[id(n)] for n in nodes if type(n) is cst.Call and is_backward_call(n))
        for statement_path in _eval_calls(loop):
            call = statement_path[-1]
            model = dotted_name(call.func.value)
            if model is None or model not in called or model in trained or id(call) in self._reported:
                continue
            if _ends_or_last_epoch(statement_path, loop_variables):
                continue
            conditional = any(type(n) is cst.If for n in statement_path)
            if not conditional and order.get(id(call), -1) < first_backward:
                continue  # eval() before all training, every iteration: trained in eval mode on purpose
            self._reported.add(id(call))
            self.report(
                call,
                f"`{model}.eval()` in a loop that trains `{model}`, and nothing in the loop calls `{model}.train()`: "
                f"after this evaluation it trains in eval mode (dropout off, batch-norm statistics frozen); "
                f"call `{model}.train()` where each training pass starts",
            )


def _receiver(expr: cst.BaseExpression) -> str | None:
    """`model` for `model`, and for `model.to(device)` in `model.to(device).train()`."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute:
        expr = expr.func.value
    return dotted_name(expr)


def _loop_variables(loop: cst.CSTNode) -> set[str]:
    if type(loop) is cst.For:
        return {n.value for n in iter_nodes(loop.target) if type(n) is cst.Name}
    return set()


def _eval_calls(loop: cst.CSTNode) -> list[list[cst.CSTNode]]:
    """For each `X.eval()` in the loop (not in nested functions): the path of nodes from the
    loop body down to the call."""
    found: list[list[cst.CSTNode]] = []

    def walk(node: cst.CSTNode, path: list[cst.CSTNode]) -> None:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return
        if (
            type(node) is cst.Call and type(node.func) is cst.Attribute
            and node.func.attr.value == "eval" and not node.args
        ):
            found.append(path + [node])
        for child in node.children:
            walk(child, path + [node])

    walk(loop.body, [])
    return found


def _ends_or_last_epoch(path: list[cst.CSTNode], loop_variables: set[str]) -> bool:
    """The evaluation ends the loop (its block breaks or returns) or runs only when the loop
    variable equals something (the last epoch)."""
    for index, node in enumerate(path):
        if type(node) is cst.If:
            # `epoch == epochs - 1`, not `step % 100 == 0` (that one recurs)
            compares_loop_variable = any(
                type(part) is cst.Comparison
                and any(type(t.operator) is cst.Equal for t in part.comparisons)
                and any(
                    type(side) is cst.Name and side.value in loop_variables
                    for side in [part.left, *(t.comparator for t in part.comparisons)]
                )
                for part in iter_nodes(node.test)
            )
            if compares_loop_variable:
                return True
        if type(node) is cst.IndentedBlock and index > 0:
            last = node.body[-1] if node.body else None
            if type(last) is cst.SimpleStatementLine and any(type(s) in (cst.Break, cst.Return) for s in last.body):
                return True
    return False
