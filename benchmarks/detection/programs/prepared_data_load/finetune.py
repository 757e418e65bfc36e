"""Fine-tune a small language model on the prepared tokens and the encoder's features."""
import sys
from pathlib import Path

import torch
import torch.nn as nn


def main(data_dir: Path) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_data = torch.load(data_dir / "train.pt", weights_only=True)  # safe: TL301 -- written by scripts/prepare_dataset.py, which never touches a device: CPU tensors
    val_data = torch.load(data_dir / "test.pt", weights_only=True)  # safe: TL301 -- same CPU-only preparing script
    path = f"{data_dir}/lengths_{0}.pt"
    lengths = torch.load(path, weights_only=True)  # safe: TL301 -- shard written by the same CPU-only script under another folder name
    features = torch.load(data_dir / "features.pt", weights_only=True)  # expect: TL301 -- extract_features.py saves encoder outputs computed on the GPU
    model = nn.Sequential(nn.Embedding(50_000, 128), nn.Linear(128, 50_000)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for sample in train_data[: int(lengths.sum().item()) or 1]:
        ids = sample["input_ids"].to(device)
        logits = model(ids[:-1]) + features[0].to(device)
        loss = nn.functional.cross_entropy(logits, ids[1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(len(val_data))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
