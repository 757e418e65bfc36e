"""The rules that judge what reaches a loss's INPUT (TL101, TL102, TL106) or a logarithm
(TL107). They ask the engine's semantic model one question: may this argument be a tensor of
the kind the call must not receive (softmax probabilities, sigmoid output)?

Within a file the model answers it directly. When the answer depends on another file (an
imported model, a function other files call with a model or a loss), the rule records the
call as a fact and ``project_check`` asks the project model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import libcst as cst

from torchlint.fix import NodeFix
from torchlint.rule import Rule
from torchlint.semantic import torch_api as api
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.program_facts import is_test_path
from torchlint.semantic.project import Encoder, ProjectModel
from torchlint.semantic.values import PROB, External, LossModule, Origin, Tensor
from torchlint.static.context import make_finding

if TYPE_CHECKING:
    from torchlint.findings import Finding
    from torchlint.static.context import ProjectContext


#: The end of each loss-input rule's documentation: how the engine's model follows a value.
HOW_VALUES_ARE_FOLLOWED = """
## How values are followed
The engine's semantic model follows the value into the call: through local variables
(an assignment in one arm of an `if` counts after it: branch arms join), function
parameters and return values (what any call in the project passes), `self.<attr>` set in
`__init__` or a setter, `nn.Sequential`/`nn.ModuleList` layers, a model's `forward` (or
an overridden `__call__`) including helper methods, tuple elements (`_, probs = net(x)`),
`from models import *`, and models, modules and training functions in other files of the
project. Code under `if not self.training:` (or after `if self.training: return ...`) is
the evaluation path and is left out.

## Known limitations
Values are not followed through containers built at run time (a dict of losses filled in
a loop), `getattr`, registries that build a model from a string, or a parameter's value
when a call passes `*args`/`**kwargs`. The value of a condition is not evaluated: a model
whose layer is chosen by a flag counts as possibly that layer.
"""


@dataclass
class LossCall:
    node: cst.Call
    callee: Any  # the loss module called (symbolic); None for the functional form
    label: str  # how the message names the call; "" for the rule's own wording of the loss
    value: Any  # the INPUT argument's symbolic value


class LossInputRule(Rule):
    """Base of the rules that judge what a file's semantic model feeds to a call: subclasses
    say which loss kind they guard, which tensor kind it must not get, and the wording."""

    analyses = (SemanticModel,)
    #: The loss kind judged (a value of torch_api.LOSS_FUNCTIONS / LOSS_MODULES).
    loss_kind: ClassVar[str] = ""
    #: The tensor kind that is wrong as that loss's input.
    tensor_kind: ClassVar[str] = PROB
    loss_label_functional: ClassVar[str] = ""
    loss_label_module: ClassVar[str] = ""
    #: What the finding calls the tensor kind ("softmax output").
    kind_label: ClassVar[str] = "softmax output"
    #: The harm is to training only (a saturated gradient, not a wrong value): a loss computed
    #: under `no_grad()` or in a test module is left alone.
    harms_training_only: ClassVar[bool] = False

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self.calls: list[LossCall] = []

    @classmethod
    def message(cls, loss_label: str, where: str) -> str:
        raise NotImplementedError

    @classmethod
    def docs(cls) -> str:
        return f"{super().docs()}\n\n{HOW_VALUES_ARE_FOLLOWED.strip()}"

    def loss_calls(self) -> list[LossCall]:
        """Calls of this rule's loss: its functional form, and every call with an input and a
        target whose callee may turn out to be its loss module."""
        calls = list(self.calls)
        for node, callee, value in self.model.two_argument_calls():
            if callee is None and api.LOSS_FUNCTIONS.get(self.model.qualname(node.func)) != self.loss_kind:
                continue
            calls.append(LossCall(node, callee, "", value))
        return calls

    # -- judging ------------------------------------------------------------------------------
    def finish(self) -> None:
        if self.harms_training_only and is_test_path(self.ctx.path):
            return  # tests compare a few values; nothing is trained on them
        for call in self.loss_calls():
            if self.harms_training_only and self.model.called_without_grad(call.node):
                continue
            values = self.model.resolve(call.value)
            wrong = [v for v in values if type(v) is Tensor and v.kind == self.tensor_kind]
            external = [v for v in values if type(v) is External]
            if not wrong and not external:
                continue
            label = call.label
            callees = None
            if call.callee is not None:
                callees = self.model.resolve(call.callee)
                if any(type(c) is LossModule and c.kind == self.loss_kind for c in callees):
                    label = label or self.loss_label_module
                elif any(type(c) is External and c.ref[0] == "param" for c in callees):
                    # A loss handed in by callers in other files (`def train(model, criterion)`):
                    # any other call of an outside object is not worth a project-phase look.
                    self._defer(call, callees, values)
                    continue
                else:
                    continue
            label = label or self.loss_label_functional
            if wrong:
                origin = min((v.origin for v in wrong), key=self._origin_key)
                self.report(call.node, self.message(label, self._where(origin)), fix=self._inline_fix(call.node))
            else:
                self._defer(call, callees, values)

    def _defer(self, call: LossCall, callees: Optional[frozenset], values: frozenset) -> None:
        """The answer depends on other files: leave it to the project phase. The call's
        position and JSON values are the same for TL101, TL102 and TL106, and locating a call
        costs a code generation of its statement: worked out once per call, on the model."""
        shared = self.model.memo.setdefault("deferred loss calls", {})
        known = shared.get(id(call.node))
        if known is None:
            encoder = Encoder(self.model, self.ctx.path)
            known = shared[id(call.node)] = {
                "span": list(self.ctx.position(call.node)),
                "callee": encoder.values(callees) if callees is not None else None,
                "input": encoder.values(values),
            }
        self.add_fact("loss_input", {**known, "label": call.label})

    def _origin_key(self, origin: Origin) -> tuple:
        return (origin.line or (self.ctx.position(origin.node)[0] if origin.node is not None else 0), origin.text)

    def _where(self, origin: Origin) -> str:
        line = self.ctx.position(origin.node)[0] if origin.node is not None else origin.line
        place = f"line {line}" if not origin.path or origin.path == self.ctx.path else f"{origin.path}:{line}"
        if origin.via:
            return f"`{origin.via}.forward` returns {self.kind_label}: {origin.text} at {place}"
        return f"from {origin.text} at {place}"

    # -- fixes --------------------------------------------------------------------------------
    def _inline_fix(self, loss: cst.Call) -> Optional[NodeFix]:
        """When the loss input is written as a softmax call right there, offer `fix_softmax`."""
        arg = next((a for a in loss.args if a.keyword is not None and a.keyword.value == "input"), None)
        if arg is None:
            arg = next((a for a in loss.args if a.keyword is None and not a.star), None)
        if arg is None or type(arg.value) is not cst.Call:
            return None
        softmax = arg.value
        qualname = self.model.qualname(softmax.func)
        if qualname is not None and api.TENSOR_FUNCTIONS.get(qualname) == PROB and not qualname.startswith("torch.Tensor"):
            inner = next((a.value for a in softmax.args if a.keyword is None and not a.star), None)
            is_method = False
        elif self.model.is_tensor_method(softmax, "softmax"):
            inner, is_method = softmax.func.value, True
        else:
            return None
        if inner is None or any(end in self.ctx.module.code_for_node(softmax) for end in "\r\n"):
            return None  # multi-line rewrites are left to the author
        return self.fix_softmax(softmax, inner, is_method)

    def fix_softmax(self, softmax: cst.Call, inner: cst.BaseExpression, is_method: bool) -> Optional[NodeFix]:
        """The rule's rewrite of a softmax call that feeds the loss directly (None: no fix)."""
        return None

    # -- cross-file -----------------------------------------------------------------------------
    @classmethod
    def project_check(cls, project: ProjectContext) -> list[Finding]:
        deferred = [(path, fact) for path, facts in project.facts.items() for fact in facts.get(cls.code, {}).get("loss_input", [])]
        if not deferred:
            return []
        model = ProjectModel(project)
        findings = []
        for path, fact in deferred:
            label = fact["label"]
            if fact["callee"] is not None:
                callees = model.resolve(fact["callee"])
                if not any(c.get("loss") == cls.loss_kind for c in callees):
                    continue
                label = label or cls.loss_label_module
            label = label or cls.loss_label_functional
            wrong = [v for v in model.resolve(fact["input"]) if v.get("t") == cls.tensor_kind]
            if not wrong:
                continue
            origin = min(wrong, key=lambda v: (v["path"], v["line"], v["text"]))
            place = f"{origin['path']}:{origin['line']}" if origin["path"] != path else f"line {origin['line']}"
            if origin.get("via"):
                where = f"`{origin['via']}.forward` returns {cls.kind_label}: {origin['text']} at {place}"
            else:
                where = f"from {origin['text']} at {place}"
            findings.append(make_finding(cls, path, fact["span"], cls.message(label, where)))
        return findings
