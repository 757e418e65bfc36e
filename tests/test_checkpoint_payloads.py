"""TL301's reading of `torch.save` payloads: which ones visibly hold no tensors, so that a
load of the file they write cannot meet an accelerator's storage (see torchlint/semantic/checkpoints)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.semantic.checkpoints import holds_no_tensors


def judge(source: str) -> bool:
    """holds_no_tensors() of the first argument of the last `torch.save(...)` in `source`,
    read in the function that holds it (or at module level)."""
    module = cst.parse_module(textwrap.dedent(source).lstrip("\n"))
    found: list[tuple[cst.Call, cst.FunctionDef | None]] = []

    class Saves(cst.CSTVisitor):
        def __init__(self) -> None:
            self.functions: list[cst.FunctionDef] = []

        def visit_FunctionDef(self, node):
            self.functions.append(node)

        def leave_FunctionDef(self, node):
            self.functions.pop()

        def visit_Call(self, node):
            if module.code_for_node(node.func) == "torch.save":
                found.append((node, self.functions[-1] if self.functions else None))

    module.visit(Saves())
    call, scope = found[-1]
    return holds_no_tensors(module, call.args[0].value, scope)


@pytest.mark.parametrize(
    "source",
    [
        'torch.save({"a": [1, 2.5], "b": "x"}, p)',
        "torch.save({k: v.tolist() for k, v in model.state_dict().items()}, p)",
        "torch.save([t.cpu().numpy() for t in model.parameters()], p)",
        "torch.save(np.stack([a, b]), p)",
        """
        counts = collections.Counter()
        counts.update(tokens)
        words = [w for w, n in counts.most_common() if n > 2]
        torch.save({"words": words, "ids": {w: i for i, w in enumerate(words)}}, p)
        """,
        """
        def dump(p):
            rows = []
            for i in range(10):
                rows.append([i, i * i])
            torch.save(rows, p)
        """,
        """
        LABELS = ["cat", "dog"]

        def dump(p):
            torch.save({"labels": LABELS, "n": len(LABELS)}, p)
        """,
    ],
    ids=["literals", "dict-comp-tolist", "list-comp-numpy", "numpy", "counter-vocab", "filled-with-ints", "global-read"],
)
def test_tensor_free_payloads(source):
    assert judge(source) is True


@pytest.mark.parametrize(
    "source",
    [
        "torch.save(model.state_dict(), p)",
        "torch.save(list(model.parameters()), p)",
        "torch.save([p for p in model.parameters()], p)",
        "torch.save({k: v for k, v in model.state_dict().items()}, p)",
        "torch.save({'w': torch.zeros(3)}, p)",
        """
        feats = []
        for batch in loader:
            feats.append(model(batch))
        torch.save(feats, p)
        """,
        """
        table = {}
        table["w"] = net.weight
        torch.save(table, p)
        """,
        """
        def dump(rows, p):
            torch.save(rows, p)
        """,
        """
        xs = [1, 2]
        xs = xs + [model.weight]
        torch.save(xs, p)
        """,
        """
        with open(f) as data:
            torch.save(data, p)
        """,
        # What a call of unknown origin returns is not judged (a miss, never a wrong "free").
        "names = ['a'] + [w for w in reader.read().split()]\ntorch.save(names, p)",
    ],
    ids=["state-dict", "list-of-params", "comp-of-params", "comp-of-state", "tensor-in-dict", "appended-outputs",
         "item-assigned", "parameter", "rebound-with-tensor", "with-target", "unknown-source"],
)
def test_payloads_that_may_hold_tensors(source):
    assert judge(source) is False
