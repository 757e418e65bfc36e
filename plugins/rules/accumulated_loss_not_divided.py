from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from ._loops import is_backward_call, leftmost_name, loop_nodes, loop_statements

#: Receivers of `.step()` that apply gradients (not `scheduler.step()`).
_STEPPER = re.compile(r"optim|(^|_)opt\d*$|scaler|accelerator", re.IGNORECASE)
#: Objects whose `.backward(loss)` back-propagates its argument.
_FRAMEWORK = re.compile(r"accelerator|fabric|engine", re.IGNORECASE)
#: Frameworks that divide the loss themselves when they accumulate.
_MANAGED = ("accumulate", "no_sync_and_accumulate", "gradient_accumulation")


class AccumulatedLossNotDivided(Rule):
    """
    ## What it does
    Flags gradient accumulation whose loss is never divided by the number of micro-batches:
    `loss.backward()` on every iteration with `optimizer.step()` only when `(i + 1) % N == 0`,
    or an inner `for _ in range(N):` loop of backward passes followed by one
    `optimizer.step()`, where nothing in the loop divides (or multiplies) the loss that is
    back-propagated: not `(loss / N).backward()`, not `loss = loss / N` or `loss /= N`, not a
    division inside the expression the loss is computed from.

    Left alone: gradients rescaled before the step instead (`p.grad /= n`,
    `scale_grads(model.parameters(), 1 / n)`), a loop that zeroes gradients on every iteration (nothing accumulates), a
    loss from a helper that is given `N` (it may divide), and loops managed by a framework
    that divides itself (`accelerator.accumulate(...)`).


    Off by default: on 17 big public libraries and frameworks with their test suites,
    judged by reviewers who did not write the rule, 0 of 7 sampled findings were right (7
    in all); the wrong ones were averaging done elsewhere (`p.grad.mul_(1 / n)`, an in-
    place `loss /= steps`) and loops that are not gradient accumulation. `--extend-select
    TL610` turns it on.
    ## Why is this bad?
    `backward()` adds into `.grad`. After N micro-batches the gradient is the SUM of N
    mean-reduced batch gradients: N times the gradient of the large batch the accumulation
    stands for. With SGD that is an N-times larger learning rate; gradient clipping
    thresholds and weight decay no longer mean what they were tuned for, and changing N
    changes the training. Nothing fails: the run just trains differently from the same run
    without accumulation.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```
    """

    code = "TL610"
    name = "accumulated-loss-not-divided"
    summary = "gradient accumulation over N micro-batches without dividing the loss by N: an N-times larger step"
    default_enabled = False
    triggers = ("backward",)
    cases = [
        Bad(
            """
            def train(model, loader, criterion, optimizer, accum_steps):
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y)
                    loss.backward()  # error
                    if (i + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
            """
        ),
        Bad(
            """
            def train(model, batches, criterion, optimizer, scaler, micro_steps):
                for batch in batches:
                    for _ in range(micro_steps):
                        x, y = next(batch)
                        loss = criterion(model(x), y)
                        scaler.scale(loss).backward()  # error
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)
            """,
            note="an inner micro-batch loop, the step after it",
        ),
        Good(
            """
            def train(model, loader, criterion, optimizer, accum_steps):
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y)
                    (loss / accum_steps).backward()
                    if (i + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()

            def train2(model, loader, criterion, optimizer, accum_steps):
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y)
                    loss /= accum_steps
                    loss.backward()
                    if (i + 1) % accum_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
            """,
            note="divided in the backward call, or in place",
        ),
        Good(
            """
            def train(model, batches, optimizer, gradient_accumulation_steps):
                for batch in batches:
                    for micro_step in range(gradient_accumulation_steps):
                        logits, loss = model(*next(batch))
                        loss = loss / gradient_accumulation_steps
                        loss.backward()
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
            """,
            note="nanoGPT's accumulation",
        ),
        Good(
            """
            def train(model, loader, criterion, optimizer, scheduler, log_every):
                for i, (x, y) in enumerate(loader):
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    if i % log_every == 0:
                        optimizer.step()
                        scheduler.step()
            """,
            note="gradients are zeroed every iteration: nothing accumulates",
        ),
        Good(
            """
            def train(model, loader, optimizer, accelerator, steps):
                for i, batch in enumerate(loader):
                    with accelerator.accumulate(model):
                        loss = model(**batch).loss
                        accelerator.backward(loss)
                        optimizer.step()
                        optimizer.zero_grad()

            def train2(model, loader, optimizer, accum):
                for i, batch in enumerate(loader):
                    loss = compute_loss(model, batch, accum)
                    loss.backward()
                    if i % accum == 0:
                        optimizer.step()
                        optimizer.zero_grad()
            """,
            note="a framework that divides itself, and a helper that is told N",
        ),
        Good(
            """
            def train(model, loader, optimizer, loss_fn, accum):
                for i, (x, y) in enumerate(loader):
                    loss_fn(model(x), y).backward()
                    if (i + 1) % accum == 0:
                        for p in model.parameters():
                            p.grad /= accum
                        optimizer.step()
                        optimizer.zero_grad()
            """,
            note="the summed gradients are divided before the step",
        ),
    ]

    def visit_For(self, node: cst.For) -> None:
        self._check_guarded_step(node)
        self._check_micro_batch_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._check_guarded_step(node)

    # -- the two shapes of accumulation -------------------------------------------------------
    def _check_guarded_step(self, loop: cst.For | cst.While) -> None:
        """`loss.backward()` every iteration, `optimizer.step()` under `if i % N == 0`."""
        guarded = [(node, divisor) for node, divisor in _modulo_ifs(loop) if _steps(node.body)]
        if not guarded or _managed(loop) or _zeroes_every_iteration(loop, {id(n) for n, _ in guarded}):
            return
        guard, divisor = guarded[0]
        if _scales(guard.body):
            return  # the gradients are rescaled before the step (`p.grad /= n`, `scale_grads(params, 1 / n)`)
        inside = {id(n) for n in iter_nodes(guard)}
        for call in _backward_calls(loop):
            if id(call) not in inside:
                self._judge(loop, call, divisor)

    def _check_micro_batch_loop(self, loop: cst.For) -> None:
        """`for _ in range(N): ... loss.backward()`, then `optimizer.step()` after the loop."""
        divisor = _range_count(loop.iter)
        if divisor is None or _steps(loop.body) or _zeroes_every_iteration(loop, set()) or _managed(loop):
            return
        if not self._steps_after(loop):
            return
        for call in _backward_calls(loop):
            self._judge(loop, call, divisor)

    def _steps_after(self, loop: cst.For) -> bool:
        for holder in reversed(self.ctx.ancestors[-3:]):
            body = getattr(holder, "body", None)
            statements = list(body) if isinstance(body, (list, tuple)) else []
            for index, statement in enumerate(statements):
                if statement is loop:
                    return any(_steps(later) for later in statements[index + 1:])
        return False

    # -- judging one backward pass -----------------------------------------------------------
    def _judge(self, loop: cst.CSTNode, call: cst.Call, divisor: cst.BaseExpression) -> None:
        receiver = _backward_subject(call)
        if receiver is None or _scales(receiver):
            return
        loss = leftmost_name(receiver)
        if loss is not None and _scaled_in_loop(loop, loss, divisor):
            return
        if loss is None and type(receiver) is not cst.Call:
            return  # `losses[i].backward()` and the like: not followed
        count = self.ctx.module.code_for_node(divisor).strip()
        subject = f"`{loss}`" if loss is not None else "the loss"
        self.report(
            call,
            f"gradients of `{count}` micro-batches are summed before each optimizer step, but {subject} is not "
            f"divided by `{count}`: the step is `{count}` times the average gradient; back-propagate "
            f"{'`' + loss + ' / ' + count + '`' if loss is not None else 'the loss divided by `' + count + '`'}",
        )


def _modulo_ifs(loop: cst.CSTNode) -> list[tuple[cst.If, cst.BaseExpression]]:
    found = []
    for node in loop_statements(loop):
        if type(node) is cst.If:
            for part in iter_nodes(node.test):
                if type(part) is cst.BinaryOperation and type(part.operator) is cst.Modulo:
                    if not (type(part.right) is cst.Integer and part.right.value == "1"):
                        found.append((node, part.right))
                    break
    return found


def _steps(node: cst.CSTNode) -> bool:
    """An optimizer step in `node`: `optimizer.step()`, `scaler.step(optimizer)`."""
    for call in iter_nodes(node):
        if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "step":
            receiver = dotted_name(call.func.value) or ""
            if _STEPPER.search(receiver.rpartition(".")[2]):
                return True
    return False


def _zeroes_every_iteration(loop: cst.CSTNode, guards: set[int]) -> bool:
    """A `zero_grad()` (or `.grad = None`) outside every `if` of the loop body."""
    def walk(statements) -> bool:
        for statement in statements:
            if type(statement) is cst.If or id(statement) in guards:
                continue
            if type(statement) in (cst.With, cst.Try):
                if walk(statement.body.body):
                    return True
                continue
            if any(type(n) is cst.Attribute and n.attr.value == "zero_grad" for n in iter_nodes(statement)):
                return True
        return False

    body = loop.body
    return walk(body.body if type(body) is cst.IndentedBlock else [body])


def _managed(loop: cst.CSTNode) -> bool:
    return any(
        type(n) is cst.Attribute and n.attr.value in _MANAGED for n in iter_nodes(loop)
    )


def _backward_calls(loop: cst.CSTNode) -> list[cst.Call]:
    return [n for n in loop_nodes(loop) if type(n) is cst.Call and is_backward_call(n)]


def _backward_subject(call: cst.Call) -> cst.BaseExpression | None:
    """The expression back-propagated: `loss` in `loss.backward()`, `scaler.scale(loss)
    .backward()` and `accelerator.backward(loss)`."""
    func = call.func
    if not (type(func) is cst.Attribute and func.attr.value == "backward"):
        return call.args[0].value if call.args else None  # torch.autograd.backward(loss)
    receiver = func.value
    if type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and receiver.func.attr.value == "scale" and receiver.args:
        return receiver.args[0].value
    owner = (dotted_name(receiver) or "").rpartition(".")[2]
    if call.args and call.args[0].keyword is None and _FRAMEWORK.search(owner):
        return call.args[0].value
    return receiver


def _scales(expr: cst.CSTNode) -> bool:
    """A division or multiplication in the expression, or `.div(...)`/`.mul(...)`."""
    for node in iter_nodes(expr):
        if type(node) is cst.BinaryOperation and type(node.operator) in (cst.Divide, cst.Multiply):
            return True
        if type(node) is cst.AugAssign and type(node.operator) in (cst.DivideAssign, cst.MultiplyAssign):
            return True
        if type(node) is cst.Attribute and node.attr.value in ("div", "div_", "mul", "mul_", "true_divide"):
            return True
    return False


def _scaled_in_loop(loop: cst.CSTNode, loss: str, divisor: cst.BaseExpression) -> bool:
    """The loop divides `loss` somewhere, or computes it with a call told the divisor."""
    count = dotted_name(divisor)
    for node in loop_nodes(loop):
        if type(node) is cst.AugAssign and dotted_name(node.target) == loss:
            if type(node.operator) in (cst.DivideAssign, cst.MultiplyAssign):
                return True
        elif type(node) is cst.Assign and any(loss in _target_names(t.target) for t in node.targets):
            if _scales(node.value):
                return True
            if count is not None and any(dotted_name(n) == count for n in iter_nodes(node.value) if type(n) in (cst.Name, cst.Attribute)):
                return True
        elif type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in ("div_", "mul_"):
            if dotted_name(node.func.value) == loss:
                return True
    return False


def _target_names(target: cst.BaseExpression) -> set[str]:
    return {dotted_name(n) for n in iter_nodes(target) if type(n) in (cst.Name, cst.Attribute)} - {None}


def _range_count(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`N` of `range(N)`, unless N is a literal 0 or 1."""
    if not (type(expr) is cst.Call and dotted_name(expr.func) == "range" and len(expr.args) == 1):
        return None
    count = expr.args[0].value
    if type(count) is cst.Integer and count.value in ("0", "1"):
        return None
    return count
