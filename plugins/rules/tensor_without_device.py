from __future__ import annotations

from typing import Optional

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.devices import FACTORY_NAMES, NEW_TWINS, FlowSetup, Meeting
from torchlint.semantic.placement import Placement

from ._accelerators import ACCELERATOR_TOKENS, project_uses_accelerator
from ._calls import with_keyword
from ._device_path import off_device_path

class TensorWithoutDevice(Rule):
    """
    ## What it does
    Flags tensor factories (`torch.zeros`, `ones`, `empty`, `full`, `rand`, `randn`, `randint`,
    `randperm`, `arange`, `linspace`, `logspace`, `eye`, `tensor`, `as_tensor`, `tril_indices`,
    `triu_indices`, the window functions) called without `device=` in code that runs on a device —
    an `nn.Module`'s `forward`, or a function that takes a tensor — when the new tensor is then
    combined with that code's tensors: arithmetic or comparison with them, passed with them to a
    torch function or tensor method (`torch.cat`, `torch.where`, `masked_fill`, `matmul`), or given
    to a submodule that holds parameters (`self.embed(pos)`).

    The finding is reported on the factory call and names the line where the tensors meet.
    The same holds for the legacy constructors (`torch.LongTensor([...])`, `torch.FloatTensor(n)`)
    and `torch.normal(mean, std, size=...)`, in script code as in functions, and when the factory
    sits in a helper of the same file whose result meets the device in its caller (a CPU hidden
    state returned by `init_hidden()` and given to the LSTM in `forward`). Device tensors are
    the parameters of device code, a module's parameters and buffers, anything moved with
    `.cuda()`/`.to(device)` or made with `device=device`, and the output of a module (as the
    semantic model resolves it: a layer, an `nn.Sequential` (also one built from a list,
    `nn.Sequential(*layers)`), `nn.Embedding.from_pretrained(...)`, a model class of this file,
    a class imported from another package and assigned to a module's attribute, a parameter
    every caller passes a model to) given such a tensor or moved itself.

    A driver function that takes the model but no tensor (`def evaluate(model): batch =
    torch.randn(...); model(batch)`) is read too when every call in the file passes it a
    module and the file moves a model to a device (`.to(device)`/`.cuda()` on one it builds,
    or on a name such as `model`, `net`, `encoder`).

    Not flagged: `*_like` factories and `x.new_*` methods, any `device=` argument, a tensor moved
    with `.to(...)`, `.cuda()` or `.type_as(x)` before it meets others, index tensors used only
    for indexing (`x[torch.arange(n)]`), 0-dim tensors (`torch.tensor(0.5)`, `torch.zeros(())`:
    PyTorch mixes a 0-dim CPU tensor with tensors on any device), `__init__` (buffers are moved
    with the module), code under `with torch.device(...)`, files that call
    `torch.set_default_device`, dataset/sampler methods and collate functions (they build batches
    on the CPU by design), a function (or a method, called as `self.name(...)`) whose every
    caller in the file moves its result to the device (`preprocess(x).cuda()`,
    `fabric.to_device(jitter(batch))`, `emb = embed(w)` then `emb = emb.to(device)` a few
    statements later), a project none of whose
    files names an accelerator, a function that calls `.numpy()` (with no `.cpu()` first) on
    what its tensor parameters compute (CPU-only preprocessing: `.numpy()` raises on a device
    tensor), a CPU tensor passed to a method `torch.Tensor` does not have (the receiver, moved
    with `.to(device)`, is a model whose method may not compute with it: `f0_model.inference(
    tokens, speaker_id)`), functions that want CPU index or length tensors
    (`pack_padded_sequence`, `ctc_loss` lengths, `tensor_split`, `*_for_cpu` kernels), and a
    value made only where a tensor-or-list parameter is a list (under `isinstance(x, list)`,
    or under `len(x) > 1` in a function that walks `x` element by element under that test).

    A helper its own file never calls is judged by its callers in the rest of the project,
    found by name in every checked file (also those no rule reads): it is left alone when every
    other file calls it only while building batches (a dataset's `__getitem__`, a collate
    function) and it is not part of an installable package (a folder with `pyproject.toml`,
    `setup.py` or `setup.cfg`), or when nothing else calls it and it is a module-level helper
    of a script run as `__main__` outside any package, or a method of a class that is no
    `nn.Module` in a file outside any package (a pipeline's uncalled copy of a helper).

    A function other than `forward` is read only when one of its parameters is evidently a
    tensor (annotated `Tensor`, or its `.shape`, `.size()`, `.device`, `.dtype`, `.ndim` or
    `.dim()` is used), and only meetings with that parameter or values computed from it count.

    Off by default: on 20 public libraries and frameworks with their test suites, judged by
    reviewers who did not write the rule, 5 of 25 sampled findings were right (58 in all); the
    wrong ones met tensors that are on the CPU on every path the project takes: CPU-only tests,
    a default device set in `conftest.py` or by the library's users
    (`torch.set_default_device`), inputs moved to the CPU just above, helpers whose every caller
    passes CPU data, placeholders that are always overwritten or only handed to a kernel, and
    0-dim CPU tensors, which torch lets meet device tensors. `torchlint run --device fake-cuda`
    finds the mismatches that do happen. `--extend-select TL201` turns it on.

    ## Why is this bad?
    Factories make CPU tensors unless told otherwise. The model works on the CPU and fails the
    first time it runs on a GPU with "Expected all tensors to be on the same device, but found at
    least two devices, cuda:0 and cpu!" — an error that names the line where the tensors meet,
    not the line that made the CPU tensor.

    ## Example
    ```python
    class Model(nn.Module):
        def forward(self, x, lengths):
            mask = torch.arange(x.size(1))[None] < lengths[:, None]
            return x * mask[..., None]
    ```

    ## Use instead
    ```python
    class Model(nn.Module):
        def forward(self, x, lengths):
            mask = torch.arange(x.size(1), device=x.device)[None] < lengths[:, None]
            return x * mask[..., None]
    ```

    ## Fix safety
    The fix adds `device=<tensor>.device` naming the tensor the factory's value meets. It is
    safe for deterministic factories (`zeros`, `ones`, `arange`, `full`, `eye`, `tensor`...):
    the values are the same, only their device changes. It is unsafe for random ones (`rand`,
    `randn`, `randint`...): on a GPU they draw from the CUDA generator, so a seeded run gives
    different numbers.

    ## Known limitations
    This is the semantic model's device domain (`torchlint.semantic.devices`): arms of an `if`
    join as may-values (an arm that moves a CPU tensor it was given wins, as after
    `if x.is_cuda:`), loops are read twice. A CPU tensor crosses into callers of the same file
    only as a return value; one stored in an attribute, a container or a global, or returned to
    another file, is not followed. Comprehensions and lambdas are not read. Values of unknown
    kind (results of other files' functions, `self.` attributes that are not parameters,
    buffers or layers) are never assumed to be tensors, so some real cases are missed. A
    `forward` parameter is taken for a tensor unless its annotation, default or use says
    otherwise. A CPU argument next to a device argument of a module call is not a meeting (it
    may be a length or an index the module keeps on the CPU).
    """

    code = "TL201"
    name = "tensor-without-device"
    summary = "A tensor factory without `device=` in device code makes a CPU tensor that meets device tensors"
    default_enabled = False
    #: The error that proves it when the program runs (the device probe also names both lines).
    proven_by = (("RuntimeError", r"Expected all tensors to be on the same device"),)
    analyses = (Placement,)
    triggers = tuple(sorted(FACTORY_NAMES | {"_window", "Tensor(", "normal("}))
    imports = ("torch",)
    fix_safety = UNSAFE
    cases = [
        Bad(
            """
            import torch
            import torch.nn as nn

            class LM(nn.Module):
                def __init__(self, ntoken, nhid):
                    super().__init__()
                    self.embed = nn.Embedding(ntoken, nhid)
                    self.rnn = nn.LSTM(nhid, nhid)
                    self.nhid = nhid

                def init_hidden(self, bsz):
                    h = torch.zeros(1, bsz, self.nhid)  # error
                    return h, h.clone()

                def forward(self, src):
                    out, _ = self.rnn(self.embed(src), self.init_hidden(src.size(1)))
                    return out

            LM(100, 32).cuda()
            """,
            note="a hidden state made by a helper meets the LSTM's weights in forward",
        ),
        Bad(
            """
            import torch

            def train_epoch(model, loader, device):
                for x, y in loader:
                    x = x.to(device)
                    keep = torch.ones(x.size(0), 1)  # error
                    out = model(x) * keep
                    target = torch.LongTensor([0, 1])  # error
                    loss = torch.nn.functional.cross_entropy(out, target)

            net = torch.nn.Sequential(torch.nn.Linear(4, 2)).cuda()
            train_epoch(net, [], "cuda")
            """,
            note="partners moved with `.to(device)`: a model's output is where its input is; a legacy constructor makes a CPU tensor",
        ),
        Bad(
            """
            from torch import *
            from torch import nn

            model = nn.Linear(16, 4).cuda()
            for step in range(10):
                x = randn(8, 16).cuda()
                bias = zeros(8, 4)  # error
                out = model(x) + bias
            """,
            note="script code, with torch's names brought in by a star import",
        ),
        Good(
            """
            import torch

            def pad_mask(prev_mask, batch, length):
                filler = torch.zeros(batch, length - prev_mask.size(1))
                if prev_mask.is_cuda:
                    filler = filler.cuda()
                return torch.cat([prev_mask.float(), filler], dim=1)

            torch.device("cuda")
            """,
            note="an arm that moves the tensor after testing the device wins over the arm that leaves it",
        ),
        Bad(
            """
            import torch

            def add_noise(x: torch.Tensor, training: bool) -> torch.Tensor:
                if training:
                    noise = torch.randn(x.shape)  # error
                else:
                    noise = torch.zeros_like(x)
                return x + noise

            torch.device("cuda")
            """,
            note="the arms of an `if` join: the CPU tensor of one arm meets `x` on that path",
        ),
        Good(
            """
            import torch

            def preprocess(img: torch.Tensor) -> torch.Tensor:
                mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
                return img.float() / 255.0 - mean

            def jitter(batch: torch.Tensor) -> torch.Tensor:
                return batch + torch.randn(batch.shape) * 0.01

            def run(model, images, fabric):
                for img in images:
                    model(preprocess(img).cuda())
                    model(fabric.to_device(jitter(img)))
            """,
            note="CPU preprocessing whose every caller moves the result to the device",
        ),
        Good(
            """
            import torch

            def embed(w, dim=256):
                assert w.ndim == 1
                freqs = torch.exp(torch.arange(dim // 2) * -0.01)
                return w[:, None] * freqs[None, :]

            class Pipeline:
                def guidance(self, w, dim=256):
                    assert w.ndim == 1
                    freqs = torch.exp(torch.arange(dim // 2) * -0.01)
                    return w[:, None] * freqs[None, :]

                def __call__(self, latents, scale, device="cuda"):
                    cond = self.guidance(torch.tensor([scale - 1.0])).to(device=device)
                    w = torch.rand((latents.shape[0],))
                    emb = embed(w)
                    emb = emb.to(device=latents.device, dtype=latents.dtype)
                    return self.unet(latents, cond, emb)
            """,
            note="a method whose every `self.` call moves its result; a result moved by the next statement that uses it",
        ),
        Bad(
            """
            import torch

            def embed(w, dim=256):
                assert w.ndim == 1
                freqs = torch.exp(torch.arange(dim // 2) * -0.01)  # error
                return w[:, None] * freqs[None, :]

            def run(unet, latents, scale):
                w = torch.full((latents.shape[0],), scale, device="cuda")
                emb = embed(w)
                emb = emb.to(torch.float16)
                return unet(latents, emb)
            """,
            note="a dtype cast is no move: `w` is on the latents' device",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Masked(nn.Module):
                def forward(self, x, lengths):
                    mask = torch.arange(x.size(1))[None] < lengths[:, None]
                    return x * mask.unsqueeze(-1)
            """,
            note="a project none of whose files names an accelerator runs everything on the CPU",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Masked(nn.Module):
                def forward(self, x, lengths):
                    T = x.size(1)
                    mask = torch.arange(T)[None] < lengths[:, None]  # error
                    return x * mask.unsqueeze(-1)

            model.cuda()
            """,
            fixed="""
            import torch
            from torch import nn

            class Masked(nn.Module):
                def forward(self, x, lengths):
                    T = x.size(1)
                    mask = torch.arange(T, device=lengths.device)[None] < lengths[:, None]  # error
                    return x * mask.unsqueeze(-1)

            model.cuda()
            """,
            note="the sequence-mask pattern; the fix takes the device of the tensor it meets",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class GPT(nn.Module):
                def __init__(self, vocab, block, dim):
                    super().__init__()
                    self.wte = nn.Embedding(vocab, dim)
                    self.wpe = nn.Embedding(block, dim)

                def forward(self, idx):
                    b, t = idx.size()
                    pos = torch.arange(0, t, dtype=torch.long)  # error
                    return self.wte(idx) + self.wpe(pos)

            model.cuda()
            """,
            note="positional ids into an embedding",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn
            from mylib.layers import GatedBlock

            class Model(nn.Module):
                def __init__(self, sizes, vectors):
                    super().__init__()
                    layers = []
                    for a, b in zip(sizes, sizes[1:]):
                        layers.append(nn.Linear(a, b))
                    self.body = nn.Sequential(*layers)
                    self.emb = nn.Embedding.from_pretrained(vectors)
                    self.gate = GatedBlock(sizes[-1])

                def forward(self, x, idx):
                    h = self.body(torch.randn(x.shape))  # error
                    e = self.emb(torch.arange(idx.size(1)))  # error
                    g = self.gate(x)
                    return g * torch.ones(g.shape[0], 1)  # error

            model.cuda()
            """,
            note="modules with weights: `nn.Sequential(*layers)` of a list built in `__init__`, "
            "`nn.Embedding.from_pretrained`, a layer class imported from another package",
        ),
        Good(
            """
            import torch
            import torch.nn as nn
            from transformers import AutoTokenizer

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
                    self.blocks = nn.Sequential(*[nn.ReLU(), nn.Dropout()])

                def forward(self, x, text):
                    ids = self.tokenizer(text)
                    h = self.blocks(torch.randn(3, 4))
                    return ids, h

            model.cuda()
            """,
            note="a tokenizer is no layer; a Sequential of layers without weights stays where its input is",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            def evaluate(model):
                batch = torch.randn(8, 10)  # error
                with torch.no_grad():
                    return model(batch)

            def main():
                device = "cuda" if torch.cuda.is_available() else "cpu"
                model = nn.Linear(10, 2).to(device)
                evaluate(model)
            """,
            note="a driver that takes only the model builds a CPU batch; the file moves its model to the device",
        ),
        Good(
            """
            import torch
            import torch.nn as nn

            def evaluate(model):
                batch = torch.randn(8, 10)
                with torch.no_grad():
                    return model(batch)

            def main():
                evaluate(nn.Linear(10, 2))
                torch.cuda.synchronize()
            """,
            note="the model handed to the driver is never moved: its weights stay with the CPU batch",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Attention(nn.Module):
                def forward(self, q, k, v):
                    T = q.size(-2)
                    att = q @ k.transpose(-2, -1)
                    causal = torch.tril(torch.ones(T, T))  # error
                    att = att.masked_fill(causal == 0, float("-inf"))
                    return F.softmax(att, dim=-1) @ v

            model.cuda()
            """,
            note="causal mask via torch.ones + tril",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Pad(nn.Module):
                def forward(self, x):
                    B = x.shape[0]
                    cls = torch.zeros(B, 1, x.shape[2])  # error
                    return torch.cat([cls, x], dim=1)

            model.cuda()
            """,
            note="passed with a device tensor to torch.cat",
        ),
        Bad(
            """
            import torch
            from torch import Tensor

            def sequence_mask(lengths: Tensor, max_len: int) -> Tensor:
                steps = torch.arange(max_len)  # error
                return steps.unsqueeze(0) < lengths.unsqueeze(1)

            model.cuda()
            """,
            note="a helper whose parameter is annotated Tensor",
        ),
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def clip_loss(image_features, text_features):
                logits = image_features @ text_features.t()
                labels = torch.arange(image_features.shape[0])  # error
                return F.cross_entropy(logits, labels)

            model.cuda()
            """,
            note="CPU targets meet logits computed from a parameter whose .shape is read",
        ),
        Bad(
            """
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.weight = nn.Parameter(torch.ones(dim))

                def forward(self, x):
                    offset = torch.linspace(0, 1, x.shape[-1])  # error
                    return x * self.weight + offset.to(x.dtype)

            model.cuda()
            """,
            note=".to(dtype) changes the type, not the device",
        ),
        Bad(
            """
            import torch

            def spectrogram(wave: torch.Tensor, n_fft=400):
                window = torch.hann_window(n_fft)  # error
                return torch.stft(wave.float(), n_fft, window=window, return_complex=True).abs()

            def bias_for(x):
                noise = torch.randn(x.shape)  # error
                x += noise
                return x

            model.cuda()
            """,
            note="a window passed with the input; an augmented assignment",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def forward(self, x, mask=None):
                    if mask is None:
                        mask = torch.ones(x.shape[0], x.shape[1])  # error
                    return (x * mask[..., None]).sum(1)

            model.cuda()
            """,
            note="a default mask made on one branch",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Masked(nn.Module):
                def forward(self, x, lengths):
                    T = x.size(1)
                    mask = torch.arange(T, device=x.device)[None] < lengths[:, None]
                    pos = torch.arange(T, device=lengths.device)
                    return x * mask.unsqueeze(-1) + pos[None, :, None]
            """,
            note="device= given",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    a = torch.zeros_like(x)
                    b = x.new_zeros(x.shape[0], 4)
                    c = torch.ones_like(x[:, :1])
                    return torch.cat([x + a, b, c], dim=1)
            """,
            note="*_like factories and new_* follow the tensor",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, lengths):
                    T = x.size(1)
                    steps = torch.arange(T).to(x.device)
                    mask = steps[None] < lengths[:, None]
                    causal = torch.ones(T, T).tril().cuda()
                    ids = torch.arange(T)
                    ids = ids.type_as(lengths)
                    return x * mask[..., None] + x.masked_fill(causal == 0, 0.0) + ids
            """,
            note="moved with .to/.cuda/.type_as before meeting (also by re-assignment)",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(block_size, block_size)))
                    self.register_buffer("pos", torch.arange(block_size))

                def forward(self, x):
                    T = x.size(1)
                    return x.masked_fill(self.causal[:T, :T] == 0, 0.0) + self.pos[:T, None]
            """,
            note="buffers registered in __init__ move with the module",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Pick(nn.Module):
                def forward(self, x, labels):
                    B = x.shape[0]
                    picked = x[torch.arange(B), labels]
                    rows = torch.randperm(B)
                    shuffled = x[rows]
                    return picked.sum() + shuffled.sum()
            """,
            note="index tensors used only for indexing",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    scale = torch.tensor(0.5)
                    zero = torch.zeros(())
                    eps = torch.full((), 1e-6)
                    return (x * scale + zero) / (x.norm() + eps) + torch.tensor(3)
            """,
            note="0-dim CPU tensors mix with tensors on any device",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    grid = torch.arange(8)
                    print(grid.tolist(), grid.shape, len(grid), grid.sum().item())
                    n = int(torch.randint(0, 4, (1,)).item())
                    return x[:, :n]
            """,
            note="factory values that only meet print, .tolist(), .item(), .shape, len()",
        ),
        Good(
            """
            import torch

            def make_causal_mask(T):
                return torch.ones(T, T).tril() == 0

            def positions(n, offset):
                return torch.arange(n) + offset
            """,
            note="functions that receive no tensor: the caller decides where the result goes",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.device(x.device):
                        pos = torch.arange(x.shape[1])
                        mask = torch.ones(x.shape[1], x.shape[1]).tril()
                    return x.masked_fill(mask == 0, 0.0) + pos
            """,
            note="factories under `with torch.device(...)` follow that device",
        ),
        Good(
            """
            import torch

            class Fn(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, k):
                    weights = torch.ones(k)
                    ctx.save_for_backward(weights)
                    return x.clone()

            def cpu_helper(n, steps):
                grid = torch.linspace(0, 1, steps)
                return grid * n
            """,
            note="autograd.Function forward with ctx; a helper without tensor parameters",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.ReLU()

                def forward(self, x, n_layers: int, scale=2.0):
                    ramp = torch.arange(n_layers) * scale
                    steps = self.act(ramp)
                    return x, steps
            """,
            note="combined only with non-tensors; a parameter-free submodule",
        ),
        Good(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, torch):
                    return x * torch.ones(3)

            def torch_free(x):
                zeros = x.new_zeros(x.shape[0])
                out = x.clone()
                out[:3] = torch.zeros(3)
                return out + zeros
            """,
            note="a parameter shadows torch; assignment into a slice copies across devices",
        ),
        Good(
            """
            import torch
            from torch.utils.data import Dataset

            class Clips(Dataset):
                def augment(self, clip):
                    return clip + 0.01 * torch.randn(clip.shape)

            def pad_collate(frames, lengths):
                mask = torch.arange(frames.shape[1])[None] < lengths[:, None]
                return frames * mask[..., None]
            """,
            note="dataset methods and collate functions build batches on the CPU by design",
        ),
        Good(
            """
            import torch
            import torchvision

            def _onnx_pad_mask(mask, rows: int):
                pad = torch.zeros(rows, mask.shape[1])
                return torch.cat([mask, pad])

            def pad_mask(mask, rows: int):
                if torchvision._is_tracing():
                    return _onnx_pad_mask(mask, rows)
                return torch.cat([mask, mask.new_zeros(rows, mask.shape[1])])

            model.cuda()
            """,
            note="a private helper only an export check's branch calls: the ONNX export runs on the CPU",
        ),
        Bad(
            """
            import torch
            import torchvision

            def _pad_mask(mask, rows: int):
                pad = torch.zeros(rows, mask.shape[1])  # error
                return torch.cat([mask, pad])

            def pad_mask(mask, rows: int):
                if torchvision._is_tracing():
                    return _pad_mask(mask, rows)
                return _pad_mask(mask, rows) * 2

            model.cuda()
            """,
            note="a call outside the export check: it runs with the model's tensors",
        ),
        Good(
            """
            import torch

            def guidance_embedding(w, dim=64):
                assert w.ndim == 1
                freqs = torch.exp(-torch.arange(dim // 2) / dim)
                return w[:, None] * freqs[None]

            def main():
                model = Net().cuda()
                model.fit()

            if __name__ == "__main__":
                main()
            """,
            note="a script's helper that nothing calls (a copy left behind) never runs",
        ),
        Good(
            files={
                "boxes.py": """
                    import torch

                    def masks_to_boxes(masks):
                        h, w = masks.shape[-2:]
                        ys = torch.arange(h, dtype=torch.float)
                        return (masks * ys[:, None]).flatten(1).max(-1)[0]
                    """,
                "panoptic.py": """
                    import torch
                    from boxes import masks_to_boxes

                    class Panoptic:
                        def __getitem__(self, i):
                            masks = torch.as_tensor(self.read(i))
                            return {"masks": masks, "boxes": masks_to_boxes(masks)}
                    """,
                "train.py": "model.cuda()\n",
            },
            note="a helper whose every caller in the project is a dataset's `__getitem__`: CPU data",
        ),
        Bad(
            files={
                "boxes.py": """
                    import torch

                    def masks_to_boxes(masks):
                        h, w = masks.shape[-2:]
                        ys = torch.arange(h, dtype=torch.float)  # error
                        return (masks * ys[:, None]).flatten(1).max(-1)[0]
                    """,
                "panoptic.py": """
                    import torch
                    from boxes import masks_to_boxes

                    class Panoptic:
                        def __getitem__(self, i):
                            masks = torch.as_tensor(self.read(i))
                            return {"masks": masks, "boxes": masks_to_boxes(masks)}
                    """,
                "head.py": """
                    from boxes import masks_to_boxes

                    class MaskHead:
                        def forward(self, mask_logits):
                            return masks_to_boxes(mask_logits > 0)
                    """,
                "train.py": "model.cuda()\n",
            },
            note="another caller, in a file that makes no tensor, hands it a model's output",
        ),
        Good(
            files={
                "tiling_pipeline.py": """
                    import torch

                    class TilingPipeline(DiffusionPipeline):
                        def guidance_embedding(self, w, dim=64):
                            assert w.ndim == 1
                            freqs = torch.exp(-torch.arange(dim // 2) / dim)
                            return w[:, None] * freqs[None]

                        def __call__(self, prompt):
                            return self.unet(self.encode(prompt).cuda())
                    """,
                "lcm_pipeline.py": """
                    import torch

                    class LCMPipeline(DiffusionPipeline):
                        # Copied from LatentConsistencyPipeline.guidance_embedding
                        def guidance_embedding(self, w, dim=64):
                            freqs = torch.exp(-torch.arange(dim // 2, device=w.device) / dim)
                            return w[:, None] * freqs[None]

                        def __call__(self, latents, scale):
                            return self.unet(latents, self.guidance_embedding(latents.new_full((1,), scale)))
                    """,
            },
            note="an uncalled method of a class that is no `nn.Module`, in a file outside any package, "
            "that no other file calls (the other pipeline calls its own copy)",
        ),
        Bad(
            """
            import torch
            from torch import nn

            class GPT(nn.Module):
                def forward(self, idx):
                    return self.head(self.wte(idx))

                def generate(self, idx, steps):
                    for _ in range(steps):
                        logits = self(idx)[:, -1]
                        nxt = torch.multinomial(logits.softmax(-1), 1)
                        idx = torch.cat([idx, nxt + torch.zeros(idx.shape[0], 1, dtype=torch.long)], 1)  # error
                    return idx

            model = GPT().cuda()
            """,
            note="an `nn.Module`'s method its file never calls is its API: users call it on the moved model",
        ),
        Good(
            """
            import torch

            class NestedDDIM(SchedulerMixin):
                def step(self, model_output: torch.Tensor, sample: torch.Tensor):
                    alpha = self.alphas[0]
                    if self.nested and len(model_output) > 1:
                        alpha = torch.tensor([self.shifted(alpha, s) for s in self.scales])
                    if len(model_output) > 1:
                        return [a * o + s for o, s, a in zip(model_output, sample, alpha)]
                    return alpha * model_output + sample

                def add(self, x: torch.Tensor, bias: torch.Tensor):
                    if isinstance(x, (list, tuple)):
                        shift = torch.ones(len(x))
                        x = x + shift
                        return [t + b for t, b in zip(x, bias)]
                    return x + bias

                def __call__(self, outputs, latents, bias):
                    return self.add(self.step(outputs, latents), bias)

            torch.device("cuda")
            """,
            note="a value made for the list form of a tensor-or-list parameter (`isinstance`, or `len(x) > 1` "
            "where the function walks `x` element by element)",
        ),
        Bad(
            """
            import torch

            def weight_frames(frames: torch.Tensor):
                if len(frames) > 1:
                    ramp = torch.linspace(0, 1, len(frames))  # error
                    return frames * ramp[:, None, None]
                return frames

            torch.device("cuda")
            """,
            note="`len(x) > 1` alone is a tensor's first dimension",
        ),
        Good(
            """
            import numpy as np
            import torch
            import torch.nn.functional as F

            def extract_energy(waveform: torch.Tensor, n_fft: int = 1024):
                basis = torch.FloatTensor(np.eye(n_fft)[:, None, :])
                spectrum = F.conv1d(waveform, basis)
                return torch.norm(spectrum, dim=1).squeeze(0).numpy()

            def synthesize(path, units, speaker, device="cuda"):
                f0_model = load_pitch_model(path).to(device)
                tokens = torch.LongTensor(units).to(device)
                speaker_id = torch.LongTensor([speaker])
                return f0_model.inference(tokens, speaker_id)
            """,
            note="`.numpy()` of what the tensors compute: CPU code; a method torch.Tensor lacks is a model's",
        ),
        Bad(
            """
            import torch
            import torch.nn.functional as F

            def energy(waveform: torch.Tensor):
                basis = torch.ones(3, 1, 4)  # error
                spectrum = F.conv1d(waveform, basis)
                return torch.norm(spectrum, dim=1).cpu().numpy()

            def synthesize(path, units, speaker, device="cuda"):
                f0_model = load_pitch_model(path).to(device)
                tokens = torch.LongTensor(units).to(device)
                speaker_id = torch.LongTensor([speaker])  # error
                return f0_model.inference(tokens.masked_fill(tokens < 0, 0) + speaker_id)
            """,
            note="moved to the CPU before `.numpy()`: the tensors may be on the device; arithmetic still meets",
        ),
    ]

    #: A project that never names an accelerator runs everything on the CPU.
    project_tokens = ACCELERATOR_TOKENS

    @classmethod
    def keep_in_project(cls, project, finding) -> bool:
        if not project_uses_accelerator(project, finding.path):
            return False
        facts = project.facts.get(finding.path, {}).get(cls.code, {})
        at = [finding.location.line, finding.location.column]
        fact = next((f for f in facts.get("unreferenced", ()) if f["at"] == at), None)
        # A helper its own file never calls: its callers, if any, are in other files.
        return fact is None or not off_device_path(project, finding.path, fact, cls.code)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.placement: Placement = ctx.analysis(Placement)
        self._reported: set[int] = set()

    def finish(self) -> None:
        for name in self.placement.imported_names_called_in_data_loading():
            self.add_fact("cpu_calls", name)
        try:
            for meeting, setup in self.placement.meetings():
                self._report(meeting, setup)
        except RecursionError:
            return  # a pathological expression (libcst's visitors recurse too); stay quiet

    # -- reporting ----------------------------------------------------------------------------
    def _report(self, meeting: Meeting, setup: FlowSetup) -> None:
        origin = meeting.cpu.origin
        if id(origin) in self._reported:
            return  # a helper's tensor met in its caller is reported once
        if self.placement.meets_only_a_list(meeting):
            return  # made for the list form of a tensor-or-list parameter
        self._reported.add(id(origin))
        home = self.placement.home_of(origin, meeting.body)
        factory = self.ctx.module.code_for_node(origin.func)
        line = self.ctx.position(meeting.node)[0]
        where = self._where(home)
        met = f"at line {line}" if meeting.body is home else f"at line {line} in {self._where(meeting.body)}"
        root = meeting.root
        reachable = meeting.body is home and _is_dotted_name(root) and not (root.startswith("self.") and root[5:] in setup.self_modules)
        short = (self.ctx.qualname(origin.func) or factory).rpartition(".")[2]
        if reachable:
            advice = f"pass `device={root}.device`"
            if short in NEW_TWINS:
                twin = "new_tensor" if short == "tensor" else f"new_{short}"
                advice += f" (or use `{root}.{twin}(...)`)"
        elif meeting.root.startswith("self.") or not meeting.other.isidentifier():
            advice = "pass `device=` with the model's device"
        else:
            advice = f"pass `device=` with the device of `{meeting.other}`"
        fix = None
        if reachable and short not in ("normal",) and origin.func is not None and not short.endswith("Tensor"):
            safety = UNSAFE if short in RANDOM_FACTORIES else SAFE
            fix = NodeFix(f"Add `device={root}.device`", safety, ((origin, with_keyword(origin, "device", f"{root}.device")),))
        self.report(
            origin,
            f"`{factory}(...)` creates a CPU tensor in {where}; it meets `{meeting.other}` {met} — {advice}",
            fix=fix,
        )
        if type(home) is cst.FunctionDef:
            kind = "function" if self.placement.is_unreferenced(home) else "method" if self.placement.is_unreferenced_method(home) else None
            if kind is not None:
                at = list(self.ctx.position(origin)[:2])
                fact = {"at": at, "function": home.name.value, "kind": kind, "script": "__main__" in self.ctx.text}
                if kind == "method":
                    fact["class"] = self.placement.class_of(home).name.value
                self.add_fact("unreferenced", fact)

    def _where(self, body: Optional[cst.CSTNode]) -> str:
        if type(body) is not cst.FunctionDef:
            return "script code"
        if self.placement.is_forward(body):
            return "forward"
        return f"`{body.name.value}()`"


# -- helpers ----------------------------------------------------------------------------------

#: On a GPU these draw from the CUDA generator: same distribution, different numbers than on
#: the CPU, so moving them changes a seeded run's results (the fix is unsafe).
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson"})


def _is_dotted_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))
