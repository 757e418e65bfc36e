from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import enclosing_loops, has_backward

#: Tensor methods that copy a value to the host and wait for the device.
_SYNCS = frozenset({"item", "cpu", "numpy", "tolist"})
#: Iterables of batches, not of a tensor's elements.
_BATCH_WORDS = ("loader", "dataset", "batches", "iterator", "iter")


class HostSyncPerElement(Rule):
    """
    ## What it does
    Flags `.item()` / `.cpu()` / `.numpy()` / `.tolist()` called on each element of a tensor
    (or of a list of tensors) in a Python loop or comprehension inside a training loop:
    `for i in range(len(preds)): correct += preds[i].item()`, `[p.item() for p in preds]`.
    The container must be made by the function (not a parameter, which may hold plain
    numbers), and the loop must iterate its elements (not a DataLoader's batches).

    Off by default: on the CPU, or for numpy arrays (which have `.item()` too), the loop is
    only slow Python, not a device synchronisation, and this rule cannot see where the
    values live.

    ## Why is this bad?
    On a GPU each call waits for every queued kernel to finish and copies one number back:
    N elements, N synchronisations per step, while the GPU idles between them. One
    reduction on the device and a single transfer (`preds.sum().item()`,
    `torch.stack(losses).tolist()`) gives the same numbers with one wait.

    ## Example
    ```python
    for x, y in loader:
        preds = model(x)
        criterion(preds, y).backward()
        for i in range(len(preds)):
            correct += preds[i].item()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        preds = model(x)
        criterion(preds, y).backward()
        correct += preds.sum().item()
    ```
    """

    code = "TL407"
    name = "host-sync-per-element"
    summary = "`.item()` on every element of a tensor in a training loop: one device synchronisation per element"
    triggers = ("item()", "cpu()", "numpy()", "tolist()")
    default_enabled = False
    cases = [
        Bad(
            """
            def train(model, loader, optimizer, criterion):
                correct = 0
                losses = []
                for x, y in loader:
                    preds = model(x)
                    loss = criterion(preds, y)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss.detach())
                    for i in range(len(preds)):
                        correct += preds[i].item()  # error
                    values = [p.item() for p in preds]  # error
                total = sum(losses[i].item() for i in range(len(losses)))
            """,
            note="an index loop, a comprehension; after the training loop it is fine",
        ),
        Good(
            """
            def train(model, loader, val_loader, optimizer, criterion, history):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total = loss.item()
                    for name in history:
                        rows = name.tolist()
                    for batch in val_loader:
                        print(criterion(model(batch[0]), batch[1]).item())
            """,
            note="one sync per step, a parameter's elements, one sync per validation batch",
        ),
        Good(
            """
            def collect(loader):
                out = []
                for batch in loader:
                    for i in range(len(batch)):
                        out.append(batch[i].item())
                return out
            """,
            note="no training loop around it",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (type(func) is cst.Attribute and func.attr.value in _SYNCS) or node.args:
            return
        element = func.value
        for scope in _element_loops(self.ctx.ancestors):
            container = _container_of(scope, element)
            if container is None:
                continue
            training = [loop for loop in enclosing_loops(self.ctx.ancestors) if loop is not scope and has_backward(loop)]
            if training and self._made_here(container):
                self.report(
                    node,
                    f"`.{func.attr.value}()` on each element of `{container}` inside the training loop: one device "
                    f"synchronisation per element; reduce on the device and transfer once (`{container}.sum().item()`, "
                    f"`{container}.tolist()`)",
                )
            return

    def _made_here(self, container: str) -> bool:
        """The enclosing function assigns `container` (a parameter may hold plain numbers)."""
        function = self.ctx.enclosing_function()
        if function is None:
            return False
        for node in iter_nodes(function.body):
            if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = node.targets if type(node) is cst.Assign else [node]
                if any(dotted_name(t.target) == container for t in targets):
                    return True
        return False


def _element_loops(ancestors) -> list[cst.CSTNode]:
    """The `for` loops and comprehension clauses around the node, innermost first (a
    comprehension's element is not inside its `for` clause in the tree: its clauses are
    taken from the comprehension)."""
    loops: list[cst.CSTNode] = []
    for ancestor in reversed(ancestors):
        if type(ancestor) is cst.For:
            loops.append(ancestor)
        elif type(ancestor) in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            clauses = []
            clause = ancestor.for_in
            while clause is not None:
                clauses.append(clause)
                clause = clause.inner_for_in
            loops.extend(reversed(clauses))
    return loops


def _container_of(loop: cst.For | cst.CompFor, element: cst.BaseExpression) -> str | None:
    """`preds` when the loop walks `preds`' elements and `element` is one of them: `for p in
    preds` with `p`, or `for i in range(len(preds))` with `preds[i]`."""
    iterable = loop.iter
    targets = {n.value for n in iter_nodes(loop.target) if type(n) is cst.Name}
    if type(element) is cst.Name and element.value in targets:
        container = dotted_name(iterable)
    elif (
        type(element) is cst.Subscript and len(element.slice) == 1
        and type(element.slice[0].slice) is cst.Index
        and type(element.slice[0].slice.value) is cst.Name
        and element.slice[0].slice.value.value in targets
        and type(iterable) is cst.Call and dotted_name(iterable.func) == "range" and len(iterable.args) == 1
        and type(iterable.args[0].value) is cst.Call and dotted_name(iterable.args[0].value.func) == "len"
    ):
        container = dotted_name(iterable.args[0].value.args[0].value)
        if container != dotted_name(element.value):
            return None
    else:
        return None
    if container is None or container.rpartition(".")[2].lower().endswith(_BATCH_WORDS):
        return None
    return container
