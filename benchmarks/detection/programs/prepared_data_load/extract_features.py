"""Embed every training sample with a frozen encoder on the GPU and keep the features."""
import sys
from pathlib import Path

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = nn.EmbeddingBag(50_000, 128).to(device).eval()
data_dir = Path(sys.argv[1])
samples = torch.load(data_dir / "train.pt", map_location="cpu", weights_only=True)
with torch.no_grad():
    features = [encoder(s["input_ids"].to(device)[None]) for s in samples]
torch.save(features, data_dir / "features.pt")
