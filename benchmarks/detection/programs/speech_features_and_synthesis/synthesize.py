"""Predict pitch for unit sequences with a trained model on the GPU."""
import sys

import torch
import torch.nn as nn


class PitchPredictor(nn.Module):
    def __init__(self, n_units=100, n_speakers=8):
        super().__init__()
        self.embed = nn.Embedding(n_units, 64)
        self.out = nn.Linear(64, 1)
        self.speaker_stats = [(float(i), 1.0) for i in range(n_speakers)]

    def forward(self, units):
        return self.out(self.embed(units)).squeeze(-1)

    def inference(self, units, speaker_ids):
        f0 = self(units)
        for i in range(f0.shape[0]):
            mean, std = self.speaker_stats[speaker_ids[i].item()]
            f0[i] = f0[i] * std + mean
        return f0


def load_predictor(path):
    model = PitchPredictor()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


def synthesize(path, units, speaker, device):
    f0_model = load_predictor(path).to(device)
    tokens = torch.LongTensor(units).unsqueeze(0).to(device)
    speaker_ids = torch.LongTensor([speaker])  # safe: TL201 -- only read with .item() inside inference
    f0 = f0_model.inference(tokens, speaker_ids)
    offsets = torch.FloatTensor([0.5] * len(units))  # expect: TL201 -- added to f0, which is on the GPU
    return f0 + offsets


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(synthesize(sys.argv[1], [1, 2, 3], 0, dev))
