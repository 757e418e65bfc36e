from __future__ import annotations

from torchlint.rule import Bad, Good

from .load_without_map_location import LoadWithoutMapLocation


class LoadWithoutMapLocationAnywhere(LoadWithoutMapLocation):
    """
    ## What it does
    Flags the `torch.load(...)` calls without `map_location` that TL301
    (`load-without-map-location`) leaves alone: nothing in their file says the checkpoint may
    be read on another machine than the one that wrote it (no device chosen with a CPU arm, no
    accelerator test or flag, no option turning the accelerator off, no other load passing
    `map_location`), or the code names what it loads as something other than model state
    (`triples = torch.load(...)`); and no script of the project that runs on one GPU or not at
    all writes the file (that load is TL301's). The same exceptions as TL301's apply (tests,
    round trips in one process, temporary directories, CPU-only writers, files holding no
    tensors, CUDA-only scripts writing and reading the file, ...).

    Off by default: on 21 public libraries and frameworks with their test suites, reviewers who
    had not seen the rule judged 4 of 19 sampled loads of this part right (79 in all); the
    wrong ones read files the project writes with CPU tensors, or reads back on the GPU that
    wrote them, which the loading file does not show. `torchlint run` reports a load of this
    rule that does fail ("Attempting to deserialize object on a CUDA device").
    `--extend-select TL303` turns it on.

    ## Why is this bad?
    Without `map_location`, every tensor is restored to the device it was saved from: a
    checkpoint written on `cuda:0` fails to load on a CPU-only machine, and every rank of a
    multi-GPU job piles its copy onto GPU 0.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu")     # or map_location=device
    ```

    ## Fix safety
    As TL301's: `map_location=device` when a `device` is in scope, else `"cpu"`; safe when the
    result goes straight into `load_state_dict(...)` (without `assign=True`), unsafe elsewhere.
    """

    code = "TL303"
    name = "load-without-map-location-anywhere"
    summary = "`torch.load` without `map_location` where nothing in the file says it runs on another device"
    default_enabled = False
    cases = [
        Bad(
            """
            import torch

            def restore(model, path, device="cuda"):
                model.load_state_dict(torch.load(path)["model"])  # error
                extra = torch.load(  # error
                    path,
                )
                return extra
            """,
            fixed="""
            import torch

            def restore(model, path, device="cuda"):
                model.load_state_dict(torch.load(path, map_location=device)["model"])  # error
                extra = torch.load(  # error
                    path,
                    map_location=device,
                )
                return extra
            """,
            note="a `device` in scope is used, and a one-argument-per-line call keeps its layout",
        ),
        Bad(
            """
            import torch

            def restore(model, path):
                model.load_state_dict(torch.load(path)["model"])  # error
                model.cuda()
            """
        ),
        Bad(
            """
            import torch

            device = torch.device("cuda:0")
            model = Net()
            model.load_state_dict(torch.load("pretrained.pt"))  # error
            model.to(device)
            """,
            note="a CUDA-only script, but nothing in the project writes the file: it comes from elsewhere",
        ),
        Bad(
            """
            import torch

            if __name__ == "__main__":
                torch.cuda.set_device(args.local_rank)
                model = Net().cuda()
                model.load_state_dict(torch.load("m.pt"))  # error
            """,
            note="one process per GPU: every rank's load lands on the GPU the file was saved from",
        ),
        Bad(
            """
            import torch

            def test(model):
                model.load_state_dict(torch.load("best.pt"))  # error

            def train(model):
                model.cuda()
                test(model)
                torch.save(model.state_dict(), "best.pt")
            """,
            note="test() runs before train() saves: the file it loads comes from an earlier run",
        ),
        Bad(
            files={
                "utils.py": """
                    import torch

                    def save_split(samples, destination):
                        torch.save(samples, destination / "train.pt")
                """,
                "extract.py": """
                    import torch

                    def extract(encoder, batches, destination):
                        torch.save([encoder(b.to(device)) for b in batches], destination / "feats.pt")
                """,
                "finetune.py": """
                    import torch

                    def main(data_dir, model):
                        model.cuda()
                        train_data = torch.load(data_dir / "train.pt")  # error
                        feats = torch.load(data_dir / "feats.pt")  # error
                """,
            },
            note="a helper saving whatever its caller passes, and a writer that uses a device, may write CUDA tensors",
        ),
        Bad(
            files={
                "train.py": """
                    import torch

                    def train(args, device):
                        transformer = TransformerNet().to(device)
                        transformer.cpu()
                        transformer.to(device)
                        torch.save(transformer.state_dict(), args.out)
                        head = Head().cuda()
                        torch.save(head.state_dict(), args.head_out)
                """,
                "stylize.py": """
                    import torch

                    def stylize(args, device):
                        style_model = TransformerNet()
                        style_model.load_state_dict(torch.load(args.model))  # error
                        head = Head()
                        head.load_state_dict(torch.load(args.head))  # error
                """,
            },
            note="moved back to the device before saving, or saved from the GPU: CUDA tensors",
        ),
        Bad(
            """
            import torch

            def evaluate(repo, out_dir, other, model):
                model.cuda()
                download_weights(repo, output_dir=out_dir)
                state = torch.load(out_dir / "model.pth")  # error
                convert_checkpoint(state, output_dir=other)
                extra = torch.load(out_dir / "extra.pth")  # error
            """,
            note="a download brings a file made elsewhere; a step writing into another folder says nothing",
        ),
        Bad(
            """
            import torch

            def bin_edges(path, n_bins):
                table = torch.load(path)  # error
                edges = torch.from_numpy(table["edges"]).cuda()
                return edges, table["weights"].cuda()
            """,
            note="one read takes it as tensors",
        ),
        Bad(
            """
            import torch
            from torch.distributed.fsdp import FullStateDictConfig

            gather = FullStateDictConfig(offload_to_cpu=False)

            def load_full(model, path):
                model.load_state_dict(torch.load(path))  # error
                model.cuda()
            """,
            note="state dicts gathered on the GPU",
        ),
        Bad(
            """
            import os
            import torch

            def restore(path, fallback):
                if os.path.exists(path):
                    state = torch.load(path)  # error
                else:
                    state = torch.load(fallback)  # error
                    torch.save(state, "copy.pt")
                return state

            def test_pretrained(weights_dir):
                model = Net().cuda()
                model.load_state_dict(torch.load(weights_dir / "net.pt"))  # error
            """,
            note="the other arm saves a different path; a test reading files it did not make",
        ),
        Bad(
            files={
                "export.py": """
                    import torch

                    def export(model, path):
                        model.eval().cpu()
                        torch.save(model.state_dict(), path)

                    def snapshot(model, path):
                        torch.save(model.cuda().state_dict(), path)
                """,
                "evaluate.py": """
                    import torch

                    def evaluate(args, fabric):
                        net = build(args)
                        net.load_state_dict(torch.load(args.weights))  # error
                        fabric.save(args.out, {"model": net})
                """,
                "fetch.py": """
                    import torch
                    from huggingface_hub import hf_hub_download

                    def reference(repo):
                        return torch.load(hf_hub_download(repo, "weights.pt"))  # error
                """,
            },
            note="one writer saves from the device (or cannot be read); a downloaded file is not the project's",
        ),
        Bad(
            files={
                "checkpoint_io.py": """
                    import torch

                    def persistent_save(obj, filename):
                        torch.save(obj, filename)
                """,
                "trainer.py": """
                    import checkpoint_io
                    import torch
                    from utils import move_to_cpu

                    def save_checkpoint(model, args, filename):
                        model.cuda()
                        checkpoint_io.persistent_save({"args": args, "model": model.state_dict()}, filename)
                        checkpoint_io.persistent_save(move_to_cpu({"args": args, "model": model.state_dict()}), "cpu.pt")
                """,
                "inspect_args.py": """
                    import sys
                    import torch

                    state = torch.load(sys.argv[1])  # error
                    print(state["args"], sorted(state["model"]))
                    weights = torch.load(sys.argv[2])["model"]  # error
                """,
            },
            note="one writer of the format saves CUDA tensors; one key names no format",
        ),
        Bad(
            files={
                "convert.py": """
                    import sys
                    import torch

                    old = torch.load(sys.argv[1])  # error
                    torch.save({"model": old["weights"], "args": old["config"]}, sys.argv[2])
                """,
                "evaluate.py": """
                    import sys
                    import torch

                    state = torch.load(sys.argv[1])  # error
                    net = build(state["args"]).cuda()
                    net.load_state_dict(state["model"])
                    torch.save(net(batch), "predictions.pt")
                """,
            },
            note="the one writer of the format saves again what it loaded: the tensors keep the devices they were saved from",
        ),
        Bad(
            """
            import os
            import torch

            def main(args, accelerator, model, loader):
                model = model.to(accelerator.device)
                for step, batch in enumerate(loader):
                    accelerator.backward(model(batch))
                    accelerator.save(model.state_dict(), os.path.join(args.output_dir, f"{step}_lora.pt"))

                def reload(pipe):
                    checkpoint = os.path.join(args.resume_dir, "lora.pt")
                    pipe.load_state_dict(torch.load(checkpoint))  # error

                reload(model)
            """,
            note="the path loaded is not the one this run saved",
        ),
        Good(
            """
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
            state = torch.load("ckpt.pt")
            """,
            note="the file runs on the CPU too: TL301's finding, not this one",
        ),
        Good(
            """
            import torch  # trained on cuda

            def restore(path):
                return torch.load(path, map_location="cpu")

            def restore_model(path):
                return torch.load(path)
            """,
            note="another load of the file maps to the CPU: TL301's finding",
        ),
        Good(
            """
            import torch  # on cuda

            def test_round_trip(tmp_path):
                torch.save(model.state_dict(), tmp_path / "m.pt")
                model.load_state_dict(torch.load(tmp_path / "m.pt"))
            """,
            note="TL301's exceptions hold here too: a test reading back what it wrote",
        ),
    ]

    @classmethod
    def in_this_part(cls, project, load: dict, saves: list[dict]) -> bool:
        """The loads TL301 leaves: nothing in the file invites another device, or nothing
        says the file holds model state, and no GPU-only script of the project writes it."""
        return not super().in_this_part(project, load, saves)
