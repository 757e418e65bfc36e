from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from torchlint.findings import Severity
from torchlint.fix import UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.autograd import (
    Autograd,
    Scope,
    built_inplace,
    is_true,
    keyword_argument,
    layer_saves_output,
    reads_grad_of,
    view_root,
)
from torchlint.semantic.grad_mode import (
    function_grad_effect,
    is_autograd_function_class,
    statement_grad_switch,
    with_grad_effect,
)
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.values import Origin, Tensor
from torchlint.static.names import dotted_name

# What autograd saves, which layers take `inplace` and which ops return several views are the
# semantic model's tables (torchlint.semantic.torch_api), each entry checked with torch 2.13.
SEQUENTIAL_CLASSES = frozenset({"torch.nn.Sequential", "torch.nn.modules.Sequential", "torch.nn.modules.container.Sequential"})

# --- what counts as in-place ----------------------------------------------------------------
#: Keyed by libcst class name: rule modules must not touch libcst at import (torchlint.lazy).
AUGMENTED_OPERATORS = {
    "AddAssign": "+=", "SubtractAssign": "-=", "MultiplyAssign": "*=", "DivideAssign": "/=",
    "FloorDivideAssign": "//=", "ModuloAssign": "%=", "PowerAssign": "**=",
}  # `@=` has no in-place tensor form; bitwise ones never carry gradients
#: Methods ending in `_` that do not write tensor data.
NOT_INPLACE_METHODS = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_", "register_hook_"})


@dataclass
class Asked:
    """An in-place write the semantic model decides (see `InplaceOnGradTensor.ask`)."""

    node: cst.CSTNode
    value: object  # the model's symbolic value of the written tensor
    op: str
    fix: str
    operands: tuple[cst.BaseExpression, ...]
    functions: tuple[str, ...]  # names of the enclosing functions, outermost first
    scope: Scope
    name: Optional[str]  # the written name, when it is a plain name
    training: bool  # in code that runs in training mode
    dotted: Optional[str] = None  # `self.embed.weight` for a write on it
    #: (class, attr) of `self.<attr>(x)`: in place only if the model says it was built so
    layer: Optional[tuple[str, str]] = None


class InplaceOnGradTensor(Rule):
    """
    ## What it does
    Flags in-place operations (`x += y`, `x.add_(...)`, `x[i] = v`, `out=x`,
    `F.relu(x, inplace=True)`, a module built with `inplace=True`) that autograd cannot allow,
    outside `torch.no_grad()` / `torch.inference_mode()`:

    - on a leaf that requires grad: an `nn.Parameter` (also as `self.<param>`), a layer's
      `weight`/`bias` (`self.fc.weight`, `self.layers[i].weight`), a tensor created with
      `requires_grad=True` or `.requires_grad_()`, one from a list of those, or any tensor
      whose update reads its own `.grad` (manual SGD: `p -= lr * p.grad`); views of these
      (`w[0]`, `w.view(...)`, `w.t()`, `w.T`) count too;
    - on one of the views `chunk`, `split` or `unbind` return (`a, b = self.proj(x).chunk(2)`,
      `x.split(n)[0]`), when what they split requires grad (a layer's output, a leaf);
    - on the output of an op that saves its output for backward (`relu`, `sigmoid`, `tanh`,
      `exp`, `sqrt`, `softmax`, `log_softmax`, `nn.ReLU`, `nn.Sigmoid`, ...), in an
      `nn.Module.forward` (or a `forward_*` helper) or in a function that calls `.backward()`
      or `torch.autograd.grad`,
      when the modified tensor flows into the returned value or the loss.

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 5 of 14 sampled findings were right (14 in all); the
    wrong ones were dict stores taken for parameter writes (`self.masks[key] = Parameter(...)`
    where `self.masks` is a dict on that path), and in-place edits of tensors built from
    targets, masks or constants, or in inference-only code, which no backward reaches.
    `torchlint run` confirms the edits that do break backward. `--extend-select TL103` turns it
    on.

    ## Why is this bad?
    In-place on a leaf that requires grad raises at once: "a leaf Variable that requires grad
    is being used in an in-place operation"; so does in-place on one of several views of a
    tensor that requires grad: "Output 0 of Split is a view and is being modified inplace.
    This view is the output of a function that returns multiple views" (`tensor_split`,
    `hsplit` and `vsplit` build single views and do not raise). In-place on a saved output passes the forward
    pass and fails later, in `backward()`: "one of the variables needed for gradient
    computation has been modified by an inplace operation", far from the line at fault.

    Outputs of BatchNorm, LayerNorm, linear, conv, matmul, pooling, dropout, GELU and SiLU are
    *not* saved: ResNet's `out = self.bn2(out); out += identity` is fine and not flagged.
    Updates through `.data`, on `.grad`, and on `.detach()`ed tensors are not tracked by
    autograd and are not flagged; neither is code in a custom `autograd.Function`.

    ## Example
    ```python
    def forward(self, x):
        gate = torch.sigmoid(self.fc(x))
        gate *= self.scale                      # sigmoid's backward needs the original gate
        return x * gate

    for p in model.parameters():
        p -= lr * p.grad                        # leaf that requires grad
    ```

    ## Use instead
    ```python
    def forward(self, x):
        gate = torch.sigmoid(self.fc(x))
        gate = gate * self.scale
        return x * gate

    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    ```

    ## Fix safety
    For an augmented assignment to a saved output (`h += y`), the fix writes `h = h + y`:
    unsafe, because any other reference to the old tensor no longer sees the update. Leaves
    get no fix: rebinding the name would silently stop updating the parameter.

    ## Known limitations
    What the written tensor may be is the engine's semantic model's answer, within one file:
    names across branches and loops, tuple unpacking, lists of tensors, `self.<attr>`, module
    containers, the outputs of submodules and helpers of the file (functions nested in a
    `forward` included: `def run(i, h): return self.blocks[i](h)`), and a helper's argument as
    its callers in the file pass it. A leaf or a saved output is only as good as that: a
    tensor stored in a dict, or returned by a function of another file, is not followed; a
    leaf handed back by a call is not trusted (fusion helpers return a parameter on one path
    and a product on another). A layer's output counts as saved only when the layer is the
    one thing a `self.<attr>` is built as (custom activation factories such as
    `create_act_layer(...)` are not resolved). `chunk`/`split` views count only when what they
    split is known to require grad: a layer with parameters' output or a leaf, not a
    `forward`'s bare argument. A function called under `torch.no_grad()` from another file
    is not known to be; in the same file it is. Inside `forward` the input of a saved-output
    op is assumed to require grad, except when it is a bare argument of a module that owns
    no layers or parameters (a transform). In-place writes to tensors saved as *inputs*
    (`y = x * w; w.add_(1)`) are out of scope.
    """

    analyses = (SemanticModel,)
    code = "TL103"
    name = "inplace-on-grad-tensor"
    summary = "in-place op on a leaf that requires grad or on an output autograd saves for backward"
    default_enabled = False
    #: The error that proves it when the program runs.
    proven_by = (
        (
            "RuntimeError",
            r"modified by an inplace operation|a leaf Variable that requires grad is being used in an in-place operation"
            r"|is a view and is being modified inplace",
        ),
    )
    severity = Severity.ERROR
    triggers = ("torch", "parameters(")
    fix_safety = UNSAFE
    cases = [
        Bad(
            files={
                "common.py": """
                    import torch
                    from torch.autograd import Variable
                """,
                "fit.py": """
                    from common import *

                    w = Variable(torch.randn(3, 3), requires_grad=True)
                    b = torch.zeros(3, requires_grad=True)
                    w.add_(1)  # error
                    b += 1  # error
                """,
            },
            note="`torch` and `Variable` reached only through a star import mean what they always mean",
        ),
        Good(
            """
            from common import *

            torch = load_backend()
            w = torch.zeros(3, requires_grad=True)
            w.add_(1)
            """,
            note="a name the file binds itself is not the one a star import would bring",
        ),
        Bad(
            """
            import torch.nn as nn

            class Tagger(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(8, 16, batch_first=True)

                def forward(self, x, lengths):
                    seq, (h, c) = self.lstm(x)
                    for i, n in enumerate(lengths):
                        seq[i, n:] = 0  # error
                    h.mul_(2)
                    return seq, h
            """,
            note="an LSTM's output sequence is saved for backward; its hidden state is not",
        ),
        Good(
            """
            import torch.nn as nn

            class Tagger(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gru = nn.GRU(8, 16, batch_first=True)

                def forward(self, x):
                    seq, h = self.gru(x)
                    seq.mul_(2)
                    return seq
            """,
            note="a GRU's output is not saved for backward (torch 2.13, CPU)",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Mask(nn.Module):
                def forward(self, x):
                    out = x
                    out[:, 0] = 0  # error
                    return out

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 10)
                    self.mask = Mask()

                def forward(self, x):
                    return self.mask(torch.tanh(self.fc(x)))
            """,
            note="a submodule's forward writes, through an alias, into the tanh output its caller hands it",
        ),
        Good(
            """
            import torch.nn as nn

            class Mask(nn.Module):
                def forward(self, x):
                    out = x
                    out[:, 0] = 0
                    return out

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(10, 10)
                    self.mask = Mask()

                def forward(self, x):
                    return self.mask(self.fc(x))
            """,
            note="a Linear's output is not saved for backward: writing into it is harmless",
        ),
        Bad(
            """
            import torch.nn as nn

            mlp = nn.Sequential(
                nn.Linear(32, 64),
                nn.ReLU(),
                nn.Dropout(0.3, inplace=True),  # error
                nn.Linear(64, 4),
            )
            """,
            note="an in-place layer right after one that saves its output",
        ),
        Good(
            """
            import torch.nn as nn

            mlp = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.Dropout(0.3, inplace=True), nn.ReLU(inplace=True))
            """,
            note="BatchNorm does not save its output; an in-place ReLU saves its own",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Gate(nn.Module):
                def forward(self, x):
                    gate = torch.sigmoid(self.fc(x))
                    gate *= self.scale  # error
                    return x * gate
            """,
            fixed="""
            import torch
            import torch.nn as nn

            class Gate(nn.Module):
                def forward(self, x):
                    gate = torch.sigmoid(self.fc(x))
                    gate = gate * self.scale  # error
                    return x * gate
            """,
            note="saved output of torch.sigmoid modified in forward",
        ),
        Bad(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Head(nn.Module):
                def __init__(self, dim, classes):
                    super().__init__()
                    self.proj = nn.Linear(dim, classes)

                def forward(self, x, mask):
                    probs = F.softmax(self.proj(x), dim=-1)
                    probs[mask] = 0.0  # error
                    return probs.sum(-1)
            """,
            note="index assignment into a softmax output",
        ),
        Bad(
            """
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.ReLU(inplace=True)
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    out = self.act(self.fc(x))
                    out += x  # error
                    return out
            """,
            note="nn.ReLU(inplace=True) saves its output; += after it breaks backward",
        ),
        Bad(
            """
            import torch

            def train_step(x, y, w, lr):
                h = x.matmul(w).exp()
                h.add_(1.0)  # error
                loss = ((h - y) ** 2).mean()
                loss.backward()
            """,
            note="a function that calls backward",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            w = nn.Parameter(torch.randn(4, 4))
            w.add_(1.0)  # error
            w[0] = 0.0  # error
            """,
            note="a Parameter and a view of it (reported once per line)",
        ),
        Bad(
            """
            import torch

            def fit(x, y, steps, lr=0.1):
                w = torch.zeros(3, requires_grad=True)
                for _ in range(steps):
                    loss = ((x @ w - y) ** 2).mean()
                    loss.backward()
                    w -= lr * w.grad  # error
                    w.grad.zero_()
                return w
            """,
            note="manual SGD on a requires_grad tensor without no_grad",
        ),
        Bad(
            """
            def sgd_step(model, lr):
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)  # error
            """,
            note="manual SGD over model.parameters()",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class GLU(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = nn.Linear(dim, 2 * dim)

                def forward(self, x):
                    a, gate = self.proj(x).chunk(2, dim=-1)
                    gate.sigmoid_()  # error
                    return a * gate

            class Heads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qkv = nn.Linear(8, 24)

                def forward(self, x):
                    q, k, v = torch.split(self.qkv(x), 8, dim=-1)
                    q *= 0.5  # error
                    return q @ k.transpose(-2, -1) @ v

            class Rows(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    first = self.fc(x).unbind(0)[0]
                    first.add_(1)  # error
                    return first
            """,
            note="in-place on one of the views chunk/split/unbind return, of a layer's output",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 16)

                def forward(self, x, mask):
                    a, b = self.proj(x).tensor_split(2, dim=-1)
                    b.sigmoid_()
                    c, d = self.proj(x).chunk(2, dim=-1)
                    d = d.clone()
                    d.mul_(2)
                    keep, drop = mask.chunk(2, dim=-1)
                    drop.fill_(0)
                    word, rest = "a b".split(" ", 1)
                    word += "!"
                    return a * b + c * d
            """,
            note="tensor_split builds single views; a clone; data that does not require grad; str.split",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Pruned(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

                def prune(self, masks):
                    self.fc.weight.mul_(masks[0])  # error
                    for i in range(len(self.blocks)):
                        self.blocks[i].weight[masks[i] == 0] = 0.0  # error

            def fit(x, y, lr=0.1):
                w = torch.zeros(4, 1, requires_grad=True)
                b = torch.zeros(1, requires_grad=True)
                params = [w, b]
                for _ in range(3):
                    ((x @ w + b - y) ** 2).mean().backward()
                    for p in params:
                        p -= lr * p.grad  # error
                        p.grad = None
            """,
            note="a layer's weight (directly and in a ModuleList) and a list of requires_grad tensors",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Pruned(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                @torch.no_grad()
                def prune(self, mask):
                    self.fc.weight.mul_(mask)

                def prune_data(self, mask):
                    self.fc.weight.data.mul_(mask)

                def masked_bias(self):
                    bias = self.fc.bias.clone()
                    bias[:2].zero_()
                    return bias
            """,
            note="no_grad, .data, and a clone of a parameter",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.weight = nn.Parameter(torch.ones(n))

                def forward(self, x):
                    self.weight.clamp_(min=0.0)  # error
                    return x * self.weight
            """,
            note="a module's own parameter modified in forward",
        ),
        Bad(
            """
            import torch
            import torch.nn.functional as F

            x = torch.randn(8).requires_grad_()
            torch.mul(x, 2, out=x)  # error
            y = torch.randn(8, requires_grad=True)
            F.relu(y.view(2, 4), inplace=True)  # error
            """,
            note="out= and inplace=True on leaves (and a view of one)",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.drop = nn.Dropout(0.1)

                def forward(self, q, k, v, bias):
                    attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
                    if bias is not None:
                        attn = attn + bias
                    else:
                        attn.mul_(self.scale)  # error
                    return self.drop(attn) @ v
            """,
            note="the branch where attn is still the softmax output (inputs of a layer carry grad)",
        ),
        Good(
            """
            import torch.nn as nn

            class BasicBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.relu = nn.ReLU(inplace=True)

                def forward(self, x):
                    identity = x
                    out = self.relu(self.bn1(self.conv1(x)))
                    out = self.bn2(self.conv2(out))
                    out += identity
                    out = self.relu(out)
                    return out
            """,
            note="ResNet: BatchNorm's output is not saved, and ReLU(inplace) after it is fine",
        ),
        Good(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def forward(self, x):
                    a = x @ self.w
                    a += self.b
                    p = F.max_pool2d(self.conv(x), 2)
                    p *= 2
                    h = F.linear(x, self.w2)
                    h.add_(1)
                    return a, p, h
            """,
            note="matmul, pooling and linear outputs are not saved",
        ),
        Good(
            """
            import torch

            class Net(torch.nn.Module):
                def forward(self, x):
                    x = torch.sigmoid(x)
                    x = x * 2
                    x += 1
                    return x
            """,
            note="reassignment clears: x is no longer the sigmoid output",
        ),
        Good(
            """
            import torch

            def sgd(params, lr):
                with torch.no_grad():
                    for p in params:
                        p -= lr * p.grad

            def fit(x, y, lr):
                w = torch.zeros(3, requires_grad=True)
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                with torch.no_grad():
                    w -= lr * w.grad
                w.grad.zero_()
            """,
            note="updates inside torch.no_grad()",
        ),
        Good(
            """
            import torch

            @torch.no_grad()
            def sgd_step(model, lr):
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)

            @torch.inference_mode()
            def perturb(model):
                w = torch.nn.Parameter(torch.zeros(3))
                w.add_(1)

            def shrink(model):
                with torch.inference_mode():
                    for p in model.parameters():
                        p.sub_(p.grad)
            """,
            note="no_grad decorator and inference_mode",
        ),
        Good(
            """
            import torch

            def step(model, lr):
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-lr)
                    p.data -= lr * p.grad
                    p.grad.zero_()
                    p.grad += 1
                    p.detach().mul_(0.5)
            """,
            note=".data, .grad and .detach() are not tracked by autograd",
        ),
        Good(
            """
            import torch

            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = torch.exp(x)
                    y.add_(1)
                    ctx.save_for_backward(y)
                    return y

                @staticmethod
                def backward(ctx, grad):
                    (y,) = ctx.saved_tensors
                    grad.mul_(y)
                    return grad
            """,
            note="custom autograd.Function runs with grad recording off",
        ),
        Good(
            """
            def ema_update(ema, model, decay):
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(decay).add_(p, alpha=1 - decay)
                for p in model.parameters():
                    p.mul_(decay)
            """,
            note="EMA-style loop updates without .grad: params may not require grad, callers hold no_grad",
        ),
        Good(
            """
            import torch

            def sgd(model, lr):
                for p in model.parameters():
                    p -= lr * p.grad

            def train(model, lr):
                with torch.no_grad():
                    sgd(model, lr)
            """,
            note="the update function is only called under no_grad in this file",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def predict(model, x):
                probs = F.softmax(model(x), dim=1)
                probs[probs < 0.1] = 0
                return probs

            def transform(img):
                img = img.sigmoid()
                img *= 255
                return img
            """,
            note="no backward here: eval-only code and data transforms",
        ),
        Good(
            """
            import torch
            import torch.nn.functional as F

            def train_step(model, x, y, opt):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                pred = torch.sigmoid(logits)
                pred[pred > 0.5] = 1
                acc = (pred == y).float().mean()
                loss.backward()
                opt.step()
            """,
            note="the modified sigmoid output only feeds a metric, not the loss",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def forward(self, x):
                    with torch.no_grad():
                        g = torch.sigmoid(self.gate(x))
                    g *= 2
                    h = torch.tanh(x).detach()
                    h += 1
                    s = torch.softmax(x.detach(), -1)
                    s += 1
                    r = torch.relu(x).clone()
                    r += 1
                    return x * g + h + s + r
            """,
            note="outputs made under no_grad, detached or cloned",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.temp = nn.Parameter(torch.ones(1), requires_grad=False)
                    self.weight = nn.Parameter(torch.ones(3))

                def forward(self, x):
                    self.temp.mul_(0.99)
                    self.weight.data.clamp_(0, 1)
                    return x * self.weight

                def reset(self):
                    with torch.no_grad():
                        self.weight.fill_(1)
            """,
            note="a Parameter that does not require grad, .data, and no_grad outside forward",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def forward(self, x):
                    x = torch.relu(x)
                    if self.training:
                        return x
                    x = self.bn(x)
                    x += 1
                    return x
            """,
            note="an early return leaves no path with the relu output to modify",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class ToProbabilities(nn.Module):
                def forward(self, img):
                    out = img.exp()
                    out /= out.sum()
                    return out
            """,
            note="a layer-less module (a transform) on its raw input: the input may not require grad",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Recurrent(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.cell = nn.Linear(dim, dim)

                def forward(self, x, steps):
                    h = x
                    for _ in range(steps):
                        h.mul_(0.5)  # error
                        h = torch.tanh(self.cell(h))
                    return h
            """,
            note="a write at the top of a loop reaches the tanh output bound later in the previous iteration",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Recurrent(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.cell = nn.Linear(dim, dim)
                    self.norm = nn.LayerNorm(dim)

                def forward(self, x, steps):
                    h = x.clone()
                    for _ in range(steps):
                        h.mul_(0.5)
                        h = self.norm(torch.tanh(self.cell(h)))
                    return h
            """,
            note="the value bound later in the loop is LayerNorm's output, which backward does not need",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Gate(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = nn.Linear(dim, dim)

                def forward(self, x):
                    return torch.sigmoid(self.proj(x))

            class Stack(nn.Module):
                def __init__(self, dim, depth):
                    super().__init__()
                    self.blocks = nn.ModuleList([Gate(dim) for _ in range(depth)])

                def forward(self, x):
                    def run(i, h):
                        return self.blocks[i](h)

                    for i in range(len(self.blocks)):
                        x = run(i, x)
                        x += 1.0  # error
                    return x
            """,
            note="a nested function indexing an nn.ModuleList returns the block's saved sigmoid output",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            class Norm(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = nn.Linear(dim, dim)
                    self.norm = nn.LayerNorm(dim)

                def forward(self, x):
                    return self.norm(self.proj(x))

            class Stack(nn.Module):
                def __init__(self, dim, depth):
                    super().__init__()
                    self.blocks = nn.ModuleList([Norm(dim) for _ in range(depth)])

                def forward(self, x):
                    def run(i, h):
                        return self.blocks[i](h)

                    for i in range(len(self.blocks)):
                        x = run(i, x)
                        x += 1.0
                    return x
            """,
            note="the same closure over blocks ending in LayerNorm, whose output backward does not need",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.scopes: list[Scope] = [Scope(function=None, owner=None)]
        self.grad_modes: list[Optional[bool]] = []  # one per enclosing with/def, None if neutral
        self.file_grad_off = False
        self.called_without_grad: set[str] = set()
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self.autograd = Autograd(self.model)
        #: In-place writes this rule's own saved-output flow knows nothing about: the semantic
        #: model decides in finish() (leaves, multi-output views, a submodule's output, a
        #: helper's argument).
        self.asked: list[Asked] = []

    # -- grad mode ----------------------------------------------------------------------------
    def grad_enabled(self) -> bool:
        if self.file_grad_off or any(scope.grad_switched_off for scope in self.scopes):
            return False
        for mode in reversed(self.grad_modes):
            if mode is not None:
                return mode
        return True

    def visit_With(self, node: cst.With) -> None:
        self.grad_modes.append(with_grad_effect(node))

    def leave_With(self, node: cst.With) -> None:
        self.grad_modes.pop()

    def visit_Expr(self, node: cst.Expr) -> None:
        switch = statement_grad_switch(node)
        if switch is None:
            return
        if len(self.scopes) == 1:
            self.file_grad_off = self.file_grad_off or switch is False
        else:
            self.scopes[-1].grad_switched_off = switch is False

    # -- scopes -------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(Scope(function=None, owner=None))  # class bodies bind class attributes

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self.direct_owner()
        self.grad_modes.append(function_grad_effect(node, owner))
        enclosing = self.scopes[-1] if self.scopes[-1].function is not None else None
        self.scopes.append(Scope(function=node, owner=owner, enclosing=enclosing))

    def direct_owner(self) -> Optional[cst.ClassDef]:
        """The class whose body holds the function being entered (None for nested functions)."""
        for ancestor in reversed(self.ctx.ancestors):
            if type(ancestor) is cst.ClassDef:
                return ancestor
            if type(ancestor) in (cst.FunctionDef, cst.Lambda):
                return None
        return None

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self.grad_modes.pop()

    # -- in-place operations ------------------------------------------------------------------
    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.check_index_assignment(node, target.target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.check_index_assignment(node, node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        symbol = AUGMENTED_OPERATORS.get(type(node.operator).__name__)
        if symbol is None:
            return
        self.inplace(node, node.target, f"`{symbol}`", self.rewrite_hint(node.target, symbol), [node.value], index_target=True)

    def check_index_assignment(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        if type(target) is not cst.Subscript:
            return
        base = self.source(target.value)
        op = f"index assignment `{base}[...] = ...`"
        fix = f"build a new tensor instead (`torch.where(...)`, or `{base} = {base}.clone()` first)"
        self.inplace(node, target, op, fix, [], index_target=True)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.grad_enabled():
            self.note_called_without_grad(node)
        func = node.func
        qualname = self.ctx.qualname(func)
        if qualname is None and type(func) is cst.Attribute:  # a method, not `torch.relu_`
            method = func.attr.value
            if method.endswith("_") and not method.startswith("_") and method not in NOT_INPLACE_METHODS:
                self.check_inplace_method(node, func, method)
                return
        if qualname is not None and qualname.startswith("torch."):
            self.check_torch_call(node, qualname)
            if qualname in SEQUENTIAL_CLASSES:
                self.check_sequential(node)
        self.check_inplace_module_call(node)

    def check_sequential(self, node: cst.Call) -> None:
        """`nn.Sequential(..., nn.ReLU(), nn.Dropout(p, inplace=True), ...)`: the in-place layer
        overwrites the output the layer before it saved for backward."""
        if not self.grad_enabled():
            return
        layers = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        for before, after in zip(layers, layers[1:]):
            if not (type(before) is cst.Call and type(after) is cst.Call):
                continue
            first, second = self.ctx.qualname(before.func), self.ctx.qualname(after.func)
            if first is None or second is None or not built_inplace(after, second):
                continue
            if not layer_saves_output(first, built_inplace(before, first)):
                continue
            short = second.replace("torch.nn.", "nn.")
            self.report(
                after,
                f"`{short}(inplace=True)` right after `{first.replace('torch.nn.', 'nn.')}` in an `nn.Sequential` "
                f"overwrites the output that layer saved for backward{_dropout_note(second)}; backward will fail "
                f"with 'modified by an inplace operation'; build it without `inplace=True`",
            )

    def check_inplace_method(self, node: cst.Call, func: cst.Attribute, method: str) -> None:
        fix = f"use the out-of-place `{method[:-1]}(...)` and assign the result"
        self.inplace(node, func.value, f"`{method}`", fix, [arg.value for arg in node.args], index_target=False)

    def check_torch_call(self, node: cst.Call, qualname: str) -> None:
        out = keyword_argument(node, "out")
        if out is not None:
            self.inplace(node, out.value, "`out=`", "drop `out=` and assign the result", [], index_target=False)
        first = _first_argument(node)
        inplace_functional = qualname.startswith("torch.nn.functional.") and is_true(keyword_argument(node, "inplace"))
        inplace_function = qualname.endswith("_") and qualname.rpartition(".")[0] in ("torch", "torch.nn.functional")
        if first is None or not (inplace_functional or inplace_function):
            return
        short = self.source(node.func)
        label = f"`{short}(..., inplace=True)`{_dropout_note(qualname)}" if inplace_functional else f"`{short}`"
        fix = "drop `inplace=True`" if inplace_functional else f"use `{short[:-1]}` and assign the result"
        self.inplace(node, first, label, fix, [], index_target=False)

    def check_inplace_module_call(self, node: cst.Call) -> None:
        """`self.act(x)` where the model says `self.act` is built once, with `inplace=True`
        (decided in finish()), or an inline `nn.ReLU(inplace=True)(x)`."""
        func = node.func
        first = _first_argument(node)
        if first is None:
            return
        fix = "build the module without `inplace=True`"
        if type(func) is cst.Call:
            qualname = self.ctx.qualname(func.func)
            if qualname is not None and qualname.startswith("torch.nn.") and built_inplace(func, qualname):
                label = f"`{self.source(func)}` (`{qualname.replace('torch.nn.', 'nn.')}(inplace=True)`{_dropout_note(qualname)})"
                self.inplace(node, first, label, fix, [], index_target=False)
            return
        owner = self.scopes[-1].owner
        if owner is None or not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
            return
        if is_autograd_function_class(owner):
            return
        # The label (`self.act`) is written in finish(), for the few layers built in place:
        # printing the source of every `self.<attr>(x)` of a model cost more than judging them.
        self.ask(node, first, "", fix, [], index_target=False, layer=(owner.name.value, func.attr.value))

    # -- deciding -----------------------------------------------------------------------------
    def inplace(
        self, node: cst.CSTNode, target: cst.BaseExpression, op: str, fix: str, operands: list[cst.BaseExpression], *, index_target: bool
    ) -> None:
        """An in-place write on `target`, judged in finish() by what the semantic model says
        the written tensor may be."""
        self.ask(node, target, op, fix, operands, index_target=index_target)

    def note_called_without_grad(self, node: cst.Call) -> None:
        """Functions called (or passed along, as to `model.apply(fn)`) under no_grad."""
        for expr in (node.func, *(arg.value for arg in node.args)):
            name = dotted_name(expr)
            if name is not None:
                self.called_without_grad.add(name.rpartition(".")[2])

    def ask(
        self,
        node: cst.CSTNode,
        target: cst.BaseExpression,
        op: str,
        fix: str,
        operands: list[cst.BaseExpression],
        *,
        index_target: bool,
        layer: Optional[tuple[str, str]] = None,
    ) -> None:
        """An in-place write whose target only the semantic model can tell: a leaf that requires
        grad (a Parameter, a layer's `weight`, `requires_grad=True`), one of several views
        `chunk`/`split` returned, or the output of a submodule or helper that autograd saved.
        Decided in finish(), once the model has read the whole file."""
        if not self.grad_enabled():
            return
        root = view_root(target, index_target=index_target)
        if root is None:
            return
        scope = self.scopes[-1]
        functions = tuple(s.function.name.value for s in self.scopes if s.function is not None)
        name = root.value if type(root) is cst.Name else None
        training = self.model.in_training_path()
        dotted = dotted_name(root) if type(root) is cst.Attribute else None
        self.asked.append(Asked(node, self.model.value(root), op, fix, tuple(operands), functions, scope, name, training, dotted, layer))

    def finish(self) -> None:
        reported: set[tuple] = set()  # saved outputs already reported: later writes repeat the fault
        for asked in self.asked:
            if any(function in self.called_without_grad for function in asked.functions):
                continue  # the function is called under no_grad in this file
            if asked.layer is not None and not self.inplace_layer(asked):
                continue
            values = self.autograd.tensors(asked.value)
            if not values:
                message = self.leaf_message(asked, values)
                if message is not None:
                    self.report(asked.node, message)
                continue
            message = self.leaf_message(asked, values) or self.view_message(asked, values)
            if message is not None:
                self.report(asked.node, message)
                continue
            saved = self.autograd.saved_for_backward(values, asked.scope, asked.name, asked.training)
            if saved is None:
                continue
            key = (id(saved.node), saved.path, saved.line, saved.text)
            if key in reported:
                continue
            reported.add(key)
            self.report_saved(asked, saved)

    def inplace_layer(self, asked: Asked) -> bool:
        """`self.<attr>(x)` writes x in place: the model says `self.<attr>` is built once, with
        `inplace=True`. Names the layer in the message."""
        layer = self.model.sole_layer(*asked.layer)
        if layer is None or not layer.inplace:
            return False
        built = layer.origin.text.strip("`")
        built = built[: -len("(...)")] if built.endswith("(...)") else built
        built = built.replace("torch.nn.", "nn.")
        asked.op = f"`{self.source(asked.node.func)}` (`{built}(inplace=True)`{_dropout_note(built)})"
        return True

    def leaf_message(self, asked: Asked, values: set[Tensor]) -> Optional[str]:
        """A leaf that requires grad: the model says so, or the update reads its `.grad`
        (`p -= lr * p.grad`: only a leaf that requires grad has one)."""
        origin = self.autograd.leaf_requiring_grad(values)
        if origin is not None and asked.dotted is not None and self.autograd.requires_grad_turned_off(asked.scope, asked.dotted):
            return None
        if origin is not None:
            what = f"{origin.text} at line {self.autograd.origin_line(origin)}"
        elif asked.name is not None and any(reads_grad_of(expr, asked.name) for expr in asked.operands):
            what = f"`{asked.name}`, whose `.grad` it reads"
        else:
            return None
        return (
            f"in-place {asked.op} on a leaf that requires grad ({what}) outside torch.no_grad(): raises 'a leaf "
            f"Variable that requires grad is being used in an in-place operation'; wrap the update in "
            f"`with torch.no_grad():`"
        )

    def view_message(self, asked: Asked, values: set[Tensor]) -> Optional[str]:
        origin = self.autograd.several_views_of(values)
        if origin is None:
            return None
        return (
            f"in-place {asked.op} on one of the several views {origin.text} (line {self.autograd.origin_line(origin)}) "
            f"returns, of a tensor that requires grad: raises 'is a view and is being modified inplace ... a "
            f"function that returns multiple views'; {asked.fix}, or `.clone()` the piece first"
        )

    def report_saved(self, asked: Asked, origin: Origin) -> None:
        via = f", returned by `{origin.via}.forward`" if origin.via else ""
        fix_node = _out_of_place(asked.node)
        self.report(
            asked.node,
            f"in-place {asked.op} on the output of {origin.text} (line {self.autograd.origin_line(origin)}{via}), which "
            f"autograd saves for backward; backward will fail with 'modified by an inplace operation'; {asked.fix}",
            fix=None if fix_node is None else NodeFix("Rewrite as an out-of-place assignment", UNSAFE, ((asked.node, fix_node),)),
        )

    # -- small helpers ------------------------------------------------------------------------
    def source(self, node: cst.CSTNode) -> str:
        text = self.ctx.module.code_for_node(node).strip()
        return text if len(text) <= 40 else text[:37] + "..."

    def rewrite_hint(self, target: cst.BaseExpression, symbol: str) -> str:
        if type(target) is cst.Subscript:
            base = self.source(target.value)
            return f"build a new tensor instead (e.g. `{base} = {base}.clone()` first)"
        text = self.source(target)
        return f"write `{text} = {text} {symbol[:-1]} ...`"


# --- module-level helpers ---------------------------------------------------------------------
def _dropout_note(qualname: str) -> str:
    """Dropout writes in place only when it drops something (p > 0, training mode)."""
    return ", which writes whenever p > 0 in training" if "dropout" in qualname.lower() else ""


def _first_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    found = keyword_argument(call, "input")
    return found.value if found is not None else None


_ATOMS = frozenset({"Name", "Attribute", "Call", "Subscript", "Integer", "Float", "Imaginary", "SimpleString"})


def _out_of_place(node: cst.CSTNode) -> Optional[cst.Assign]:
    """`h += y` -> `h = h + y` for a plain name (the right side parenthesised unless atomic)."""
    if type(node) is not cst.AugAssign or type(node.target) is not cst.Name:
        return None
    operator_name = type(node.operator).__name__
    if not operator_name.endswith("Assign"):
        return None
    operator_class = getattr(cst, operator_name[: -len("Assign")], None)
    if operator_class is None:
        return None
    right = node.value
    if type(right).__name__ not in _ATOMS and not right.lpar:
        right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Assign(
        targets=[cst.AssignTarget(target=node.target)],
        value=cst.BinaryOperation(left=node.target, operator=operator_class(), right=right),
    )
