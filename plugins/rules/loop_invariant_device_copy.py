from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import enclosing_loops, is_backward_call, loop_nodes

#: Calls on the receiver that move or change it in the loop (so a copy per step is needed).
_MOVES = frozenset({"cpu", "to", "cuda", "copy_", "set_"})


class LoopInvariantDeviceCopy(Rule):
    """
    ## What it does
    Flags `x.to(device)` / `x.cuda()` inside a training loop (the innermost loop around it
    runs a backward pass) when `x` is the same object on every iteration: the loop never
    assigns it, never iterates over it, never edits it in place and never moves it
    elsewhere. Typically class weights, a mask or a fixed noise tensor made on the CPU
    before the loop and copied to the GPU again on every step.

    Also flagged: a constant built on the host and copied every step
    (`torch.tensor([0, 1]).to(device)`). The loop counts as a training step loop when it runs
    a backward pass or iterates a DataLoader (`for x, y in loader:`).

    Left alone: a random draw copied every step (`torch.randn(4).to(device)`: not invariant),
    the per-batch idiom `x = x.to(device)` (the loop assigns `x`); a copy under
    an `if` in the loop (periodic, not per step); dtype casts (`x.to(torch.float16)`); and a
    receiver that the function already moved or created on a device before the loop (then
    `.to(device)` returns it as it is and costs nothing).

    ## Why is this bad?
    Each step pays a host-to-device copy (and, for pageable memory, a synchronisation) for
    data that never changes. For a small tensor the copy is cheap, but it is a sync point
    that stops the CPU from running ahead of the GPU; for a large one it is bandwidth spent
    every step. Moving it once before the loop costs nothing.

    ## Example
    ```python
    class_weights = torch.tensor([1.0, 5.0])
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y, weight=class_weights.to(device))
        loss.backward()
    ```

    ## Use instead
    ```python
    class_weights = torch.tensor([1.0, 5.0]).to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y, weight=class_weights)
        loss.backward()
    ```
    """

    code = "TL406"
    name = "loop-invariant-device-copy"
    summary = "`x.to(device)` of a tensor the training loop never changes: the same host-to-device copy every step"
    triggers = (".to(", ".cuda(")
    cases = [
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def train(model, loader, optimizer, device):
                class_weights = torch.ones(10)
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    weights = class_weights.to(device)  # error
                    loss = F.cross_entropy(model(x), y, weight=weights)
                    loss.backward()
                    optimizer.step()
            """
        ),
        Bad(
            """
            class Trainer:
                def fit(self, loader):
                    for batch in loader:
                        mask = self.mask.cuda()  # error
                        loss = self.model(batch.cuda(), mask).mean()
                        loss.backward()
            """,
            note="an attribute of self, `.cuda()`",
        ),
        Good(
            """
            import torch

            def train(model, loader, optimizer, device, noise):
                fixed = torch.zeros(4, device=device)
                prior = noise.to(device)
                for step, (x, y) in enumerate(loader):
                    x = x.to(device)
                    half = y.to(torch.float16)
                    b = fixed.to(device) + prior.to(device)
                    if step % 100 == 0:
                        sample = noise.to(device)
                    loss = model(x, half, b).mean()
                    loss.backward()
            """,
            note="the per-batch idiom, a dtype cast, receivers already on the device, a periodic copy",
        ),
        Good(
            """
            def train(model, loader, state, device):
                for x in loader:
                    state.mul_(0.9)
                    s = state.to(device)
                    model.cpu()
                    model.to(device)
                    model(x, s).mean().backward()

            def evaluate(model, items, weights, device):
                for x in items:
                    model(x, weights.to(device))
            """,
            note="edited or moved in the loop; and a loop that neither trains nor iterates a loader",
        ),
        Good(
            """
            def train(model, epochs, loader, weights, device):
                for epoch in range(epochs):
                    w = weights.to(device)
                    for x, y in loader:
                        model(x, y, w).backward()
            """,
            note="once per epoch, in the loop around the step loop",
        ),
        Bad(
            """
            import torch

            def evaluate(model, val_loader, device):
                for x, y in val_loader:
                    model.to(device)  # error
                    index = torch.tensor([0, 2]).to(device)  # error
                    noise = torch.randn(4).to(device)
                    model(x.to(device), index, noise)
            """,
            note="a loop over a loader; a constant factory; a random draw is not invariant",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute or not _device_move(node):
            return
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops or not _steps_through_data(loops[0]):
            return
        loop = loops[0]
        if self._under_if_in(loop):
            return
        if type(func.value) is cst.Call and self._constant_factory(func.value):
            self.report(
                node,
                f"`{self.ctx.module.code_for_node(node)}` builds the same constant on the host and copies it to the device on every step: "
                f"create it once, before the loop, with `device=`",
            )
            return
        receiver = dotted_name(func.value)
        if receiver is None or not _invariant(loop, receiver) or self._on_device_before(loop, receiver):
            return
        self.report(
            node,
            f"`{self.ctx.module.code_for_node(node)}` runs on every step for a `{receiver}` the loop never changes: move it to the device once, "
            f"before the loop",
        )

    def _constant_factory(self, call: cst.Call) -> bool:
        """`torch.tensor([0, 1])`, `torch.ones(3)`: a factory of literals only (not a random draw)."""
        if self.ctx.qualname(call.func) not in _CONSTANT_FACTORIES or not call.args:
            return False
        return all(_literal(arg.value) for arg in call.args if not arg.star) and not any(arg.star for arg in call.args)

    def _under_if_in(self, loop: cst.CSTNode) -> bool:
        ancestors = self.ctx.ancestors
        start = next((i for i, a in enumerate(ancestors) if a is loop), len(ancestors))
        return any(type(a) in (cst.If, cst.IfExp) for a in ancestors[start + 1:])

    def _on_device_before(self, loop: cst.CSTNode, receiver: str) -> bool:
        """The function assigns `receiver` from a device move or a `device=` factory (or
        takes nothing to judge) before the loop: `.to(device)` then returns it unchanged."""
        function = self.ctx.enclosing_function()
        scope = function if function is not None else self.ctx.module
        for node in iter_nodes(scope):
            if node is loop:
                break
            if type(node) is cst.Assign and any(dotted_name(t.target) == receiver for t in node.targets):
                text = self.ctx.module.code_for_node(node.value)
                if ".to(" in text or ".cuda(" in text or "device=" in text or "device =" in text:
                    return True
        return False


#: Factories whose result depends on their arguments only.
_CONSTANT_FACTORIES = frozenset(
    f"torch.{name}" for name in ("tensor", "as_tensor", "ones", "zeros", "full", "arange", "eye", "linspace", "empty")
)
#: Iterables of batches: a loop over one is a step loop even when the backward pass is elsewhere.
_DATA_ITERABLE = ("loader", "batches", "dl")


def _steps_through_data(loop: cst.CSTNode) -> bool:
    """A training step loop (a backward pass in it, not in a loop nested in it: an epoch loop
    copies once per epoch), or a loop over a DataLoader's batches."""
    own_nodes = iter_nodes(loop.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While))
    if any(type(node) is cst.Call and is_backward_call(node) for node in own_nodes):
        return True
    if type(loop) is not cst.For:
        return False
    iterable = loop.iter
    while type(iterable) is cst.Call and dotted_name(iterable.func) in ("enumerate", "tqdm", "tqdm.tqdm", "zip") and iterable.args:
        iterable = iterable.args[0].value
    name = (dotted_name(iterable) or "").rpartition(".")[2].lower()
    return name.endswith(_DATA_ITERABLE)


def _literal(expr: cst.BaseExpression) -> bool:
    if type(expr) in (cst.Integer, cst.Float, cst.SimpleString):
        return True
    if type(expr) is cst.Name:
        return expr.value in ("True", "False", "None")
    if type(expr) is cst.UnaryOperation:
        return _literal(expr.expression)
    if type(expr) in (cst.List, cst.Tuple):
        return all(_literal(element.value) for element in expr.elements)
    return False


def _device_move(call: cst.Call) -> bool:
    """`.cuda()`, or `.to(...)` whose first argument or `device=` names a device."""
    name = call.func.attr.value
    if name == "cuda":
        return True
    if name != "to":
        return False
    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    arg = arg or next((a for a in call.args if a.keyword is None and not a.star), None)
    if arg is None:
        return False
    value = arg.value
    if type(value) is cst.SimpleString:
        return any(word in value.value for word in ("cuda", "cpu", "mps", "xpu"))
    if type(value) is cst.Call:
        return (dotted_name(value.func) or "").endswith("device")
    dotted = (dotted_name(value) or "").rpartition(".")[2].lower()
    return "device" in dotted or dotted in ("dev", "gpu")


def _invariant(loop: cst.CSTNode, receiver: str) -> bool:
    """Nothing in the loop (or its own header) assigns, iterates into, edits or moves `receiver`."""
    head = receiver.partition(".")[0]
    head = receiver if head == "self" else head  # `self` is never rebound; `self.x = ...` elsewhere is no change
    if type(loop) is cst.For and _binds(loop.target, receiver, head):
        return False
    for node in loop_nodes(loop):
        targets: list[cst.BaseExpression] = []
        if type(node) is cst.Assign:
            targets = [t.target for t in node.targets]
        elif type(node) in (cst.AugAssign, cst.AnnAssign):
            targets = [node.target]
        elif type(node) in (cst.For, cst.CompFor):
            targets = [node.target]
        elif type(node) is cst.WithItem and node.asname is not None:
            targets = [node.asname.name]
        if any(_binds(target, receiver, head) for target in targets):
            return False
        if type(node) is cst.Call and type(node.func) is cst.Attribute and dotted_name(node.func.value) == receiver:
            method = node.func.attr.value
            if method.endswith("_") or (method in _MOVES and not _is_this_kind_of_copy(node)):
                return False
    return True


def _binds(target: cst.BaseExpression, receiver: str, head: str) -> bool:
    """The assignment target rebinds `receiver` (or the name it hangs from), or writes into it."""
    for part in iter_nodes(target):
        if type(part) in (cst.Name, cst.Attribute) and dotted_name(part) in (receiver, head):
            return True
        if type(part) is cst.Subscript and dotted_name(part.value) == receiver:
            return True
    return False


def _is_this_kind_of_copy(call: cst.Call) -> bool:
    """Another `.to(device)`/`.cuda()` of the receiver is no move away from the device."""
    return _device_move(call) and not (call.func.attr.value == "to" and _names_cpu(call))


def _names_cpu(call: cst.Call) -> bool:
    return any(type(a.value) is cst.SimpleString and "cpu" in a.value.value for a in call.args)
