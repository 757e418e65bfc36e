from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name
from torchlint.static.walker import iter_nodes

from torchlint.semantic.devices import (
    FACTORIES,
    FACTORY_NAMES,
    LEGACY_CONSTRUCTORS,
    NEW_TWINS,
    Flow,
    FlowSetup,
    Meeting,
    Module,
    annotation_text,
    is_literal,
    is_tensor_annotation,
    iter_params,
    joined_return,
    nested_scopes,
)
from torchlint.semantic.model import SemanticModel
from torchlint.semantic.parameters import SelfAttributes
from torchlint.semantic.values import GlobalName, Param, SelfAttr

from ._accelerators import ACCELERATOR_TOKENS, project_uses_accelerator
from ._calls import with_keyword

#: Names of calls that may make a CPU tensor: the factories, the legacy constructors, normal.
CREATING_NAMES = FACTORY_NAMES | {q.rpartition(".")[2] for q in LEGACY_CONSTRUCTORS} | {"normal"}

#: Parameter uses that show it is a tensor (numpy shares .shape and .dtype; the spec accepts them).
TENSOR_EVIDENCE_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim"})
TENSOR_EVIDENCE_METHODS = frozenset({"size", "dim"})
#: Calls that take a size or an int: a parameter passed to one is no tensor.
INT_CONSUMERS = frozenset({"range", "int", "float", "bool", "str"})


DATA_LOADING_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__"})
DATA_LOADING_BASES = ("Dataset", "Sampler", "DataPipe", "Collator", "Processor")
#: Classes named so prepare data (`Preprocessing`, `RandomTransform`, `Augmenter`).
PREPARING_CLASS_WORDS = ("Preprocess", "Transform", "Augment", "Tokeniz")
#: Functions that assemble a batch before it is moved (`get_batch` in nanoGPT-style scripts).
BATCH_BUILDERS = ("get_batch", "make_batch", "build_batch")
#: A file that changes the default device makes every factory follow it.
DEFAULT_DEVICE_SETTERS = ("set_default_device", "set_default_tensor_type")


#: Names that read as a model when something moves them to a device.
_MODEL_WORDS = ("model", "net", "encoder", "decoder", "generator", "discriminator", "classifier", "policy", "critic", "actor")


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
    tokens, speaker_id)`), and functions that want CPU index or length tensors
    (`pack_padded_sequence`, `ctc_loss` lengths, `tensor_split`, `*_for_cpu` kernels).

    A function other than `forward` is read only when one of its parameters is evidently a
    tensor (annotated `Tensor`, or its `.shape`, `.size()`, `.device`, `.dtype`, `.ndim` or
    `.dim()` is used), and only meetings with that parameter or values computed from it count.

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
    #: The error that proves it when the program runs (the device probe also names both lines).
    proven_by = (("RuntimeError", r"Expected all tensors to be on the same device"),)
    analyses = (SemanticModel,)
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
        return project_uses_accelerator(project, finding.path)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.model: SemanticModel = ctx.analysis(SemanticModel)
        self._enabled = not any(setter in ctx.text for setter in DEFAULT_DEVICE_SETTERS)
        self._class_info: dict[int, tuple[frozenset, frozenset]] = {}
        #: functions (and None: the module's own statements) that call something named like
        #: a factory, and the plain or `self.` names each function calls
        self._with_factories: set = set()
        self._called: dict[int, set[str]] = {}
        self._functions: list[tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = []
        #: for each plain name called in the file: how often, and how often its result is
        #: moved to a device right away (`name(...).cuda()`, `fabric.to_device(name(...))`)
        self._calls: dict[str, int] = {}
        self._moved: dict[str, int] = {}
        self._flows: dict[int, Optional[Flow]] = {}
        self._model_moved: Optional[bool] = None
        #: factory call -> the body (function or module) that made it
        self._homes: dict[int, cst.CSTNode] = {}
        self._reported: set[int] = set()
        #: what each function's body shows before its flow runs (read while visiting)
        self._scans: dict[int, _BodyScan] = {}
        #: nested functions of data-loading functions
        self._preparing: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self._method_class(node)
        enclosing = self.ctx.enclosing_function()
        if enclosing is not None and (id(enclosing) in self._preparing or _runs_in_data_loading(enclosing, None)):
            self._preparing.add(id(node))  # a helper nested in batch building builds batches too
        self._functions.append((node, cls))

    def _scan(self, function: cst.FunctionDef) -> _BodyScan:
        scan = self._scans.get(id(function))
        if scan is None:
            scan = self._scans[id(function)] = _BodyScan()
        return scan

    def _visiting_qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        found = self.ctx.qualname(expr)
        if found is None and type(expr) is cst.Name and expr.value in CREATING_NAMES:
            return self.model.torch_star_name(expr.value)
        return found

    def visit_Attribute(self, node: cst.Attribute) -> None:
        """`x.shape`, `x.device`...: evidence that `x` is a tensor in this function."""
        if type(node.value) is cst.Name and node.attr.value in TENSOR_EVIDENCE_ATTRIBUTES:
            function = self.ctx.enclosing_function()
            if function is not None:
                self._scan(function).evident.add(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        """Remember which functions call something named like a factory, and which names each
        calls (a function calling one that makes tensors reads what it returns)."""
        func = node.func
        function = self.ctx.enclosing_function()
        if function is not None:
            _scan_call(node, self._visiting_qualname, self._scan(function))
        short = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if short is None:
            return
        if type(func) is cst.Name:
            self._calls[short] = self._calls.get(short, 0) + 1
        elif _on_self(func):
            key = f"self.{short}"
            self._calls[key] = self._calls.get(key, 0) + 1
        if short in ("cuda", "to") or short in MOVING_FUNCTIONS:
            moved = _moved_call(node)
            if moved is not None:
                self._moved[moved] = self._moved.get(moved, 0) + 1
        if short in CREATING_NAMES:
            self._with_factories.add(id(function) if function is not None else None)
        elif function is not None:
            self._called.setdefault(id(function), set()).add(short)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`y = name(...)` whose next use in the block is `y = y.to(device)`: moved right away."""
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name or type(node.value) is not cst.Call:
            return
        callee = _called(node.value.func)
        if callee is not None and _next_use_moves(self.ctx.ancestors, node, node.targets[0].target.value):
            self._moved[callee] = self._moved.get(callee, 0) + 1

    def finish(self) -> None:
        if not self._enabled or not self._with_factories:
            return
        makers = {node.name.value for node, _ in self._functions if id(node) in self._with_factories}
        try:
            for node, cls in self._functions:
                if node.name.value == "__init__":
                    continue
                if id(node) in self._with_factories or self._called.get(id(node), set()) & makers:
                    self._check_function(node, cls)
            if None in self._with_factories:
                self._check_script()
        except RecursionError:
            return  # a pathological expression (libcst's visitors recurse too); stay quiet

    def _check_function(self, node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> None:
        flow = self._flow(node, cls)
        if flow is None:
            return
        for meeting in flow.meetings.values():
            self._report(meeting, flow.setup)

    def _check_script(self) -> None:
        """The module's own statements: a training script's loop at top level."""
        module = self.ctx.module
        setup = FlowSetup({}, self._qualname_in(None), module_of=self._module_of(None, None), returns=self._returns(None), body=module)
        flow = self._run(setup, module)
        for meeting in flow.meetings.values():
            self._report(meeting, setup)

    def _flow(self, node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> Optional[Flow]:
        """The device flow of one function, read once (callers read what it returns)."""
        key = id(node)
        if key in self._flows:
            return self._flows[key]
        self._flows[key] = None  # a recursive call reads nothing back
        setup = self._setup(node, cls)
        flow = self._run(setup, node.body) if setup is not None else None
        self._flows[key] = flow
        return flow

    def _run(self, setup: FlowSetup, body) -> Flow:
        flow = Flow(setup)
        if isinstance(body, cst.Module):
            for statement in body.body:
                flow.statement(statement)
        else:
            flow.run(body)
        for origin in flow.made:
            self._homes.setdefault(id(origin), setup.body)
        return flow

    def _setup(self, node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> Optional[FlowSetup]:
        qualname = self._qualname_in(node)
        scan = self._scans.get(id(node)) or _BodyScan()
        if cls is not None and _is_module_forward(self, node, cls):
            setup = self._forward_setup(node, cls, scan, qualname)
        elif _runs_in_data_loading(node, cls) or id(node) in self._preparing:
            return None
        elif self._every_caller_moves_the_result(node.name.value if cls is None else f"self.{node.name.value}"):
            return None  # CPU preprocessing: `preprocess(x).cuda()`, `fabric.to_device(jitter(b))`
        else:
            setup = self._helper_setup(node, scan, qualname)
            if _numpy_of_tensor_params(node, set(setup.tensor_params)):
                return None  # `.numpy()` of what its tensors compute, with no `.cpu()`: they are CPU tensors
        class_name = cls.name.value if cls is not None else None
        setup.module_of = self._module_of(node, class_name)
        setup.returns = self._returns(class_name)
        setup.body = node
        if setup.self_name is None and class_name is not None:
            params = list(iter_params(node))
            setup.self_name = params[0].name.value if params else None
        return setup

    # -- what the semantic model answers -------------------------------------------------------
    def _module_of(self, function: Optional[cst.FunctionDef], class_name: Optional[str]):
        """A callee or receiver the semantic model resolves to modules only: a parameter every
        caller passes a model to, a module-level model, `self.<submodule>`."""
        model = self.model
        info = model.function_info(function) if function is not None else None
        local = self.ctx.bindings_of(function) if function is not None else ()

        def module_of(expr: cst.BaseExpression) -> Optional[Module]:
            value = None
            if isinstance(expr, cst.Name):
                name = expr.value
                if info is not None and name in info.params:
                    index = info.params.index(name)
                    if not (info.is_method and index == 0):
                        value = Param(info.owner, info.node.name.value, index, name)
                elif name not in local:
                    value = GlobalName(name)
            elif (
                class_name is not None
                and info is not None
                and info.is_method
                and isinstance(expr, cst.Attribute)
                and isinstance(expr.value, cst.Name)
                and expr.value.value == info.params[0]
            ):
                value = SelfAttr(class_name, expr.attr.value)
            if value is None:
                return None
            resolved = model.resolve(value)
            if resolved and all(model.is_module(v) for v in resolved):
                # A model handed to a driver (`evaluate(model)`) in a file that moves its
                # models to the device: it is on the device, and a CPU batch given to it meets
                # its weights.
                moved = type(value) is Param and self._moves_a_model()
                return Module(dotted_name(expr) or "", moved)
            return None

        return module_of

    def _moves_a_model(self) -> bool:
        """Whether this file moves a model to a device: `.cuda()` or `.to(...)` on a module it
        builds (`Net().to(device)`, `nn.Linear(...).cuda()`) or on a name that reads as one
        (`model`, `net`, `encoder`, `generator`, ...)."""
        if self._model_moved is None:
            self._model_moved = any(
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value in ("cuda", "to")
                and (node.func.attr.value == "cuda" or bool(node.args))
                and self._reads_as_model(node.func.value)
                for node in iter_nodes(self.ctx.module)
            )
        return self._model_moved

    def _reads_as_model(self, receiver: cst.BaseExpression) -> bool:
        if type(receiver) is cst.Call:
            qualname = self.ctx.qualname(receiver.func) or ""
            called = dotted_name(receiver.func) or ""
            return qualname.startswith("torch.nn.") or called[:1].isupper() or called.rpartition(".")[2][:1].isupper()
        name = (dotted_name(receiver) or "").rpartition(".")[2].lower()
        return any(word in name for word in _MODEL_WORDS)

    def _returns(self, class_name: Optional[str]):
        """What a call of a function (or `self.` method) of this file returns, in the device domain."""
        model = self.model

        def returns(call: cst.Call):
            func = call.func
            info = None
            if isinstance(func, cst.Name):
                info = model.functions.get(("", func.value))
            elif class_name is not None and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                info = model.method(class_name, func.attr.value)
                if info is not None and (not info.is_method or not info.params or info.params[0] != func.value.value):
                    info = None if func.value.value != "self" else info
            if info is None or info.node.name.value == "__init__":
                return None
            owner = model.classes.get(info.owner) if info.owner else None
            flow = self._flow(info.node, owner.node if owner is not None else None)
            return joined_return(flow.returned) if flow is not None else None

        return returns

    def _every_caller_moves_the_result(self, name: str) -> bool:
        """Every call of the module-level function `name` (or of the method, as `self.name`)
        in this file hands its result straight to a move: `name(...).cuda()`,
        `name(...).to(...)`, `x.to_device(name(...))`, or `y = name(...)` whose next use is
        `y = y.to(...)`."""
        if self.ctx.text.count(f"{name}(") < (1 if name.startswith("self.") else 2):
            return False  # only its own `def name(`: no caller in this file
        calls, moved = self._calls, self._moved
        return calls.get(name, 0) > 0 and moved.get(name, 0) == calls[name]

    # -- setting up ---------------------------------------------------------------------------
    def _method_class(self, node: cst.FunctionDef) -> Optional[cst.ClassDef]:
        ancestors = self.ctx.ancestors
        if len(ancestors) >= 2 and isinstance(ancestors[-1], cst.IndentedBlock) and isinstance(ancestors[-2], cst.ClassDef):
            return ancestors[-2]
        return None

    def _qualname_in(self, function: Optional[cst.FunctionDef]):
        local = self.ctx.bindings_of(function) if function is not None else frozenset()

        def resolve(expr: cst.BaseExpression) -> Optional[str]:
            resolved = self.ctx.qualname(expr)
            dotted = dotted_name(expr) or ""
            if dotted.partition(".")[0] in local:
                return None
            if resolved is None and isinstance(expr, cst.Name) and expr.value in CREATING_NAMES:
                return self.model.torch_star_name(expr.value)  # `from torch import *`
            return resolved

        return resolve

    def _forward_setup(self, node: cst.FunctionDef, cls: cst.ClassDef, scan: _BodyScan, qualname) -> FlowSetup:
        params = list(iter_params(node))
        self_name = params[0].name.value if params else None
        not_tensors = scan.int_like
        tensor_params = {}
        for param in params[1:]:
            name = param.name.value
            if name in not_tensors:
                continue
            annotation = annotation_text(self.ctx.module, param)
            if annotation is not None and not is_tensor_annotation(annotation):
                continue
            if param.default is not None and (is_literal(param.default) and not _is_none(param.default)):
                continue
            if param.default is not None and isinstance(param.default, (cst.Tuple, cst.List, cst.Dict)):
                continue
            tensor_params[name] = name
        tensors, modules = self._self_attributes(cls)
        return FlowSetup(tensor_params, qualname, tensors, modules, self_name)

    def _helper_setup(self, node: cst.FunctionDef, scan: _BodyScan, qualname) -> FlowSetup:
        evident = scan.evident
        tensor_params = {}
        for param in iter_params(node):
            name = param.name.value
            annotation = annotation_text(self.ctx.module, param)
            if (annotation is not None and is_tensor_annotation(annotation)) or name in evident:
                tensor_params[name] = name
        tensor_params.pop("self", None)
        tensor_params.pop("cls", None)
        return FlowSetup(tensor_params, qualname)

    def _self_attributes(self, cls: cst.ClassDef) -> tuple[frozenset, frozenset]:
        """Parameters/buffers and parameter-holding submodules that a class's methods assign."""
        cached = self._class_info.get(id(cls))
        if cached is not None:
            return cached
        collector = SelfAttributes(self.ctx, cls)
        result = (frozenset(collector.tensors), frozenset(collector.modules - collector.methods))
        self._class_info[id(cls)] = result
        return result

    # -- reporting ----------------------------------------------------------------------------
    def _report(self, meeting: Meeting, setup: FlowSetup) -> None:
        origin = meeting.cpu.origin
        if id(origin) in self._reported:
            return  # a helper's tensor met in its caller is reported once
        self._reported.add(id(origin))
        home = self._homes.get(id(origin), meeting.body)
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

    def _where(self, body: Optional[cst.CSTNode]) -> str:
        if not isinstance(body, cst.FunctionDef):
            return "script code"
        cls = next((c for node, c in self._functions if node is body), None)
        if cls is not None and _is_module_forward(self, body, cls):
            return "forward"
        return f"`{body.name.value}()`"


# -- helpers ----------------------------------------------------------------------------------

#: On a GPU these draw from the CUDA generator: same distribution, different numbers than on
#: the CPU, so moving them changes a seeded run's results (the fix is unsafe).
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson"})


#: Calls that put their argument on a device (Lightning's `fabric.to_device`, accelerate's
#: `send_to_device`, a project's `move_to(...)`).
MOVING_FUNCTIONS = ("to_device", "send_to_device", "move_to", "move_to_device")


def _numpy_of_tensor_params(function: cst.FunctionDef, params: set[str]) -> bool:
    """The function calls `.numpy()` on a value computed from its tensor parameters without
    moving it to the CPU first (`energy = torch.norm(spec, dim=1).numpy()`): `.numpy()` raises
    on a device tensor, so this code only ever runs on CPU tensors (audio or image
    preprocessing), and its CPU factories meet nothing on a device."""
    if not params:
        return False
    derived = set(params)
    assignments = [
        inner for inner in iter_nodes(function.body, skip=nested_scopes()) if type(inner) in (cst.Assign, cst.AugAssign, cst.AnnAssign)
    ]
    for _ in range(2):  # a loop may use a name before the statement that derives it
        for assign in assignments:
            value = assign.value
            if value is None or not _mentions(value, derived):
                continue
            targets = [t.target for t in assign.targets] if type(assign) is cst.Assign else [assign.target]
            for target in targets:
                derived.update(n.value for n in iter_nodes(target) if type(n) is cst.Name)
    for inner in iter_nodes(function.body, skip=nested_scopes()):
        if type(inner) is not cst.Call or inner.args or type(inner.func) is not cst.Attribute or inner.func.attr.value != "numpy":
            continue
        receiver = inner.func.value
        if not _moves_off_device(receiver) and _mentions(receiver, derived):
            return True
    return False


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return any(type(n) is cst.Name and n.value in names for n in iter_nodes(expr))


def _moves_off_device(expr: cst.BaseExpression) -> bool:
    """`x.cpu()`, `x.detach().cpu()`, `x.to("cpu")` somewhere in a method chain."""
    while type(expr) is cst.Call and type(expr.func) is cst.Attribute:
        method = expr.func.attr.value
        if method == "cpu" or (method == "to" and any(type(a.value) is cst.SimpleString and "cpu" in a.value.value for a in expr.args)):
            return True
        expr = expr.func.value
    return False


def _moved_call(node: cst.Call) -> Optional[str]:
    """`name` when `node` moves the result of `name(...)` to a device right away."""
    func = node.func
    inner = None
    if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to") and isinstance(func.value, cst.Call):
        inner = func.value
    elif (func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")) in MOVING_FUNCTIONS:
        first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
        inner = first if isinstance(first, cst.Call) else None
    return _called(inner.func) if inner is not None else None


def _on_self(func: cst.BaseExpression) -> bool:
    """`self.name`: a method of the class the call is written in."""
    return type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"


def _called(func: cst.BaseExpression) -> Optional[str]:
    """The key `_calls` counts a call under: `name` for `name(...)`, `self.name` for `self.name(...)`."""
    if type(func) is cst.Name:
        return func.value
    if _on_self(func):
        return f"self.{func.attr.value}"
    return None


def _names_a_destination(call: cst.Call) -> bool:
    """`.to(device=...)`, `.to(device)`, `.to(other)`: not `.to(torch.float16)` / `.to(dtype=...)`."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return True
            continue
        if not (dotted_name(arg.value) or "").startswith("torch."):
            return True
    return False


#: How many statements after `y = f(...)` the move `y = y.to(...)` may come.
_MOVE_LOOKAHEAD = 6


def _next_use_moves(ancestors: list, assign: cst.Assign, name: str) -> bool:
    """The first of the next few statements of the block that mentions `name` is
    `name = name.to(...)` or `name = name.cuda()`."""
    if len(ancestors) < 2 or type(ancestors[-1]) is not cst.SimpleStatementLine or len(ancestors[-1].body) != 1:
        return False
    line, block = ancestors[-1], ancestors[-2]
    statements = list(block.body) if type(block) in (cst.IndentedBlock, cst.Module) else []
    start = next((i for i, s in enumerate(statements) if s is line), len(statements)) + 1
    # A move "right away" is a few statements later; looking further would cost a walk of
    # the rest of the block for every assignment of a call.
    for statement in statements[start : start + _MOVE_LOOKAHEAD]:
        if not _mentions(statement, {name}):
            continue
        if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1 or type(statement.body[0]) is not cst.Assign:
            return False
        moved = statement.body[0]
        value = moved.value
        return (
            len(moved.targets) == 1
            and type(moved.targets[0].target) is cst.Name
            and moved.targets[0].target.value == name
            and type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and type(value.func.value) is cst.Name
            and value.func.value.value == name
            and (value.func.attr.value == "cuda" or (value.func.attr.value == "to" and _names_a_destination(value)))
        )
    return False


def _is_dotted_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _runs_in_data_loading(node: cst.FunctionDef, cls: Optional[cst.ClassDef]) -> bool:
    """Datasets, samplers, collate and batch-building functions, and preprocessing classes
    build their tensors on the CPU by design."""
    name = node.name.value
    if name in DATA_LOADING_METHODS or "collate" in name.lower() or name.startswith(BATCH_BUILDERS):
        return True
    if cls is None:
        return False
    if cls.name.value.endswith(DATA_LOADING_BASES) or any(word in cls.name.value for word in PREPARING_CLASS_WORDS):
        return True
    return any((dotted_name(base.value) or "").endswith(DATA_LOADING_BASES) for base in cls.bases)


def _is_module_forward(rule: Rule, node: cst.FunctionDef, cls: cst.ClassDef) -> bool:
    """`forward` of a class with bases; not autograd.Function's static `forward(ctx, ...)`."""
    if node.name.value != "forward" or not cls.bases:
        return False
    for decorator in node.decorators:
        if dotted_name(decorator.decorator) in ("staticmethod", "classmethod"):
            return False
    for base in cls.bases:
        qualname = rule.ctx.qualname(base.value) or dotted_name(base.value) or ""
        if qualname.endswith("Function"):
            return False
    params = list(iter_params(node))
    return bool(params) and params[0].name.value != "ctx"


@dataclass
class _BodyScan:
    """What one pass over a function body tells before the flow runs."""

    makes_tensors: bool = False  # calls a factory at all
    evident: set = field(default_factory=set)  # names whose .shape/.size()/.device/... is read
    int_like: set = field(default_factory=set)  # names passed to range(), int() or as a size


def _scan_call(node: cst.Call, qualname, scan: _BodyScan) -> None:
    func = node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in TENSOR_EVIDENCE_METHODS:
        scan.evident.add(func.value.value)
    short = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    if short is None:
        return
    consumer = isinstance(func, cst.Name) and short in INT_CONSUMERS
    if short in FACTORY_NAMES and qualname(func) in FACTORIES:
        scan.makes_tensors = True
        consumer = short not in ("tensor", "as_tensor")
    if consumer:
        for arg in node.args:
            if isinstance(arg.value, cst.Name):
                scan.int_like.add(arg.value.value)
            elif isinstance(arg.value, (cst.Tuple, cst.List)):
                scan.int_like.update(e.value.value for e in arg.value.elements if isinstance(e.value, cst.Name))


