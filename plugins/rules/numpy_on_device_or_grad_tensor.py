from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import libcst as cst

from torchlint.rule import Bad, Good
from torchlint.static.names import dotted_name

from ._calls import keyword, positional
from ._numerics import LocalTags

NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})
#: Factories taking `requires_grad=` and `device=`.
FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("zeros", "ones", "empty", "full", "rand", "randn", "tensor", "arange", "linspace", "eye", "randint",
                 "zeros_like", "ones_like", "rand_like", "randn_like", "full_like", "empty_like")
)
PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
#: Methods whose result lives on the receiver's device and stays in its autograd graph.
KEEP_METHODS = frozenset(
    {
        "float", "double", "half", "bfloat16", "view", "view_as", "reshape", "reshape_as", "squeeze", "unsqueeze",
        "permute", "transpose", "t", "contiguous", "clone", "flatten", "sum", "mean", "abs", "exp", "log",
        "sigmoid", "softmax", "log_softmax", "sqrt", "pow", "clamp", "squeeze_", "unsqueeze_",
    }
)
#: Methods whose integer result cannot require grad but stays on the receiver's device.
INT_METHODS = frozenset({"long", "int", "bool", "byte", "argmax", "argmin", "round", "sign"})
#: Last parts of names that hold an accelerator device: `device`, `args.device`, `x.device`.
DEVICE_WORDS = ("device", "gpu", "cuda")
DEVICE_NAMES = frozenset({"rank", "local_rank", "dev"})


@dataclass(frozen=True)
class Taint:
    device: str = ""  # why the tensor may be on an accelerator, e.g. "`.to(device)` at line 4"
    grad: str = ""  # why it requires grad

    def __bool__(self) -> bool:
        return bool(self.device or self.grad)


class NumpyOnDeviceOrGradTensor(LocalTags):
    """
    ## What it does
    Flags `t.numpy()` where `t` evidently lives on an accelerator or requires grad:
    - moved there in the same function by `.cuda()` or `.to(<device>)` (a string like `"cuda"`,
      an int, `torch.device("cuda")`, or a name ending in `device`/`gpu`/`cuda`, `rank`,
      `local_rank`) or created with such a `device=`, without a later `.cpu()` or a
      `.to(...)` naming the host (`"cpu"`, `torch.device("cpu")`, a name containing `cpu`
      such as `self._cpu_device`);
    - created with `requires_grad=True`, as an `nn.Parameter`, by `.requires_grad_()`, or
      a name `backward()` was called on, without `.detach()` / `.data` in between.
    Values are followed through local variables (in source order, a binding in a branch does
    not count after it) and through shape, dtype and elementwise methods.

    ## Why is this bad?
    `Tensor.numpy()` shares memory with the tensor, so it refuses both cases:
    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to
    host memory first." and "Can't call numpy() on Tensor that requires grad. Use
    tensor.detach().numpy() instead." Code that moves tensors with `.to(device)` is written to
    run on a GPU, where this line crashes even though it passed every CPU test.

    ## Example
    ```python
    x = batch.to(device)
    preds = model(x).argmax(1)
    np.save("preds.npy", preds.numpy())
    ```

    ## Use instead
    ```python
    np.save("preds.npy", preds.cpu().numpy())  # .detach().cpu().numpy() when it may require grad
    ```

    ## Known limitations
    Model outputs and losses are not assumed to require grad or to be on a device unless the
    function shows it (`loss.backward()`), and `self.<attr>` tensors are not followed.
    """

    code = "TL202"
    name = "numpy-on-device-or-grad-tensor"
    summary = "`.numpy()` on a tensor that is on an accelerator or requires grad raises"
    #: The error that proves it when the program runs (``torchlint run``; fake-cuda raises it too).
    proven_by = (("TypeError", r"can't convert \S+ device type tensor to numpy|Can't call numpy\(\) on Tensor that requires grad"),)
    triggers = (".numpy(",)
    cases = [
        Bad(
            """
            import torch

            def evaluate(model, loader, device):
                for x, y in loader:
                    x = x.to(device, non_blocking=True)
                    pred = model(x).argmax(1)
                    a = x.numpy()  # error
                    b = x[:, 0].float().numpy()  # error
                    c = x.cpu().numpy()
                    d = y.cuda().detach().numpy()  # error
            """
        ),
        Bad(
            """
            import torch
            from torch import nn

            def fit(model, x, y):
                w = torch.zeros(3, requires_grad=True)
                bias = nn.Parameter(torch.zeros(1))
                loss = ((x @ w + bias - y) ** 2).mean()
                loss.backward()
                print(loss.numpy(), w.numpy(), bias.data.numpy())  # error
                return w.detach().numpy(), w.grad.numpy()
            """,
            note="requires grad: a leaf with requires_grad=True; a tensor backward() ran on",
        ),
        Bad(
            """
            import torch

            t = torch.randn(4, device="cuda")
            print(t.numpy())  # error
            """
        ),
        Good(
            """
            import torch

            def f(x, device, training):
                y = x
                if training:
                    y = x.to(device)
                z = x.to("cpu").numpy()
                return y.numpy(), x.to(torch.float32).numpy(), z
            """,
            note="a move only inside a branch; `.to('cpu')`; `.to(dtype)`",
        ),
        Good(
            """
            import torch

            def f(model, x, device):
                x = x.to(device)
                out = model(x)
                x = torch.as_tensor(x.cpu())
                return out.numpy(), x.numpy(), out.detach().cpu().numpy()
            """,
            note="model output: unknown; re-assigned after the move",
        ),
        Good(
            """
            import torch

            def f(w, device):
                w = torch.ones(3, requires_grad=True)
                with torch.no_grad():
                    v = (w * 2).sum()
                g = w.to(device).numpy(force=True)
                return v.numpy(), g
            """,
            note="derived under no_grad; `numpy(force=True)` copies and detaches",
        ),
        Good(
            """
            import torch

            class Predictor:
                def __init__(self):
                    self._cpu_device = torch.device("cpu")

                def run(self, model, x, device, cpu):
                    x = x.to(device)
                    a = model(x).to(self._cpu_device).numpy()
                    b = x.to(self._cpu_device).numpy()
                    c = x.to(torch.device("cpu")).numpy() + x.to("cpu", non_blocking=True).numpy()
                    d = x.detach().cpu().numpy() + x.cpu().detach().numpy() + x.data.cpu().numpy()
                    e = x.to(cpu).numpy() + x.to(device="cpu:0").numpy()
                    return a, b, c, d, e
            """,
            note="moved back to the host: a device name that says cpu, `torch.device('cpu')`, `.cpu()`",
        ),
        Bad(
            """
            import torch

            def run(model, x, device, cpu_device):
                x = x.to(device)
                a = x.to(cpu_device).float().numpy()
                return a, x.to(cpu_device).cuda().numpy()  # error
            """,
            note="back on the host, then moved to the GPU again",
        ),
        Good(
            """
            import tensorflow as tf

            def f(t):
                return tf.identity(t).numpy(), t.to(dev_mode).numpy()
            """,
            note="other libraries' `.numpy()`; `.to(something)` that is not evidently a device",
        ),
    ]

    # -- tags --------------------------------------------------------------------------------
    def tag_of(self, expr: cst.BaseExpression) -> Optional[Taint]:
        taint = self._taint(expr)
        if taint and taint.grad and type(expr) is not cst.Name and self._in_no_grad():
            taint = replace(taint, grad="")  # computed under no_grad: no graph
        return taint or None

    def _taint(self, expr: cst.BaseExpression) -> Optional[Taint]:
        if type(expr) is cst.Name:
            return self.lookup(expr.value)
        if type(expr) is cst.Subscript:
            return self._taint(expr.value)
        if type(expr) is cst.Attribute:
            if expr.attr.value == "data":
                inner = self._taint(expr.value)
                return replace(inner, grad="") if inner else None
            return None
        if type(expr) is cst.Call:
            return self._call_taint(expr)
        return None

    def _where(self, node: cst.CSTNode, text: str) -> "_Where":
        return _Where(self.ctx, node, text)

    def _call_taint(self, call: cst.Call) -> Optional[Taint]:
        qualname = self.ctx.qualname(call.func)
        if qualname is not None:
            return self._constructor_taint(call, qualname)
        func = call.func
        if type(func) is not cst.Attribute:
            return None
        method = func.attr.value
        inner = self._taint(func.value) or Taint()
        if method == "cuda":
            return replace(inner, device=self._where(call, "`.cuda()`"))
        if method == "cpu":
            return replace(inner, device="")
        if method in ("detach", "detach_"):
            return replace(inner, grad="")
        if method == "requires_grad_" and _true_or_absent(call, "requires_grad", 0):
            return replace(inner, grad=self._where(call, "`.requires_grad_()`"))
        if method == "to":
            return self._to_taint(call, inner)
        if method in KEEP_METHODS:
            return inner
        if method in INT_METHODS:
            return replace(inner, grad="")
        return None

    def _constructor_taint(self, call: cst.Call, qualname: str) -> Optional[Taint]:
        grad = device = ""
        if qualname in PARAMETERS:
            if _true_or_absent(call, "requires_grad", 1):
                grad = self._where(call, "`nn.Parameter(...)`")
        elif qualname in FACTORIES:
            requires = keyword(call, "requires_grad")
            if requires is not None and _is_true(requires.value):
                grad = self._where(call, "`requires_grad=True`")
            where = keyword(call, "device")
            if where is not None and self._device_kind(where.value) == "accelerator":
                device = self._where(call, f"`device={_code(self, where.value)}`")
        else:
            return None
        return Taint(device, grad)

    def _to_taint(self, call: cst.Call, inner: Taint) -> Optional[Taint]:
        where = keyword(call, "device")
        if where is None:
            args = positional(call)
            where = args[0] if args else None
        if where is None:
            return inner if keyword(call, "dtype") is not None else None
        kind = self._device_kind(where.value)
        if kind == "accelerator":
            return replace(inner, device=self._where(call, f"`.to({_code(self, where.value)})`"))
        if kind == "cpu":
            return replace(inner, device="")
        if kind == "dtype":
            return inner
        return None  # `.to(other)`: maybe a device, maybe the CPU

    def _device_kind(self, expr: cst.BaseExpression) -> Optional[str]:
        """"accelerator", "cpu", "dtype", or None when the argument says nothing certain."""
        if type(expr) is cst.SimpleString:
            text = expr.evaluated_value if isinstance(expr.evaluated_value, str) else ""
            if text.startswith(("cuda", "mps", "xpu", "npu", "hpu")):
                return "accelerator"
            return "cpu" if text == "cpu" or text.startswith("cpu:") else None
        if type(expr) is cst.Integer:
            return "accelerator"
        if type(expr) is cst.Call and self.ctx.qualname(expr.func) == "torch.device":
            args = positional(expr)
            return self._device_kind(args[0].value) if args else None
        qualname = self.ctx.qualname(expr)
        if qualname is not None and qualname.startswith("torch."):
            return "dtype" if qualname.count(".") == 1 else None
        name = dotted_name(expr)
        if name is None:
            return None
        last = name.rpartition(".")[2].lower()
        if "cpu" in last:
            return "cpu"  # `self._cpu_device`, `cpu_device`: a name for the host
        if any(word in last for word in DEVICE_WORDS) or last in DEVICE_NAMES:
            return "accelerator"
        return None

    def _in_no_grad(self) -> bool:
        for ancestor in self.ctx.ancestors:
            if type(ancestor) is cst.With:
                for item in ancestor.items:
                    context = item.item.func if type(item.item) is cst.Call else item.item
                    if self.ctx.qualname(context) in NO_GRAD_CONTEXTS:
                        return True
            elif type(ancestor) is cst.FunctionDef:
                for decorator in ancestor.decorators:
                    target = decorator.decorator
                    target = target.func if type(target) is cst.Call else target
                    if self.ctx.qualname(target) in NO_GRAD_CONTEXTS:
                        return True
        return False

    # -- the check ---------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute:
            return
        if func.attr.value == "backward" and type(func.value) is cst.Name:
            # backward() raises unless the tensor requires grad: from here on it does.
            name = func.value.value
            taint = self.lookup(name) or Taint()
            self.bind(name, replace(taint, grad=self._where(node, f"`{name}.backward()`")))
            return
        if func.attr.value != "numpy":
            return
        force = keyword(node, "force")
        if force is not None and not _is_false(force.value):
            return
        taint = self.tag_of(func.value)
        if not taint:
            return
        problems = []
        if taint.device:
            problems.append(f"may be on an accelerator ({taint.device}): call `.cpu()` first")
        if taint.grad:
            problems.append(f"requires grad ({taint.grad}): call `.detach()` first")
        self.report(node, "`.numpy()` raises on this tensor: it " + "; it ".join(problems))


def _code(rule: NumpyOnDeviceOrGradTensor, node: cst.CSTNode) -> str:
    text = " ".join(rule.ctx.module.code_for_node(node).split())
    return text if len(text) <= 30 else text[:27] + "..."


def _is_true(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value == "True"


def _is_false(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value == "False"


def _true_or_absent(call: cst.Call, name: str, position: int) -> bool:
    """`requires_grad` is True or not given (`nn.Parameter(data, requires_grad)` takes it
    second, `x.requires_grad_(flag)` first)."""
    arg = keyword(call, name)
    if arg is None:
        args = positional(call)
        arg = args[position] if len(args) > position else None
    return arg is None or _is_true(arg.value)


class _Where:
    """"`.cuda()` at line 12", with the line looked up only if a message is written: most
    taints never reach a report, and positions cost code generation."""

    __slots__ = ("ctx", "node", "text")

    def __init__(self, ctx, node: cst.CSTNode, text: str) -> None:
        self.ctx, self.node, self.text = ctx, node, text

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{self.text} at line {self.ctx.position(self.node)[0]}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)
