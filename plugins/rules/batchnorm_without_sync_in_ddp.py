from __future__ import annotations

import re
from typing import Any

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.values import ClassRef, Instance, NNModule, Sequence
from torchlint.static.walker import iter_nodes

from ._calls import argument
from ._distributed import DDP, module_file
from torchlint.semantic.program_facts import is_test_path

_BATCHNORM = re.compile(r"^torch\.nn\.(?:modules\.batchnorm\.)?(?:Lazy)?BatchNorm[123]d$")
#: torchvision models built with BatchNorm layers.
_TORCHVISION_BN = re.compile(
    r"^torchvision\.models\.(?:[a-z_]+\.)?(?:resnet\d+|resnext\w+|wide_resnet\w+|densenet\d+|mobilenet_v[23]\w*|efficientnet\w*|"
    r"regnet\w+|inception_v3|googlenet|shufflenet\w+|mnasnet\w+|vgg\d+_bn)$"
)
#: Anything that makes BatchNorm layers synchronise: torch's, apex's, a project's own.
_SYNCED = ("SyncBatchNorm", "convert_sync_batchnorm", "convert_syncbn_model", "sync_bn", "SyncBN")


class BatchnormWithoutSyncInDdp(Rule):
    """
    ## What it does
    Flags `DistributedDataParallel(model, ...)` when the model has BatchNorm layers and
    neither this file's code nor a project file it imports converts them
    (`nn.SyncBatchNorm.convert_sync_batchnorm(model)`, a `SyncBatchNorm` layer, apex's
    `convert_syncbn_model`, a `sync_bn` option). The model has
    BatchNorm layers when:

    * the wrapped model is an instance of a class of this file whose layers (followed through
      `self.<attr>`, `nn.Sequential` and nested modules of this file) include
      `nn.BatchNorm1d/2d/3d`;
    * or the file builds BatchNorm layers, or a torchvision model that has them (`resnet50()`),
      itself;
    * or the model's class is imported from a file of the project that mentions `BatchNorm`.

    ## Why is this bad?
    In DDP each rank normalises with the statistics of its own slice of the batch. With a
    small per-GPU batch (detection, segmentation, large inputs) those statistics are noisy,
    and the model trains worse than the same global batch on one device would; the running
    statistics that are saved are rank 0's alone (DDP broadcasts rank 0's buffers each step),
    or differ on every rank with `broadcast_buffers=False`. `SyncBatchNorm` computes the
    statistics over the whole global batch.

    ## Example
    ```python
    model = ResNetWithBN().cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    ```

    ## Use instead
    ```python
    model = nn.SyncBatchNorm.convert_sync_batchnorm(ResNetWithBN()).cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    ```

    ## Known limitations
    Off by default: per-GPU BatchNorm is often deliberate (large per-GPU batches, where
    SyncBatchNorm only costs a collective per layer; frozen or eval-mode BatchNorm in a
    fine-tuned backbone), and the rule cannot see the batch size. Read on 23 public DDP
    code bases, both of its reports were deliberate (a linear probe with a large per-GPU
    batch, an ImageNet fine-tune with the standard per-GPU BatchNorm). Models built by a
    factory from a name (`models.__dict__[arch]()`) are not followed.
    """

    code = "TL805"
    name = "batchnorm-without-sync-in-ddp"
    summary = "a model with BatchNorm layers wrapped in DDP without `SyncBatchNorm`: statistics of each GPU's slice only"
    default_enabled = False
    triggers = ("DistributedDataParallel",)
    imports = ("torch",)
    analyses = (SemanticModel,)
    project_tokens = ("SyncBatchNorm", "convert_sync_batchnorm", "convert_syncbn_model", "sync_bn", "SyncBN", "BatchNorm")
    cases = [
        Bad(
            """
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
                    self.head = nn.Linear(16, 10)

            def main(local_rank):
                model = Net().cuda(local_rank)
                model = DDP(model, device_ids=[local_rank])  # error
            """
        ),
        Bad(
            files={
                "train.py": """
                    import torch
                    from models import Segmenter

                    def main(rank):
                        model = Segmenter().to(rank)
                        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])  # error
                    """,
                "models.py": """
                    import torch.nn as nn

                    class Segmenter(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.bn = nn.BatchNorm2d(64)
                    """,
            },
            note="the model's class is in another file of the project",
        ),
        Good(
            """
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())

            def main(local_rank):
                model = nn.SyncBatchNorm.convert_sync_batchnorm(Net()).cuda(local_rank)
                model = DDP(model, device_ids=[local_rank])
            """,
            note="converted",
        ),
        Good(
            """
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.norm = nn.LayerNorm(16)
                    self.head = nn.Linear(16, 10)

            def main(local_rank):
                model = DDP(Net().cuda(local_rank), device_ids=[local_rank])
            """,
            note="no BatchNorm",
        ),
        Good(
            files={
                "train.py": """
                    import torch
                    from models import build_model

                    def main(rank, args):
                        model = build_model(args).to(rank)
                        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
                    """,
                "models.py": """
                    import torch.nn as nn

                    def build_model(args):
                        model = Backbone(norm=nn.BatchNorm2d)
                        if args.sync_bn:
                            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
                        return model
                    """,
            },
            note="the project converts them elsewhere",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self._wraps: list[tuple[cst.Call, Any]] = []
        #: the first BatchNorm (or BatchNorm-holding torchvision model) this file builds
        self._built: cst.Call | None = None

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.ctx.qualname(node.func)
        if qualname is None:
            return
        if qualname in DDP:
            wrapped = argument(node, "module", 0)
            if wrapped is not None and not wrapped.star:
                self._wraps.append((node, self.model.value(wrapped.value)))
        elif self._built is None and (_BATCHNORM.match(qualname) or _TORCHVISION_BN.match(qualname)):
            self._built = node

    def finish(self) -> None:
        if not self._wraps or is_test_path(self.ctx.path) or self._synchronises():
            return
        for node, wrapped in self._wraps:
            values = self.model.resolve(wrapped)
            layer = next((found for value in values if (found := self._batchnorm_in(value, set())) is not None), None)
            if layer is None:
                layer = self._built
            module = None
            if layer is not None:
                line = self.ctx.position(layer)[0]
                where = f"`{self.ctx.module.code_for_node(layer.func)}` at line {line}"
            else:
                imported = next((v.ref for v in values if type(v) is Instance and not v.ref.local), None)
                module = _module_of(imported) if imported is not None else None
                if module is None:
                    continue
                where = f"`{(imported.qualname or imported.target).rpartition('.')[2]}` from `{module[0]}`"
            self._report(node, where)
            line, column = self.ctx.position(node)[:2]
            fact = {"line": line, "column": column, "imports": self._imported_modules()}
            if module is not None:
                fact["module"] = list(module)
            self.add_fact("wrap", fact)

    def _synchronises(self) -> bool:
        """The code of this file (not its comments or docstrings) names a synchronised BatchNorm."""
        if not any(word in self.ctx.text for word in _SYNCED):
            return False
        for node in iter_nodes(self.ctx.module):
            kind = type(node)
            if kind is cst.Name and any(word in node.value for word in _SYNCED):
                return True
            if kind is cst.Attribute and any(word in node.attr.value for word in _SYNCED):
                return True
        return False

    def _imported_modules(self) -> list[list]:
        """[module, level] of everything this file imports (and the modules of imported names)."""
        aliases = self.ctx.aliases
        found = set()
        for qualname in aliases.aliases.values():
            found.update({(qualname, 0), (qualname.rpartition(".")[0], 0)})
        for level, target in aliases.relative_imports.values():
            found.update({(target, level), (target.rpartition(".")[0], level)})
        return sorted([module, level] for module, level in found if module or level)

    def _report(self, node: cst.Call, where: str) -> None:
        self.report(
            node,
            f"the model wrapped in DDP here has BatchNorm layers ({where}) and nothing converts them to "
            "SyncBatchNorm: each rank normalises with the statistics of its own slice of the batch; use "
            "`nn.SyncBatchNorm.convert_sync_batchnorm(model)` before wrapping if the per-GPU batch is small",
        )

    def _batchnorm_in(self, value: Any, seen: set) -> cst.Call | None:
        """The construction call of a BatchNorm layer inside a module value of this file."""
        kind = type(value)
        if kind is NNModule:
            return value.origin.node if _BATCHNORM.match(value.qualname) else None
        if kind is Sequence:
            for item in value.items:
                for resolved in self.model.resolve(item):
                    found = self._batchnorm_in(resolved, seen)
                    if found is not None:
                        return found
            return None
        if kind is Instance and value.ref.local and value.ref.name not in seen:
            seen.add(value.ref.name)
            for info in self.model._class_chain(value.ref.name):
                for assigned in info.attrs.values():
                    for item in assigned:
                        for resolved in self.model.resolve(item):
                            found = self._batchnorm_in(resolved, seen)
                            if found is not None:
                                return found
        return None

    @classmethod
    def keep_in_project(cls, project, finding) -> bool:
        facts = project.facts.get(finding.path, {}).get(cls.code, {}).get("wrap", [])
        at = (finding.location.line, finding.location.column)
        fact = next((f for f in facts if (f["line"], f["column"]) == at), None)
        if fact is None:
            return True
        # A file this one imports converts the model, or builds synchronised BatchNorm.
        synced = frozenset().union(*(project.files_mentioning(word, near=finding.path) for word in _SYNCED)) - {finding.path}
        if any(module_file(finding.path, module, level, synced) for module, level in fact["imports"]):
            return False
        if "module" not in fact:
            return True
        module, level = fact["module"]
        # The model's class comes from a checked file that builds BatchNorm layers.
        return module_file(finding.path, module, level, project.files_mentioning("BatchNorm", near=finding.path)) is not None


def _module_of(ref: ClassRef) -> tuple[str, int] | None:
    """(module, level) an imported class comes from."""
    if ref.level:
        return ref.target.rpartition(".")[0], ref.level
    if ref.qualname and "." in ref.qualname:
        return ref.qualname.rpartition(".")[0], 0
    return None

