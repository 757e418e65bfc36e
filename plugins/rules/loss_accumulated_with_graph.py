from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import assigned_unconditionally, differentiated_names, enclosing_loops, is_backward_call, loop_nodes

_DETACHING = ("item", "detach", "tolist", "numpy", "data")


class LossAccumulatedWithGraph(Rule):
    """
    ## What it does
    Flags a running total or list that collects a loss tensor across iterations of a training
    loop: `total_loss += loss` or `losses.append(loss)` where the same loop calls
    `loss.backward()` (so `loss` certainly carries an autograd graph) and the total lives
    across iterations (it is not re-assigned unconditionally in the loop).

    Left alone: `total += loss.item()` / `loss.detach()` / `float(loss)`; summing loss terms
    inside one step (`loss = ce(...)`, then `loss += aux_loss`, then `loss.backward()`); a
    total that is itself back-propagated later (deliberate accumulation for one backward);
    and loops without a backward call (evaluation under `no_grad`, or code we cannot see).

    ## Why is this bad?
    `total += loss` makes `total` a tensor whose history includes every step's `loss`, so every
    step's autograd graph — activations included — stays referenced after its `backward()`.
    Memory grows each iteration until the epoch ends or the GPU runs out, and each later
    addition extends the graph further. The `.item()` / `.detach()` value is all a running
    average needs.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
    total_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    ```
    """

    code = "TL601"
    name = "loss-accumulated-with-graph"
    summary = "loss tensor accumulated across steps without `.item()`/`.detach()` keeps every graph alive"
    triggers = ("backward",)
    cases = [
        Bad(
            """
            def train(model, loader, criterion, optimizer):
                total_loss = 0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total_loss += loss  # error
                return total_loss / len(loader)
            """
        ),
        Bad(
            """
            def train(self, loader):
                losses = []
                for step, batch in enumerate(loader):
                    loss = self.model(**batch).loss
                    self.scaler.scale(loss / self.accum).backward()
                    losses.append(loss)  # error
                    self.epoch_loss += loss * batch["x"].size(0)  # error
            """,
            note="scaled backward, a list, an attribute total",
        ),
        Good(
            """
            def train(model, loader, criterion, optimizer):
                total_loss = 0.0
                history = []
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    total_loss += loss.item()
                    history.append(loss.detach())
                    running = float(loss)
            """,
            note="detached values",
        ),
        Good(
            """
            def train(model, loader, ce, optimizer):
                for x, y in loader:
                    out, aux = model(x)
                    loss = ce(out, y)
                    loss += 0.4 * aux
                    loss.backward()
                    optimizer.step()
            """,
            note="summing loss terms within one step is correct",
        ),
        Good(
            """
            import torch

            def evaluate(model, loader, ce):
                total = 0
                with torch.no_grad():
                    for x, y in loader:
                        loss = ce(model(x), y)
                        total += loss
                return total
            """,
            note="accumulation under no_grad carries no graph",
        ),
        Good(
            """
            def train_chunked(model, chunks, ce, optimizer):
                total = 0
                for x, y in chunks:
                    loss = ce(model(x), y)
                    loss.backward(retain_graph=True)
                    total += loss
                total.backward()
            """,
            note="a total that is back-propagated itself is accumulated on purpose",
        ),
    ]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, cst.AddAssign):
            return
        self._check(node, dotted_name(node.target), _leaf_names(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend")) or len(node.args) != 1:
            return
        self._check(node, dotted_name(func.value), _leaf_names(node.args[0].value))

    def _check(self, node: cst.CSTNode, total: str | None, added: set[str]) -> None:
        if total is None or not added:
            return
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops:
            return
        loop = loops[0]
        losses = added & differentiated_names(loop)
        if not losses or total in differentiated_names(loop):
            return
        if assigned_unconditionally(loop, total) or self._backpropagated_in_function(total):
            return
        loss = sorted(losses)[0]
        if self._detached_in_loop(loop, loss):
            return
        self.report(
            node,
            f"`{total}` collects `{loss}` across iterations with its autograd graph: every step's graph stays "
            f"alive and memory grows; use `{loss}.item()` (or `{loss}.detach()`)",
        )

    def _backpropagated_in_function(self, total: str) -> bool:
        function = self.ctx.enclosing_function()
        scope = function if function is not None else self.ctx.module
        for node in iter_nodes(scope):
            if isinstance(node, cst.Call) and is_backward_call(node):
                if total in {dotted_name(n) for n in iter_nodes(node) if isinstance(n, (cst.Name, cst.Attribute))}:
                    return True
        return False

    def _detached_in_loop(self, loop: cst.CSTNode, loss: str) -> bool:
        """`loss = loss.detach()` or `loss = loss.item()` somewhere in the loop."""
        for node in loop_nodes(loop):
            if isinstance(node, cst.Assign) and any(dotted_name(t.target) == loss for t in node.targets):
                for inner in iter_nodes(node.value):
                    if isinstance(inner, cst.Attribute) and inner.attr.value in _DETACHING:
                        return True
    
        return False


def _leaf_names(expr: cst.BaseExpression) -> set[str]:
    """Names added as they are: `loss`, `loss * n`, `w * loss`, `-loss`; not `f(loss)`,
    `loss.item()` or `loss[0]`."""
    kind = type(expr).__name__
    if kind == "Name":
        return {expr.value}
    if kind == "BinaryOperation":
        return _leaf_names(expr.left) | _leaf_names(expr.right)
    if kind == "UnaryOperation":
        return _leaf_names(expr.expression)
    return set()
