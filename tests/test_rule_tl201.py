"""TL201 tensor-without-device: behaviour beyond the rule's own Bad/Good cases."""

from __future__ import annotations

import textwrap

from torchlint.testing import check_sources


#: The project around each sample runs on CUDA (TL201 leaves accelerator-free projects alone).
TRAIN = "model.cuda()\n"


def findings(code: str):
    result = check_sources({"model.py": textwrap.dedent(code).lstrip("\n"), "train.py": TRAIN}, select=["TL201"])
    assert not [f for f in result.findings if f.code != "TL201"], result.findings
    return [f for f in result.findings if f.code == "TL201"]


def lines(code: str) -> list[int]:
    return sorted(f.location.line for f in findings(code))


def test_message_names_factory_meeting_line_and_an_in_scope_tensor():
    (finding,) = findings(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, lengths):
                steps = torch.arange(x.size(1))
                h = x * 2
                mask = steps[None] < lengths[:, None]
                return h * mask[..., None]
        """
    )
    assert finding.location.line == 6
    assert finding.location.column == 17
    assert "`torch.arange(...)` creates a CPU tensor in forward" in finding.message
    assert "meets `lengths` at line 8" in finding.message
    assert "device=lengths.device" in finding.message


def test_message_for_a_submodule_suggests_a_forward_input_and_new_twin():
    (finding,) = findings(
        """
        import torch
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = nn.GRUCell(4, 8)

            def forward(self, inp):
                h = torch.zeros(inp.size(0), 8)
                return self.cell(inp, h)
        """
    )
    assert "meets `self.cell` at line 11" in finding.message
    assert "device=inp.device" in finding.message and "inp.new_zeros(...)" in finding.message


def test_every_cpu_factory_meeting_in_one_call_is_reported():
    assert lines(
        """
        import torch
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTMCell(1, 8)

            def forward(self, x):
                h = torch.zeros(x.size(0), 8)
                c = torch.zeros(x.size(0), 8)
                h, c = self.lstm(x, (h, c))
                return h
        """
    ) == [10, 11]


def test_one_finding_per_factory_even_when_it_meets_twice():
    assert lines(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, y):
                ramp = torch.linspace(0, 1, x.shape[-1])
                return x * ramp + y * ramp
        """
    ) == [6]


def test_device_tensor_moved_to_cpu_is_no_longer_a_device_tensor():
    assert lines(
        """
        import torch

        def stats(x):
            y = x.flatten().to(dtype=x.dtype, device="cpu")
            q = torch.quantile(y, torch.tensor([0.1, 0.9]))
            return q != torch.tensor([0])
        """
    ) == []


def test_dtype_only_to_keeps_the_device_tensor():
    assert lines(
        """
        import torch

        def scale(x: torch.Tensor):
            y = x.to(torch.float32)
            return y * torch.tensor([1.0, 2.0])
        """
    ) == [5]


def test_cpu_kernels_and_constructors_with_device_are_not_meetings():
    assert lines(
        """
        import torch

        def repack(W):
            K = W.size(-1)
            eye = torch.eye(K)
            return torch.ops.aten._weight_int4pack_mm_for_cpu(eye, W, 32, None)

        def to_sparse(values, n):
            crow = torch.tensor([0, n])
            return torch.sparse_csr_tensor(crow, values.new_zeros(n), values, (1, n), device=values.device)
        """
    ) == []


def test_set_default_device_in_the_file_silences_the_rule():
    assert lines(
        """
        import torch
        from torch import nn

        torch.set_default_device("cuda")

        class M(nn.Module):
            def forward(self, x):
                return x + torch.ones(3)
        """
    ) == []


def test_forward_parameters_that_are_ints_are_not_tensors():
    assert lines(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, seq_len, n: int, scale=2.0, dims=(1, 2)):
                pos = torch.arange(seq_len)
                return x, pos * n * scale + pos.sum() + torch.ones(n) * dims[0]
        """
    ) == []


def test_integer_index_of_a_1d_factory_is_a_0dim_scalar():
    assert lines(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x):
                table = torch.linspace(0, 1, 10)
                return x * table[3] + x * torch.ones(4).sum() + x * table[None, 2:5]
        """
    ) == [6]


def test_non_module_forward_and_classes_without_bases():
    assert lines(
        """
        import torch

        class Plain:
            def forward(self, x):
                return x + torch.ones(3)

        class WithBase(object):
            def forward(self, x):
                return x + torch.ones(3)
        """
    ) == [9]


def test_nested_function_is_read_on_its_own():
    assert lines(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x):
                def pad(t):
                    return torch.cat([t, torch.zeros(1, t.shape[1])])
                ones = torch.ones(3)
                return pad(x), ones.tolist()
        """
    ) == [7]


def test_aliases_and_from_imports_resolve():
    assert lines(
        """
        import torch as th
        from torch import arange
        from torch import nn

        class M(nn.Module):
            def forward(self, x):
                return x + th.ones(x.shape[-1]) + arange(x.shape[-1])
        """
    ) == [7, 7]


def test_huge_expression_does_not_break_the_rule_or_the_run():
    # 700 terms: as deep as the engine's nesting gate lets through to the rules (a deeper
    # file is one TL000, reported whatever the selection)
    terms = " + ".join(["x"] * 700)
    code = f"import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n        return {terms} + torch.ones(3)\n"
    result = check_sources({"model.py": code}, select=["TL201", "TL001"])
    assert [f.code for f in result.findings if f.code != "TL201"] == []


def test_shape_as_tensor_is_a_cpu_tensor():
    assert lines(
        """
        import torch

        def topk_min(input: torch.Tensor, k: int):
            dim = torch._shape_as_tensor(input)[0].unsqueeze(0)
            return torch.min(torch.cat((torch.tensor([k], dtype=dim.dtype), dim), 0))
        """
    ) == []


def test_functions_that_want_cpu_lengths_are_not_meetings():
    assert lines(
        """
        import torch
        import torch.nn.functional as F
        from torch import nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class M(nn.Module):
            def forward(self, x, log_probs, targets, lens):
                packed = pack_padded_sequence(x, torch.tensor([3, 2]), batch_first=True)
                input_lengths = torch.full((x.shape[0],), log_probs.shape[0], dtype=torch.long)
                target_lengths = torch.tensor([4, 4])
                loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths)
                parts = torch.tensor_split(x, torch.tensor([1, 3]))
                return packed, loss, parts
        """
    ) == []


def test_gradient_penalty_grad_outputs_on_cpu_is_flagged():
    assert lines(
        """
        import torch

        def gradient_penalty(critic_out, inputs):
            grad, = torch.autograd.grad(critic_out, inputs, grad_outputs=torch.ones(critic_out.size()), create_graph=True)
            return grad.norm(2, dim=1)
        """
    ) == [4]


def test_a_helpers_cpu_tensor_is_reported_where_it_is_made_naming_the_meeting_in_the_caller():
    (finding,) = findings(
        """
        import torch
        from torch import nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(8, 8)

            def init_hidden(self, bsz):
                return torch.zeros(1, bsz, 8)

            def forward(self, x):
                out, _ = self.rnn(x, self.init_hidden(x.size(1)))
                return out
        """
    )
    assert finding.location.line == 10
    assert "in `init_hidden()`; it meets `self.rnn` at line 13 in forward" in finding.message
    assert finding.fix is None  # no tensor of the caller is in reach where the factory is


def test_a_helpers_device_tensors_do_not_cross_into_callers():
    # `scale` reads its annotated argument as a device tensor, but its caller passes a list:
    # what the helper returns is on the device only if its arguments are.
    assert lines(
        """
        import torch

        def scale(t: torch.Tensor):
            return t * 2

        def build(values):
            mask = torch.ones(3)
            return mask * scale(values)
        """
    ) == []


def test_script_code_is_read_and_names_the_line():
    (finding,) = findings(
        """
        import torch

        net = torch.nn.Linear(4, 2).cuda()
        x = torch.randn(3, 4).to("cuda")
        w = torch.ones(3, 2)
        y = net(x) * w
        """
    )
    assert finding.location.line == 5
    assert "creates a CPU tensor in script code; it meets `net(...)` at line 6" in finding.message


def test_moving_to_the_cpu_is_no_device_and_dtype_only_to_is_no_move():
    assert lines(
        """
        import torch

        def f(x, device):
            a = x.to("cpu")
            b = x.to(torch.float16)
            return a + torch.ones(3), b * torch.zeros(3)
        """
    ) == []


def test_a_cpu_input_to_a_moved_model_meets_its_parameters():
    assert lines(
        """
        import torch

        model = torch.nn.Linear(4, 2)
        model.cuda()
        out = model(torch.randn(8, 4))
        """
    ) == [5]


def test_a_tensor_computed_with_a_device_tensor_in_one_arm_is_no_move():
    # `idx` meets `mask` in the arm (reported); after the `if` it is still a CPU tensor on the
    # path that skipped the arm, so `zeros(...).scatter(1, idx, ...)` is no second finding.
    assert lines(
        """
        import torch

        def choose(x: torch.Tensor, mask: torch.Tensor):
            idx = torch.arange(x.size(1)).unsqueeze(0)
            if mask is not None:
                idx += mask.sum(dim=1, keepdim=True)
            return torch.zeros(x.size(0), 8).scatter(1, idx, 1.0)
        """
    ) == [4]


DEAD_HELPER_SCRIPT = textwrap.dedent(
    """
    import torch

    def guidance_embedding(w, dim=64):
        assert w.ndim == 1
        freqs = torch.exp(-torch.arange(dim // 2) / dim)
        return w[:, None] * freqs[None]

    if __name__ == "__main__":
        Net().cuda().fit()
    """
).lstrip("\n")


def test_a_scripts_unnamed_helper_stands_when_another_file_imports_and_calls_it():
    alone = check_sources({"distill.py": DEAD_HELPER_SCRIPT}, select=["TL201"]).findings
    assert alone == []  # dead code: the script never names it, nothing else calls it
    caller = "import torch\nfrom distill import guidance_embedding\n\ndef step(w):\n    return guidance_embedding(w.cuda()) + torch.zeros(1)\n"
    called = check_sources({"distill.py": DEAD_HELPER_SCRIPT, "sample.py": caller}, select=["TL201"]).findings
    assert [(f.path, f.location.line) for f in called] == [("distill.py", 5)]


def test_a_helper_the_script_names_or_a_library_module_stands():
    named = DEAD_HELPER_SCRIPT.replace("Net().cuda().fit()", "Net().cuda().fit(embed=guidance_embedding)")
    assert [f.location.line for f in check_sources({"distill.py": named}, select=["TL201"]).findings] == [5]
    library = DEAD_HELPER_SCRIPT.replace('if __name__ == "__main__":\n    Net().cuda().fit()\n', "model.cuda()\n")
    assert [f.location.line for f in check_sources({"distill.py": library}, select=["TL201"]).findings] == [5]


BOXES = "import torch\n\ndef masks_to_boxes(masks):\n    ys = torch.arange(masks.shape[-2], dtype=torch.float)\n    return (masks * ys[:, None]).flatten(1).max(-1)[0]\n"
DATASET = (
    "import torch\nfrom util.boxes import masks_to_boxes\n\nclass Panoptic:\n"
    "    def __getitem__(self, i):\n        masks = torch.as_tensor(self.read(i))\n        return masks_to_boxes(masks)\n"
)


def check_tree(root, files: dict[str, str], monkeypatch):
    """Check files written under `root` (package folders and project markers are read from
    disk), from inside it as `torchlint check .` would."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.chdir(root)
    sources = {name: text for name, text in files.items() if name.endswith(".py")}
    return [(f.path, f.location.line) for f in check_sources(sources, select=["TL201"]).findings]


def test_a_package_helper_called_only_by_datasets_stands_in_an_installable_project(tmp_path, monkeypatch):
    files = {"util/__init__.py": "", "util/boxes.py": BOXES, "datasets/panoptic.py": DATASET, "train.py": TRAIN, "requirements.txt": ""}
    assert check_tree(tmp_path / "research", files, monkeypatch) == []  # every caller builds batches
    # An installed library's users call its public helpers with whatever tensors they hold.
    assert check_tree(tmp_path / "library", {**files, "setup.py": ""}, monkeypatch) == [("util/boxes.py", 4)]


def test_a_caller_outside_data_loading_keeps_the_helper_even_in_a_file_no_rule_reads(tmp_path, monkeypatch):
    head = "from util.boxes import masks_to_boxes\n\ndef predict(net, x):\n    return masks_to_boxes(net(x) > 0)\n"
    passed = DATASET.replace("return masks_to_boxes(masks)", "return self.fn(masks)\n\nFN = masks_to_boxes")
    base = {"util/__init__.py": "", "util/boxes.py": BOXES, "datasets/panoptic.py": DATASET, "train.py": TRAIN, "requirements.txt": ""}
    assert check_tree(tmp_path / "head", {**base, "head.py": head}, monkeypatch) == [("util/boxes.py", 4)]
    # Named outside a call (passed along), the helper may run anywhere.
    assert check_tree(tmp_path / "passed", {**base, "datasets/panoptic.py": passed}, monkeypatch) == [("util/boxes.py", 4)]


PIPELINE = (
    "import torch\n\nclass TilingPipeline(DiffusionPipeline):\n    def embed(self, w: torch.Tensor):\n"
    "        return w[:, None] * torch.arange(8)[None]\n\n    def __call__(self, x):\n        return self.unet(x.cuda())\n"
)


def test_an_uncalled_pipeline_method_stands_when_another_file_uses_its_class_and_calls_it(tmp_path, monkeypatch):
    assert check_tree(tmp_path / "alone", {"tiling.py": PIPELINE}, monkeypatch) == []
    user = "from tiling import TilingPipeline\n\npipe = TilingPipeline()\nemb = pipe.embed(w)\n"
    assert check_tree(tmp_path / "used", {"tiling.py": PIPELINE, "run.py": user}, monkeypatch) == [("tiling.py", 5)]
    # Inside a package it is a library's public method.
    packaged = {"pipes/__init__.py": "", "pipes/tiling.py": PIPELINE}
    assert check_tree(tmp_path / "pkg", packaged, monkeypatch) == [("pipes/tiling.py", 5)]
