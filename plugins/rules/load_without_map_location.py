from __future__ import annotations

import libcst as cst

from torchlint.fix import SAFE, UNSAFE, NodeFix
from torchlint.rule import Bad, Good, Rule
from torchlint.semantic.program_facts import is_test_path
from torchlint.semantic.checkpoint_flow import CheckpointFlow
from torchlint.semantic.checkpoint_formats import MIN_KEYS, format_writers, keys_read, stores_cpu_tensors
from torchlint.semantic.checkpoints import (
    LOAD_FUNCTIONS,
    CheckpointNames,
    availability_guarded,
    bound_path_text,
    facts_in_project,
    fetched_from_elsewhere,
    file_name_pattern,
    load_fact_at,
    loaded_into_model,
    maps_another_load,
    offers_a_cpu_path,
    offloads_state_to_cpu,
    path_text,
    saves_in_project,
    writers_of,
    writes_only_cpu_checkpoints,
    written_by_this_process,
)
from torchlint.semantic.loaded import (
    annotated_tensor_free,
    device_in_scope,
    feeds_load_state_dict,
    in_dataset_class,
    read_as_numpy,
    says_it_holds_model_state,
)

from ._accelerators import ACCELERATOR_TOKENS, project_uses_accelerator
from ._calls import argument, has_star_args, with_keyword
from .load_without_weights_only import missing_weights_only, weights_only_fixable, weights_only_risk

#: TL302, load-without-weights-only: a call missing both keywords is one finding, this rule's.
WEIGHTS_ONLY_CODE = "TL302"

#: How a finding that also carries TL302's claim begins (see `errors_proving`).
BOTH_KEYWORDS = "`torch.load` without `map_location` or `weights_only`"


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` calls (a bare `load(...)` after `from torch import *` too) that
    pass no `map_location`, by keyword or as the second positional argument.

    ## Why is this bad?
    Without `map_location`, every tensor is restored to the device it was saved from. A
    checkpoint written on `cuda:0` then fails to load on a CPU-only machine ("Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False"), or piles
    every rank's weights onto GPU 0 in multi-GPU jobs.

    Reported by default where the file itself says the checkpoint may be read on a machine
    other than the one that wrote it: it chooses its device with a CPU arm (`"cuda" if
    torch.cuda.is_available() else "cpu"`, `if ...: device = torch.device("cpu")`), places
    things only under an accelerator test or flag (`if args.cuda:`), takes an option that turns
    the accelerator off or on (`--no-cuda`, `--cpu`), or passes `map_location` to another
    `torch.load` (its authors read checkpoints across devices; this one was missed); and where
    nothing says the load is other than model state: a result bound to a name that says what
    else it holds (`triples`, `shards`, `save_dict`) may hold no tensors, or tensors its writer
    already put on the CPU. Also reported, whatever the loading file says: a file the project
    writes from a script that runs on one GPU or not at all (`model = Net().cuda()` then
    `torch.save(...)`), read by code that is not such a script: it holds CUDA tensors wherever
    it is read. Every other load this rule would report is TL303's
    (`load-without-map-location-anywhere`), off by default. On 21 public libraries and
    frameworks with their test suites, reviewers who had not seen the rule judged 25 of this
    rule's 28 findings right, and 4 of 19 sampled loads of TL303's part (79 in all): those read
    files the project writes with CPU tensors, or reads back on the GPU that wrote them, which
    the loading file does not show.

    It is left alone where the devices necessarily exist or no accelerator is involved:
    - a load in a test module or test helper (`test_*.py`, `*_test.py`, `conftest.py`, a
      file under `test/`, `tests/` or `testing/`): tests read back what they or their fixtures
      just wrote, or the repository's own fixture files on the machines that made them, and a
      load that does fail there fails the test on its first run. On 20 public libraries with
      their test suites, reviewers who had not seen the rule judged every sampled load in a
      test wrong to flag (9 of 9);
    - a call that forwards `*args` or `**kwargs` (they may carry `map_location`);
    - a load inside a `Dataset` subclass, which reads caches it wrote itself on the CPU;
    - a round trip in one process: the same path (the same expression) saved before, in the
      same function, at module level, or in a function the script's main sequence calls
      before the one that loads (`train()` saves, then `test()` loads), or in a function that
      saves it and then calls the one that loads (`train()` saves and ends with `test()`);
    - the accelerator arm of `if torch.cuda.is_available():` that has a CPU `else`;
    - a file the project writes only from scripts that are CUDA-only by construction, read by
      one too (a `__main__` block, or GPU placement at module level; `.cuda()` or a `"cuda"` /
      `"cuda:0"` device named unconditionally; no CPU fallback such as `is_available` or
      `"cpu"`, no other accelerator, nothing of several GPUs such as `local_rank`,
      `set_device`, `DistributedDataParallel`): it is read on a GPU, as it was written. A
      pretrained file the project does not write is still reported;
    - a file in a folder that an earlier statement of the same block handed to a call as the
      folder it writes into (`convert(src, output_dir=out_dir)` then
      `torch.load(out_dir / "model.pth")`): this process wrote it (not a download or a copy);
    - a file under a temporary directory this run made (pytest's `tmp_path`/`tmpdir`
      fixtures, `tempfile.*`, or a name the function derives from them): this process wrote it;
    - a local cache: the load sits in one arm of an `if` whose test names the path, and the
      other arm computes it and saves it to that path;
    - what is loaded only ever goes to `torch.from_numpy(...)` or numpy: the file holds numpy
      arrays;
    - a file whose distributed state dicts are configured with CPU offload
      (`FullStateDictConfig(offload_to_cpu=True)`, `StateDictOptions(cpu_offload=True)`): the
      checkpoints it writes and reads back hold CPU tensors;
    - weights copied into a model class (`net = TransformerNet(); net.load_state_dict(sd)`)
      whose every save in the project follows a `.cpu()` of the model in the same block
      (`transformer.eval().cpu(); torch.save(transformer.state_dict(), path)`), when the load's
      path matches no save of its own;
    - a load returned from a function annotated with plain values only (`-> tuple[dict[str,
      str], list[str]]`) or numpy arrays (`-> np.ndarray`), or assigned to a name so annotated:
      the file holds no tensors;
    - a project none of whose checked files names an accelerator (`cuda`, `accelerator`,
      `xla`, `xpu`, `"mps"`): nothing in it can have saved a tensor on one;
    - a path the project only ever saves with a payload that holds no tensors, in any of its
      files: a numpy array, numbers, strings, lists or dicts of them, comprehensions whose
      elements are such values (`[t.numpy() for t in ...]`, `{k: v.tolist() for ...}`), or a
      name whose every binding and every `append`/`x[k] = ...` in that scope is one;
    - a path the project only ever saves from code that never speaks of devices (its file names
      no `cuda`, `device`, `gpu`, `accelerator`, `xla`, `xpu` or `mps`) with a payload that is
      not a parameter of the saving function: its tensors are on the CPU. A load matches a save
      by the same path expression or, failing that, by the same file name written to another
      folder (`destination / "train.pt"` in the preparing script, `data_dir / "train.pt"` where
      it is read; `f"{out}/f0_{rank}.pt"` and `f"{d}/f0_{r}.pt"` alike), followed through a
      local name assigned once;
    - a load that matches no save of the project, in a project whose every writer stores CPU
      tensors (each `torch.save` that may hold tensors follows a `.cpu()` or sits in code that
      never speaks of devices, and there is no writer the rule cannot read: a helper saving
      what its callers pass, `fabric.save`, a `save_checkpoint(...)`, `torch.save(*args)`):
      whichever writer made the file, it holds CPU tensors. A file the code visibly downloads
      or copies (the folder handed to a `download(..., output_dir=...)`, a path from
      `hf_hub_download(...)`) is not the project's and is still reported;
    - a load that matches no save by path and is not a download, whose result is read for at
      least two string keys (`state["model"]`, `state["args"]`, `"k" in state`,
      `state.get("k")`, also inside a function of the same file it is handed to) that are all
      keys of the checkpoint format of the project's writers, when every such writer stores
      CPU tensors: a dict spelled out (`{"model": ..., "args": ...}`, a name bound once to one
      plus its `state["k"] = ...` items, the dict `self.state_dict()` of the writer's class
      returns), moved by `move_to_cpu(...)` or by a `.cpu()` of its model, or written by code
      that never speaks of devices and loads no checkpoint without `map_location` (a converter
      may save again what it loaded, on the devices it was saved from), and saved by `torch.save` or handed to a saving helper of the
      project (a function named `save`, `save_*` or `*_save` whose parameter reaches
      `torch.save`, through other such helpers too). The file is one of that format, so one of
      those writers made it. One key is no signature: nearly every checkpoint has a `"model"`.

    When TL302 (`load-without-weights-only`) also runs and would report the same call, this
    rule's one finding names both keywords and TL302 stays quiet on that call.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu")     # or map_location=device
    ```

    ## Fix safety
    The fix adds `map_location=device` when a variable named `device` is in scope, else
    `map_location="cpu"`. It is safe when the loaded object goes straight into
    `load_state_dict(...)`, which copies every tensor onto the model's own devices anyway;
    not with `assign=True` (or an `assign` that is not the literal `False`, or `**kwargs`):
    the module then adopts the loaded tensors themselves, and a CUDA model would end up with
    CPU parameters. Elsewhere it is unsafe, because code may rely on tensors arriving on the
    GPU. When the
    finding names `weights_only` too, an unsafe fix also adds `weights_only=True` (not with a
    `pickle_module`); a safe one stays as it is, and TL302 offers `weights_only` once it has
    been applied.
    """

    code = "TL301"
    name = "load-without-map-location"
    summary = "`torch.load` without `map_location` only loads where the checkpoint was saved"
    triggers = ("load", "save")
    imports = ("torch",)
    #: A project that never names an accelerator cannot have saved a checkpoint on one.
    project_tokens = ACCELERATOR_TOKENS
    #: Which paths this file saves, and in which order its functions run (saved_before).
    analyses = (CheckpointFlow,)
    fix_safety = UNSAFE
    cases = [
        Good(
            """
            import numpy as np
            import torch

            def init_states(path) -> np.ndarray:
                model = Policy().cuda()
                return torch.load(path, weights_only=False)
            """,
            note="the function says it returns a numpy array: the file holds no tensors",
        ),
        Bad(
            """
            import torch
            state = torch.load("ckpt.pt")  # error
            if torch.cuda.is_available():
                model.cuda()
            """,
            fixed="""
            import torch
            state = torch.load("ckpt.pt", map_location="cpu")  # error
            if torch.cuda.is_available():
                model.cuda()
            """,
        ),
        Bad(
            """
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--no-cuda", action="store_true")
            parser.add_argument("--resume")

            def resume(model, args):
                model.load_state_dict(torch.load(args.resume))  # error
            """,
            note="an option turns the GPU off: the checkpoint of a GPU run is read where there is none",
        ),
        Bad(
            """
            import torch

            def load_vocoder(path):
                return torch.load(path, map_location="cpu")

            def load_generator(path, device="cuda"):
                return torch.load(path)["generator"].to(device)  # error
            """,
            note="the file maps its other load to the CPU: this one was missed",
        ),
        Bad(
            """
            import torch

            if torch.accelerator.is_available():
                for index in range(torch.accelerator.device_count()):
                    warm_up(index)
                device = torch.accelerator.current_accelerator()
            elif args.mps: device = "mps"
            else:
                device = torch.device("cpu")
            netG.load_state_dict(torch.load(args.netG))  # error
            """,
            note="a device chosen by an `if` whose last arm is the CPU",
        ),
        Bad(
            files={
                "train.py": """
                    import torch

                    model = Net().cuda()
                    torch.save(model.state_dict(), "best.pt")
                """,
                "predict.py": """
                    import torch

                    state = torch.load("best.pt")  # error
                """,
            },
            note="a GPU-only script of the project wrote the file: it holds CUDA tensors wherever it is read",
        ),
        Bad(
            files={
                "extract.py": """
                    import torch

                    model = Encoder().cuda()
                    features = []
                    for batch in loader:
                        features.append(model(batch.cuda()))
                    torch.save(features, "features.pt")
                    torch.save([p for p in model.parameters()], "params.pt")
                    torch.save(list(model.buffers()), "buffers.pt")
                """,
                "probe.py": """
                    import torch

                    features = torch.load("features.pt")  # error
                    params = torch.load("params.pt")  # error
                    buffers = torch.load("buffers.pt")  # error
                """,
            },
            note="lists filled with, or built from, CUDA tensors: the file holds tensors",
        ),
        Good(
            """
            import torch  # the training runs on cuda

            def restore(model, path):
                model.load_state_dict(torch.load(path)["model"])
            """,
            note="nothing in the file says it runs elsewhere than where the file was written: TL303's part",
        ),
        Good(
            """
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
            triples = torch.load(args.triples)
            shards = [torch.load(p) for p in paths]
            """,
            note="nothing says these hold model state: they may hold anything (TL303's part)",
        ),
        Good(
            """
            import torch  # trained on cuda

            if torch.distributed.is_available():
                setup_process_group()
            parser.add_argument(b"--cpu")
            state = torch.load(args.resume)
            """,
            note="an availability test of something other than a device, and a bytes option, choose no device",
        ),
        Good(
            """
            import torch

            if not torch.cuda.is_available():
                raise SystemExit("needs a GPU")
            model = Net().cuda()
            model.load_state_dict(torch.load("m.pt"))
            """,
            note="refusing to run without a GPU is no CPU path",
        ),
        Bad(
            """
            import torch as T
            from torch import load as tl
            state = T.load(path, weights_only=True)  # error
            weights = tl(path)  # error
            T.set_default_device("cuda" if T.cuda.is_available() else "cpu")
            """,
            note="aliases resolve like the real name",
        ),
        Bad(
            """
            from torch import *

            net = build().to("cuda" if cuda.is_available() else "cpu")
            weights = load("weights.pt")  # error
            """,
            note="`load` reached through `from torch import *`",
        ),
        Good(
            files={
                "build_vocab.py": """
                    import collections
                    import numpy as np
                    import torch

                    seen = collections.Counter()
                    for line in open("corpus.txt"):
                        seen.update(line.split())
                    words = ["<s>", "</s>"] + [w for w, n in seen.most_common() if n > 1]
                    index = {w: i for i, w in enumerate(words)}
                    torch.save({"words": words, "index": index, "counts": np.array([seen[w] for w in words])}, "vocab.pt")
                """,
                "fit.py": """
                    import torch

                    vocab = torch.load("vocab.pt")
                    model = Tagger(len(vocab["words"])).cuda()
                """,
            },
            note="the project's own script writes this file with lists, a dict and a numpy array built by comprehensions",
        ),
        Good(
            files={
                "export.py": """
                    import torch

                    def export(model, path):
                        model.cuda()
                        torch.save({name: t.tolist() for name, t in model.state_dict().items()}, "weights.pt")
                        torch.save([t.cpu().numpy() for t in model.parameters()], "arrays.pt")
                """,
                "read.py": """
                    import torch

                    plain = torch.load("weights.pt")
                    arrays = torch.load("arrays.pt")
                """,
            },
            note="comprehensions turning every tensor into lists or numpy arrays",
        ),
        Good(
            """
            from torch import *

            def load(path):
                return open(path).read()

            net = build().cuda()
            text = load("notes.txt")
            """,
            note="after `from torch import *`, a function of the file's own named load",
        ),
        Good(
            """
            from torch import *
            from tools.io import *

            net = build().cuda()
            table = load("table.csv")
            """,
            note="a later star import may bind load: it is not known to be torch's",
        ),
        Good(
            """
            import torch

            model = Net()
            torch.save(model.state_dict(), "best.pt")
            state = torch.load("best.pt")
            """,
            note="a project that never names an accelerator cannot have saved on one",
        ),
        Good(
            """
            import torch

            def train(model):
                model.cuda()
                torch.save(model.state_dict(), args.checkpoint)

            def test(model):
                model.load_state_dict(torch.load(args.checkpoint))

            def main():
                train(model)
                test(model)

            if __name__ == "__main__":
                main()
            """,
            note="saved and loaded back in one process: train() saves before test() loads",
        ),
        Good(
            """
            import torch

            def test(model):
                model.load_state_dict(torch.load("best.pt"))

            def train(model):
                model.cuda()
                for epoch in range(10):
                    torch.save(model.state_dict(), "best.pt")
                test(model)
            """,
            note="train() saves the file and then calls test(), which loads it: one process",
        ),
        Good(
            files={
                "train.py": """
                    import torch

                    model = Net().cuda()
                    train(model)
                    torch.save(model.state_dict(), "m.pt")
                """,
                "evaluate.py": """
                    import torch

                    device = torch.device("cuda:0")
                    model = Net()
                    model.load_state_dict(torch.load("m.pt"))
                    model.to(device)
                """,
            },
            note="scripts that run on one GPU or not at all write and read the file: the same device",
        ),
        Bad(
            """
            import torch

            if __name__ == "__main__":
                model = Net()
                if args.cuda:
                    model.cuda()
                model.load_state_dict(torch.load("m.pt"))  # error
            """,
            note="the script chooses its device: it also runs without a GPU",
        ),
        Good(
            """
            import torch

            if torch.cuda.is_available():
                state = torch.load(path)
            else:
                state = torch.load(path, map_location="cpu")
            """,
            note="the CUDA arm of an availability check, with a CPU else",
        ),
        Good(
            files={
                "make_data.py": """
                    import numpy as np
                    import torch

                    torch.save(np.random.rand(100, 3), "points.pt")
                """,
                "train.py": """
                    import torch

                    points = torch.load("points.pt")
                    model.cuda()
                """,
            },
            note="the project writes this file only with a numpy array: no tensors, no devices",
        ),
        Good(
            """
            import os
            import torch

            def embeddings(cache, vocab):
                if os.path.exists(cache):
                    table = torch.load(cache)
                else:
                    table = build_table(vocab)
                    torch.save(table, cache)
                return table.cuda()

            def test_export(tmp_path, model):
                target = tmp_path / "export"
                write_checkpoint(model.cuda(), target)
                restored = torch.load(target / "weights.pt")
            """,
            note="a cache the other arm of its existence check writes; a file under pytest's tmp_path this test wrote",
        ),
        Good(
            """
            import numpy as np
            import torch

            def bin_edges(path, n_bins):
                table = torch.load(path)
                edges = torch.from_numpy(table[n_bins]).cuda()
                return edges, np.asarray(table["centers"])

            weights = torch.from_numpy(torch.load("weights.pt"))

            def centers(path, k):
                bounds = torch.load(path)
                bounds = torch.from_numpy(bounds[k])
                return (bounds[1:] + bounds[:-1]).cuda() / 2
            """,
            note="what is loaded only goes to torch.from_numpy or numpy: numpy arrays, no devices",
        ),
        Good(
            files={
                "scripts/prepare_data.py": """
                    import torch

                    def prepare(destination, tokenizer, samples):
                        encoded = [tokenizer.encode(s) for s in samples]
                        torch.save(encoded, destination / "train.pt")
                        shards = {}
                        for rank in range(4):
                            shard_path = f"{destination}/f0_{rank}.pt"
                            torch.save(torch.tensor([len(e) for e in encoded[rank::4]]), shard_path)
                """,
                "finetune.py": """
                    import torch

                    def main(data_dir, model):
                        model.cuda()
                        train_data = torch.load(data_dir / "train.pt")
                        path = f"{data_dir}/f0_{0}.pt"
                        lengths = torch.load(path)
                """,
            },
            note="the files are written, under another folder name, by a script that never speaks of devices",
        ),
        Good(
            """
            import os
            from typing import Dict, List, Optional, Tuple
            import torch

            def load_meta_file(root, file=None) -> Tuple[Dict[str, str], List[str]]:
                if file is None:
                    file = META_FILE
                file = os.path.join(root, file)
                return torch.load(file, weights_only=True)

            def vocabulary(path):
                words: Optional[list[str]] = torch.load(path)
                return words

            model = Net().cuda()
            """,
            note="the code's own annotation says the file holds strings, no tensors",
        ),
        Bad(
            """
            from typing import Dict
            import torch

            def restore_state(path) -> Dict[str, torch.Tensor]:
                return torch.load(path, weights_only=True)  # error

            def restore_checkpoint(path) -> dict:
                return torch.load(path, weights_only=True)  # error

            model = Net().to("cuda" if torch.cuda.is_available() else "cpu")
            """,
            note="an annotation naming tensors, or a bare container, says nothing about devices",
        ),
        Good(
            files={
                "train.py": """
                    import torch

                    def train(args, device):
                        transformer = TransformerNet().to(device)
                        for epoch in range(args.epochs):
                            fit(transformer, device)
                            transformer.eval().cpu()
                            torch.save(transformer.state_dict(), f"ckpt_{epoch}.pth")
                            transformer.to(device).train()
                """,
                "stylize.py": """
                    import torch

                    def stylize(args, device):
                        style_model = TransformerNet()
                        state_dict = torch.load(args.model)
                        style_model.load_state_dict(state_dict)
                        style_model.to(device)
                """,
            },
            note="every checkpoint of this model class is saved after `.cpu()`: CPU tensors",
        ),
        Good(
            """
            import torch

            def evaluate(checkpoint_dir, out_dir, model):
                model.cuda()
                convert_lit_checkpoint(checkpoint_dir=checkpoint_dir, output_dir=out_dir)
                state_dict = torch.load(out_dir / "model.pth")
                model.load_state_dict(state_dict)
            """,
            note="an earlier step of the same function was handed the folder to write into: this process wrote the file",
        ),
        Good(
            """
            import torch
            from torch.distributed.fsdp import FullStateDictConfig, StateDictType
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            gather = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)

            def save_full(model, rank, path):
                with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, gather):
                    state = model.state_dict()
                if rank == 0:
                    torch.save(state, path)

            def load_full(model, path):
                model.load_state_dict(torch.load(path))
                model.cuda()
            """,
            note="the file gathers its distributed state dicts to the CPU before saving them",
        ),
        Good(
            files={
                "export.py": """
                    import torch

                    def export(model, path):
                        model.eval().cpu()
                        torch.save(model.state_dict(), path)
                """,
                "evaluate.py": """
                    import torch

                    def evaluate(args):
                        net = build(args).cuda()
                        net.load_state_dict(torch.load(args.weights))
                """,
            },
            note="no save matches the file, but every writer of the project stores CPU tensors",
        ),
        Good(
            files={
                "checkpoint_io.py": """
                    import torch

                    def _save(obj, f):
                        torch.save(obj, f)

                    def persistent_save(obj, filename):
                        with open(filename, "wb") as f:
                            _save(obj, f)
                """,
                "trainer.py": """
                    import checkpoint_io
                    import torch
                    from utils import move_to_cpu

                    class Trainer:
                        def __init__(self, model, args):
                            self.model, self.args = model.cuda(), args

                        def state_dict(self):
                            state = {"args": self.args, "model": self.model.state_dict()}
                            state["optimizer"] = self.optimizer.state_dict()
                            return state

                        def save_checkpoint(self, filename):
                            state = move_to_cpu(self.state_dict())
                            checkpoint_io.persistent_save(state, filename)
                """,
                "upgrade.py": """
                    import sys
                    import torch

                    def upgrade(state):
                        state["model"]["head.weight"] = state["model"].pop("fc.weight")
                        state["args"].task = "classification"
                        return state

                    state = upgrade(torch.load(sys.argv[1]))
                    old = torch.load(sys.argv[2])
                    print(old["args"], old.get("optimizer"))
                """,
            },
            note="the keys read are those of the trainer's format, written after `move_to_cpu` through the project's saving helpers",
        ),
        Good('import torch\nstate = torch.load("ckpt.pt", map_location="cpu")'),
        Good("import torch\nstate = torch.load(path, device)", note="map_location passed positionally"),
        Good(
            """
            import torch
            state = torch.load(
                path,
                map_location=lambda storage, loc: storage,
            )
            """,
            note="a lambda on a continuation line",
        ),
        Good(
            """
            import torch

            def restore(path, **kwargs):
                return torch.load(path, **kwargs)
            """,
            note="**kwargs may carry map_location",
        ),
        Good(
            """
            import io
            import torch

            def round_trip(model):
                buffer = io.BytesIO()
                torch.save(model.state_dict(), buffer)
                buffer.seek(0)
                return torch.load(buffer)
            """,
            note="saved and loaded again in one function",
        ),
        Good(
            """
            import torch
            from torchvision.datasets import VisionDataset

            class Digits(VisionDataset):
                def _load_data(self):
                    return torch.load(self.processed_file)
            """,
            note="a dataset reading its own processed cache",
        ),
        Good(
            """
            import json, pickle

            def load(path):
                ...

            cfg = json.load(open("c.json"))
            obj = pickle.load(open("o.pkl", "rb"))
            data = load("x")
            """,
            note="other functions called load",
        ),
        Good(
            """
            from torch import load

            def load(path):
                return open(path).read()

            text = load("notes.txt")
            """,
            note="a local function shadows the import",
        ),
        Good(
            """
            import torch

            def restore(torch, path):
                return torch.load(path)
            """,
            note="a parameter named torch is not the module",
        ),
        Good(
            """
            import os
            import torch

            def main(args, accelerator, model, loader):
                model = model.to(accelerator.device)
                for step, batch in enumerate(loader):
                    accelerator.backward(model(batch))
                    accelerator.save(model.state_dict(), os.path.join(args.output_dir, f"{step}_lora.pt"))

                def reload(pipe, step):
                    checkpoint = os.path.join(args.output_dir, f"{step}_lora.pt")
                    pipe.load_state_dict(torch.load(checkpoint))

                reload(model, step)
            """,
            note="`accelerator.save` is torch.save; the load's path name is bound to the path saved earlier in this run",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.flow = ctx.analysis(CheckpointFlow)
        self.names = CheckpointNames(ctx)
        self._cpu_offload: bool | None = None
        self._other_device: bool | None = None
        self._loads: list[tuple[object, str, str | None, str | None, str | None, bool, int, cst.Call]] = []
        #: load call -> the text of the one value its path name is bound to in its function
        #: (`checkpoint = os.path.join(out, "x.pt")`, then `torch.load(checkpoint)`)
        self._spelled_paths: dict[int, tuple[str, ...]] = {}
        #: load call -> the string keys read off what it returns (`checkpoint_formats.keys_read`)
        self._keys: dict[int, list[str]] = {}
        #: load call -> whether its file says it may meet another device and nothing names it
        #: other than model state (`in_this_part` reads it from the load fact)
        self._invited: dict[int, bool] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self.names.qualname(node.func) not in LOAD_FUNCTIONS:
            return  # saves and the calls between functions are CheckpointFlow's
        if is_test_path(self.ctx.path) or not self.flags(node):
            return
        keys = keys_read(self.ctx, node)
        device = device_in_scope(self.ctx)
        fix = NodeFix(
            f"Add `map_location={device}`",
            SAFE if feeds_load_state_dict(self.ctx) else UNSAFE,
            ((node, _with_map_location(node, device)),),
        )
        if self._also_missing_weights_only(node):
            message, fix = self._with_weights_only(node, device, fix)
        else:
            message = (
                "`torch.load` without `map_location`: tensors return to the device they were saved on; "
                'pass map_location="cpu" or the target device'
            )
        handle = self.report(node, message, fix=fix)
        name = file_name_pattern(self.ctx, node, "f", 0)
        model = loaded_into_model(self.ctx, node)
        fetched = fetched_from_elsewhere(self.ctx, node)
        self._keys[id(node)] = keys
        self._invited[id(node)] = self._invites_another_device() and says_it_holds_model_state(self.ctx, node, keys)
        self._loads.append((handle, self.flow.function_name(), path_text(self.ctx.module, node, "f", 0), name, model, fetched, self.flow.calls_seen, node))
        bound = bound_path_text(self.ctx, node, "f", 0)
        if bound is not None:
            self._spelled_paths[id(node)] = (bound,)

    def flags(self, node: cst.Call) -> bool:
        """Whether this rule reports `node` while reading its file (the project phase may
        still drop it: `keep_in_project`)."""
        if self.names.qualname(node.func) not in LOAD_FUNCTIONS:
            return False
        if has_star_args(node) or argument(node, "map_location", 1) is not None:
            return False
        if in_dataset_class(self.ctx):
            return False  # datasets read caches they wrote themselves, on the CPU, for CPU batches
        if written_by_this_process(self.ctx, self.names, node):
            return False  # saved earlier here, in a temporary directory, by an earlier step, or a local cache
        if self._offloads_state_to_cpu():
            return False  # this file's distributed checkpoints are gathered to the CPU before saving
        if read_as_numpy(self.ctx, node):
            return False  # what it loads is only ever handed to torch.from_numpy / numpy: no tensors in it
        if annotated_tensor_free(self.ctx):
            return False  # `-> tuple[dict[str, str], list[str]]`: the code says the file holds no tensors
        if availability_guarded(self.ctx.ancestors):
            return False  # the accelerator arm of an availability check; the else arm loads for the CPU
        return True

    @classmethod
    def in_this_part(cls, project, load: dict, saves: list[dict]) -> bool:
        """This rule's part of the loads that stand: model state in a file that says it may be
        read on another device, or a file the project writes from a GPU-only script (its
        tensors are CUDA ones wherever it is read). TL303, the rest, inverts it."""
        return load.get("invited", True) or any(save.get("cuda_only") and save["tensors"] and not save.get("cpu") for save in saves)

    def _invites_another_device(self) -> bool:
        if self._other_device is None:
            self._other_device = offers_a_cpu_path(self.ctx) or maps_another_load(self.ctx, self.names)
        return self._other_device

    def _offloads_state_to_cpu(self) -> bool:
        if self._cpu_offload is None:
            self._cpu_offload = offloads_state_to_cpu(self.ctx)
        return self._cpu_offload

    # -- one finding for a call TL302 (load-without-weights-only) would report too ----------
    def _also_missing_weights_only(self, node: cst.Call) -> bool:
        return self.ctx.is_enabled(WEIGHTS_ONLY_CODE) and missing_weights_only(self.ctx, node, self.names)

    def _with_weights_only(self, node: cst.Call, device: str, fix: NodeFix) -> tuple[str, NodeFix]:
        """The message naming both keywords, and a fix adding both where that is no riskier:
        a safe `map_location` fix stays alone (TL302 offers `weights_only` on the next pass)."""
        message = (
            f"{BOTH_KEYWORDS}: tensors return to the device they were saved "
            f"on, and {weights_only_risk(self.ctx)}; pass map_location=\"cpu\" (or the target device) and "
            "weights_only=True (False only for trusted files)"
        )
        if fix.applicability == UNSAFE and weights_only_fixable(node):
            both = with_keyword(_with_map_location(node, device), "weights_only", "True")
            fix = NodeFix(f"Add `map_location={device}` and `weights_only=True`", UNSAFE, ((node, both),))
        return message, fix

    def finish(self) -> None:
        for save in self.flow.saves:
            self.add_fact("save", save)  # what this file writes, for the project phase
        for kind, facts in self.flow.format_facts.items():
            for fact in facts:
                self.add_fact(kind, fact)  # saving helpers and what is handed to them
        for handle, function, loaded, name, model, fetched, at, node in self._loads:
            spelled = self._spelled_paths.get(id(node), ())
            if any(self.flow.saved_before(function, text, at) for text in (loaded, *spelled) if text is not None):
                self.withdraw(handle)  # the same process wrote it just before
                continue
            # Every load this file reports, for the project phase (and for TL302, which
            # leaves a call to this rule where this rule's finding stands).
            line, column = self.ctx.position(node)[:2]
            self.add_fact(
                "load",
                {"line": line, "column": column, "path": loaded, "name": name, "model": model, "fetched": fetched, "cuda_only": self.flow.in_cuda_only_script(), "keys": self._keys.get(id(node), []), "invited": self._invited.get(id(node), True)},
            )

    @classmethod
    def belongs_in_project(cls, project, finding) -> bool:
        """Which part of the check the call is: TL301's or TL303's (`in_this_part`)."""
        load = load_fact_at(project, finding, cls.code)
        if load is None:
            return cls.in_this_part(project, {}, [])  # nothing recorded: TL301's, never both parts'
        return cls.in_this_part(project, load, writers_of(load, saves_in_project(project, finding.path, cls.code)))

    @classmethod
    def keep_in_project(cls, project, finding) -> bool:
        """Whether the load may restore tensors to a device missing where it is read, as far as
        the project shows (either part)."""
        if not project_uses_accelerator(project, finding.path):
            return False  # nothing in the project ever puts a tensor on an accelerator
        load = load_fact_at(project, finding, cls.code)
        if load is None:
            return True
        project_saves = saves_in_project(project, finding.path, cls.code)
        saves = writers_of(load, project_saves)
        if not saves and not load.get("fetched") and writes_only_cpu_checkpoints(project_saves):
            return False  # not a download, no writer matches, and every writer of this project stores CPU tensors
        if not saves and not load.get("fetched") and len(load.get("keys", ())) >= MIN_KEYS:
            formats = format_writers(load["keys"], lambda kind: facts_in_project(project, finding.path, cls.code, kind, with_file=True))
            unmapped = {file for file, _ in facts_in_project(project, finding.path, cls.code, "load", with_file=True)}
            if formats and all(stores_cpu_tensors(file, writer, unmapped) for file, writer in formats):
                return False  # the keys it reads are those of a format the project writes only with CPU tensors
        if load["path"] is None and load.get("name") is None and load.get("model") is None:
            return True
        if load.get("cuda_only") and saves and all(save.get("cuda_only") for save in saves):
            return False  # written and read by scripts that run on one GPU or not at all: the same device
        # The project writes this file only with payloads that hold no tensors, or only
        # from code that never speaks of devices (its tensors are on the CPU).
        return not saves or any(save["tensors"] and not save.get("cpu") for save in saves)

    @classmethod
    def speaks_for(cls, finding) -> tuple:
        """Codes whose finding on the same call this one replaces: a message naming both
        keywords carries TL302's claim (`torchlint run` drops TL302's finding beside it when it
        brings this one back)."""
        return (WEIGHTS_ONLY_CODE,) if finding.message.startswith(BOTH_KEYWORDS) else ()

    #: torch's own refusal to load CUDA storages where CUDA is absent: the failure this rule
    #: predicts, whatever the static phase concluded about where the file was written.
    proven_by = (("RuntimeError", r"Attempting to deserialize object on (a )?CUDA device"),)

    @classmethod
    def errors_proving(cls, finding) -> tuple:
        """`torch run`: torch refusing CUDA storages proves the map_location claim (the
        checkpoint probe confirms it before any error); a finding that also speaks for TL302
        is proven, like TL302's, by torch's weights_only refusal too."""
        from .load_without_weights_only import LoadWithoutWeightsOnly

        return cls.proven_by + (LoadWithoutWeightsOnly.proven_by if finding.message.startswith(BOTH_KEYWORDS) else ())

    @classmethod
    def reports_load_at(cls, project, finding) -> bool:
        """Whether this rule's finding on the same call as `finding` stands in the project."""
        return (load_fact_at(project, finding, cls.code) is not None and cls.belongs_in_project(project, finding)
                and cls.keep_in_project(project, finding))


def _with_map_location(call: cst.Call, device: str) -> cst.Call:
    return with_keyword(call, "map_location", device)
