"""Every statement form of Python 3.8-3.13 goes through the semantic model and every rule
without a TL001 (a `match` statement crashed six rules: the model read `.body` of a Match)."""

from __future__ import annotations

import pytest

from torchlint.testing import check_sources

FORMS = {
    "match": '''
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, kind):
        super().__init__()
        match kind:
            case "a":
                self.fc = nn.Linear(4, 4)
            case _:
                self.fc = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def forward(self, x, mode):
        match mode:
            case "noise":
                h = self.fc(x) + torch.randn(x.shape)
            case {"kind": k, **rest} if k:
                h = torch.relu(self.fc(x))
            case [first, *others]:
                h = self.fc(x)
            case Point(x=0) | None:
                h = x
            case str() as name:
                h = x
            case _:
                h = torch.sigmoid(self.fc(x))
        h += 1
        return h

def load(path, how):
    match how:
        case "cpu":
            state = torch.load(path, map_location="cpu")
        case other:
            state = torch.load(path)
    return state
''',
    "try-star-walrus-async": '''
import torch

async def step(model, batches):
    async for batch in batches:
        if (n := batch.numel()) > 0:
            loss = model(batch).sum()
    try:
        loss.backward()
    except* (ValueError, TypeError) as group:
        raise
    async with torch.no_grad() as guard:
        return [y async for y in batches]

def positional(a, b, /, c, *, d):
    global state
    del a
    assert b, "b"
    with (open(c) as one, open(d) as two):
        pass
    lam = lambda *args, **kwargs: args
    return {**kwargs} if (kwargs := {}) else [*args] if (args := ()) else f"{c!r:>{d}}"
''',
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_no_rule_fails_on_any_statement_form(name):
    result = check_sources({f"{name}.py": FORMS[name]}, select=["ALL"])
    assert [f for f in result.findings if f.code == "TL001"] == []


def test_a_binding_in_every_case_of_a_match_with_a_catch_all_replaces_the_one_before():
    source = '''
import torch
import torch.nn.functional as F

def loss(x, y, mode):
    p = F.softmax(x, dim=1)
    match mode:
        case "logits":
            p = x
        case _:
            p = x * 2
    return F.cross_entropy(p, y)

def maybe(x, y, mode):
    p = F.softmax(x, dim=1)
    match mode:
        case "logits":
            p = x
    return F.cross_entropy(p, y)
'''
    result = check_sources({"m.py": source}, select=["TL101"])
    assert [f.location.line for f in result.findings] == [19]  # only where a case may leave the softmax
