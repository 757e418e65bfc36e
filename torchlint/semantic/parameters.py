"""Which attributes of a class hold parameters: `self.w = nn.Parameter(...)`, a registered
buffer, or a submodule that owns weights (`self.fc = nn.Linear(...)`, `nn.Sequential(*layers)`
of such layers, a class of this file or one imported from a layer library).

A tensor that meets one of these meets the module's device: the parameters move with
`model.cuda()`, so a CPU tensor combined with them fails on a GPU. Asked by TL201 through
`torchlint.semantic.placement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from torchlint.semantic.devices import iter_params, nested_scopes
from torchlint.static.walker import iter_nodes

if TYPE_CHECKING:
    from torchlint.static.context import FileContext

#: torch.nn layers that own parameters: a CPU tensor passed to one meets its weights.
PARAM_LAYERS = frozenset(
    f"torch.nn.{name}"
    for name in (
        "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
        "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding",
        "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
        "BatchNorm3d", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention",
        "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
        "TransformerDecoderLayer", "PReLU",
    )
)
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


class SelfAttributes:
    """Reads a class's methods for `self.X = nn.Parameter(...)`, `self.register_buffer("X", ...)`
    and `self.X = <layer with parameters>(...)`."""

    def __init__(self, ctx: FileContext, cls: cst.ClassDef) -> None:
        self.ctx = ctx
        self.tensors: set[str] = set()
        self.modules: set[str] = set()
        self.methods: set[str] = set()
        self.local_classes = {
            statement.name.value
            for statement in ctx.module.body
            if type(statement) is cst.ClassDef and statement.bases
        }
        for statement in cls.body.body:
            if type(statement) is cst.FunctionDef:
                self.methods.add(statement.name.value)
                self._read_method(statement)

    def _read_method(self, method: cst.FunctionDef) -> None:
        params = list(iter_params(method))
        if not params:
            return
        self_name = params[0].name.value
        self._method = method
        for node in iter_nodes(method.body, skip=nested_scopes()):
            if type(node) is cst.Assign and type(node.value) is cst.Call:
                for target in node.targets:
                    attr = self_attribute(target.target, self_name)
                    if attr is not None:
                        self._classify(attr, node.value)
            elif type(node) is cst.Call and type(node.func) is cst.Attribute:
                if self_attribute(node.func, self_name) in ("register_buffer", "register_parameter") and node.args:
                    first = node.args[0].value
                    if type(first) is cst.SimpleString:
                        self.tensors.add(first.evaluated_value)

    def _classify(self, attr: str, value: cst.Call) -> None:
        qualname = self.ctx.qualname(value.func)
        if qualname in PARAMETER_CLASSES:
            self.tensors.add(attr)
        elif self._holds_parameters(value):
            self.modules.add(attr)

    def _holds_parameters(self, call: cst.Call) -> bool:
        qualname = self.ctx.qualname(call.func)
        if qualname in PARAM_LAYERS:
            return True
        if qualname is not None and qualname.endswith(".from_pretrained") and qualname.rpartition(".")[0] in PARAM_LAYERS:
            return True  # `nn.Embedding.from_pretrained(vectors)`: a layer whose weights are given
        if qualname == "torch.nn.Sequential":
            return any(self._argument_holds_parameters(arg) for arg in call.args)
        if type(call.func) is cst.Name:
            name = call.func.value
            if name in self.local_classes or name in self.ctx.aliases.relative_imports:
                return True
            return imported_layer_class(qualname)
        return False

    def _argument_holds_parameters(self, arg: cst.Arg) -> bool:
        if type(arg.value) is cst.Call:
            return self._holds_parameters(arg.value)
        if arg.star == "*" and type(arg.value) is cst.Name:
            return self._list_holds_parameters(arg.value.value)
        return False

    def _list_holds_parameters(self, name: str) -> bool:
        """`nn.Sequential(*layers)`: a layer with parameters put in `layers` in the same method
        (`layers = [nn.Linear(...), ...]`, a comprehension of them, `layers.append(...)`,
        `layers += [...]`, `layers.extend([...])`)."""
        for node in iter_nodes(self._method.body, skip=nested_scopes()):
            added: list[cst.BaseExpression] = []
            if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
                added.append(node.value)
            elif type(node) is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name:
                added.append(node.value)
            elif (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and type(node.func.value) is cst.Name
                and node.func.value.value == name
                and node.func.attr.value in ("append", "extend", "insert")
            ):
                added.extend(arg.value for arg in node.args)
            for value in added:
                elements = [value.elt] if type(value) in (cst.ListComp, cst.GeneratorExp) else (
                    [e.value for e in value.elements] if type(value) in (cst.List, cst.Tuple) else [value]
                )
                if any(type(e) is cst.Call and self._holds_parameters(e) for e in elements):
                    return True
        return False


#: Imported classes named so are data helpers, not layers: what they return stays on the CPU.
_NOT_LAYER_WORDS = ("Tokenizer", "Processor", "Transform", "Compose", "Dataset", "Loader", "Sampler", "Config", "Logger", "Writer")


def imported_layer_class(qualname: Optional[str]) -> bool:
    """A class imported from a package outside torch and the checked tree (`from mylib.layers
    import FancyBlock`), assigned to an attribute of a module: a layer whose parameters move
    with the module."""
    if qualname is None or "." not in qualname or qualname.split(".")[0] in ("torch", "builtins", "typing", "collections", "numpy"):
        return False
    last = qualname.rpartition(".")[2]
    return last[:1].isupper() and not last.isupper() and not any(word in last for word in _NOT_LAYER_WORDS)


def self_attribute(node: cst.BaseExpression, self_name: str) -> Optional[str]:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == self_name:
        return node.attr.value
    return None
