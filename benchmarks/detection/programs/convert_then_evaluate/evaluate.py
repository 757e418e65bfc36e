"""Evaluate a trained classifier: convert its checkpoint, then score it on the GPU."""
import sys
from pathlib import Path

import torch
import torch.nn as nn

from convert import convert_checkpoint


def download_reference(url: str, output_dir: Path) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    torch.hub.download_url_to_file(url, str(output_dir / "reference.pth"))


def evaluate(checkpoint_dir: Path, out_dir: Path, reference_url: str) -> float:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(16, 4).to(device)
    convert_checkpoint(checkpoint_dir=checkpoint_dir, output_dir=out_dir)
    state_dict = torch.load(out_dir / "model.pth", weights_only=True)  # safe: TL301 -- written two lines up by convert_checkpoint in this process
    model.load_state_dict(state_dict)
    download_reference(reference_url, output_dir=out_dir)
    reference = torch.load(out_dir / "reference.pth", weights_only=True)  # expect: TL301 -- a downloaded checkpoint, saved wherever its author trained
    x = torch.randn(8, 16, device=device)
    return (model(x) - reference["bias"].to(device)).abs().mean().item()


if __name__ == "__main__":
    print(evaluate(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
