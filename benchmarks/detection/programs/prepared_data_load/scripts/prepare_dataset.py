"""Tokenise a JSON list of prompts and write train/test token tensors (CPU only)."""
import json
import sys
from pathlib import Path

import torch


def encode(text, vocab):
    return torch.tensor([vocab.setdefault(word, len(vocab)) for word in text.split()], dtype=torch.long)


def prepare(source, destination):
    records = json.loads(Path(source).read_text())
    vocab = {}
    samples = [{"input_ids": encode(r["prompt"] + " " + r["answer"], vocab)} for r in records]
    split = int(0.9 * len(samples))
    destination.mkdir(parents=True, exist_ok=True)
    train_set, test_set = samples[:split], samples[split:]
    torch.save(train_set, destination / "train.pt")
    torch.save(test_set, destination / "test.pt")
    for rank in range(2):
        shard_path = f"{destination}/lengths_{rank}.pt"
        torch.save(torch.tensor([len(s["input_ids"]) for s in samples[rank::2]]), shard_path)


if __name__ == "__main__":
    prepare(sys.argv[1], Path(sys.argv[2]))
