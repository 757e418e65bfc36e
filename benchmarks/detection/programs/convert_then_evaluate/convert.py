"""Turn a training checkpoint into a plain state dict for the evaluation harness."""
from pathlib import Path

import torch


def convert_checkpoint(checkpoint_dir: Path, output_dir: Path) -> None:
    state = torch.load(checkpoint_dir / "last.ckpt", map_location="cpu", weights_only=True)
    renamed = {key.removeprefix("model."): value for key, value in state["state_dict"].items()}
    output_dir.mkdir(parents=True, exist_ok=True)
    torch.save(renamed, output_dir / "model.pth")
