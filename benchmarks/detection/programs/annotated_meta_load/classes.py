"""Class names of an image folder, parsed once from the devkit and cached next to the images."""
import os
from typing import Dict, List, Optional, Tuple

import torch

META_FILE = "meta.bin"


def parse_devkit(root: str) -> None:
    with open(os.path.join(root, "synsets.txt"), encoding="utf-8") as f:
        rows = [line.strip().split(" ", 1) for line in f if line.strip()]
    wnid_to_classes = {wnid: name for wnid, name in rows}
    val_wnids = [wnid for wnid, _ in rows]
    torch.save((wnid_to_classes, val_wnids), os.path.join(root, META_FILE))


def load_meta_file(root: str, file: Optional[str] = None) -> Tuple[Dict[str, str], List[str]]:
    if file is None:
        file = META_FILE
    file = os.path.join(root, file)
    return torch.load(file, weights_only=True)  # safe: TL301 -- the annotation says a dict and a list of strings: no tensors


def load_embeddings(root: str) -> Dict[str, torch.Tensor]:
    return torch.load(os.path.join(root, "embeddings.pt"), weights_only=True)  # expect: TL301 -- class embeddings computed by train.py on the GPU


def train(root: str) -> None:
    wnid_to_classes, wnids = load_meta_file(root)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    table = torch.nn.Embedding(len(wnids), 64).to(device)
    torch.save({w: table.weight[i].detach() for i, w in enumerate(wnids)}, os.path.join(root, "embeddings.pt"))
