import collections
import sys

import numpy as np
import torch

counts = collections.Counter()
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        counts.update(f.read().split())
itos = ["<pad>", "<unk>"] + [w for w, c in counts.most_common() if c >= 2]
torch.save(
    {"itos": itos, "stoi": {w: i for i, w in enumerate(itos)}, "freq": np.array([counts[w] for w in itos])},
    "vocab.pt",
)
