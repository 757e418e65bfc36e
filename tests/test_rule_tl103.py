"""TL103 inplace-on-grad-tensor: behaviour beyond the rule's own Bad/Good cases."""

from __future__ import annotations

import textwrap

from torchlint.testing import check_sources


def findings(code: str) -> list[tuple[int, str]]:
    result = check_sources({"m.py": textwrap.dedent(code).lstrip("\n")}, select=["TL103"])
    return sorted((f.location.line, f.message) for f in result.findings if f.code == "TL103")


def lines(code: str) -> list[int]:
    return [line for line, _ in findings(code)]


MODULE_HEADER = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
"""


def module(forward_body: str) -> str:
    return MODULE_HEADER + "\n    def forward(self, x):\n" + textwrap.indent(textwrap.dedent(forward_body).strip("\n"), " " * 8) + "\n"


def test_saved_output_message_names_the_op_its_line_and_the_fix():
    [(line, message)] = findings(module("y = torch.sigmoid(self.fc(x))\ny += 1\nreturn y"))
    assert line == 12
    assert "in-place `+=` on the output of `torch.sigmoid(...)` (line 11)" in message
    assert "modified by an inplace operation" in message
    assert "write `y = y + ...`" in message


def test_leaf_message_names_its_creation_and_no_grad():
    code = """
    import torch
    w = torch.zeros(3, requires_grad=True)
    w.uniform_()
    """
    [(line, message)] = findings(code)
    assert line == 3
    assert "leaf that requires grad (`torch.zeros(..., requires_grad=True)` at line 2)" in message
    assert "with torch.no_grad():" in message


def test_torch_inplace_functions_are_inplace_on_their_first_argument():
    code = """
    import torch
    import torch.nn.functional as F
    w = torch.nn.Parameter(torch.randn(3))
    torch.relu_(w)
    F.elu_(w)
    """
    assert lines(code) == [4, 5]


def test_inplace_method_statement_makes_the_receiver_a_saved_output():
    assert lines(module("h = self.fc(x)\nh.sigmoid_()\nh.mul_(2)\nreturn h")) == [13]
    assert lines(module("h = self.fc(x)\nF.relu(h, inplace=True)\nh += x\nreturn h")) == [13]
    # out-of-place GELU / SiLU do not save their output
    assert lines(module("h = F.gelu(self.fc(x))\nh += x\nh = F.silu(h)\nh += x\nreturn h")) == []


def test_branches_merge_as_may_paths():
    all_reassigned = """
    y = torch.softmax(self.fc(x), -1)
    if self.a:
        y = y * 2
    elif self.b:
        y = y + 1
    else:
        y = self.fc(y)
    y += 1
    return y
    """
    one_keeps_it = """
    y = torch.softmax(self.fc(x), -1)
    if self.a:
        y = y * 2
    y += 1
    return y
    """
    assert lines(module(all_reassigned)) == []
    assert lines(module(one_keeps_it)) == [14]


def test_set_grad_enabled_false_statement():
    in_function = """
    import torch
    def f():
        torch.set_grad_enabled(False)
        w = torch.ones(2, requires_grad=True)
        w.add_(1)
    """
    at_module_level = """
    import torch
    torch.set_grad_enabled(False)
    w = torch.ones(2, requires_grad=True)
    w.add_(1)
    """
    assert lines(in_function) == []
    assert lines(at_module_level) == []


def test_enable_grad_inside_no_grad_turns_recording_back_on():
    code = """
    import torch
    @torch.no_grad()
    def f():
        w = torch.ones(2, requires_grad=True)
        w.add_(1)
        with torch.enable_grad():
            w.add_(1)
    """
    assert lines(code) == [7]


def test_conditional_no_grad_context_is_treated_as_no_grad():
    code = """
    import contextlib, torch
    def f(train):
        w = torch.ones(2, requires_grad=True)
        with torch.no_grad() if not train else contextlib.nullcontext():
            w.add_(1)
    """
    assert lines(code) == []


def test_nested_functions_do_not_see_outer_names():
    code = """
    import torch
    def outer():
        w = torch.ones(2, requires_grad=True)
        def inner(w):
            w.add_(1)
        return inner
    """
    assert lines(code) == []


def test_parameter_loops_flag_only_updates_with_their_grad():
    code = """
    def step(model, lr):
        for name, p in model.named_parameters():
            p.sub_(lr * p.grad)
        for p in model.parameters():
            p.mul_(0.5)
        for p in model.parameters():
            p.add_(q.grad)
    """
    assert lines(code) == [3]


def test_requires_grad_attribute_and_method_statements():
    code = """
    import torch
    x = torch.ones(3)
    x.requires_grad = True
    x += 1
    y = torch.ones(3)
    y.requires_grad_()
    y.requires_grad_(False)
    y += 1
    """
    assert lines(code) == [4]


def test_views_of_leaves_but_not_copies():
    code = """
    import torch
    w = torch.nn.Parameter(torch.randn(3, 3))
    v = w.t()
    v.add_(1)
    w[idx].add_(1)
    w[mask] = 0
    w.data[0] = 1
    w.detach().zero_()
    w.clone().zero_()
    """
    assert lines(code) == [4, 6]


def test_parameter_without_grad_is_not_a_grad_leaf():
    code = """
    import torch
    a = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    a.add_(1)
    b = torch.nn.Parameter(torch.ones(3), False)
    b.add_(1)
    """
    assert lines(code) == []


def test_frozen_self_parameter_is_not_flagged():
    code = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))
            self.w.requires_grad_(False)
            self.v = nn.Parameter(torch.ones(3))
        def forward(self, x):
            self.w.mul_(0.9)
            self.v.mul_(0.9)
            return x * self.w * self.v
    """
    assert lines(code) == [11]


def test_forward_of_a_class_without_bases_is_not_a_module_forward():
    code = """
    import torch
    class Helper:
        def forward(self, x):
            y = torch.sigmoid(self.fc(x))
            y += 1
            return y
    """
    assert lines(code) == []


def test_submodule_named_norm_is_not_tensor_norm():
    code = module("y = self.norm(self.fc(x))\ny += 1\nz = self.fc(x).norm(dim=1)\nz += 1\nreturn y, z")
    assert lines(code) == [14]


def test_dropout_message_says_when_it_writes():
    code = """
    import torch.nn as nn
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qk = nn.Linear(4, 4)
            self.drop = nn.Dropout(0.1, inplace=True)
        def forward(self, x):
            attn = self.qk(x).softmax(-1)
            attn = self.drop(attn)
            return attn
    """
    [(line, message)] = findings(code)
    assert line == 9
    assert "`nn.Dropout(inplace=True)`, which writes whenever p > 0 in training" in message


def test_function_passed_along_under_no_grad_is_exempt():
    code = """
    import torch
    def shrink(p):
        for q in p.parameters():
            q -= 0.1 * q.grad
    def main(model):
        with torch.no_grad():
            model.apply(shrink)
    """
    assert lines(code) == []


def test_saved_output_in_training_function_only_when_it_reaches_the_loss():
    reaches = """
    import torch
    def step(model, x, y):
        p = model(x).softmax(1)
        p.clamp_(1e-6, 1.0)
        losses = []
        losses.append(-(p.log() * y).sum())
        sum(losses).backward()
    """
    metric_only = """
    import torch
    def step(model, x, y):
        out = model(x)
        p = out.softmax(1)
        p.clamp_(1e-6, 1.0)
        (out - y).pow(2).mean().backward()
        return p
    """
    assert lines(reaches) == [4]
    assert lines(metric_only) == []


def test_match_statements_in_init_do_not_crash():
    from torchlint.testing import check_sources

    source = (
        "import torch\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, kind):\n"
        "        super().__init__()\n"
        "        match kind:\n"
        "            case 'a':\n"
        "                self.w = nn.Parameter(torch.ones(3))\n"
        "            case _:\n"
        "                raise ValueError(kind)\n\n"
        "    def forward(self, x):\n"
        "        self.w.add_(1)\n"
        "        return x * self.w\n"
    )
    result = check_sources({"m.py": source}, select=["TL103", "TL001"])
    assert [f.code for f in result.findings] == ["TL103"]


# -- leaves and multi-output views: the semantic model's answers ----------------------------------
def test_views_of_a_leaf_through_names_but_not_index_copies():
    code = """
    import torch
    w = torch.nn.Parameter(torch.randn(3, 3))
    row = w[0]
    row.add_(1)
    picked = w[idx]
    picked.add_(1)
    col = w.T
    col.mul_(2)
    """
    assert lines(code) == [4, 8]


def test_layer_parameters_in_any_method_and_through_containers():
    code = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.GELU()
            self.seq = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
            self.frozen = nn.Linear(4, 4)
            self.frozen.weight.requires_grad = False
        def reset(self):
            self.fc.bias.zero_()
            self.seq[0].weight.normal_()
            self.frozen.weight.zero_()
            self.fc.weight.data.zero_()
            self.fc.weight.grad.zero_()
    """
    assert lines(code) == [12, 13]


def test_a_parameter_passed_to_a_helper_is_a_leaf_there_unless_cloned():
    code = """
    import torch.nn as nn
    def scale_(t, s):
        t.mul_(s)
    def masked(bias):
        bias = bias.clone()
        bias[:2].zero_()
        return bias
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            scale_(self.fc.weight, 2.0)
            return self.fc(x) + masked(self.fc.bias)
    """
    assert lines(code) == [3]


def test_a_leaf_handed_back_by_a_helper_is_not_vouched_for():
    code = """
    import torch
    import torch.nn as nn
    def fuse(conv, bn):
        if bn is None:
            return conv.weight
        return conv.weight * bn.weight.view(-1, 1, 1, 1)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)
            self.bn = nn.BatchNorm2d(3)
        def deploy(self):
            kernel = fuse(self.conv, self.bn)
            kernel += 1
    """
    assert lines(code) == []


def test_update_reading_its_own_grad_is_on_a_leaf_whatever_the_loop():
    code = """
    import torch
    def step(params, lr):
        for group in params:
            for p in group:
                p.sub_(lr * p.grad)
                p.mul_(0.9)
    """
    [(line, message)] = findings(code)
    assert line == 5
    assert "(`p`, whose `.grad` it reads)" in message


def test_multi_output_views_need_a_base_that_requires_grad():
    code = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x, tokens):
            h = self.fc(x)
            for piece in h.chunk(2, dim=-1):
                piece.relu_()
            with torch.no_grad():
                a, b = self.fc(x).chunk(2, dim=-1)
            b.add_(1)
            c, d = x.chunk(2, dim=-1)
            d.add_(1)
            name, _ = tokens.split(":")
            name += "!"
            self.fc(x).split(4, dim=-1)[1].zero_()
            return h
    """
    assert lines(code) == [10, 18]


def test_multi_output_view_message_names_the_op_and_the_error():
    code = MODULE_HEADER + "\n    def forward(self, x):\n        a, b = self.fc(x).chunk(2, dim=-1)\n        b += 1\n        return a * b\n"
    [(line, message)] = findings(code)
    assert line == 12
    assert "one of the several views `self.fc(x).chunk(...)` (line 11) returns" in message
    assert "returns multiple views" in message


def test_a_user_class_split_method_keeps_its_meaning_for_other_rules():
    code = """
    import torch.nn as nn
    import torch.nn.functional as F
    class Splitter:
        def split(self, x):
            return F.softmax(x, dim=1), x
    def step(splitter, x, y):
        probs, _ = splitter.split(x)
        return F.cross_entropy(probs, y)
    step(Splitter(), x, y)
    """
    result = check_sources({"m.py": textwrap.dedent(code).lstrip("\n")}, select=["TL101", "TL103"])
    assert [(f.code, f.location.line) for f in result.findings] == [("TL101", 8)]


def test_a_binding_later_in_a_loop_does_not_outlive_a_rebinding_before_the_use():
    code = """
    import torch
    def load(records, requires_grad):
        out = []
        for raw in records:
            tensor = torch.empty(0)
            tensor.set_(raw)
            if requires_grad:
                tensor.requires_grad_(True)
            out.append(tensor)
        return out
    """
    assert lines(code) == []


def test_a_leaf_in_a_tuple_a_helper_returns_is_not_vouched_for():
    code = """
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)
            self.bn = nn.BatchNorm2d(3)
        def _fuse(self, conv, bn):
            if bn is None:
                return conv.weight, conv.bias
            return conv.weight * bn.weight.view(-1, 1, 1, 1), bn.bias
        def deploy(self):
            kernel, bias = self._fuse(self.conv, self.bn)
            kernel += 1
            return kernel, bias
    """
    assert lines(code) == []


def test_every_arm_rebinding_in_a_loop_body_kills_the_previous_iteration():
    code = """
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU(inplace=True)
            self.cells = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        def forward(self, x):
            for i, cell in enumerate(self.cells):
                if i == 0:
                    x = cell(x)
                else:
                    x = cell(x) + x
                if i == 2:
                    x = self.act(x)
            return x
    """
    assert lines(code) == []


def test_layers_whose_parameters_are_frozen_are_not_leaves_requiring_grad():
    code = """
    import torch
    import torch.nn as nn
    def fuse(conv, bn):
        fused = nn.Conv2d(3, 3, 1, bias=True).requires_grad_(False).to(conv.weight.device)
        fused.weight.copy_(conv.weight * bn.weight.view(-1, 1, 1, 1))
        head = nn.Linear(3, 3)
        head.bias.requires_grad = False
        head.bias.zero_()
        head.weight.zero_()
        return fused, head
    """
    assert lines(code) == [9]


def test_a_piece_made_contiguous_may_be_a_copy():
    code = """
    import torch.nn as nn
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q = q.contiguous()
            q *= 0.5
            k.contiguous().mul_(2)
            v[0].add_(1)
            return q, k, v
    """
    assert lines(code) == [11]


def test_an_inplace_layer_called_as_a_statement_makes_its_argument_its_saved_output():
    code = """
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.ReLU(inplace=True)
            self.drop = nn.Dropout(0.1)
        def forward(self, x):
            h = self.fc(x)
            self.act(h)
            self.drop(h)
            h += 1
            print(h)
            return h
    """
    assert lines(code) == [12]


def test_one_report_per_saved_output_even_through_a_submodule():
    code = """
    import torch
    import torch.nn as nn
    class Block(nn.Module):
        def forward(self, x):
            return torch.relu(x)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
        def forward(self, x):
            h = self.block(x)
            h += 1
            h *= 2
            return h
    """
    assert lines(code) == [12]


# -- functions nested in a forward ---------------------------------------------------------------
NESTED_HEADER = """
import torch
import torch.nn as nn

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
    def forward(self, x):
        return torch.sigmoid(self.proj(x))

class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(4)
    def forward(self, x):
        return self.norm(x)
"""


def line_of(code: str, text: str) -> int:
    """The line of `code`, as `findings` numbers it, holding `text`."""
    return next(n for n, line in enumerate(textwrap.dedent(code).lstrip("\n").splitlines(), 1) if text in line)


def test_a_write_inside_a_nested_function_on_an_indexed_block_output():
    code = NESTED_HEADER + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Gate() for _ in range(3)])
    def forward(self, x):
        def step(h):
            for i in range(len(self.blocks)):
                h = self.blocks[i](h)
                h.mul_(2.0)
            return h
        return step(x)
"""
    [(line, message)] = findings(code)
    sigmoid = line_of(code, "return torch.sigmoid")
    assert line == line_of(code, "h.mul_(2.0)") and f"`torch.sigmoid(...)` (line {sigmoid}, returned by `Gate.forward`)" in message


def test_a_nested_function_parameter_takes_what_the_forward_passes():
    code = NESTED_HEADER + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.norm = Norm()
    def forward(self, x):
        def bump(h):
            h += 1.0
            return h
        g = bump(self.norm(x))
        return bump(self.gate(g))
"""
    [(line, message)] = findings(code)
    assert line == line_of(code, "h += 1.0") and "Gate.forward" in message


def test_a_nested_function_over_blocks_not_saving_their_output_is_quiet():
    code = NESTED_HEADER + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Norm() for _ in range(3)])
    def forward(self, x):
        def run(i, h):
            return self.blocks[i](h)
        for i in range(3):
            x = run(i, x)
            x += 1.0
        return x
"""
    assert lines(code) == []


def test_a_nested_function_reads_the_enclosing_names_at_their_last_binding():
    code = NESTED_HEADER + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.norm = Norm()
    def forward(self, x):
        h = self.gate(x)
        h = self.norm(h)
        def current():
            return h
        out = current()
        out += 1.0
        return out
"""
    assert lines(code) == []


def test_two_nested_functions_of_one_name_are_not_followed():
    code = NESTED_HEADER + """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.norm = Norm()
    def forward(self, x, gated):
        if gated:
            def run(h):
                return self.gate(h)
        else:
            def run(h):
                return self.norm(h)
        out = run(x)
        out += 1.0
        return out
"""
    assert lines(code) == []
