"""Shared reading of training loops, CUDA guards and script files for the hygiene rules
(TL203-TL205, TL601-TL608). Not part of the engine; never imports torch.

Everything here answers "might this be fine?" generously: the rules built on it stay quiet
whenever the code could be guarded, handled elsewhere, or deliberate.
"""

from __future__ import annotations

import re
from typing import Iterator, Sequence

import libcst as cst

from torchlint.semantic.program_facts import is_test_path
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

_LOOP_TYPES = frozenset({"For", "While"})
_SCOPE_TYPES = frozenset({"FunctionDef", "ClassDef", "Lambda"})



# -- source text of small expressions ----------------------------------------------------------


def names_in(node: cst.CSTNode) -> Iterator[str]:
    """Every identifier and attribute name in `node`, lower-cased, plus string contents."""
    for child in iter_nodes(node):
        kind = type(child).__name__
        if kind == "Name":
            yield child.value.lower()
        elif kind == "Attribute":
            yield child.attr.value.lower()
        elif kind == "SimpleString":
            yield child.value.lower()


_CUDA_WORDS = ("cuda", "gpu", "device", "accelerat", "nccl", "is_available", "distributed", "ddp", "rank")


def mentions_cuda(node: cst.CSTNode) -> bool:
    """A condition that may be about whether CUDA exists (`torch.cuda.is_available()`,
    `args.cuda`, `device.type == "cuda"`, `use_gpu`, `args.distributed`, `ddp`, `local_rank`)."""
    return any(word in name for name in names_in(node) for word in _CUDA_WORDS)


# -- CUDA guards ---------------------------------------------------------------------------------


def _in_branch_of(ancestors: Sequence[cst.CSTNode], index: int) -> bool:
    """ancestors[index] is a conditional; is the node below it in a guarded branch (body or
    orelse of an If/IfExp/While whose test mentions CUDA, or after an `and` operand)?"""
    holder = ancestors[index]
    below = ancestors[index + 1] if index + 1 < len(ancestors) else None
    kind = type(holder).__name__
    if kind in ("If", "While", "IfExp"):
        return below is not holder.test and (mentions_cuda(holder.test) or _flag_set_by_cuda_check(ancestors, holder.test))
    if kind == "BooleanOperation":
        return below is holder.right and mentions_cuda(holder.left)
    return False


def _flag_set_by_cuda_check(ancestors: Sequence[cst.CSTNode], test: cst.BaseExpression) -> bool:
    """`if need_sync:` where the function sets `need_sync` from, or under, a CUDA check
    (`need_sync = x.is_cuda`, or `if arg.is_cuda: need_sync = True`)."""
    if type(test).__name__ == "UnaryOperation":
        test = test.expression
    if type(test).__name__ != "Name":
        return False
    scope = next((a for a in reversed(ancestors) if type(a).__name__ == "FunctionDef"), ancestors[0] if ancestors else None)
    if scope is None:
        return False
    stack: list[tuple[cst.CSTNode, bool]] = [(scope, False)]
    while stack:
        node, under_cuda_if = stack.pop()
        kind = type(node).__name__
        if kind == "Assign" and any(dotted_name(t.target) == test.value for t in node.targets):
            if under_cuda_if or mentions_cuda(node.value):
                return True
        if kind == "If" and mentions_cuda(node.test):
            stack.append((node.body, True))
            if node.orelse is not None:
                stack.append((node.orelse, under_cuda_if))
            continue
        for child in _children(node):
            stack.append((child, under_cuda_if))
    return False


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from torchlint.static.walker import _child_fields

    for field in _child_fields(type(node)):
        value = getattr(node, field)
        for child in value if type(value) in (list, tuple) else (value,):
            if isinstance(child, cst.CSTNode):
                yield child


def _decorated_for_cuda(function: cst.FunctionDef | cst.ClassDef) -> bool:
    return any(mentions_cuda(decorator.decorator) for decorator in function.decorators)


_CUDA_NAME = re.compile(r"cuda|gpu|nccl|nvtx|cudagraph|triton", re.IGNORECASE)


def _stops(statement: cst.CSTNode) -> bool:
    """A block that always leaves: return, raise, continue, `pytest.skip`, `sys.exit`."""
    body = getattr(statement, "body", None)
    small = list(body.body) if body is not None and hasattr(body, "body") else []
    for item in small:
        lines = item.body if type(item).__name__ == "SimpleStatementLine" else [item]
        for line in lines:
            kind = type(line).__name__
            if kind in ("Return", "Raise", "Continue", "Break"):
                return True
            if kind == "Expr" and type(line.value).__name__ == "Call":
                name = dotted_name(line.value.func) or ""
                if name.rpartition(".")[2] in ("skip", "skipTest", "exit", "_exit", "abort"):
                    return True
    return False


def cuda_guarded(ancestors: Sequence[cst.CSTNode], node: cst.CSTNode) -> bool:
    """Whether code at `node` may only run when CUDA is present, or its failure is handled:
    an enclosing condition about CUDA, an earlier early exit, a CUDA-named or CUDA-skipping
    function or class, or an enclosing `try` with handlers."""
    chain = [*ancestors, node]
    for index in range(len(chain) - 1):
        holder = chain[index]
        kind = type(holder).__name__
        if _in_branch_of(chain, index):
            return True
        if kind == "Try" and holder.handlers and chain[index + 1] is holder.body:
            return True
        if kind in ("FunctionDef", "ClassDef"):
            if _CUDA_NAME.search(holder.name.value) or _decorated_for_cuda(holder):
                return True
        if kind in ("Module", "IndentedBlock"):
            nxt = chain[index + 1]
            for earlier in holder.body:
                if earlier is nxt:
                    break
                if type(earlier).__name__ == "If" and mentions_cuda(earlier.test) and _stops(earlier):
                    return True
                if type(earlier).__name__ == "SimpleStatementLine" and any(
                    type(small).__name__ == "Assert" and mentions_cuda(small.test) for small in earlier.body
                ):
                    return True
    return False


# -- loops -----------------------------------------------------------------------------------------


def enclosing_loops(ancestors: Sequence[cst.CSTNode]) -> list[cst.CSTNode]:
    """Loops around the current node within its function, innermost first."""
    loops = []
    for ancestor in reversed(ancestors):
        kind = type(ancestor).__name__
        if kind in _SCOPE_TYPES:
            break
        if kind in _LOOP_TYPES:
            loops.append(ancestor)
    return loops


def loop_nodes(loop: cst.CSTNode, *, into_closures: bool = False) -> Iterator[cst.CSTNode]:
    """Nodes of a loop's body (and else), not entering nested functions unless asked
    (an LBFGS closure zeroes gradients inside a nested def)."""
    skip = () if into_closures else (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    yield from iter_nodes(loop.body, skip=skip)


def loop_statements(loop: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`loop_nodes(loop)` for a caller that looks for statements (an `if`, a `with`): the
    expressions, which hold no statement and most of a body's nodes, are not entered."""
    yield from iter_nodes(loop.body, skip=(cst.FunctionDef, cst.ClassDef, cst.BaseExpression))


def is_backward_call(call: cst.Call) -> bool:
    """`loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`,
    `torch.autograd.backward(...)`, `torch.autograd.grad(...)`."""
    func = call.func
    if type(func).__name__ == "Attribute" and func.attr.value == "backward":
        return True
    name = dotted_name(func)
    return name is not None and name.endswith(("autograd.grad", "autograd.backward"))


def has_backward(loop: cst.CSTNode) -> bool:
    return any(type(node).__name__ == "Call" and is_backward_call(node) for node in loop_nodes(loop))


_GPU_PER_PROCESS = re.compile(r"nccl|DistributedDataParallel|FullyShardedDataParallel|\bFSDP\b|init_process_group")


def is_gpu_per_process_program(text: str) -> bool:
    """Distributed code that pins one GPU per process (`torch.cuda.set_device(local_rank)`
    next to NCCL, DDP or FSDP): its device setup is GPU-only by design."""
    return _GPU_PER_PROCESS.search(text) is not None


def leftmost_name(node: cst.BaseExpression) -> str | None:
    """`loss` for `loss`, `(loss / k)`, `loss * w`, `-loss`."""
    while True:
        kind = type(node).__name__
        if kind == "Name":
            return node.value
        if kind == "BinaryOperation":
            node = node.left
        elif kind == "UnaryOperation":
            node = node.expression
        else:
            return None


def differentiated_names(loop: cst.CSTNode) -> set[str]:
    """Names the loop calls backward on: `loss` in `loss.backward()`, `(loss / k).backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `autograd.grad(loss, ...)`."""
    names: set[str] = set()
    for node in loop_nodes(loop):
        if type(node).__name__ != "Call" or not is_backward_call(node):
            continue
        func = node.func
        subject = None
        if type(func).__name__ == "Attribute" and func.attr.value == "backward":
            receiver = func.value
            if (
                type(receiver).__name__ == "Call"
                and receiver.args
                and type(receiver.func).__name__ == "Attribute"
                and receiver.func.attr.value == "scale"
            ):
                receiver = receiver.args[0].value  # scaler.scale(loss).backward()
            subject = leftmost_name(receiver)
            if node.args and node.args[0].keyword is None:
                # `accelerator.backward(loss)` / `fabric.backward(loss)`: the argument is the
                # loss. (For `loss.backward(grad)` it is the seed gradient; naming it too only
                # matters if that very tensor is also collected, which it is not in practice.)
                argument = leftmost_name(node.args[0].value)
                if argument is not None:
                    names.add(argument)
        elif node.args:
            subject = leftmost_name(node.args[0].value)
        if subject is not None:
            names.add(subject)
    return names


def assigned_unconditionally(loop: cst.CSTNode, name: str) -> bool:
    """`name = ...` in the loop body outside any `if`: a fresh value every iteration."""
    for node in loop_nodes(loop):
        if type(node).__name__ != "Assign":
            continue
        if any(dotted_name(target.target) == name for target in node.targets):
            if _not_under_if(loop, node):
                return True
    return False


def reset_each_step(loop: cst.CSTNode, name: str) -> bool:
    """`name` starts over in the block that steps the optimizer (`optimizer.step(); ...;
    running_loss = 0` at the end of a gradient-accumulation window, `losses.clear()` beside
    the step): it holds one step's micro-batch values at most. A reset on another schedule
    (every 100 iterations, when logging) still keeps that many steps' graphs."""
    for node in loop_statements(loop):
        if type(node).__name__ not in ("IndentedBlock", "SimpleStatementSuite"):
            continue
        statements = list(node.body)
        if any(_resets(statement, name) for statement in statements) and any(
            _steps_an_optimizer(statement) for statement in statements
        ):
            return True
    return False


def _resets(statement: cst.CSTNode, name: str) -> bool:
    """`name = <a value not read from name>` or `name.clear()`, as a statement of this block."""
    for small in getattr(statement, "body", ()) if type(statement).__name__ == "SimpleStatementLine" else ():
        kind = type(small).__name__
        if kind == "Assign" and any(dotted_name(target.target) == name for target in small.targets):
            if name not in {dotted_name(n) for n in iter_nodes(small.value) if type(n).__name__ in ("Name", "Attribute")}:
                return True
        if kind == "Expr" and type(small.value).__name__ == "Call":
            func = small.value.func
            if type(func).__name__ == "Attribute" and func.attr.value == "clear" and dotted_name(func.value) == name:
                return True
    return False


def _steps_an_optimizer(statement: cst.CSTNode) -> bool:
    return any(
        type(node).__name__ == "Call" and type(node.func).__name__ == "Attribute" and node.func.attr.value == "step"
        for node in iter_nodes(statement)
    )


def _not_under_if(loop: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Whether `target` is reached from `loop.body` without passing an `if`/`try`."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if node is target:
            return True
        kind = type(node).__name__
        if kind == "With":
            stack.append(node.body)
            continue
        if kind in ("If", "Try", "TryStar", "Match", "For", "While"):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, (list, tuple)):
            stack.extend(body)
        elif body is not None and type(body).__name__ in ("IndentedBlock", "SimpleStatementSuite"):
            stack.append(body)
    return False


# -- evaluation functions --------------------------------------------------------------------------

_EVAL_WORDS = frozenset({"eval", "evaluate", "evaluation", "validate", "validation", "val", "valid", "test", "inference", "predict"})
_GRAD_OFF = ("no_grad", "inference_mode", "set_grad_enabled")


def is_eval_function(function: cst.FunctionDef, owner: cst.ClassDef | None, path: str) -> bool:
    """`evaluate`, `validate_one_epoch`, `test(model, loader)`, `eval_model`: the first word of
    the name says evaluation. Unit tests (`test_*` in test files or `Test*` classes, or
    methods taking `self` named `test_*`) are not."""
    name = function.name.value.lstrip("_").lower()
    first = name.split("_")[0]
    if first not in _EVAL_WORDS:
        return False
    if first == "test":
        if is_test_path(path) or (owner is not None and owner.name.value.startswith("Test")):
            return False
        params = function.params.params
        if params and params[0].name.value in ("self", "cls") and name != "test":
            return False
    return True


def disables_grad(expr: cst.BaseExpression) -> bool:
    """A `with` item or decorator that may turn grad recording off (any mention of
    no_grad / inference_mode / set_grad_enabled counts)."""
    return any(any(word in name for word in _GRAD_OFF) for name in names_in(expr))


def function_disables_grad(function: cst.FunctionDef) -> bool:
    if any(disables_grad(d.decorator) for d in function.decorators):
        return True
    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node).__name__ == "WithItem" and disables_grad(node.item):
            return True
        if type(node).__name__ == "Call" and disables_grad(node.func):
            return True  # torch.set_grad_enabled(False) as a statement
    return False


def calls_method(function: cst.FunctionDef, *methods: str) -> list[cst.Call]:
    found = []
    for node in iter_nodes(function.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node).__name__ == "Call" and type(node.func).__name__ == "Attribute" and node.func.attr.value in methods:
            found.append(node)
    return found


def earlier_statements(ancestors: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Statements that run before the current node in every enclosing block (innermost
    block first): `model.eval()` two lines above, or above the enclosing loop."""
    for index in range(len(ancestors) - 1, -1, -1):
        holder = ancestors[index]
        if type(holder).__name__ not in ("Module", "IndentedBlock"):
            continue
        below = ancestors[index + 1] if index + 1 < len(ancestors) else None
        for statement in holder.body:
            if statement is below:
                break
            yield statement


def under_grad_off(ancestors: Sequence[cst.CSTNode]) -> bool:
    """Inside `with torch.no_grad():` or a function decorated to disable grad."""
    for ancestor in ancestors:
        kind = type(ancestor).__name__
        if kind == "With" and any(disables_grad(item.item) for item in ancestor.items):
            return True
        if kind == "FunctionDef" and any(disables_grad(d.decorator) for d in ancestor.decorators):
            return True
    return False


def mentions_method_call(node: cst.CSTNode, method: str) -> bool:
    return any(
        type(child).__name__ == "Call" and type(child.func).__name__ == "Attribute" and child.func.attr.value == method
        for child in iter_nodes(node)
    )
